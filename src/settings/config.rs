//! Typed settings read from the `waitingroom_config` store.
//!
//! Every key has one parser, one default and one fallback rule, here and nowhere
//! else; its row in the settings table ([`crate::settings::table`]) says where it is
//! stored and what it means, and the table's tests hold the two together.
//! A value that is missing or unusable never fails a request: it falls back, and
//! the key's name is recorded in [`Settings::fallbacks`] so the log can say so.
//!
//! The edge reads in two tiers ([`Settings::for_request`], in `room_settings`): the
//! few keys a request outside every room needs ([`BYPASS_KEYS`]), then those of
//! the room it is in. The tools and the tests read them all ([`Settings::from_lookup`]).

use crate::bots::challenge::BotChallenge;
use crate::bots::toll;
use crate::settings::draw_grid::DrawGrid;
use crate::settings::keys::*;
use crate::settings::language::Language;
use crate::settings::percentage::Percentage;
use crate::settings::refresh_mode::RefreshMode;
use crate::settings::room::Room;
use crate::settings::rules::{self, Cidr};
use crate::settings::table;
use crate::settings::uid_ipv6_prefix::{FULL_IPV6_PREFIX, MIN_IPV6_PREFIX};
use crate::settings::unix_time;

/// Highest `pop_new_sessions_per_minute`.
pub const MAX_POP_NEW_SESSIONS_PER_MINUTE: u32 = 10_000_000;

/// Longest config-store key Fastly accepts, in bytes.
pub const MAX_KEY_LEN: usize = 256;

/// Every key the room reads from `waitingroom_config`: the keys of the settings
/// table's rows ([`crate::settings::table::ROWS`]), in its order.
pub const KEYS: [&str; table::ROWS.len()] = table::keys(&table::ROWS);

/// The keys a request the room does not apply to needs, the edge's first tier
/// ([`Settings::for_request`]): whether the room applies, the bypass line (which
/// flags a stale controller) and the visitor's uid.
pub const BYPASS_KEYS: [&str; 6] = [
    ENABLED,
    PROTECTED_PATHS,
    CONTROLLER_HEARTBEAT,
    CONTROLLER_TIMEOUT,
    LOGGER_NAME,
    UID_IPV6_PREFIX,
];

/// Status codes a waiting page may use.
pub const WAITING_STATUSES: [u16; 4] = [200, 202, 429, 503];

/// How long an admitted visitor keeps access.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionMode {
    /// Every allowed request renews the session (the VCL; the default).
    Sliding,
    /// The session ends `allow_period_timeout` after the first admission.
    Fixed,
}

/// How waiting visitors are admitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueueingMethod {
    /// A lottery at each draw (the VCL; the default).
    Random,
    /// In order of arrival, up to `fifo_cutoff`.
    Fifo,
}

/// Longest expected time of entry given, seconds (a year).
pub const MAX_ENTRY_IN: u64 = MAX_DURATION;

/// `fifo_rate`: arrival milliseconds admitted per second, held in thousandths.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct FifoRate(u64);

impl FifoRate {
    /// From thousandths of a millisecond of arrivals per second.
    pub fn from_thousandths(thousandths: u64) -> FifoRate {
        FifoRate(thousandths)
    }

    /// Thousandths of a millisecond of arrivals per second.
    pub fn thousandths(self) -> u64 {
        self.0
    }

    /// Seconds until a cutoff moving at this rate passes `ahead_ms` milliseconds
    /// of arrivals, rounded up; `None` when the rate is 0, or when it would take
    /// longer than [`MAX_ENTRY_IN`] (no estimate is better than a useless one, and
    /// JSON clients read numbers as doubles).
    pub fn seconds_for(self, ahead_ms: u64) -> Option<u64> {
        if self.0 == 0 {
            return None;
        }
        let thousandths = u128::from(ahead_ms) * 1000;
        u64::try_from(thousandths.div_ceil(u128::from(self.0)))
            .ok()
            .filter(|&secs| secs <= MAX_ENTRY_IN)
    }
}

impl std::str::FromStr for FifoRate {
    type Err = ();

    /// Digits, optionally `.` and up to three more (`12`, `1.625`); more
    /// decimals are dropped.
    fn from_str(raw: &str) -> Result<FifoRate, ()> {
        let text = raw.trim();
        let (whole, fraction) = text.split_once('.').unwrap_or((text, "0"));
        let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        if !digits(whole) || !digits(fraction) || whole.len() > 15 {
            return Err(());
        }
        let whole: u64 = whole.parse().map_err(|_| ())?;
        let fraction = fraction
            .bytes()
            .chain(std::iter::repeat(b'0'))
            .take(3)
            .fold(0, |n, b| n * 10 + u64::from(b - b'0'));
        Ok(FifoRate(whole * 1000 + fraction))
    }
}

impl std::fmt::Display for FifoRate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (whole, fraction) = (self.0 / 1000, self.0 % 1000);
        if fraction == 0 {
            write!(f, "{whole}")
        } else {
            let text = format!("{fraction:03}");
            write!(f, "{whole}.{}", text.trim_end_matches('0'))
        }
    }
}

/// The cookie's `SameSite` attribute.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SameSite {
    /// Sent on top-level navigations from other sites (the default).
    Lax,
    /// Never sent from other sites.
    Strict,
    /// Sent everywhere, for rooms embedded in other sites; requires `Secure`.
    None,
}

/// When the cookie gets the `Secure` attribute.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SecureWhen {
    /// When the client connection is TLS (the default).
    Auto,
    /// Always.
    Always,
    /// Never.
    Never,
}

/// Default protected path prefixes (the VCL's `^/(events|checkout)`).
pub const DEFAULT_PROTECTED_PATHS: &[&str] = &["/events", "/checkout"];
/// Default `allow_percentage` when the key is missing or not a number (fail open, as the VCL).
pub const DEFAULT_ALLOW_PERCENTAGE: Percentage = Percentage::HUNDRED;
/// `allow_percentage` in FIFO mode when the key is missing or not a number:
/// neither end, so the cutoff decides (in random mode: [`DEFAULT_ALLOW_PERCENTAGE`]).
pub const FIFO_DEFAULT_ALLOW_PERCENTAGE: Percentage = Percentage::whole(50);
/// Largest `queue_opens_at` accepted, Unix seconds (the year 5138): a larger one
/// is most likely milliseconds, which would hold places for millennia.
pub const MAX_QUEUE_OPENS_AT: u64 = 99_999_999_999;
/// Default `controller_timeout`, seconds.
pub const DEFAULT_CONTROLLER_TIMEOUT: u64 = 120;
/// Default `allow_period_timeout`, seconds.
pub const DEFAULT_ALLOW_PERIOD_TIMEOUT: u64 = 3600;
/// Default `wait_period_duration`, seconds.
pub const DEFAULT_WAIT_PERIOD_DURATION: u64 = 30;
/// Default `cookie_lifetime`, seconds.
pub const DEFAULT_COOKIE_LIFETIME: u64 = 7200;
/// Default `fifo_hold`, seconds.
pub const DEFAULT_FIFO_HOLD: u64 = 300;
/// Default `active_key`.
pub const DEFAULT_ACTIVE_KEY: &str = "key1";
/// Longest accepted duration (one year): larger values fall back to the default,
/// which keeps every expiry sum far from overflow.
pub const MAX_DURATION: u64 = 365 * 24 * 3600;

