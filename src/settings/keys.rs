//! The names of the keys of `waitingroom_config`. What each one means, where it
//! is stored and what a bad value does is its row in the settings table
//! ([`crate::settings::table::ROWS`]); the reader ([`crate::settings::config`])
//! and the table both name the keys from here, so neither imports the other's
//! items back.

/// Defines each key's constant, documented by the key it names.
macro_rules! keys {
    ($($name:ident = $key:literal,)*) => {
        $(
            #[doc = concat!("The key `", $key, "`.")]
            pub const $name: &str = $key;
        )*
    };
}

keys! {
    ENABLED = "enabled",
    PROTECTED_PATHS = "protected_paths",
    ALLOW_PERCENTAGE = "allow_percentage",
    CONTROLLER_HEARTBEAT = "controller_heartbeat",
    CONTROLLER_TIMEOUT = "controller_timeout",
    ALLOW_PERCENTAGE_FALLBACK = "allow_percentage_fallback",
    ALLOW_PERIOD_TIMEOUT = "allow_period_timeout",
    WAIT_PERIOD_DURATION = "wait_period_duration",
    COOKIE_LIFETIME = "cookie_lifetime",
    ACTIVE_KEY = "active_key",
    LOGGER_NAME = "logger_name",
    REDEEM_WINDOW = "redeem_window",
    REFRESH_MODE = "refresh_mode",
    WAITING_STATUS = "waiting_status",
    SESSION_MODE = "session_mode",
    COOKIE_HTTPONLY = "cookie_httponly",
    COOKIE_SAMESITE = "cookie_samesite",
    COOKIE_SECURE = "cookie_secure",
    DRAW_GRID = "draw_grid",
    UID_IPV6_PREFIX = "uid_ipv6_prefix",
    QUEUEING_METHOD = "queueing_method",
    FIFO_CUTOFF = "fifo_cutoff",
    FIFO_RATE = "fifo_rate",
    FIFO_HOLD = "fifo_hold",
    QUEUE_OPENS_AT = "queue_opens_at",
    POP_NEW_SESSIONS_PER_MINUTE = "pop_new_sessions_per_minute",
    QUEUE_ALL = "queue_all",
    BYPASS_ADDRESSES = "bypass_addresses",
    BYPASS_PATHS = "bypass_paths",
    PASSES_NOT_BEFORE = "passes_not_before",
    PAGE_LANGUAGE = "page_language",
    BOT_TOLL_BITS = "bot_toll_bits",
    BOT_CHALLENGE = "bot_challenge",
    CUSTOM_PAGES = "custom_pages",
    EVENTS = "events",
    ROOMS = "rooms",
}
