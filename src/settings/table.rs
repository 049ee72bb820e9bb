//! The settings table: one row per key of `waitingroom_config`, the one place where
//! each setting is named, placed, and described.
//!
//! A row says where the setting is stored (a key of its own, or a member of the
//! [`crate::settings::layout::SETTINGS`] object), its default as the reference
//! shows it, what it means, what a bad value does, and values worth trying
//! for it. From it come [`crate::settings::config::KEYS`] and
//! [`crate::settings::layout::OWN_KEYS`] (at compile time, so the edge carries
//! only the keys, none of the text), the keys and values `wrctl config check`
//! prints, the fuzz inputs' settings, and the key table of
//! `docs/operate/configuration.md` ([`reference()`]). The reader
//! ([`crate::settings::config::Settings::from_lookup`]) keeps each key's parser;
//! the tests hold it to the rows: it reads exactly their keys, its defaults are
//! theirs ([`crate::settings::config::Settings::stored`]), and their valid samples read as written.

use std::fmt::Write as _;

use crate::settings::keys::*;

/// Where a setting is stored in `waitingroom_config`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stored {
    /// Under a key of its own.
    Own,
    /// As a member of the JSON object under [`crate::settings::layout::SETTINGS`].
    Member,
}

/// Values worth trying for a setting: `valid` ones read as written, `invalid`
/// ones get the reference's "on a bad value" outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Samples {
    /// Values the reader takes as written (spaces and case aside).
    pub valid: &'static [&'static str],
    /// Values it does not: they fall back, clamp, or name no usable thing.
    pub invalid: &'static [&'static str],
}

/// One setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Row {
    /// Its key (for a member, its name in the `settings` object).
    pub key: &'static str,
    /// Where it is stored.
    pub stored: Stored,
    /// Its default, as the reference shows it: `` `text` `` (the text that reads as
    /// it) or `none` (as if missing), and maybe a note in parentheses.
    pub default: &'static str,
    /// What it means (Markdown, one table cell).
    pub meaning: &'static str,
    /// What a bad value does (Markdown, one table cell).
    pub when_bad: &'static str,
    /// Values worth trying for it (the fuzz inputs').
    pub samples: Samples,
}

/// The samples of every duration in seconds.
pub const DURATIONS: Samples = Samples {
    valid: &["1", "2", "30", "3600", "31536000"],
    invalid: &["31536001", "0", "-1", "1e3", "18446744073709551616"],
};

const DURATION_WHEN_BAD: &str = "not a whole number in 1–31536000: the default";

const fn duration(
    key: &'static str,
    stored: Stored,
    default: &'static str,
    meaning: &'static str,
) -> Row {
    Row {
        key,
        stored,
        default,
        meaning,
        when_bad: DURATION_WHEN_BAD,
        samples: DURATIONS,
    }
}