/// The room's settings for one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// The room applies only when this is true.
    pub enabled: bool,
    /// Path prefixes the room protects; other paths pass straight to the origin.
    pub protected_paths: Vec<String>,
    /// The configured percentage; read the one in effect through
    /// [`Settings::percentage_at`], which applies the controller heartbeat rule.
    pub allow_percentage: Percentage,
    /// The controller's last write, when a controller runs.
    pub controller_heartbeat: Heartbeat,
    /// Seconds, 1..=[`MAX_DURATION`]: a heartbeat older than this is stale.
    pub controller_timeout: u64,
    /// The percentage in effect while the heartbeat is stale; `None`: keep
    /// `allow_percentage` (fail static).
    pub allow_percentage_fallback: Option<Percentage>,
    /// Seconds, 1..=[`MAX_DURATION`].
    pub allow_period_timeout: u64,
    /// Seconds, 1..=[`MAX_DURATION`].
    pub wait_period_duration: u64,
    /// Seconds, 1..=[`MAX_DURATION`].
    pub cookie_lifetime: u64,
    /// Seconds after `exp` a wait token may still be redeemed; later it re-waits.
    /// `None`: one wait period, whatever `wait_period_duration` is (read it through
    /// [`Settings::redeem_window`]).
    pub redeem_window: Option<u64>,
    /// Key id used to sign new tokens.
    pub active_key: String,
    /// Log endpoint name; `None` sends log lines to standard error.
    pub logger_name: Option<String>,
    /// How waiting pages schedule the next visit.
    pub refresh_mode: RefreshMode,
    /// Status of the waiting pages, one of [`WAITING_STATUSES`].
    pub waiting_status: u16,
    /// Sliding or fixed sessions.
    pub session_mode: SessionMode,
    /// Whether the cookie is `HttpOnly`.
    pub cookie_httponly: bool,
    /// The cookie's `SameSite`.
    pub cookie_samesite: SameSite,
    /// When the cookie is `Secure`.
    pub cookie_secure: SecureWhen,
    /// Which grid new wait tokens expire on.
    pub draw_grid: DrawGrid,
    /// Bits of an IPv6 client's address that make its uid ([`crate::credentials::uid::uid_of`]).
    pub uid_ipv6_prefix: u8,
    /// Lottery or FIFO.
    pub queueing_method: QueueingMethod,
    /// FIFO: Unix milliseconds; waiting visitors who arrived at or before it are
    /// admitted. `None`: nobody is admitted by FIFO.
    pub fifo_cutoff: Option<u64>,
    /// FIFO: how fast the cutoff moves, when known.
    pub fifo_rate: Option<FifoRate>,
    /// FIFO: seconds, 1..=[`MAX_DURATION`], a place is held after the last request.
    pub fifo_hold: u64,
    /// FIFO: Unix seconds the line opens (the pre-queue before it).
    pub queue_opens_at: Option<u64>,
    /// Random mode: new sessions a POP starts in a minute at most (`None`: no ceiling).
    pub pop_new_sessions_per_minute: Option<u32>,
    /// Hold everyone: nobody is drawn or admitted, live sessions go on.
    pub queue_all: bool,
    /// Address blocks whose visitors bypass the room.
    pub bypass_addresses: Vec<Cidr>,
    /// Path prefixes inside the room that bypass it (none covering a protected prefix).
    pub bypass_paths: Vec<String>,
    /// Unix seconds: passes issued before are refused.
    pub passes_not_before: Option<u64>,
    /// The built-in pages' language; `None`: the visitor's `Accept-Language`.
    pub page_language: Option<Language>,
    /// Bits of bot toll a wait token's holder pays before a draw (0: off).
    pub bot_toll_bits: u8,
    /// The room's external challenge, which replaces the proof of work
    /// ([`Settings::toll_bits`]).
    pub bot_challenge: BotChallenge,
    /// The page-store keys that hold a custom page.
    pub custom_pages: Vec<String>,
    /// Keys whose stored value was present but unusable, so a default was used.
    pub fallbacks: Vec<&'static str>,
    /// The room these are the settings of.
    pub room: Room,
    /// The event in its pre-queue or running (`event=` in the log).
    pub event: Option<String>,
    /// The event whose ended page shows.
    pub event_ended: Option<String>,
    /// The cookie names of the service's named rooms (none without `rooms`): the
    /// origin never sees them.
    pub room_cookies: Vec<String>,
    /// Why the room refuses the request, if it does.
    pub refusal: Option<Refusal>,
    /// The config-store keys whose lookup failed: each took its unreadable outcome
    /// ([`crate::settings::layout::when_unreadable`]), and the line says
    /// `ALERT=unreadable:<keys>`.
    pub unreadable: Vec<String>,
}

/// Why the room refuses a request without deciding on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// Its path reads into different rooms at different origins
    /// ([`crate::settings::path_readings`]): `400`.
    AmbiguousPath,
    /// The `rooms` index could not be looked up, so nothing can be placed: `503`.
    UnreadableRooms,
}

impl Refusal {
    /// The status the room answers with.
    pub fn status(self) -> u16 {
        match self {
            Refusal::AmbiguousPath => 400,
            Refusal::UnreadableRooms => 503,
        }
    }

    /// The log line's `reason`.
    pub fn word(self) -> &'static str {
        match self {
            Refusal::AmbiguousPath => "ambiguous-path",
            Refusal::UnreadableRooms => "unreadable-rooms",
        }
    }
}

impl Default for Settings {
    /// The settings an empty store yields.
    fn default() -> Self {
        Settings::from_lookup(|_| None)
    }
}

impl Settings {
    /// Reads every setting through `lookup` (key → stored value), applying the
    /// documented defaults and fallbacks: what the tools (`wrctl config check`,
    /// the simulator) and the tests read, every unusable value named in
    /// [`Settings::fallbacks`].
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Settings {
        Settings::read(&lookup)
    }

