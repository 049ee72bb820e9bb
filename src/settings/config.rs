//! The settings of `waitingroom_config`: one row per key, the one place where each
//! setting is named, typed, read, defaulted, written and described.
//!
//! A row ([`crate::settings::row::Row`]) gives a key its field of [`Settings`], the
//! reader's method and parser, its default (an expression that may use the keys
//! read before it) and how the reference shows it, its written form, where it is
//! stored, the parts it plays ([`Role`]), what a bad value does, what an unreadable
//! one reads as, its meaning (the field's doc comment) and values worth trying.
//! From the rows come the reader ([`Settings::from_lookup`]), [`Settings::stored`],
//! the key lists ([`KEYS`], [`BYPASS_KEYS`], [`CONTROLLER_KEYS`],
//! [`SERVICE_WIDE_KEYS`], [`EVENT_FIXED_KEYS`], [`OWN_KEYS`]), [`when_unreadable`],
//! `wrctl config check`'s listing, the fuzz inputs and the key table of
//! `docs/operate/configuration.md` ([`crate::settings::table`]).
//!
//! A value that is missing or unusable never fails a request: it falls back, and
//! the key is named in the reader's fallbacks so the log can say so.

use crate::bots::challenge::{BotChallenge, ChallengeSettings};
use crate::bots::toll;
use crate::settings::draw_grid::DrawGrid;
use crate::settings::identity::{
    HashKey, Identity, LoginKey, WhoMayWait, login_keys_text, parse_login_keys,
};
use crate::settings::language::Language;
use crate::settings::percentage::Percentage;
use crate::settings::refresh_mode::RefreshMode;
use crate::settings::row::{
    DURATIONS, Pick, Reader, Role, Stored, Words, count_where, keys_where, list, optional, rows,
    samples, text, word,
};
use crate::settings::rules::{self, Cidr};
use crate::settings::uid_ipv6_prefix::{FULL_IPV6_PREFIX, MIN_IPV6_PREFIX};
use crate::settings::unix_time;

/// Highest `pop_new_sessions_per_minute`.
pub const MAX_POP_NEW_SESSIONS_PER_MINUTE: u32 = 10_000_000;

/// Longest config-store key Fastly accepts: 255 characters in its guide ("Working with
/// config stores", docs/operate/platform-limits.md), where its API and Viceroy say 256;
/// the lower holds under either.
pub const MAX_KEY_LEN: usize = 255;

/// Status codes a waiting page may use.
pub const WAITING_STATUSES: [u16; 4] = [200, 202, 429, 503];

/// Largest `queue_opens_at` accepted, Unix seconds (the year 5138): a larger one
/// is most likely milliseconds, which would hold places for millennia.
pub const MAX_QUEUE_OPENS_AT: u64 = 99_999_999_999;

/// Longest accepted duration (one year): larger values fall back to the default,
/// which keeps every expiry sum far from overflow.
pub const MAX_DURATION: u64 = 365 * 24 * 3600;

/// How long an admitted visitor keeps access.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionMode {
    /// Every allowed request renews the session (the VCL; the default).
    Sliding,
    /// The session ends `allow_period_timeout` after the first admission.
    Fixed,
}

impl Words for SessionMode {
    const WORDS: &'static [(&'static str, Self)] = &[
        ("sliding", SessionMode::Sliding),
        ("fixed", SessionMode::Fixed),
    ];
}

/// How waiting visitors are admitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueueingMethod {
    /// A lottery at each draw (the VCL; the default).
    Random,
    /// In order of arrival, up to `fifo_cutoff`.
    Fifo,
}

impl Words for QueueingMethod {
    const WORDS: &'static [(&'static str, Self)] = &[
        ("random", QueueingMethod::Random),
        ("fifo", QueueingMethod::Fifo),
    ];
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

impl Words for SameSite {
    const WORDS: &'static [(&'static str, Self)] = &[
        ("Lax", SameSite::Lax),
        ("Strict", SameSite::Strict),
        ("None", SameSite::None),
    ];
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

impl Words for SecureWhen {
    const WORDS: &'static [(&'static str, Self)] = &[
        ("auto", SecureWhen::Auto),
        ("always", SecureWhen::Always),
        ("never", SecureWhen::Never),
    ];
}

impl Words for RefreshMode {
    const WORDS: &'static [(&'static str, Self)] = &[
        ("eligible", RefreshMode::Eligible),
        ("fixed", RefreshMode::Fixed),
    ];
}

impl Words for DrawGrid {
    const WORDS: &'static [(&'static str, Self)] =
        &[("address", DrawGrid::Address), ("global", DrawGrid::Global)];
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

/// Why a setting that only shapes the room's answer may read as missing.
const SHAPES_THE_ANSWER: &str = "it shapes the answer, not who enters";

