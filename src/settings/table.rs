//! The key table of `docs/operate/configuration.md`, generated from the settings'
//! rows ([`crate::settings::config::ROWS`]) and the two keys read by readers of
//! their own ([`OTHER_ROWS`]): the named rooms and the scheduled events.

use std::fmt::Write as _;

use crate::settings::config::{EVENTS, ROOMS, ROWS};
use crate::settings::row::{Row, Stored, Unit, Unreadable, samples};

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
        roles: &[],
        unreadable: Unreadable::HOLDS,
        unset: "none",
        unit: Unit::Text,
        samples: samples(&[], &[]),
    },
    Row {
        key: EVENTS,
        stored: Stored::Own,
        default: "none",
        meaning: "JSON array of scheduled events: pre-queue, start, end, the event's \
                  settings, the ended page ([events](rooms.md#scheduled-events)).",
        when_bad: "an event that does not parse, ends before it starts or overlaps another: \
                   ignored, `config_fallback=events`",
        roles: &[],
        unreadable: Unreadable::HOLDS,
        unset: "none",
        unit: Unit::Text,
        samples: samples(&[], &[]),
    },
];

/// The line before the generated key table in `docs/operate/configuration.md`.
pub const BEGIN: &str = "<!-- BEGIN the key table generated from the rows of \
src/settings/config.rs; edit the rows there, not this part -->";

/// The line after it.
pub const END: &str = "<!-- END of the generated key table -->";

/// The key table of `docs/operate/configuration.md`: every row of [`ROWS`], then of
/// [`OTHER_ROWS`].
pub fn reference() -> String {
    let mut out = String::from(
        "| key | stored | default | meaning | on a bad value | on a failed read |\n\
         |---|---|---|---|---|---|\n",
    );
    for row in ROWS.iter().chain(&OTHER_ROWS) {
        let stored = match row.stored {
            Stored::Own => "own key",
            Stored::Member => "in `settings`",
        };
        let unreadable = match row.unreadable {
            Unreadable::Holds(None) => "holds".to_string(),
            Unreadable::Holds(Some(text)) => format!("holds (reads `{text}` meanwhile)"),
            Unreadable::AsMissing(why) => format!("as missing: {why}"),
        };
        let _ = writeln!(
            out,
            "| `{}` | {stored} | {} | {} | {} | {} |",
            row.key,
            cell(row.default),
            cell(row.meaning.trim()),
            cell(row.when_bad),
            cell(&unreadable)
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
        assert!(reference.contains("| holds (reads `true` meanwhile) |"));
        assert!(reference.contains("| as missing: it shapes the answer, not who enters |"));
        assert!(reference.contains("| `enabled` | own key | `false` (off) |"));
        assert!(reference.contains("`^/(events\\|checkout)`"));
    }
}