    /// Reads every setting. Keys are read in one order, so `fallbacks` lists them
    /// in that order.
    fn read(lookup: &dyn Fn(&str) -> Option<String>) -> Settings {
        let mut read = Reader {
            lookup,
            fallbacks: Vec::new(),
        };
        // Every key is read the same way: its parser, or its default when missing.
        // A parser that accepts anything never records a fallback.
        let enabled = read.value(ENABLED, |raw| Some(raw.trim() == "true"), false);
        let protected_paths = read.value(PROTECTED_PATHS, parse_paths, default_paths());
        let queueing_method = read.word(
            QUEUEING_METHOD,
            &[
                ("random", QueueingMethod::Random),
                ("fifo", QueueingMethod::Fifo),
            ],
            QueueingMethod::Random,
        );
        // In FIFO mode the percentage keeps only its ends: a missing or unreadable
        // one must not open the room to everyone (the cutoff decides).
        let default_percentage = match queueing_method {
            QueueingMethod::Random => DEFAULT_ALLOW_PERCENTAGE,
            QueueingMethod::Fifo => FIFO_DEFAULT_ALLOW_PERCENTAGE,
        };
        let allow_percentage = read.value(ALLOW_PERCENTAGE, parse_percentage, default_percentage);
        let controller_heartbeat = read.value(
            CONTROLLER_HEARTBEAT,
            |raw| Some(unix_time::parse_seconds(raw).map_or(Heartbeat::Unreadable, Heartbeat::At)),
            Heartbeat::Absent,
        );
        let controller_timeout = read.value(
            CONTROLLER_TIMEOUT,
            parse_duration,
            DEFAULT_CONTROLLER_TIMEOUT,
        );
        let allow_percentage_fallback = read.value(
            ALLOW_PERCENTAGE_FALLBACK,
            |raw| parse_percentage(raw).map(Some),
            None,
        );
        let allow_period_timeout = read.value(
            ALLOW_PERIOD_TIMEOUT,
            parse_duration,
            DEFAULT_ALLOW_PERIOD_TIMEOUT,
        );
        let wait_period_duration = read.value(
            WAIT_PERIOD_DURATION,
            parse_duration,
            DEFAULT_WAIT_PERIOD_DURATION,
        );
        let cookie_lifetime = read.value(COOKIE_LIFETIME, parse_duration, DEFAULT_COOKIE_LIFETIME);
        let redeem_window = read.value(REDEEM_WINDOW, |raw| parse_duration(raw).map(Some), None);
        let active_key = read.value(
            ACTIVE_KEY,
            |raw| Some(raw.trim().to_string()),
            DEFAULT_ACTIVE_KEY.to_string(),
        );
        let logger_name = read.value(
            LOGGER_NAME,
            |raw| Some(Some(raw.trim().to_string()).filter(|name| !name.is_empty())),
            None,
        );
        let refresh_mode = read.word(
            REFRESH_MODE,
            &[
                ("eligible", RefreshMode::Eligible),
                ("fixed", RefreshMode::Fixed),
            ],
            RefreshMode::Eligible,
        );
        let waiting_status = read.value(WAITING_STATUS, parse_waiting_status, 200);
        let session_mode = read.word(
            SESSION_MODE,
            &[
                ("sliding", SessionMode::Sliding),
                ("fixed", SessionMode::Fixed),
            ],
            SessionMode::Sliding,
        );
        let cookie_httponly = read.word(COOKIE_HTTPONLY, &[("true", true), ("false", false)], true);
        let cookie_samesite = read.word(
            COOKIE_SAMESITE,
            &[
                ("lax", SameSite::Lax),
                ("strict", SameSite::Strict),
                ("none", SameSite::None),
            ],
            SameSite::Lax,
        );
        let cookie_secure = read.word(
            COOKIE_SECURE,
            &[
                ("auto", SecureWhen::Auto),
                ("always", SecureWhen::Always),
                ("never", SecureWhen::Never),
            ],
            SecureWhen::Auto,
        );
        let draw_grid = read.word(
            DRAW_GRID,
            &[("address", DrawGrid::Address), ("global", DrawGrid::Global)],
            DrawGrid::Address,
        );
        let uid_ipv6_prefix = read.value(UID_IPV6_PREFIX, parse_ipv6_prefix, FULL_IPV6_PREFIX);
        let fifo_cutoff = read.value(
            FIFO_CUTOFF,
            |raw| unix_time::parse_millis(raw).map(Some),
            None,
        );
        let fifo_rate = read.value(FIFO_RATE, |raw| raw.parse().ok().map(Some), None);
        let fifo_hold = read.value(FIFO_HOLD, parse_duration, DEFAULT_FIFO_HOLD);
        let queue_opens_at = read.value(
            QUEUE_OPENS_AT,
            |raw| {
                unix_time::parse_seconds(raw)
                    .filter(|&t| t <= MAX_QUEUE_OPENS_AT)
                    .map(Some)
            },
            None,
        );
        let pop_new_sessions_per_minute = read.value(
            POP_NEW_SESSIONS_PER_MINUTE,
            |raw| {
                raw.parse::<u32>()
                    .ok()
                    .filter(|n| (1..=MAX_POP_NEW_SESSIONS_PER_MINUTE).contains(n))
                    .map(Some)
            },
            None,
        );
        let queue_all = read.word(QUEUE_ALL, &[("true", true), ("false", false)], false);
        let bypass_addresses = read.list(BYPASS_ADDRESSES, |item| item.parse().ok());
        let bypass_paths = read.list(BYPASS_PATHS, |item| {
            (item.starts_with('/') && !rules::covers_the_room(item, &protected_paths))
                .then(|| item.to_string())
        });
        let passes_not_before = read.value(
            PASSES_NOT_BEFORE,
            |raw| unix_time::parse_seconds(raw).map(Some),
            None,
        );
        let page_language = read.value(
            PAGE_LANGUAGE,
            |raw| match raw.trim() {
                text if text.eq_ignore_ascii_case("auto") => Some(None),
                text => Language::from_code(text).map(Some),
            },
            None,
        );
        let bot_toll_bits = read.value(BOT_TOLL_BITS, |raw| toll::parse_bits(raw.trim()), 0);
        // Never a fallback to "off": an unreadable challenge holds every due draw.
        let bot_challenge = read.value(
            BOT_CHALLENGE,
            |raw| Some(BotChallenge::parse(raw)),
            BotChallenge::Off,
        );
        if bot_challenge == BotChallenge::Unreadable {
            read.fallbacks.push(BOT_CHALLENGE);
        }
        let custom_pages = read.list(CUSTOM_PAGES, |key| {
            (key.len() <= MAX_KEY_LEN && !key.contains(char::is_whitespace))
                .then(|| key.to_string())
        });

        Settings {
            enabled,
            protected_paths,
            allow_percentage,
            controller_heartbeat,
            controller_timeout,
            allow_percentage_fallback,
            allow_period_timeout,
            wait_period_duration,
            cookie_lifetime,
            redeem_window,
            active_key,
            logger_name,
            refresh_mode,
            waiting_status,
            session_mode,
            cookie_httponly,
            cookie_samesite,
            cookie_secure,
            draw_grid,
            uid_ipv6_prefix,
            queueing_method,
            fifo_cutoff,
            fifo_rate,
            fifo_hold,
            queue_opens_at,
            pop_new_sessions_per_minute,
            queue_all,
            bypass_addresses,
            bypass_paths,
            passes_not_before,
            page_language,
            bot_toll_bits,
            bot_challenge,
            custom_pages,
            fallbacks: read.fallbacks,
            room: Room::Service,
            event: None,
            event_ended: None,
            room_cookies: Vec::new(),
            refusal: None,
            unreadable: Vec::new(),
        }
    }

    /// Seconds after its expiry a wait token may still be drawn: the setting, or
    /// one wait period.
    pub fn redeem_window(&self) -> u64 {
        self.redeem_window.unwrap_or(self.wait_period_duration)
    }

    /// Whether a controller heartbeat is present and stale at `now`: older than
    /// `controller_timeout`, more than that in the future, or not a time.
    pub fn controller_stale(&self, now: u64) -> bool {
        match self.controller_heartbeat {
            Heartbeat::Absent => false,
            Heartbeat::Unreadable => true,
            Heartbeat::At(beat) => beat.abs_diff(now) > self.controller_timeout,
        }
    }

    /// The percentage in effect at `now`: `allow_percentage`, or, while the
    /// controller's heartbeat is stale, `allow_percentage_fallback` when it is set.
    pub fn percentage_at(&self, now: u64) -> Percentage {
        match self.allow_percentage_fallback {
            Some(fallback) if self.controller_stale(now) => fallback,
            _ => self.allow_percentage,
        }
    }

    /// Bits a wait token of the room owes ([`crate::bots::toll`]): `bot_toll_bits`, or
    /// under a challenge, which replaces the proof of work, [`toll::MAX_BITS`]:
    /// the token owes the most, so that if the room switches to a proof of work
    /// the smaller rule of [`toll::owed`] asks the new difficulty.
    pub fn toll_bits(&self) -> u8 {
        if self.bot_challenge.is_on() {
            toll::MAX_BITS
        } else {
            self.bot_toll_bits
        }
    }