rows! {
    /// The room runs only when this is exactly `true` (surrounding spaces ignored).
    ENABLED enabled: bool {
        stored: Own,
        roles: [Bypass, EventFixed],
        read: value(|raw| Some(raw.trim() == "true")),
        default: false => "`false` (off)",
        write: text,
        when_bad: "anything else: off, every request passes to the origin",
        unreadable: holds_as("true"),
        samples: samples(&["true", " true ", "false"], &["TRUE", ""]),
    }
    /// Comma-separated path prefixes the room protects (a plain prefix match, like
    /// the VCL's `^/(events|checkout)`).
    PROTECTED_PATHS protected_paths: Vec<String> {
        stored: Member,
        roles: [Bypass, EventFixed],
        read: value(parse_paths),
        default: vec!["/events".to_string(), "/checkout".to_string()] => "`/events,/checkout`",
        write: list,
        when_bad: "an empty list, or an entry not starting with `/`: the default",
        unreadable: holds_as("/"),
        samples: samples(&["/events,/checkout", "/", "/events", " /a , /b "], &["events", ",", ""]),
    }
    /// `random`: the lottery; `fifo`: first in, first out up to `fifo_cutoff`
    /// ([FIFO](../reference/fifo.md)).
    QUEUEING_METHOD queueing_method: QueueingMethod {
        stored: Member,
        roles: [],
        read: word(),
        default: QueueingMethod::Random => "`random`",
        write: word,
        when_bad: "anything else: `random`",
        samples: samples(&["fifo", "random", " FIFO "], &["lifo"]),
    }
    /// Percentage of eligible wait tokens each draw admits, up to four decimals:
    /// `0` denies, `100` admits everyone. Written by the controller when one
    /// runs; in FIFO mode only its ends count ([more](#more-on-some-settings)).
    ALLOW_PERCENTAGE allow_percentage: Percentage {
        stored: Own,
        roles: [Controller],
        read: value(|raw| raw.parse().ok()),
        // In FIFO mode the percentage keeps only its ends: a missing or unreadable
        // one must not open the room to everyone (the cutoff decides).
        default: match queueing_method {
            QueueingMethod::Random => Percentage::HUNDRED,
            QueueingMethod::Fifo => Percentage::whole(50),
        } => "`100` (`50` in FIFO mode)",
        write: text,
        when_bad: "not a number (`abc`, `50%`, `.5`): the default (fail open, as the VCL); \
                   numbers clamped to 0–100, cut after the fourth decimal",
        samples: samples(
            &["50", "1", "99", "0", "100", "12.5", "0.5", "0.0001", "99.99999"],
            &["250", "-5", "abc", "", ".5", "5.", "-0.5", "9223372036854775808", "-9223372036854775809"],
        ),
    }
    /// Time of the controller's last write, Unix seconds or RFC 3339. Absent: manual
    /// tuning, no alert.
    CONTROLLER_HEARTBEAT controller_heartbeat: Heartbeat {
        stored: Own,
        roles: [Bypass, Controller],
        read: value(|raw| {
            Some(unix_time::parse_seconds(raw).map_or(Heartbeat::Unreadable, Heartbeat::At))
        }),
        default: Heartbeat::Absent => "none",
        write: |beat: &Heartbeat| match beat {
            Heartbeat::Absent => None,
            Heartbeat::At(t) => text(t),
            Heartbeat::Unreadable => Some("unreadable".to_string()),
        },
        when_bad: "not a time: stale at once (next row)",
        // Not a time: a stale controller, so `allow_percentage_fallback` applies.
        unreadable: holds_as("unreadable"),
        unset: "none (manual tuning)",
        unit: UnixSeconds,
        samples: samples(&["1700000000", "1700003600", "0"], &["soon", ""]),
    }
    /// Seconds after which the heartbeat is stale (older than this, or more than this
    /// in the future): every log line says `ALERT=controller-stale` and
    /// `allow_percentage_fallback` applies.
    CONTROLLER_TIMEOUT controller_timeout: u64 {
        stored: Member,
        roles: [Bypass],
        read: value(parse_duration),
        default: 120 => "`120`",
        write: text,
        when_bad: DURATION_WHEN_BAD,
        unit: Seconds,
        samples: DURATIONS,
    }
    /// The percentage while the heartbeat is stale (same format). Unset:
    /// `allow_percentage` stays as last written (fail static).
    ALLOW_PERCENTAGE_FALLBACK allow_percentage_fallback: Option<Percentage> {
        stored: Member,
        roles: [],
        read: value(|raw| raw.parse().ok().map(Some)),
        default: None => "none",
        write: optional,
        when_bad: "not a number: unset (fail static)",
        unset: "none (fail static)",
        samples: samples(&["1", "0", "100", "0.5"], &["abc"]),
    }
    /// Seconds an admitted visitor keeps access after their last request
    /// ([sessions](../reference/how-it-works.md#4-sessions-one-win-one-session-lazy-renewal-sliding-or-fixed)).
    ALLOW_PERIOD_TIMEOUT allow_period_timeout: u64 {
        stored: Own,
        roles: [],
        read: value(parse_duration),
        default: 3600 => "`3600`",
        write: text,
        when_bad: DURATION_WHEN_BAD,
        unit: Seconds,
        samples: DURATIONS,
    }
    /// Seconds of one wait period `d`: a newcomer waits one to three periods (one to
    /// two on the global grid), a loser draws again two periods later.
    WAIT_PERIOD_DURATION wait_period_duration: u64 {
        stored: Own,
        roles: [],
        read: value(parse_duration),
        default: 30 => "`30`",
        write: text,
        when_bad: DURATION_WHEN_BAD,
        unit: Seconds,
        samples: DURATIONS,
    }
    /// `max-age` of the cookie, seconds.
    COOKIE_LIFETIME cookie_lifetime: u64 {
        stored: Own,
        roles: [],
        read: value(parse_duration),
        default: 7200 => "`7200`",
        write: text,
        when_bad: DURATION_WHEN_BAD,
        unit: Seconds,
        samples: DURATIONS,
    }
    /// Seconds after a wait token's expiry during which it may still be drawn; later
    /// it re-waits without a draw, so a copy of a winning token cannot start sessions
    /// forever.
    REDEEM_WINDOW redeem_window: Option<u64> {
        stored: Member,
        roles: [],
        read: value(|raw| parse_duration(raw).map(Some)),
        default: None => "none (one wait period)",
        write: optional,
        when_bad: DURATION_WHEN_BAD,
        unset: "none (one wait period)",
        unit: Seconds,
        samples: DURATIONS,
    }
    /// Id of the signing key that signs new tokens
    /// ([signing keys](#the-signing-keys-waitingroom_signingkeys)).
    ACTIVE_KEY active_key: String {
        stored: Own,
        roles: [EventFixed],
        read: value(|raw| Some(raw.trim().to_string())),
        default: "key1".to_string() => "`key1`",
        write: text,
        when_bad: "names no key, an empty key, or an id no store can hold: no token is \
                   issued, `ALERT=active-key-unusable` \
                   ([what still works](#when-active_key-is-unusable))",
        samples: samples(
            &["key1", "key1", "key2", " key1 "],
            &["empty", "key3", "k&1", "k!1", ""],
        ),
    }
    /// Log endpoint for the per-request line.
    LOGGER_NAME logger_name: Option<String> {
        stored: Own,
        roles: [Bypass, ServiceWide, EventFixed],
        read: value(|raw| Some(Some(raw.trim().to_string()).filter(|name| !name.is_empty()))),
        default: None => "none",
        write: optional,
        when_bad: "missing, empty or unknown: the line goes to standard error \
                   (`fastly log-tail`)",
        unreadable: as_missing("the line goes to standard error: who enters does not rest on it"),
        unset: "none (standard error)",
        samples: samples(&["testlog"], &["", " "]),
    }
    /// `eligible`: waiting pages come back when the visitor's next draw is due;
    /// `fixed`: every `wait_period_duration` seconds (the VCL). FIFO pages come
    /// back every `min(d, fifo_hold / 3)` s either way.
    REFRESH_MODE refresh_mode: RefreshMode {
        stored: Member,
        roles: [],
        read: word(),
        default: RefreshMode::Eligible => "`eligible`",
        write: word,
        when_bad: "anything else: `eligible`",
        samples: samples(&["eligible", "fixed", " fixed "], &["sometimes"]),
    }
    /// HTTP status of the two waiting pages (HTML and JSON): `200`, `202`, `429`
    /// or `503`. The deny page stays `200`.
    WAITING_STATUS waiting_status: u16 {
        stored: Member,
        roles: [],
        read: value(|raw| raw.trim().parse().ok().filter(|code| WAITING_STATUSES.contains(code))),
        default: 200 => "`200`",
        write: text,
        when_bad: "anything else: `200`",
        unreadable: as_missing(SHAPES_THE_ANSWER),
        samples: samples(&["200", "202", "429", "503"], &["404", "x"]),
    }
    /// `sliding`: a session ends between half and the whole `allow_period_timeout`
    /// after the last request; `fixed`: `allow_period_timeout` after the admission,
    /// whatever the activity ([more](#more-on-some-settings)).
    SESSION_MODE session_mode: SessionMode {
        stored: Member,
        roles: [],
        read: word(),
        default: SessionMode::Sliding => "`sliding`",
        write: word,
        when_bad: "anything else: `sliding`",
        samples: samples(&["sliding", "fixed", " Fixed "], &["forever"]),
    }
    /// `HttpOnly` on the cookie (`true`/`false`).
    COOKIE_HTTPONLY cookie_httponly: bool {
        stored: Member,
        roles: [],
        read: word(),
        default: true => "`true`",
        write: word,
        when_bad: "anything else: `true`",
        samples: samples(&["true", "false", "FALSE"], &["yes"]),
    }
    /// `SameSite` on the cookie: `Lax`, `Strict`, or `None` for rooms embedded in
    /// other sites (`None` is only sent with `Secure`; without it the cookie gets
    /// `Lax`).
    COOKIE_SAMESITE cookie_samesite: SameSite {
        stored: Member,
        roles: [],
        read: word(),
        default: SameSite::Lax => "`Lax`",
        write: word,
        when_bad: "anything else: `Lax`",
        samples: samples(&["Lax", "strict", "None"], &["loose"]),
    }
    /// `Secure` on the cookie: `auto` (when the client connection is TLS),
    /// `always`, `never`.
    COOKIE_SECURE cookie_secure: SecureWhen {
        stored: Member,
        roles: [],
        read: word(),
        default: SecureWhen::Auto => "`auto`",
        write: word,
        when_bad: "anything else: `auto`",
        samples: samples(&["auto", "always", "never"], &["maybe"]),
    }
    /// `address`: each address draws on its own grid, `FNV-1a-64(uid) mod 2d`
    /// seconds into every draw period; `global`: the VCL's slot boundaries
    /// ([the draw grid](../reference/how-it-works.md#7-the-draw-grid-and-a-refresh-aimed-at-the-draw)).
    DRAW_GRID draw_grid: DrawGrid {
        stored: Member,
        roles: [],
        read: word(),
        default: DrawGrid::Address => "`address`",
        write: word,
        when_bad: "anything else: `address`",
        samples: samples(&["address", "global", " Global "], &["slot"]),
    }
    /// Bits of an IPv6 visitor's address that identify them, 32–128 (a leading
    /// `/` allowed): `64` keeps a place across privacy-address changes. Changing
    /// it live voids every IPv6 visitor's token: set it before an event.
    UID_IPV6_PREFIX uid_ipv6_prefix: u8 {
        stored: Member,
        roles: [Bypass, ServiceWide, EventFixed],
        read: value(parse_ipv6_prefix),
        default: FULL_IPV6_PREFIX => "`128`",
        write: text,
        when_bad: "anything else: `128`",
        samples: samples(&["128", "64", "/64", "48", "32"], &["31", "129", "x"]),
    }
    /// Who a visitor is: `address` (their connection's, the VCL's) or `login` (a
    /// verified JWT from the site's sign-in, their address without one)
    /// ([identity](rooms.md#identity-from-the-sites-login)).
    IDENTITY identity: Identity {
        stored: Member,
        roles: [ServiceWide, EventFixed],
        read: word(),
        default: Identity::Address => "`address`",
        write: word,
        when_bad: "anything else: `address`",
        samples: samples(&["address", "login", " Login "], &["jwt"]),
    }
    /// Login: the token's required `iss`.
    LOGIN_ISSUER login_issuer: Option<String> {
        stored: Member,
        roles: [ServiceWide, EventFixed],
        read: value(non_empty),
        default: None => "none",
        write: optional,
        when_bad: "empty: none (every login refused, `login_refused=unconfigured`)",
        unset: "none (no login accepted)",
        samples: samples(&["https://id.example.com/"], &[""]),
    }
    /// Login: the audience the token's `aud` (text or list) must hold.
    LOGIN_AUDIENCE login_audience: Option<String> {
        stored: Member,
        roles: [ServiceWide, EventFixed],
        read: value(non_empty),
        default: None => "none",
        write: optional,
        when_bad: "empty: none (every login refused, `login_refused=unconfigured`)",
        unset: "none (no login accepted)",
        samples: samples(&["waiting-room"], &[""]),
    }
    /// Login: the claim that names the person.
    LOGIN_CLAIM login_claim: String {
        stored: Member,
        roles: [ServiceWide, EventFixed],
        read: value(|raw| non_empty(raw).flatten()),
        default: "sub".to_string() => "`sub`",
        write: text,
        when_bad: "empty: `sub`",
        samples: samples(&["sub", "email"], &[""]),
    }
    /// Login: the cookie holding the site's JWT for browsers (apps send
    /// `Authorization: Bearer`, read first).
    LOGIN_COOKIE login_cookie: Option<String> {
        stored: Member,
        roles: [ServiceWide, EventFixed],
        read: value(|raw| {
            let name = raw.trim();
            is_cookie_name(name).then(|| Some(name.to_string()))
        }),
        default: None => "none",
        write: optional,
        when_bad: "not a cookie name: none (`Authorization: Bearer` only)",
        unset: "none (`Authorization: Bearer` only)",
        samples: samples(&["session", "id_token"], &["a b", "x;y"]),
    }
    /// Login: `true` binds a person's place to their address as well, as the VCL
    /// advises: a move to another network starts again, a stolen login needs the
    /// address too.
    LOGIN_BINDS_ADDRESS login_binds_address: bool {
        stored: Member,
        roles: [ServiceWide, EventFixed],
        read: word(),
        default: false => "`false`",
        write: word,
        when_bad: "anything else: `false`",
        samples: samples(&["false", "true"], &["yes"]),
    }
    /// Login: the keys tokens are verified with, a JWKS (`wrctl login keys` strips
    /// a provider's): RS256 (`RSA`, 2048 bits or more), ES256 (`EC`, `P-256`), or
    /// HS256 (`oct`, its secret in the Secret Store `waitingroom_login` under its `kid`).
    LOGIN_KEYS login_keys: Vec<LoginKey> {
        stored: Member,
        roles: [ServiceWide, EventFixed],
        read: value(parse_login_keys),
        default: Vec::new() => "none",
        write: |keys: &Vec<LoginKey>| login_keys_text(keys),
        when_bad: "not a JWKS: none; a key of another type or `alg`, an RSA key under \
                   2048 bits, or an `oct` key holding its secret: that key ignored",
        unset: "none (no login accepted)",
        samples: samples(&[r#"{"keys":[{"kty":"oct","kid":"site"}]}"#], &["[]", r#"{"keys":[{"kty":"oct","kid":"s","k":"c2VjcmV0"}]}"#]),
    }
    /// Login: 64 hex digits, the key of the hash that names a person in tokens and
    /// logs (never the claim); unlike the signing keys it must not rotate.
    LOGIN_HASH_KEY login_hash_key: Option<HashKey> {
        stored: Member,
        roles: [ServiceWide, EventFixed],
        read: value(|raw| HashKey::parse(raw).map(Some)),
        default: None => "none",
        write: optional,
        when_bad: "not 64 hex digits: none (every login refused, `login_refused=unconfigured`)",
        unset: "none (no login accepted)",
        samples: samples(&["00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"], &["00", "xyz"]),
    }
    /// Who may wait in the room: `anyone`, `signed-in` (a verified login), or one
    /// audience, `<claim>=<value>` (`tier=presale`).
    WHO_MAY_WAIT who_may_wait: WhoMayWait {
        stored: Member,
        roles: [],
        read: value_or(WhoMayWait::parse, WhoMayWait::SignedIn),
        default: WhoMayWait::Anyone => "`anyone`",
        write: text,
        when_bad: "anything else: `signed-in`",
        samples: samples(&["anyone", "signed-in", "tier=presale"], &["=x", "members"]),
    }
    /// Where a visitor without the login a room asks for signs in: an `https://`
    /// URL, or a path on the site (`/login`); `{return}` in it becomes the request's
    /// own path, else `return_to=` is added. Without it browsers get the `401` apps do.
    SIGN_IN_URL sign_in_url: Option<String> {
        stored: Member,
        roles: [],
        read: value(|raw| {
            let url = raw.trim();
            // A path must not be `//host`, another site's.
            let on_the_site = url.starts_with('/') && !url.starts_with("//");
            ((url.starts_with("https://") || on_the_site)
                && url.len() <= 1024
                && !url.bytes().any(|b| b.is_ascii_control() || b == b' ' || b == b'\\'))
                .then(|| Some(url.to_string()))
        }),
        default: None => "none",
        write: optional,
        when_bad: "neither an `https://` URL nor a path (`//…`, a backslash, a space): none (`401`)",
        unset: "none (`401`)",
        samples: samples(
            &["https://shop.example/login", "https://id.example/sign-in?next={return}", "/login"],
            &["http://x", "//evil.example/login", "/\\evil.example", "login"],
        ),
    }
    /// FIFO: waiting visitors who arrived at or before this time are admitted: Unix
    /// milliseconds, or RFC 3339 to the millisecond. Written by the controller, or
    /// by hand.
    FIFO_CUTOFF fifo_cutoff: Option<u64> {
        stored: Own,
        roles: [Controller],
        read: value(|raw| unix_time::parse_millis(raw).map(Some)),
        default: None => "none",
        write: optional,
        when_bad: "neither, or before 1970: none (nobody admitted by FIFO, \
                   `ALERT=fifo-no-cutoff`)",
        unset: "none (nobody admitted by FIFO)",
        unit: UnixMillis,
        samples: samples(
            &["1700000000000", "1700030000000", "1700070000000", "0", "18446744073709551615"],
            &["-1", "soon"],
        ),
    }
    /// FIFO: arrival milliseconds the cutoff passes per second (up to three
    /// decimals), for the visitors' expected time of entry.
    FIFO_RATE fifo_rate: Option<FifoRate> {
        stored: Own,
        roles: [Controller],
        read: value(|raw| raw.parse().ok().map(Some)),
        default: None => "none",
        write: optional,
        when_bad: "not a number: none (entry time unknown)",
        unreadable: as_missing("only the estimate of a place's entry time rests on it"),
        unset: "none (entry time unknown)",
        unit: MillisPerSecond,
        samples: samples(&["1000", "1.5", "0", "0.001"], &["x", "-2"]),
    }
    /// FIFO: seconds a waiting visitor's place is held after their last request.
    FIFO_HOLD fifo_hold: u64 {
        stored: Member,
        roles: [],
        read: value(parse_duration),
        default: 300 => "`300`",
        write: text,
        when_bad: DURATION_WHEN_BAD,
        unit: Seconds,
        samples: DURATIONS,
    }
    /// FIFO: when the line opens, Unix seconds or RFC 3339; earlier arrivals form
    /// the pre-queue.
    QUEUE_OPENS_AT queue_opens_at: Option<u64> {
        stored: Member,
        roles: [],
        read: value(|raw| {
            unix_time::parse_seconds(raw)
                .filter(|&t| t <= MAX_QUEUE_OPENS_AT)
                .map(Some)
        }),
        default: None => "none",
        write: optional,
        when_bad: "neither, before 1970, or above 99,999,999,999 (milliseconds by mistake): \
                   none",
        unset: "none (no pre-queue)",
        unit: UnixSeconds,
        samples: samples(&["1700000000", "1700040000", "0"], &["18446744073709551615", "x"]),
    }
    /// Random mode: new sessions each POP starts in a minute at most; one over it
    /// waits on, as after a loss (`transition=ceiling-reached`). Needs Fastly's
    /// Edge Rate Limiting ([more](#more-on-some-settings)).
    POP_NEW_SESSIONS_PER_MINUTE pop_new_sessions_per_minute: Option<u32> {
        stored: Member,
        roles: [],
        read: value(|raw| {
            raw.parse::<u32>()
                .ok()
                .filter(|n| (1..=MAX_POP_NEW_SESSIONS_PER_MINUTE).contains(n))
                .map(Some)
        }),
        default: None => "none",
        write: optional,
        when_bad: "not a whole number in 1–10,000,000: none",
        unset: "none (no ceiling)",
        samples: samples(&["2500", "1", "10000000"], &["0", "-5", "2.5", "10000001"]),
    }
    /// `true`: hold everyone: newcomers wait, nobody is drawn or passes a FIFO
    /// cutoff, live sessions go on (`transition=queue-all`); unlike
    /// `allow_percentage = 0`, which denies.
    QUEUE_ALL queue_all: bool {
        stored: Member,
        roles: [],
        read: word(),
        default: false => "`false`",
        write: word,
        when_bad: "anything else: `false`",
        unreadable: holds_as("true"),
        samples: samples(&["false", "true", " TRUE "], &["yes"]),
    }
    /// Comma-separated address blocks (CIDR, IPv4 or IPv6) that go straight to the
    /// origin: staff, monitoring ([rules](rooms.md#bypass-rules)).
    BYPASS_ADDRESSES bypass_addresses: Vec<Cidr> {
        stored: Member,
        roles: [EventFixed],
        read: list(|item: &str| item.parse().ok()),
        default: Vec::new() => "none",
        write: list,
        when_bad: "a bad block, or one holding everyone (`/0`): that block ignored",
        samples: samples(&["192.0.2.0/30", "2001:db8::/32, 198.51.100.0/24"], &["0.0.0.0/0", "192.0.2.0/33", "staff"]),
    }
    /// Comma-separated path prefixes inside the room that go straight to the
    /// origin: assets, health checks
    /// ([the path the origin sees](../reference/how-it-works.md#1-scope)).
    BYPASS_PATHS bypass_paths: Vec<String> {
        stored: Member,
        roles: [EventFixed],
        read: list(|item: &str| {
            (item.starts_with('/') && !rules::covers_the_room(item, &protected_paths))
                .then(|| item.to_string())
        }),
        default: Vec::new() => "none",
        write: list,
        when_bad: "a prefix of one of the room's own paths, or not starting with `/`: that \
                   prefix ignored",
        samples: samples(&["/events/static/", "/events/health, /checkout/assets/"], &["/", "/events", "static/"]),
    }
    /// Signed passes issued before this time (Unix seconds or RFC 3339) are
    /// refused ([passes](rooms.md#signed-passes)).
    PASSES_NOT_BEFORE passes_not_before: Option<u64> {
        stored: Member,
        roles: [EventFixed],
        read: value(|raw| unix_time::parse_seconds(raw).map(Some)),
        default: None => "none",
        write: optional,
        when_bad: "not a time: none",
        unit: UnixSeconds,
        samples: samples(&["1700000000", "2023-11-14T22:13:20Z"], &["soon"]),
    }
    /// The built-in pages' language: `auto` (the visitor's `Accept-Language`), or
    /// `en`, `de`, `fr`, `es`, `it`, `pt` ([pages](pages.md#per-language-pages)).
    PAGE_LANGUAGE page_language: Option<Language> {
        stored: Member,
        roles: [],
        read: value(|raw| match raw.trim() {
            text if text.eq_ignore_ascii_case("auto") => Some(None),
            text => Language::from_code(text).map(Some),
        }),
        default: None => "`auto`",
        write: |language: &Option<Language>| {
            Some(language.map_or("auto", Language::code).to_string())
        },
        when_bad: "anything else: `auto`",
        unreadable: as_missing(SHAPES_THE_ANSWER),
        samples: samples(&["auto", "de", " FR "], &["klingon"]),
    }
    /// The bot toll: bits of proof of work, 0–32, a wait token's holder pays
    /// before its first draw (FIFO: admission); each bit doubles the work
    /// ([the bot toll](../reference/bot-toll.md)).
    BOT_TOLL_BITS bot_toll_bits: u8 {
        stored: Member,
        roles: [],
        read: value(|raw| toll::parse_bits(raw.trim())),
        default: 0 => "`0` (off)",
        write: text,
        when_bad: "anything else: `0`",
        // More bits than anyone pays: a wait token issued now is held.
        unreadable: holds_as("32"),
        samples: samples(&["0", "8", " 12 ", "32"], &["33", "08", "-1"]),
    }
    /// An external challenge (Turnstile or hCaptcha) instead of the proof of work:
    /// `{"provider":"turnstile","site_key":"…"}`
    /// ([an external challenge](../reference/bot-toll.md#an-external-challenge-instead)).
    BOT_CHALLENGE bot_challenge: BotChallenge {
        stored: Member,
        roles: [],
        // Never a fallback to "off": an unreadable challenge holds every due draw.
        read: value_or(
            |raw| ChallengeSettings::parse(raw).ok().map(BotChallenge::On),
            BotChallenge::Unreadable
        ),
        default: BotChallenge::Off => "none (off)",
        write: |challenge: &BotChallenge| match challenge {
            BotChallenge::Off => None,
            BotChallenge::On(c) => Some(format!(
                r#"{{"provider":"{}","site_key":"{}","when_down":"{}"}}"#,
                c.provider,
                c.site_key,
                c.when_down.name()
            )),
            BotChallenge::Unreadable => Some("unreadable".to_string()),
        },
        when_bad: "unreadable: still on, every due draw is held",
        // Not a challenge's JSON: held as an unreadable challenge.
        unreadable: holds_as("unreadable"),
        unset: "none (off)",
        samples: samples(
            &[
                r#"{"provider":"turnstile","site_key":"k-1"}"#,
                r#"{"provider":"hcaptcha","site_key":"k_2","when_down":"open"}"#,
            ],
            &["turnstile", r#"{"provider":"turnstyle","site_key":"k"}"#],
        ),
    }
    /// Comma-separated page-store keys that hold a custom page: the room looks up
    /// no other ([pages](pages.md#per-language-pages)).
    CUSTOM_PAGES custom_pages: Vec<String> {
        stored: Member,
        roles: [ServiceWide, EventFixed],
        read: list(|key: &str| {
            (key.len() <= MAX_KEY_LEN && !key.contains(char::is_whitespace))
                .then(|| key.to_string())
        }),
        default: Vec::new() => "none",
        write: list,
        when_bad: "a key with a space or over 255 bytes: that key ignored",
        unreadable: as_missing(SHAPES_THE_ANSWER),
        samples: samples(&["startwaiting", "startwaiting.fr, deny"], &["start waiting"]),
    }
}

/// The key of the named rooms' index ([`crate::settings::room::Index`]).
pub const ROOMS: &str = "rooms";
/// The key of the scheduled events ([`crate::settings::events::Schedule`]).
pub const EVENTS: &str = "events";

/// What a bad duration does.
const DURATION_WHEN_BAD: &str = "not a whole number in 1–31536000: the default";

/// Every key the room reads from `waitingroom_config`, in the rows' order.
pub const KEYS: [&str; ROWS.len()] = keys_where(ROWS, Pick::All);
/// The settings stored under keys of their own, in order.
pub const OWN_KEYS: [&str; count_where(ROWS, Pick::Stored(Stored::Own))] =
    keys_where(ROWS, Pick::Stored(Stored::Own));
/// The keys a request the room does not apply to needs, the edge's first tier.
pub const BYPASS_KEYS: [&str; count_where(ROWS, Pick::Role(Role::Bypass))] =
    keys_where(ROWS, Pick::Role(Role::Bypass));
/// The keys the controller writes (for a named room, `room.<name>.<key>`).
pub const CONTROLLER_KEYS: [&str; count_where(ROWS, Pick::Role(Role::Controller))] =
    keys_where(ROWS, Pick::Role(Role::Controller));
/// The keys a named room takes from the service.
pub const SERVICE_WIDE_KEYS: [&str; count_where(ROWS, Pick::Role(Role::ServiceWide))] =
    keys_where(ROWS, Pick::Role(Role::ServiceWide));
/// The keys an event cannot change.
pub const EVENT_FIXED_KEYS: [&str; count_where(ROWS, Pick::Role(Role::EventFixed))] =
    keys_where(ROWS, Pick::Role(Role::EventFixed));

/// The row of `key`, if it is a setting.
pub fn row(key: &str) -> Option<&'static crate::settings::row::Row> {
    ROWS.iter().find(|row| row.key == key)
}

/// What a setting whose lookup failed reads as ([`Unreadable::reading`]; `None`: as
/// missing, its default).
pub fn when_unreadable(key: &str) -> Option<String> {
    row(key)?.unreadable.reading().map(str::to_string)
}

/// Whether a failed lookup of `key` holds the request ([`Unreadable::Holds`]): a
/// setting's row says, a named room's controller key (`room.<name>.<key>`) as its
/// setting; every other key (`settings`, `rooms`, `events`, `room.<name>`) holds.
pub fn holds_when_unreadable(key: &str) -> bool {
    let setting = key
        .strip_prefix("room.")
        .and_then(|rest| rest.split_once('.'))
        .map_or(key, |(_, setting)| setting);
    row(setting).is_none_or(|row| row.unreadable.holds())
}

impl Default for Settings {
    /// The settings an empty store yields.
    fn default() -> Self {
        Settings::from_lookup(|_| None)
    }
}

impl Settings {
    /// Reads every setting through `lookup` (key → stored value), applying the
    /// documented defaults and fallbacks.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Settings {
        Settings::read(&lookup).0
    }

    /// Reads every setting through `lookup`, and names the keys whose stored
    /// value was present but unusable (each took its default), in the rows' order.
    pub fn read(lookup: &dyn Fn(&str) -> Option<String>) -> (Settings, Vec<&'static str>) {
        let mut reader = Reader::new(lookup);
        let settings = Settings::read_rows(&mut reader);
        (settings, reader.fallbacks)
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

    /// Whether the room applies to a request for `path` (the URL path, without query).
    pub fn protects(&self, path: &str) -> bool {
        self.enabled
            && self
                .protected_paths
                .iter()
                .any(|prefix| path.starts_with(prefix.as_str()))
    }
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

/// Text, trimmed, that is not empty.
fn non_empty(raw: &str) -> Option<Option<String>> {
    let text = raw.trim();
    (!text.is_empty()).then(|| Some(text.to_string()))
}

/// A cookie's name (RFC 6265's token): visible ASCII but separators.
fn is_cookie_name(name: &str) -> bool {
    (1..=255).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_graphic() && !b"()<>@,;:\\\"/[]?={}".contains(&b))
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

    use crate::settings::context::RequestContext;
    use crate::settings::room_settings::Remembered;
    use crate::settings::table::OTHER_ROWS;

    /// Settings as read, with the keys that fell back.
    #[derive(Debug, PartialEq)]
    struct Read {
        settings: Settings,
        fallbacks: Vec<&'static str>,
    }

    impl std::ops::Deref for Read {
        type Target = Settings;
        fn deref(&self) -> &Settings {
            &self.settings
        }
    }

    fn read(lookup: impl Fn(&str) -> Option<String>) -> Read {
        let (settings, fallbacks) = Settings::read(&lookup);
        Read {
            settings,
            fallbacks,
        }
    }

    fn settings(pairs: &[(&str, &str)]) -> Read {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        read(|k| map.get(k).cloned())
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

    #[test]
    fn a_custom_page_key_over_255_bytes_is_ignored() {
        let (longest, over) = ("p".repeat(255), "q".repeat(256));
        let listed = format!("{longest},{over},deny");
        let read = settings(&[(CUSTOM_PAGES, &listed)]);
        assert_eq!(read.custom_pages, [longest.as_str(), "deny"]);
    }

    /// The keys [`RequestContext::for_request`] looks up in `pairs` for a request for
    /// `path`, each with the number of times it was looked up.
    fn keys_read(pairs: &[(&str, &str)], path: &str) -> BTreeMap<String, usize> {
        let map = crate::settings::layout::store_entries(pairs.iter().copied());
        let read = RefCell::new(BTreeMap::new());
        let lookup = Remembered::new(|key: &str| {
            *read.borrow_mut().entry(key.to_string()).or_default() += 1;
            map.get(key).cloned()
        });
        RequestContext::for_request(&lookup, None, path, 0);
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
        ] {
            assert_eq!(
                keys_read(&store, path),
                read_once(&BYPASS_KEYS),
                "{path} {store:?}"
            );
        }
        // Without `settings`, one lookup more tells a store of the earlier layout.
        let mut probed = read_once(&BYPASS_KEYS);
        probed.insert(PROTECTED_PATHS.to_string(), 1);
        assert_eq!(keys_read(&[], "/events"), probed);
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
                read_once(&[&KEYS[..], &[crate::settings::config::EVENTS]].concat()),
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
        let full = read(lookup);
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
        let full = RequestContext::of((full.settings, full.fallbacks));
        let remembered = Remembered::new(stored);
        assert_eq!(
            RequestContext::for_request(&remembered, None, "/events", 0),
            full
        );
        assert_eq!(RequestContext::from_store(&Remembered::new(stored)), full);
        // Outside the room: the bypass keys, every other key as if missing.
        let bypass = RequestContext::for_request(&Remembered::new(stored), None, "/about", 0);
        assert_eq!(bypass.fallbacks, vec![CONTROLLER_TIMEOUT, UID_IPV6_PREFIX]);
        assert_eq!(
            bypass.settings,
            Settings::from_lookup(|key| lookup(key).filter(|_| BYPASS_KEYS.contains(&key)))
        );
    }

    // The reader holds to the settings table's rows.

    fn read_one(key: &str, raw: &str) -> Read {
        read(|k| (k == key).then(|| raw.to_string()))
    }

    #[test]
    fn keys_come_from_the_rows_once_each() {
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
                assert_eq!(
                    read_one(row.key, &text),
                    read(|_| None),
                    "{}: {text:?}",
                    row.key
                );
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
                    .map_or_else(|| read(|_| None), |t| read_one(row.key, t));
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