/// Every setting the room reads from `waitingroom_config`, in the order in which
/// `wrctl config check` and the reference list them.
pub const ROWS: [Row; 34] = [
    Row {
        key: ENABLED,
        stored: Stored::Own,
        default: "`false` (off)",
        meaning: "The room runs only when this is exactly `true` (surrounding spaces ignored).",
        when_bad: "anything else: off, every request passes to the origin",
        samples: Samples {
            valid: &["true", " true ", "false"],
            invalid: &["TRUE", ""],
        },
    },
    Row {
        key: PROTECTED_PATHS,
        stored: Stored::Member,
        default: "`/events,/checkout`",
        meaning: "Comma-separated path prefixes the room protects (a plain prefix match, like \
                  the VCL's `^/(events|checkout)`).",
        when_bad: "an empty list, or an entry not starting with `/`: the default",
        samples: Samples {
            valid: &["/events,/checkout", "/", "/events", " /a , /b "],
            invalid: &["events", ",", ""],
        },
    },
    Row {
        key: ALLOW_PERCENTAGE,
        stored: Stored::Own,
        default: "`100` (`50` in FIFO mode)",
        meaning: "Percentage of eligible wait tokens each draw admits, up to four decimals: \
                  `0` denies, `100` admits everyone. Written by the controller when one \
                  runs; in FIFO mode only its ends count ([more](#more-on-some-settings)).",
        when_bad: "not a number (`abc`, `50%`, `.5`): the default (fail open, as the VCL); \
                   numbers clamped to 0–100, cut after the fourth decimal",
        samples: Samples {
            valid: &[
                "50", "1", "99", "0", "100", "12.5", "0.5", "0.0001", "99.99999",
            ],
            invalid: &[
                "250",
                "-5",
                "abc",
                "",
                ".5",
                "5.",
                "-0.5",
                "9223372036854775808",
                "-9223372036854775809",
            ],
        },
    },
    Row {
        key: CONTROLLER_HEARTBEAT,
        stored: Stored::Own,
        default: "none",
        meaning: "Time of the controller's last write, Unix seconds or RFC 3339. Absent: \
                  manual tuning, no alert.",
        when_bad: "not a time: stale at once (next row)",
        samples: Samples {
            valid: &["1700000000", "1700003600", "0"],
            invalid: &["soon", ""],
        },
    },
    duration(
        CONTROLLER_TIMEOUT,
        Stored::Member,
        "`120`",
        "Seconds after which the heartbeat is stale (older than this, or more than this \
         in the future): every log line says `ALERT=controller-stale` and \
         `allow_percentage_fallback` applies.",
    ),
    Row {
        key: ALLOW_PERCENTAGE_FALLBACK,
        stored: Stored::Member,
        default: "none",
        meaning: "The percentage while the heartbeat is stale (same format). Unset: \
                  `allow_percentage` stays as last written (fail static).",
        when_bad: "not a number: unset (fail static)",
        samples: Samples {
            valid: &["1", "0", "100", "0.5"],
            invalid: &["abc"],
        },
    },
    duration(
        WAIT_PERIOD_DURATION,
        Stored::Own,
        "`30`",
        "Seconds of one wait period `d`: a newcomer waits one to three periods (one to two \
         on the global grid), a loser draws again two periods later.",
    ),
    duration(
        ALLOW_PERIOD_TIMEOUT,
        Stored::Own,
        "`3600`",
        "Seconds an admitted visitor keeps access after their last request \
         ([sessions](../reference/how-it-works.md#4-sessions-one-win-one-session-lazy-renewal-sliding-or-fixed)).",
    ),
    duration(
        COOKIE_LIFETIME,
        Stored::Own,
        "`7200`",
        "`max-age` of the cookie, seconds.",
    ),
    Row {
        key: ACTIVE_KEY,
        stored: Stored::Own,
        default: "`key1`",
        meaning: "Id of the signing key that signs new tokens \
                  ([signing keys](#the-signing-keys-waitingroom_signingkeys)).",
        when_bad: "names no key, an empty key, or an id no token can carry: no token is \
                   issued, `ALERT=active-key-unusable` \
                   ([what still works](#when-active_key-is-unusable))",
        samples: Samples {
            valid: &["key1", "key1", "key2", " key1 "],
            invalid: &["empty", "key3", "k&1", ""],
        },
    },
    duration(
        REDEEM_WINDOW,
        Stored::Member,
        "none (one wait period)",
        "Seconds after a wait token's expiry during which it may still be drawn; later it \
         re-waits without a draw, so a copy of a winning token cannot start sessions \
         forever.",
    ),
    Row {
        key: WAITING_STATUS,
        stored: Stored::Member,
        default: "`200`",
        meaning: "HTTP status of the two waiting pages (HTML and JSON): `200`, `202`, `429` \
                  or `503`. The deny page stays `200`.",
        when_bad: "anything else: `200`",
        samples: Samples {
            valid: &["200", "202", "429", "503"],
            invalid: &["404", "x"],
        },
    },
    Row {
        key: SESSION_MODE,
        stored: Stored::Member,
        default: "`sliding`",
        meaning: "`sliding`: a session ends between half and the whole \
                  `allow_period_timeout` after the last request; `fixed`: \
                  `allow_period_timeout` after the admission, whatever the activity \
                  ([more](#more-on-some-settings)).",
        when_bad: "anything else: `sliding`",
        samples: Samples {
            valid: &["sliding", "fixed", " Fixed "],
            invalid: &["forever"],
        },
    },
    Row {
        key: COOKIE_HTTPONLY,
        stored: Stored::Member,
        default: "`true`",
        meaning: "`HttpOnly` on the cookie (`true`/`false`).",
        when_bad: "anything else: `true`",
        samples: Samples {
            valid: &["true", "false", "FALSE"],
            invalid: &["yes"],
        },
    },
    Row {
        key: COOKIE_SAMESITE,
        stored: Stored::Member,
        default: "`Lax`",
        meaning: "`SameSite` on the cookie: `Lax`, `Strict`, or `None` for rooms embedded in \
                  other sites (`None` is only sent with `Secure`; without it the cookie gets \
                  `Lax`).",
        when_bad: "anything else: `Lax`",
        samples: Samples {
            valid: &["Lax", "strict", "None"],
            invalid: &["loose"],
        },
    },
    Row {
        key: COOKIE_SECURE,
        stored: Stored::Member,
        default: "`auto`",
        meaning: "`Secure` on the cookie: `auto` (when the client connection is TLS), \
                  `always`, `never`.",
        when_bad: "anything else: `auto`",
        samples: Samples {
            valid: &["auto", "always", "never"],
            invalid: &["maybe"],
        },
    },
    Row {
        key: REFRESH_MODE,
        stored: Stored::Member,
        default: "`eligible`",
        meaning: "`eligible`: waiting pages come back when the visitor's next draw is due; \
                  `fixed`: every `wait_period_duration` seconds (the VCL). FIFO pages come \
                  back every `min(d, fifo_hold / 3)` s either way.",
        when_bad: "anything else: `eligible`",
        samples: Samples {
            valid: &["eligible", "fixed", " fixed "],
            invalid: &["sometimes"],
        },
    },
    Row {
        key: LOGGER_NAME,
        stored: Stored::Own,
        default: "none",
        meaning: "Log endpoint for the per-request line.",
        when_bad: "missing, empty or unknown: the line goes to standard error \
                   (`fastly log-tail`)",
        samples: Samples {
            valid: &["testlog"],
            invalid: &["", " "],
        },
    },
    Row {
        key: DRAW_GRID,
        stored: Stored::Member,
        default: "`address`",
        meaning: "`address`: each address draws on its own grid, `FNV-1a-64(uid) mod 2d` \
                  seconds into every draw period; `global`: the VCL's slot boundaries \
                  ([the draw grid](../reference/how-it-works.md#7-the-draw-grid-and-a-refresh-aimed-at-the-draw)).",
        when_bad: "anything else: `address`",
        samples: Samples {
            valid: &["address", "global", " Global "],
            invalid: &["slot"],
        },
    },
    Row {
        key: UID_IPV6_PREFIX,
        stored: Stored::Member,
        default: "`128`",
        meaning: "Bits of an IPv6 visitor's address that identify them, 32–128 (a leading \
                  `/` allowed): `64` keeps a place across privacy-address changes. Changing \
                  it live voids every IPv6 visitor's token: set it before an event.",
        when_bad: "anything else: `128`",
        samples: Samples {
            valid: &["128", "64", "/64", "48", "32"],
            invalid: &["31", "129", "x"],
        },
    },
    Row {
        key: QUEUEING_METHOD,
        stored: Stored::Member,
        default: "`random`",
        meaning: "`random`: the lottery; `fifo`: first in, first out up to `fifo_cutoff` \
                  ([FIFO](../reference/fifo.md)).",
        when_bad: "anything else: `random`",
        samples: Samples {
            valid: &["fifo", "random", " FIFO "],
            invalid: &["lifo"],
        },
    },
    Row {
        key: FIFO_CUTOFF,
        stored: Stored::Own,
        default: "none",
        meaning: "FIFO: waiting visitors who arrived at or before this time are admitted: \
                  Unix milliseconds, or RFC 3339 to the millisecond. Written by the \
                  controller, or by hand.",
        when_bad: "neither, or before 1970: none (nobody admitted by FIFO, \
                   `ALERT=fifo-no-cutoff`)",
        samples: Samples {
            valid: &[
                "1700000000000",
                "1700030000000",
                "1700070000000",
                "0",
                "18446744073709551615",
            ],
            invalid: &["-1", "soon"],
        },
    },
    Row {
        key: FIFO_RATE,
        stored: Stored::Own,
        default: "none",
        meaning: "FIFO: arrival milliseconds the cutoff passes per second (up to three \
                  decimals), for the visitors' expected time of entry.",
        when_bad: "not a number: none (entry time unknown)",
        samples: Samples {
            valid: &["1000", "1.5", "0", "0.001"],
            invalid: &["x", "-2"],
        },
    },
    duration(
        FIFO_HOLD,
        Stored::Member,
        "`300`",
        "FIFO: seconds a waiting visitor's place is held after their last request.",
    ),
    Row {
        key: QUEUE_OPENS_AT,
        stored: Stored::Member,
        default: "none",
        meaning: "FIFO: when the line opens, Unix seconds or RFC 3339; earlier arrivals form \
                  the pre-queue.",
        when_bad: "neither, before 1970, or above 99,999,999,999 (milliseconds by mistake): \
                   none",
        samples: Samples {
            valid: &["1700000000", "1700040000", "0"],
            invalid: &["18446744073709551615", "x"],
        },
    },
    Row {
        key: POP_NEW_SESSIONS_PER_MINUTE,
        stored: Stored::Member,
        default: "none",
        meaning: "Random mode: new sessions each POP starts in a minute at most; one over it \
                  waits on, as after a loss (`transition=ceiling-reached`). Needs Fastly's \
                  Edge Rate Limiting ([more](#more-on-some-settings)).",
        when_bad: "not a whole number in 1–10,000,000: none",
        samples: Samples {
            valid: &["2500", "1", "10000000"],
            invalid: &["0", "-5", "2.5", "10000001"],
        },
    },
    Row {
        key: QUEUE_ALL,
        stored: Stored::Member,
        default: "`false`",
        meaning: "`true`: hold everyone: newcomers wait, nobody is drawn or passes a FIFO \
                  cutoff, live sessions go on (`transition=queue-all`); unlike \
                  `allow_percentage = 0`, which denies.",
        when_bad: "anything else: `false`",
        samples: Samples {
            valid: &["false", "true", " TRUE "],
            invalid: &["yes"],
        },
    },
    Row {
        key: BYPASS_ADDRESSES,
        stored: Stored::Member,
        default: "none",
        meaning: "Comma-separated address blocks (CIDR, IPv4 or IPv6) that go straight to the \
                  origin: staff, monitoring ([rules](rooms.md#bypass-rules)).",
        when_bad: "a bad block, or one holding everyone (`/0`): that block ignored",
        samples: Samples {
            valid: &["192.0.2.0/30", "2001:db8::/32, 198.51.100.0/24"],
            invalid: &["0.0.0.0/0", "192.0.2.0/33", "staff"],
        },
    },
    Row {
        key: BYPASS_PATHS,
        stored: Stored::Member,
        default: "none",
        meaning: "Comma-separated path prefixes inside the room that go straight to the \
                  origin: assets, health checks \
                  ([the path the origin sees](../reference/how-it-works.md#1-scope)).",
        when_bad: "a prefix of one of the room's own paths, or not starting with `/`: that \
                   prefix ignored",
        samples: Samples {
            valid: &["/events/static/", "/events/health, /checkout/assets/"],
            invalid: &["/", "/events", "static/"],
        },
    },
    Row {
        key: PASSES_NOT_BEFORE,
        stored: Stored::Member,
        default: "none",
        meaning: "Signed passes issued before this time (Unix seconds or RFC 3339) are \
                  refused ([passes](rooms.md#signed-passes)).",
        when_bad: "not a time: none",
        samples: Samples {
            valid: &["1700000000", "2023-11-14T22:13:20Z"],
            invalid: &["soon"],
        },
    },
    Row {
        key: PAGE_LANGUAGE,
        stored: Stored::Member,
        default: "`auto`",
        meaning: "The built-in pages' language: `auto` (the visitor's `Accept-Language`), or \
                  `en`, `de`, `fr`, `es`, `it`, `pt` ([pages](pages.md#per-language-pages)).",
        when_bad: "anything else: `auto`",
        samples: Samples {
            valid: &["auto", "de", " FR "],
            invalid: &["klingon"],
        },
    },
    Row {
        key: BOT_TOLL_BITS,
        stored: Stored::Member,
        default: "`0` (off)",
        meaning: "The bot toll: bits of proof of work, 0–32, a wait token's holder pays \
                  before its first draw (FIFO: admission); each bit doubles the work \
                  ([the bot toll](../reference/bot-toll.md)).",
        when_bad: "anything else: `0`",
        samples: Samples {
            valid: &["0", "8", " 12 ", "32"],
            invalid: &["33", "08", "-1"],
        },
    },
    Row {
        key: BOT_CHALLENGE,
        stored: Stored::Member,
        default: "none (off)",
        meaning: "An external challenge (Turnstile or hCaptcha) instead of the proof of work: \
                  `{\"provider\":\"turnstile\",\"site_key\":\"…\"}` \
                  ([an external challenge](../reference/bot-toll.md#an-external-challenge-instead)).",
        when_bad: "unreadable: still on, every due draw held",
        samples: Samples {
            valid: &[
                r#"{"provider":"turnstile","site_key":"k-1"}"#,
                r#"{"provider":"hcaptcha","site_key":"k_2","when_down":"open"}"#,
            ],
            invalid: &["turnstile", r#"{"provider":"turnstyle","site_key":"k"}"#],
        },
    },
    Row {
        key: CUSTOM_PAGES,
        stored: Stored::Member,
        default: "none",
        meaning: "Comma-separated page-store keys that hold a custom page: the room looks up \
                  no other ([pages](pages.md#per-language-pages)).",
        when_bad: "a key with a space or over 256 bytes: that key ignored",
        samples: Samples {
            valid: &["startwaiting", "startwaiting.fr, deny"],
            invalid: &["start waiting"],
        },
    },
];

/// The other keys of `waitingroom_config`, each read by a reader of its own:
/// the named rooms and the scheduled events.
pub const OTHER_ROWS: [Row; 2] = [
    Row {
        key: ROOMS,
        stored: Stored::Own,
        default: "none",
        meaning: "JSON object of named rooms and their scopes \
                  (`{\"drops\": {\"paths\": [\"/drops/\"]}}`); each room's settings are \
                  `room.<name>`, a JSON object of these keys ([rooms](rooms.md)).",
        when_bad: "not a JSON object: ignored (`config_fallback=rooms`); a bad entry: that \
                   room ignored; a room whose value is missing or unreadable holds everyone \
                   (`config_fallback=room`)",
        samples: Samples {
            valid: &[],
            invalid: &[],
        },
    },
    Row {
        key: EVENTS,
        stored: Stored::Own,
        default: "none",
        meaning: "JSON array of scheduled events: pre-queue, start, end, the event's \
                  settings, the ended page ([events](rooms.md#scheduled-events)).",
        when_bad: "an event that does not parse, ends before it starts or overlaps another: \
                   ignored, `config_fallback=events`",
        samples: Samples {
            valid: &[],
            invalid: &[],
        },
    },
];

/// The keys of `rows`, in order.
pub const fn keys<const N: usize>(rows: &[Row; N]) -> [&'static str; N] {
    let mut keys = [""; N];
    let mut i = 0;
    while i < N {
        keys[i] = rows[i].key;
        i += 1;
    }
    keys
}

/// The keys of the [`ROWS`] stored under keys of their own, in order; `N` must be
/// their number (else the build fails).
pub const fn own_keys<const N: usize>() -> [&'static str; N] {
    let mut keys = [""; N];
    let (mut i, mut n) = (0, 0);
    while i < ROWS.len() {
        if matches!(ROWS[i].stored, Stored::Own) {
            assert!(n < N, "more settings are stored as keys of their own");
            keys[n] = ROWS[i].key;
            n += 1;
        }
        i += 1;
    }
    assert!(n == N, "fewer settings are stored as keys of their own");
    keys
}

/// The line before the generated key table in `docs/operate/configuration.md`.
pub const BEGIN: &str = "<!-- BEGIN the key table generated from src/settings/table.rs; \
edit the rows there, not this part -->";

/// The line after it.
pub const END: &str = "<!-- END of the generated key table -->";

/// The key table of `docs/operate/configuration.md`: every row of [`ROWS`], then of
/// [`OTHER_ROWS`].
pub fn reference() -> String {
    let mut out = String::from(
        "| key | stored | default | meaning | on a bad value |\n|---|---|---|---|---|\n",
    );
    for row in ROWS.iter().chain(&OTHER_ROWS) {
        let stored = match row.stored {
            Stored::Own => "own key",
            Stored::Member => "in `settings`",
        };
        let _ = writeln!(
            out,
            "| `{}` | {stored} | {} | {} | {} |",
            row.key,
            cell(row.default),
            cell(row.meaning),
            cell(row.when_bad)
        );
    }
    out
}

/// Text in one table cell: a `|` escaped, even in code (GitHub's tables need it).
fn cell(text: &str) -> String {
    text.replace('|', "\\|")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reference_has_a_line_per_row_and_escapes_bars() {
        let reference = reference();
        assert_eq!(reference.lines().count(), 2 + ROWS.len() + OTHER_ROWS.len());
        assert!(reference.contains("| `queue_all` | in `settings` | `false` |"));
        assert!(reference.contains("| `enabled` | own key | `false` (off) |"));
        assert!(reference.contains("`^/(events\\|checkout)`"));
    }
}