    /// The text that, stored under `key`, reads as this value of the setting
    /// (the store's form: `fixed`, `Lax`, `/events,/checkout`); `None` when only a
    /// missing key reads as it (an unset option, an empty list) or `key` is no
    /// setting. An unreadable heartbeat or challenge is `unreadable`.
    pub fn stored(&self, key: &str) -> Option<String> {
        fn list<T: ToString>(items: &[T]) -> Option<String> {
            let texts: Vec<String> = items.iter().map(T::to_string).collect();
            (!texts.is_empty()).then(|| texts.join(","))
        }
        let text = |t: &dyn ToString| Some(t.to_string());
        let word = |w: &str| Some(w.to_string());
        match key {
            ENABLED => text(&self.enabled),
            PROTECTED_PATHS => list(&self.protected_paths),
            ALLOW_PERCENTAGE => text(&self.allow_percentage),
            CONTROLLER_HEARTBEAT => match self.controller_heartbeat {
                Heartbeat::Absent => None,
                Heartbeat::At(t) => text(&t),
                Heartbeat::Unreadable => word("unreadable"),
            },
            CONTROLLER_TIMEOUT => text(&self.controller_timeout),
            ALLOW_PERCENTAGE_FALLBACK => self.allow_percentage_fallback.map(|p| p.to_string()),
            ALLOW_PERIOD_TIMEOUT => text(&self.allow_period_timeout),
            WAIT_PERIOD_DURATION => text(&self.wait_period_duration),
            COOKIE_LIFETIME => text(&self.cookie_lifetime),
            REDEEM_WINDOW => self.redeem_window.map(|r| r.to_string()),
            ACTIVE_KEY => text(&self.active_key),
            LOGGER_NAME => self.logger_name.clone(),
            REFRESH_MODE => word(match self.refresh_mode {
                RefreshMode::Eligible => "eligible",
                RefreshMode::Fixed => "fixed",
            }),
            WAITING_STATUS => text(&self.waiting_status),
            SESSION_MODE => word(match self.session_mode {
                SessionMode::Sliding => "sliding",
                SessionMode::Fixed => "fixed",
            }),
            COOKIE_HTTPONLY => text(&self.cookie_httponly),
            COOKIE_SAMESITE => word(match self.cookie_samesite {
                SameSite::Lax => "Lax",
                SameSite::Strict => "Strict",
                SameSite::None => "None",
            }),
            COOKIE_SECURE => word(match self.cookie_secure {
                SecureWhen::Auto => "auto",
                SecureWhen::Always => "always",
                SecureWhen::Never => "never",
            }),
            DRAW_GRID => text(&self.draw_grid),
            UID_IPV6_PREFIX => text(&self.uid_ipv6_prefix),
            QUEUEING_METHOD => word(match self.queueing_method {
                QueueingMethod::Random => "random",
                QueueingMethod::Fifo => "fifo",
            }),
            FIFO_CUTOFF => self.fifo_cutoff.map(|c| c.to_string()),
            FIFO_RATE => self.fifo_rate.map(|r| r.to_string()),
            FIFO_HOLD => text(&self.fifo_hold),
            QUEUE_OPENS_AT => self.queue_opens_at.map(|t| t.to_string()),
            POP_NEW_SESSIONS_PER_MINUTE => self.pop_new_sessions_per_minute.map(|n| n.to_string()),
            QUEUE_ALL => text(&self.queue_all),
            BYPASS_ADDRESSES => list(&self.bypass_addresses),
            BYPASS_PATHS => list(&self.bypass_paths),
            PASSES_NOT_BEFORE => self.passes_not_before.map(|t| t.to_string()),
            PAGE_LANGUAGE => word(self.page_language.map_or("auto", Language::code)),
            BOT_TOLL_BITS => text(&self.bot_toll_bits),
            BOT_CHALLENGE => match &self.bot_challenge {
                BotChallenge::Off => None,
                BotChallenge::On(c) => Some(format!(
                    r#"{{"provider":"{}","site_key":"{}","when_down":"{}"}}"#,
                    c.provider,
                    c.site_key,
                    c.when_down.name()
                )),
                BotChallenge::Unreadable => word("unreadable"),
            },
            CUSTOM_PAGES => list(&self.custom_pages),
            _ => None,
        }
    }

    /// Whether the room applies to a request for `path` (the URL path, without query).
    pub fn protects(&self, path: &str) -> bool {
        self.enabled
            && self
                .protected_paths
                .iter()
                .any(|prefix| path.starts_with(prefix.as_str()))
    }
}

/// The controller's heartbeat, as read from the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Heartbeat {
    /// No `controller_heartbeat` key: manual tuning.
    Absent,
    /// The controller's last write, Unix seconds.
    At(u64),
    /// Present but neither Unix seconds nor RFC 3339: treated as stale.
    Unreadable,
}

/// A JSON value as the text a setting's parser reads: a string as is, a number or
/// a boolean as written, an array of strings as the comma-separated list it is,
/// `null` as missing; anything else is unreadable text, so the key falls back to
/// its default.
pub fn text_of(value: &serde_json::Value) -> Option<String> {
    use serde_json::Value;
    match value {
        Value::Null => None,
        Value::String(text) => Some(text.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Array(items) if items.iter().all(Value::is_string) => Some(
            items
                .iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(","),
        ),
        other => Some(other.to_string()),
    }
}

/// Reads settings through a lookup, recording every key that fell back.
struct Reader<'a> {
    lookup: &'a dyn Fn(&str) -> Option<String>,
    fallbacks: Vec<&'static str>,
}

impl Reader<'_> {
    /// The parsed value of `key`; the default when it is missing, or when it does
    /// not parse (then the key is recorded as a fallback).
    fn value<T>(&mut self, key: &'static str, parse: fn(&str) -> Option<T>, default: T) -> T {
        let Some(raw) = (self.lookup)(key) else {
            return default;
        };
        parse(&raw).unwrap_or_else(|| {
            self.fallbacks.push(key);
            default
        })
    }

    /// A comma-separated list, each item read by `item` (trimmed, empty ones
    /// skipped): the items it refuses are left out and the key is recorded as a
    /// fallback, the others kept.
    fn list<T>(&mut self, key: &'static str, item: impl Fn(&str) -> Option<T>) -> Vec<T> {
        let Some(raw) = (self.lookup)(key) else {
            return Vec::new();
        };
        let mut refused = false;
        let items = raw
            .split(',')
            .map(str::trim)
            .filter(|i| !i.is_empty())
            .filter_map(|i| {
                let read = item(i);
                refused |= read.is_none();
                read
            })
            .collect();
        if refused {
            self.fallbacks.push(key);
        }
        items
    }

    /// One of the `choices` words, case-insensitive, surrounding spaces ignored.
    fn word<T: Copy>(&mut self, key: &'static str, choices: &[(&str, T)], default: T) -> T {
        let Some(raw) = (self.lookup)(key) else {
            return default;
        };
        let raw = raw.trim();
        match choices
            .iter()
            .find(|(word, _)| raw.eq_ignore_ascii_case(word))
        {
            Some(&(_, value)) => value,
            None => {
                self.fallbacks.push(key);
                default
            }
        }
    }
}

/// One of [`WAITING_STATUSES`].
fn parse_waiting_status(raw: &str) -> Option<u16> {
    raw.trim()
        .parse()
        .ok()
        .filter(|code| WAITING_STATUSES.contains(code))
}

fn default_paths() -> Vec<String> {
    DEFAULT_PROTECTED_PATHS
        .iter()
        .map(|p| p.to_string())
        .collect()
}

/// `"/a, /b"` → `["/a", "/b"]`; `None` when any entry does not start with `/`
/// or the list is empty.
fn parse_paths(raw: &str) -> Option<Vec<String>> {
    let paths: Vec<String> = raw
        .split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(str::to_string)
        .collect();
    let valid = !paths.is_empty() && paths.iter().all(|p| p.starts_with('/'));
    valid.then_some(paths)
}

/// A number with up to four decimals, clamped to 0–100 ([`Percentage`]'s text
/// form); `None` for anything that is not a number.
fn parse_percentage(raw: &str) -> Option<Percentage> {
    raw.parse().ok()
}

/// A prefix length in [`MIN_IPV6_PREFIX`]..=[`FULL_IPV6_PREFIX`].
fn parse_ipv6_prefix(raw: &str) -> Option<u8> {
    let text = raw.trim();
    let bits: u8 = text.strip_prefix('/').unwrap_or(text).parse().ok()?;
    (MIN_IPV6_PREFIX..=FULL_IPV6_PREFIX)
        .contains(&bits)
        .then_some(bits)
}

/// Whole seconds in 1..=[`MAX_DURATION`]; `None` otherwise.
fn parse_duration(raw: &str) -> Option<u64> {
    let value: u64 = raw.trim().parse().ok()?;
    (1..=MAX_DURATION).contains(&value).then_some(value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;
    use std::collections::{BTreeMap, BTreeSet, HashMap};

    use crate::settings::keys::ROOMS;
    use crate::settings::layout::OWN_KEYS;
    use crate::settings::room_settings::Remembered;
    use crate::settings::table::{OTHER_ROWS, ROWS, Stored, keys};

    fn settings(pairs: &[(&str, &str)]) -> Settings {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Settings::from_lookup(|k| map.get(k).cloned())
    }

    #[test]
    fn empty_store_gives_documented_defaults() {
        let s = settings(&[]);
        assert!(!s.enabled);
        assert_eq!(s.protected_paths, vec!["/events", "/checkout"]);
        assert_eq!(s.allow_percentage, Percentage::HUNDRED);
        assert_eq!(s.controller_heartbeat, Heartbeat::Absent);
        assert_eq!(s.controller_timeout, 120);
        assert_eq!(s.allow_percentage_fallback, None);
        assert_eq!(s.allow_period_timeout, 3600);
        assert_eq!(s.wait_period_duration, 30);
        assert_eq!(s.cookie_lifetime, 7200);
        assert_eq!(s.redeem_window(), 30);
        assert_eq!(s.active_key, "key1");
        assert_eq!(s.logger_name, None);
        assert_eq!(s.refresh_mode, RefreshMode::Eligible);
        assert_eq!(s.waiting_status, 200);
        assert_eq!(s.session_mode, SessionMode::Sliding);
        assert!(s.cookie_httponly);
        assert_eq!(s.cookie_samesite, SameSite::Lax);
        assert_eq!(s.cookie_secure, SecureWhen::Auto);
        assert!(s.fallbacks.is_empty());
    }

    #[test]
    fn enabled_only_for_the_word_true() {
        for (raw, want) in [
            ("true", true),
            (" true ", true),
            ("TRUE", false),
            ("1", false),
            ("yes", false),
            ("", false),
        ] {
            assert_eq!(settings(&[(ENABLED, raw)]).enabled, want, "{raw:?}");
        }
    }

    #[test]
    fn percentage_follows_the_vcl_fail_open_rule_and_clamps() {
        for (raw, want) in [
            ("0", "0"),
            ("50", "50"),
            (" 7 ", "7"),
            ("100", "100"),
            ("250", "100"),
            ("-5", "0"),
            ("abc", "100"),
            ("", "100"),
            ("50%", "100"),
            (".5", "100"),
            ("5.", "100"),
            ("99999999999999999999999", "100"),
        ] {
            let s = settings(&[(ALLOW_PERCENTAGE, raw)]);
            assert_eq!(s.allow_percentage.to_string(), want, "{raw:?}");
        }
    }

    /// A deliberate departure from the VCL, whose `std.atoi` reads `0.5` as 0 and
    /// then fails open to 100: here it is half a percent.
    #[test]
    fn percentage_takes_up_to_four_decimals() {
        for (raw, micros) in [("0.5", 5_000), ("12.5", 125_000), ("0.00019", 1)] {
            let s = settings(&[(ALLOW_PERCENTAGE, raw)]);
            assert_eq!(s.allow_percentage.micros(), micros, "{raw:?}");
            assert!(s.fallbacks.is_empty());
        }
    }

    #[test]
    fn no_heartbeat_means_manual_tuning() {
        let s = settings(&[(ALLOW_PERCENTAGE, "20"), (ALLOW_PERCENTAGE_FALLBACK, "1")]);
        for now in [0, 1_700_000_000, u64::MAX] {
            assert!(!s.controller_stale(now));
            assert_eq!(s.percentage_at(now), Percentage::whole(20));
        }
    }

    #[test]
    fn a_stale_heartbeat_switches_to_the_fallback() {
        let s = settings(&[
            (ALLOW_PERCENTAGE, "20"),
            (ALLOW_PERCENTAGE_FALLBACK, "1.5"),
            (CONTROLLER_HEARTBEAT, "1000"),
            (CONTROLLER_TIMEOUT, "60"),
        ]);
        let fallback: Percentage = "1.5".parse().unwrap();
        for (now, stale) in [
            (1000, false),
            (1060, false),
            (1061, true),
            (940, false),
            (939, true), // a heartbeat from the future beyond the timeout
            (0, true),
        ] {
            assert_eq!(s.controller_stale(now), stale, "now={now}");
            let want = if stale {
                fallback
            } else {
                Percentage::whole(20)
            };
            assert_eq!(s.percentage_at(now), want, "now={now}");
        }
    }

    #[test]
    fn without_a_usable_fallback_a_stale_room_keeps_its_percentage() {
        for fallback in [None, Some("lots")] {
            let mut pairs = vec![(ALLOW_PERCENTAGE, "20"), (CONTROLLER_HEARTBEAT, "1000")];
            pairs.extend(fallback.map(|f| (ALLOW_PERCENTAGE_FALLBACK, f)));
            let s = settings(&pairs);
            assert!(s.controller_stale(2000));
            assert_eq!(s.percentage_at(2000), Percentage::whole(20));
        }
        let garbled = settings(&[(ALLOW_PERCENTAGE_FALLBACK, "lots")]);
        assert_eq!(garbled.fallbacks, vec![ALLOW_PERCENTAGE_FALLBACK]);
    }

    #[test]
    fn an_unreadable_heartbeat_is_stale() {
        for raw in ["", "soon", "-5", "1.5", "99999999999999999999999"] {
            let s = settings(&[
                (CONTROLLER_HEARTBEAT, raw),
                (ALLOW_PERCENTAGE_FALLBACK, "3"),
            ]);
            assert_eq!(s.controller_heartbeat, Heartbeat::Unreadable, "{raw:?}");
            assert!(s.controller_stale(1_700_000_000));
            assert_eq!(s.percentage_at(1_700_000_000), Percentage::whole(3));
        }
        let default_timeout =
            settings(&[(CONTROLLER_HEARTBEAT, " 1000 "), (CONTROLLER_TIMEOUT, "0")]);
        assert_eq!(default_timeout.controller_timeout, 120);
        assert!(!default_timeout.controller_stale(1120));
        assert!(default_timeout.controller_stale(1121));
    }

    /// Every setting that holds a time takes RFC 3339 (with `Z` or an offset) as
    /// well as Unix seconds (milliseconds for `fifo_cutoff`); garbage, a time
    /// before 1970, and a `queue_opens_at` beyond its bound keep each key's
    /// outcome for an unreadable value.
    #[test]
    fn times_read_as_unix_or_rfc3339() {
        for raw in [
            "1700000000",
            "2023-11-14T22:13:20Z",
            "2023-11-15T00:13:20+02:00",
            " 2023-11-14T17:13:20-05:00 ",
        ] {
            let s = settings(&[(CONTROLLER_HEARTBEAT, raw), (QUEUE_OPENS_AT, raw)]);
            assert_eq!(
                s.controller_heartbeat,
                Heartbeat::At(1_700_000_000),
                "{raw:?}"
            );
            assert_eq!(s.queue_opens_at, Some(1_700_000_000), "{raw:?}");
            assert!(s.fallbacks.is_empty(), "{raw:?}");
        }
        for raw in [
            "1700000000123",
            "2023-11-14T22:13:20.123Z",
            "2023-11-14T23:13:20.123+01:00",
        ] {
            let s = settings(&[(FIFO_CUTOFF, raw)]);
            assert_eq!(s.fifo_cutoff, Some(1_700_000_000_123), "{raw:?}");
            assert!(s.fallbacks.is_empty(), "{raw:?}");
        }
        for raw in [
            "soon",
            "2023-11-14 22:13:20",
            "2023-11-14T22:13:20",
            "1969-12-31T23:59:59Z",
        ] {
            let s = settings(&[
                (CONTROLLER_HEARTBEAT, raw),
                (FIFO_CUTOFF, raw),
                (QUEUE_OPENS_AT, raw),
            ]);
            assert_eq!(s.controller_heartbeat, Heartbeat::Unreadable, "{raw:?}");
            assert!(s.controller_stale(1_700_000_000));
            assert_eq!(s.fifo_cutoff, None, "{raw:?}");
            assert_eq!(s.queue_opens_at, None, "{raw:?}");
            assert_eq!(s.fallbacks, vec![FIFO_CUTOFF, QUEUE_OPENS_AT], "{raw:?}");
        }
        // `queue_opens_at` beyond its bound (the year 5138), written either way.
        for raw in [
            "100000000000",
            "5138-11-16T09:46:40Z",
            "9999-12-31T23:59:59Z",
        ] {
            let s = settings(&[(QUEUE_OPENS_AT, raw)]);
            assert_eq!(s.queue_opens_at, None, "{raw:?}");
            assert_eq!(s.fallbacks, vec![QUEUE_OPENS_AT], "{raw:?}");
        }
        let last = settings(&[(QUEUE_OPENS_AT, "5138-11-16T09:46:39Z")]);
        assert_eq!(last.queue_opens_at, Some(MAX_QUEUE_OPENS_AT));
    }

    /// Regression, found by fuzzing `from_lookup`: an integer beyond 64 bits was
    /// taken for "not an integer", so a hugely negative percentage failed open to
    /// 100 (everyone admitted) instead of clamping to 0, and a huge positive one
    /// was logged as a config fallback.
    #[test]
    fn regression_percentage_beyond_64_bits_clamps_instead_of_failing_open() {
        for (raw, want) in [
            ("-9223372036854775809", 0),
            ("-99999999999999999999999", 0),
            ("9223372036854775808", 100),
            ("+99999999999999999999999", 100),
            ("-00000000000000000000000", 0),
        ] {
            let s = settings(&[(ALLOW_PERCENTAGE, raw)]);
            assert_eq!(s.allow_percentage, Percentage::whole(want), "{raw:?}");
            assert!(s.fallbacks.is_empty(), "{raw:?}");
        }
        for raw in ["-", "+", "+-5", "--5", "5-"] {
            let s = settings(&[(ALLOW_PERCENTAGE, raw)]);
            assert_eq!(s.fallbacks, vec![ALLOW_PERCENTAGE], "{raw:?}");
        }
    }

    #[test]
    fn a_challenge_replaces_the_proof_of_work_and_a_typo_never_turns_it_off() {
        use crate::bots::challenge::{Provider, WhenDown};
        let off = settings(&[(BOT_TOLL_BITS, "8")]);
        assert_eq!(off.bot_challenge, BotChallenge::Off);
        assert_eq!(off.toll_bits(), 8);
        let on = settings(&[
            (BOT_TOLL_BITS, "8"),
            (
                BOT_CHALLENGE,
                r#"{"provider":"hcaptcha","site_key":"k-1","when_down":"open"}"#,
            ),
        ]);
        let challenge = on.bot_challenge.settings().expect("read");
        assert_eq!(
            (challenge.provider, challenge.when_down),
            (Provider::Hcaptcha, WhenDown::Open)
        );
        assert_eq!(on.toll_bits(), toll::MAX_BITS, "owes the most");
        assert!(on.fallbacks.is_empty());
        for typo in [
            "",
            "turnstile",
            r#"{"provider":"turnstyle","site_key":"k"}"#,
            r#"{"provider":"turnstile","site_key":"k""#,
        ] {
            let s = settings(&[(BOT_CHALLENGE, typo)]);
            assert_eq!(s.bot_challenge, BotChallenge::Unreadable, "{typo:?}");
            assert_eq!(s.toll_bits(), toll::MAX_BITS, "{typo:?}: still on");
            assert_eq!(s.fallbacks, vec![BOT_CHALLENGE], "{typo:?}");
        }
    }

    #[test]
    fn garbage_percentage_is_recorded_as_a_fallback() {
        assert_eq!(
            settings(&[(ALLOW_PERCENTAGE, "lots")]).fallbacks,
            vec![ALLOW_PERCENTAGE]
        );
        assert!(settings(&[(ALLOW_PERCENTAGE, "250")]).fallbacks.is_empty());
    }

    #[test]
    fn the_pops_ceiling_is_a_whole_number_or_none() {
        assert_eq!(settings(&[]).pop_new_sessions_per_minute, None);
        let s = settings(&[(POP_NEW_SESSIONS_PER_MINUTE, "2500")]);
        assert_eq!(
            (s.pop_new_sessions_per_minute, s.fallbacks.len()),
            (Some(2500), 0)
        );
        for raw in ["0", "-5", "2.5", "lots", "", "10000001", "4294967296"] {
            let s = settings(&[(POP_NEW_SESSIONS_PER_MINUTE, raw)]);
            assert_eq!(s.pop_new_sessions_per_minute, None, "{raw:?}");
            assert_eq!(s.fallbacks, vec![POP_NEW_SESSIONS_PER_MINUTE], "{raw:?}");
        }
    }

    #[test]
    fn durations_fall_back_to_defaults_when_unusable() {
        for raw in [
            "0",
            "-30",
            "abc",
            "",
            "1e3",
            "31536001",
            "18446744073709551616",
        ] {
            let s = settings(&[
                (ALLOW_PERIOD_TIMEOUT, raw),
                (WAIT_PERIOD_DURATION, raw),
                (COOKIE_LIFETIME, raw),
            ]);
            assert_eq!(s.allow_period_timeout, 3600, "{raw:?}");
            assert_eq!(s.wait_period_duration, 30, "{raw:?}");
            assert_eq!(s.cookie_lifetime, 7200, "{raw:?}");
            assert_eq!(
                s.fallbacks,
                vec![ALLOW_PERIOD_TIMEOUT, WAIT_PERIOD_DURATION, COOKIE_LIFETIME]
            );
        }
    }

    #[test]
    fn redeem_window_defaults_to_one_wait_period() {
        assert_eq!(
            settings(&[(WAIT_PERIOD_DURATION, "45")]).redeem_window(),
            45
        );
        assert_eq!(settings(&[(REDEEM_WINDOW, "5")]).redeem_window(), 5);
        let garbage = settings(&[(WAIT_PERIOD_DURATION, "45"), (REDEEM_WINDOW, "0")]);
        assert_eq!(garbage.redeem_window(), 45);
        // Derived, not copied: a settings value built by struct update keeps it.
        let longer = Settings {
            wait_period_duration: 60,
            ..Settings::default()
        };
        assert_eq!(longer.redeem_window(), 60);
        assert_eq!(garbage.fallbacks, vec![REDEEM_WINDOW]);
    }

    #[test]
    fn durations_accept_whole_seconds_up_to_a_year() {
        let s = settings(&[
            (ALLOW_PERIOD_TIMEOUT, "1"),
            (WAIT_PERIOD_DURATION, " 60 "),
            (COOKIE_LIFETIME, "31536000"),
        ]);
        assert_eq!(
            (
                s.allow_period_timeout,
                s.wait_period_duration,
                s.cookie_lifetime
            ),
            (1, 60, 31_536_000)
        );
    }

    #[test]
    fn protected_paths_are_prefixes() {
        let s = settings(&[(ENABLED, "true")]);
        assert!(s.protects("/events"));
        assert!(s.protects("/events/launch"));
        assert!(s.protects("/eventsfoo"));
        assert!(s.protects("/checkout/cart"));
        assert!(!s.protects("/"));
        assert!(!s.protects("/about"));
        assert!(!s.protects("/Events"));
    }

    #[test]
    fn protected_paths_are_configurable() {
        let s = settings(&[(ENABLED, "true"), (PROTECTED_PATHS, " /drop , /sale/")]);
        assert!(s.protects("/drop/1"));
        assert!(s.protects("/sale/x"));
        assert!(!s.protects("/events"));
    }

    #[test]
    fn unusable_protected_paths_fall_back_to_the_default() {
        for raw in ["", " , ", "events", "/ok,bad"] {
            let s = settings(&[(ENABLED, "true"), (PROTECTED_PATHS, raw)]);
            assert_eq!(s.protected_paths, vec!["/events", "/checkout"], "{raw:?}");
            assert_eq!(s.fallbacks, vec![PROTECTED_PATHS]);
        }
    }

    #[test]
    fn nothing_is_protected_when_disabled() {
        let s = settings(&[(ENABLED, "false")]);
        assert!(!s.protects("/events"));
    }

    #[test]
    fn empty_logger_name_means_standard_error() {
        assert_eq!(settings(&[(LOGGER_NAME, " ")]).logger_name, None);
        assert_eq!(
            settings(&[(LOGGER_NAME, "my-logger")])
                .logger_name
                .as_deref(),
            Some("my-logger")
        );
    }

    #[test]
    fn refresh_mode_is_eligible_unless_fixed() {
        assert_eq!(
            settings(&[(REFRESH_MODE, "fixed")]).refresh_mode,
            RefreshMode::Fixed
        );
        assert_eq!(
            settings(&[(REFRESH_MODE, " eligible ")]).refresh_mode,
            RefreshMode::Eligible
        );
        let garbage = settings(&[(REFRESH_MODE, "sometimes")]);
        assert_eq!(garbage.refresh_mode, RefreshMode::Eligible);
        assert_eq!(garbage.fallbacks, vec![REFRESH_MODE]);
    }

    #[test]
    fn waiting_status_is_one_of_the_allowed_codes() {
        for (raw, want) in [("200", 200), ("202", 202), (" 429 ", 429), ("503", 503)] {
            assert_eq!(settings(&[(WAITING_STATUS, raw)]).waiting_status, want);
        }
        for raw in ["404", "500", "abc", ""] {
            let s = settings(&[(WAITING_STATUS, raw)]);
            assert_eq!(s.waiting_status, 200, "{raw:?}");
            assert_eq!(s.fallbacks, vec![WAITING_STATUS]);
        }
    }

    #[test]
    fn word_settings_ignore_case_and_fall_back_on_garbage() {
        let s = settings(&[
            (SESSION_MODE, "Fixed"),
            (COOKIE_HTTPONLY, "FALSE"),
            (COOKIE_SAMESITE, "strict"),
            (COOKIE_SECURE, "Always"),
        ]);
        assert_eq!(s.session_mode, SessionMode::Fixed);
        assert!(!s.cookie_httponly);
        assert_eq!(s.cookie_samesite, SameSite::Strict);
        assert_eq!(s.cookie_secure, SecureWhen::Always);
        assert!(s.fallbacks.is_empty());
        let g = settings(&[
            (SESSION_MODE, "forever"),
            (COOKIE_HTTPONLY, "yes"),
            (COOKIE_SAMESITE, "loose"),
            (COOKIE_SECURE, "sometimes"),
        ]);
        assert_eq!(
            (
                g.session_mode,
                g.cookie_httponly,
                g.cookie_samesite,
                g.cookie_secure
            ),
            (SessionMode::Sliding, true, SameSite::Lax, SecureWhen::Auto)
        );
        assert_eq!(
            g.fallbacks,
            vec![
                SESSION_MODE,
                COOKIE_HTTPONLY,
                COOKIE_SAMESITE,
                COOKIE_SECURE
            ]
        );
    }

    #[test]
    fn page_language_is_auto_or_a_language_the_pages_speak() {
        assert_eq!(settings(&[]).page_language, None);
        assert_eq!(settings(&[(PAGE_LANGUAGE, " Auto ")]).page_language, None);
        assert_eq!(
            settings(&[(PAGE_LANGUAGE, "DE")]).page_language,
            Some(Language::De)
        );
        let bad = settings(&[(PAGE_LANGUAGE, "klingon")]);
        assert_eq!(
            (bad.page_language, bad.fallbacks),
            (None, vec![PAGE_LANGUAGE])
        );
    }

    #[test]
    fn active_key_is_kept_even_when_empty() {
        // An empty active_key is reported by the signer, not silently replaced.
        assert_eq!(settings(&[(ACTIVE_KEY, "")]).active_key, "");
        assert_eq!(settings(&[(ACTIVE_KEY, "key2")]).active_key, "key2");
    }

    /// The keys [`Settings::for_request`] looks up in `pairs` for a request for
    /// `path`, each with the number of times it was looked up.
    fn keys_read(pairs: &[(&str, &str)], path: &str) -> BTreeMap<String, usize> {
        let map = crate::settings::layout::store_entries(pairs.iter().copied());
        let read = RefCell::new(BTreeMap::new());
        let lookup = Remembered::new(|key: &str| {
            *read.borrow_mut().entry(key.to_string()).or_default() += 1;
            map.get(key).cloned()
        });
        Settings::for_request(&lookup, None, path, 0);
        drop(lookup);
        read.into_inner()
    }

    /// The store keys holding the settings `keys`, and the `rooms` index, each
    /// looked up once: a setting stored as a member of `settings` is that key's.
    fn read_once(keys: &[&str]) -> BTreeMap<String, usize> {
        use crate::settings::layout::{SETTINGS, is_member};
        keys.iter()
            .map(|&k| if is_member(k) { SETTINGS } else { k })
            .chain([ROOMS])
            .map(|k| (k.to_string(), 1))
            .collect()
    }

    /// A store with a usable value for every key, `extra` on top.
    fn full_store<'a>(extra: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
        let mut pairs = vec![
            (ENABLED, "true"),
            (PROTECTED_PATHS, "/events"),
            (ALLOW_PERCENTAGE, "50"),
            (CONTROLLER_TIMEOUT, "60"),
            (ALLOW_PERCENTAGE_FALLBACK, "5"),
            (WAIT_PERIOD_DURATION, "30"),
            (ALLOW_PERIOD_TIMEOUT, "3600"),
            (COOKIE_LIFETIME, "7200"),
            (ACTIVE_KEY, "key1"),
            (REDEEM_WINDOW, "30"),
            (WAITING_STATUS, "200"),
            (SESSION_MODE, "sliding"),
            (COOKIE_HTTPONLY, "true"),
            (COOKIE_SAMESITE, "Lax"),
            (COOKIE_SECURE, "auto"),
            (REFRESH_MODE, "eligible"),
            (LOGGER_NAME, "log"),
            (DRAW_GRID, "address"),
            (UID_IPV6_PREFIX, "64"),
            (FIFO_CUTOFF, "1700000000000"),
            (FIFO_RATE, "1000"),
            (FIFO_HOLD, "300"),
            (QUEUE_OPENS_AT, "1700000000"),
        ];
        pairs.extend_from_slice(extra);
        pairs
    }

    #[test]
    fn from_lookup_reads_every_key_once() {
        let read = RefCell::new(Vec::new());
        Settings::from_lookup(|key| {
            read.borrow_mut().push(key.to_string());
            None
        });
        let mut read = read.into_inner();
        read.sort();
        let mut all: Vec<String> = KEYS.iter().map(|k| k.to_string()).collect();
        all.sort();
        assert_eq!(read, all);
    }

    #[test]
    fn a_request_the_room_does_not_apply_to_reads_the_bypass_keys() {
        for (store, path) in [
            (full_store(&[(ENABLED, "false")]), "/events"),
            (full_store(&[]), "/about"),
            (full_store(&[(QUEUEING_METHOD, "fifo")]), "/about"),
            (
                full_store(&[(CONTROLLER_HEARTBEAT, "1700000000")]),
                "/about",
            ),
            (vec![], "/events"),
        ] {
            assert_eq!(
                keys_read(&store, path),
                read_once(&BYPASS_KEYS),
                "{path} {store:?}"
            );
        }
    }

    #[test]
    fn a_request_the_room_applies_to_reads_every_key_once() {
        for store in [
            full_store(&[]),
            full_store(&[(QUEUEING_METHOD, " FIFO ")]),
            full_store(&[(CONTROLLER_HEARTBEAT, "soon")]),
        ] {
            assert_eq!(
                keys_read(&store, "/events/1"),
                read_once(&[&KEYS[..], &[crate::settings::keys::EVENTS]].concat()),
                "{store:?}"
            );
        }
    }

    #[test]
    fn a_request_is_read_as_from_lookup_reads_its_keys() {
        let pairs = [
            (ENABLED, "true"),
            (FIFO_CUTOFF, "soon"),
            (CONTROLLER_TIMEOUT, "0"),
            (UID_IPV6_PREFIX, "7"),
            (WAITING_STATUS, "404"),
        ];
        let map: HashMap<&str, &str> = pairs.iter().copied().collect();
        let lookup = |key: &str| map.get(key).map(|v| v.to_string());
        let full = Settings::from_lookup(lookup);
        let stored = crate::settings::layout::store_entries(pairs);
        let stored = |key: &str| stored.get(key).cloned();
        assert_eq!(
            full.fallbacks,
            vec![
                CONTROLLER_TIMEOUT,
                WAITING_STATUS,
                UID_IPV6_PREFIX,
                FIFO_CUTOFF
            ]
        );
        let remembered = Remembered::new(stored);
        assert_eq!(Settings::for_request(&remembered, None, "/events", 0), full);
        assert_eq!(Settings::from_store(&Remembered::new(stored)), full);
        // Outside the room: the bypass keys, every other key as if missing.
        let bypass = Settings::for_request(&Remembered::new(stored), None, "/about", 0);
        assert_eq!(bypass.fallbacks, vec![CONTROLLER_TIMEOUT, UID_IPV6_PREFIX]);
        assert_eq!(
            bypass,
            Settings::from_lookup(|key| lookup(key).filter(|_| BYPASS_KEYS.contains(&key)))
        );
    }

    // The reader holds to the settings table's rows.

    fn read_one(key: &str, raw: &str) -> Settings {
        Settings::from_lookup(|k| (k == key).then(|| raw.to_string()))
    }

    #[test]
    fn keys_come_from_the_rows_once_each() {
        assert_eq!(KEYS, keys(&ROWS));
        let all: BTreeSet<&str> = ROWS.iter().chain(&OTHER_ROWS).map(|r| r.key).collect();
        assert_eq!(all.len(), ROWS.len() + OTHER_ROWS.len(), "a key twice");
        let own: Vec<&str> = ROWS
            .iter()
            .filter(|r| r.stored == Stored::Own)
            .map(|r| r.key)
            .collect();
        assert_eq!(OWN_KEYS.to_vec(), own);
    }

    /// Each row's default is the reader's: its text (`` `text` ``, or `none` when
    /// only a missing key reads as it), then at most a note in parentheses.
    #[test]
    fn each_rows_default_is_the_readers() {
        let defaults = Settings::default();
        for row in ROWS {
            let shown = match defaults.stored(row.key) {
                Some(text) => format!("`{text}`"),
                None => "none".to_string(),
            };
            let note = row.default.strip_prefix(&shown);
            assert!(
                note.is_some_and(|n| n.is_empty() || (n.starts_with(" (") && n.ends_with(')'))),
                "{}: the reader's default is {shown}, the row says {}",
                row.key,
                row.default
            );
            // The text reads back as the default, with no fallback.
            if let Some(text) = defaults.stored(row.key) {
                assert_eq!(read_one(row.key, &text), defaults, "{}: {text:?}", row.key);
            }
        }
        let fifo = Settings::from_lookup(|k| (k == QUEUEING_METHOD).then(|| "fifo".into()));
        assert_eq!(fifo.stored(ALLOW_PERCENTAGE).as_deref(), Some("50"));
        let row = ROWS.iter().find(|r| r.key == ALLOW_PERCENTAGE).unwrap();
        assert!(row.default.contains("`50` in FIFO mode"));
    }

    /// A valid sample reads as written: no fallback, and the text of what it read
    /// reads the same. An invalid one falls back or reads as something else,
    /// except an `active_key`, which the reader keeps and the signer refuses.
    #[test]
    fn valid_samples_read_as_written_and_invalid_ones_do_not() {
        for row in ROWS {
            assert!(!row.samples.valid.is_empty(), "{}", row.key);
            assert!(!row.samples.invalid.is_empty(), "{}", row.key);
            for raw in row.samples.valid {
                let s = read_one(row.key, raw);
                assert!(s.fallbacks.is_empty(), "{}: {raw:?}", row.key);
                let text = s.stored(row.key);
                let again = text
                    .as_deref()
                    .map_or_else(Settings::default, |t| read_one(row.key, t));
                assert_eq!(again, s, "{}: {raw:?} as {text:?}", row.key);
            }
            for raw in row.samples.invalid {
                let s = read_one(row.key, raw);
                let as_written = s.stored(row.key).as_deref() == Some(raw.trim());
                assert!(
                    s.fallbacks.contains(&row.key) || !as_written || row.key == ACTIVE_KEY,
                    "{}: {raw:?}",
                    row.key
                );
            }
        }
    }
}
