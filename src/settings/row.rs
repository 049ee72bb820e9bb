//! What a row of the settings table says, and the macro that turns the rows
//! ([`crate::settings::config`]) into the typed [`crate::settings::config::Settings`],
//! its reader, its written form and the lists of keys by role.

/// Where a setting is stored in `waitingroom_config`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stored {
    /// Under a key of its own.
    Own,
    /// As a member of the JSON object under [`crate::settings::layout::SETTINGS`].
    Member,
}

/// A part a setting plays beyond being read by the room it is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Read for every request, in a room or not: whether the room applies, the
    /// bypass line (which flags a stale controller) and the visitor's uid.
    Bypass,
    /// Written by the controller; for a named room as `room.<name>.<key>`, which
    /// wins over the room's value.
    Controller,
    /// One value for the whole service: a named room takes the service's.
    ServiceWide,
    /// Not changed by a scheduled event: whether and where the room runs, who
    /// goes through it, and the service-wide keys.
    EventFixed,
}

/// What a failed lookup of a setting does: the host failed it (a limit, a value too
/// long, any error), so it is never read as a missing key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unreadable {
    /// The decision rests on it: the request is held, a 503 "try again" that writes
    /// no cookie, unless a bypass, a pass or a live session lets it through without
    /// it. Meanwhile it reads as this text (`None`: its default), so that what is
    /// settled first (the room, whether the path is protected) protects the most.
    Holds(Option<&'static str>),
    /// It reads as missing (its default), safe for the reason given.
    AsMissing(&'static str),
}

impl Unreadable {
    /// Holds, reading as its default meanwhile.
    pub const HOLDS: Unreadable = Unreadable::Holds(None);

    /// Holds, reading as `text` meanwhile.
    pub const fn holds_as(text: &'static str) -> Unreadable {
        Unreadable::Holds(Some(text))
    }

    /// Reads as missing, for the reason `why`.
    pub const fn as_missing(why: &'static str) -> Unreadable {
        Unreadable::AsMissing(why)
    }

    /// The text the setting reads as (`None`: as missing).
    pub const fn reading(self) -> Option<&'static str> {
        match self {
            Unreadable::Holds(text) => text,
            Unreadable::AsMissing(_) => None,
        }
    }

    /// Whether the request is held.
    pub const fn holds(self) -> bool {
        matches!(self, Unreadable::Holds(_))
    }
}

/// What a setting's value counts, for showing it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Nothing: shown as written.
    Text,
    /// Seconds of time.
    Seconds,
    /// A time, Unix seconds.
    UnixSeconds,
    /// A time, Unix milliseconds.
    UnixMillis,
    /// Milliseconds of arrivals a second.
    MillisPerSecond,
}

/// Values worth trying for a setting: `valid` ones read as written, `invalid`
/// ones get the row's "on a bad value" outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Samples {
    /// Values the reader takes as written (spaces and case aside).
    pub valid: &'static [&'static str],
    /// Values it does not: they fall back, clamp, or name no usable thing.
    pub invalid: &'static [&'static str],
}

/// One setting, as the reference and the tools see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Row {
    /// Its key (for a member, its name in the `settings` object).
    pub key: &'static str,
    /// Where it is stored.
    pub stored: Stored,
    /// The parts it plays.
    pub roles: &'static [Role],
    /// Its default, as the reference shows it: `` `text` `` (the text that reads as
    /// it) or `none` (as if missing), and maybe a note in parentheses.
    pub default: &'static str,
    /// What it means (Markdown, one table cell; the field's doc comment).
    pub meaning: &'static str,
    /// What a bad value does (Markdown, one table cell).
    pub when_bad: &'static str,
    /// What a failed lookup does.
    pub unreadable: Unreadable,
    /// What `wrctl config check` shows when it is unset (`none` and why).
    pub unset: &'static str,
    /// How `wrctl config check` shows its value.
    pub unit: Unit,
    /// Values worth trying for it (the fuzz inputs').
    pub samples: Samples,
}

impl Row {
    /// Whether the setting plays `role`.
    pub const fn has(&self, role: Role) -> bool {
        let mut i = 0;
        while i < self.roles.len() {
            if self.roles[i] as u8 == role as u8 {
                return true;
            }
            i += 1;
        }
        false
    }
}

/// The keys of the `rows` that `pick` picks, in order; `N` must be their number
/// (else the build fails).
pub const fn keys_where<const N: usize>(rows: &[Row], pick: Pick) -> [&'static str; N] {
    let mut keys = [""; N];
    let (mut i, mut n) = (0, 0);
    while i < rows.len() {
        if pick.picks(&rows[i]) {
            assert!(n < N, "more rows are picked");
            keys[n] = rows[i].key;
            n += 1;
        }
        i += 1;
    }
    assert!(n == N, "fewer rows are picked");
    keys
}

/// How many of the `rows` `pick` picks.
pub const fn count_where(rows: &[Row], pick: Pick) -> usize {
    let (mut i, mut n) = (0, 0);
    while i < rows.len() {
        if pick.picks(&rows[i]) {
            n += 1;
        }
        i += 1;
    }
    n
}

/// Which rows a list of keys holds.
#[derive(Debug, Clone, Copy)]
pub enum Pick {
    /// Every row.
    All,
    /// The rows stored so.
    Stored(Stored),
    /// The rows that play the role.
    Role(Role),
}

impl Pick {
    const fn picks(self, row: &Row) -> bool {
        match self {
            Pick::All => true,
            Pick::Stored(stored) => row.stored as u8 == stored as u8,
            Pick::Role(role) => row.has(role),
        }
    }
}

/// The samples of every duration in seconds.
pub const DURATIONS: Samples = Samples {
    valid: &["1", "2", "30", "3600", "31536000"],
    invalid: &["31536001", "0", "-1", "1e3", "18446744073709551616"],
};

/// Samples from their lists.
pub const fn samples(valid: &'static [&'static str], invalid: &'static [&'static str]) -> Samples {
    Samples { valid, invalid }
}

/// A setting whose value is one of a few words.
pub trait Words: Copy + PartialEq + 'static {
    /// Each word and its value; the first word of a value is its written form.
    /// Read case-insensitively, surrounding spaces ignored.
    const WORDS: &'static [(&'static str, Self)];

    /// The written form of `self`.
    fn word(self) -> &'static str {
        Self::WORDS
            .iter()
            .find(|(_, value)| *value == self)
            .map_or("", |(word, _)| word)
    }
}

impl Words for bool {
    const WORDS: &'static [(&'static str, bool)] = &[("true", true), ("false", false)];
}

/// Reads settings through a lookup, recording every key that fell back.
pub struct Reader<'a> {
    lookup: &'a dyn Fn(&str) -> Option<String>,
    /// The keys whose stored value was present but unusable, in the order read.
    pub fallbacks: Vec<&'static str>,
}

impl<'a> Reader<'a> {
    /// A reader of `lookup` (key → stored text).
    pub fn new(lookup: &'a dyn Fn(&str) -> Option<String>) -> Self {
        Reader {
            lookup,
            fallbacks: Vec::new(),
        }
    }

    /// The parsed value of `key`; the default when it is missing, or when it does
    /// not parse (then the key is recorded as a fallback).
    pub fn value<T>(&mut self, key: &'static str, parse: fn(&str) -> Option<T>, default: T) -> T {
        let Some(raw) = (self.lookup)(key) else {
            return default;
        };
        self.noted(key, parse(&raw)).unwrap_or(default)
    }

    /// As [`Reader::value`], but a value that does not parse reads as `bad`.
    pub fn value_or<T>(
        &mut self,
        key: &'static str,
        parse: fn(&str) -> Option<T>,
        bad: T,
        default: T,
    ) -> T {
        let Some(raw) = (self.lookup)(key) else {
            return default;
        };
        self.noted(key, parse(&raw)).unwrap_or(bad)
    }

    /// `read`, with `key` recorded as a fallback when it is none.
    fn noted<T>(&mut self, key: &'static str, read: Option<T>) -> Option<T> {
        if read.is_none() {
            self.fallbacks.push(key);
        }
        read
    }

    /// A comma-separated list, each item read by `item` (trimmed, empty ones
    /// skipped): the items it refuses are left out and the key is recorded as a
    /// fallback, the others kept.
    pub fn list<T>(
        &mut self,
        key: &'static str,
        item: impl Fn(&str) -> Option<T>,
        default: Vec<T>,
    ) -> Vec<T> {
        let Some(raw) = (self.lookup)(key) else {
            return default;
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

    /// One of the type's [`Words`].
    pub fn word<T: Words>(&mut self, key: &'static str, default: T) -> T {
        self.value(key, parse_word, default)
    }
}

/// One of `T`'s words, case-insensitive, surrounding spaces ignored.
pub fn parse_word<T: Words>(raw: &str) -> Option<T> {
    let raw = raw.trim();
    T::WORDS
        .iter()
        .find(|(word, _)| raw.eq_ignore_ascii_case(word))
        .map(|&(_, value)| value)
}

/// The written form of a value: its text.
pub fn text<T: ToString>(value: &T) -> Option<String> {
    Some(value.to_string())
}

/// The written form of an optional value: its text, or none when unset.
pub fn optional<T: ToString>(value: &Option<T>) -> Option<String> {
    value.as_ref().map(T::to_string)
}

/// The written form of a list: its items' texts joined by commas, or none when empty.
pub fn list<T: ToString>(items: &[T]) -> Option<String> {
    let texts: Vec<String> = items.iter().map(T::to_string).collect();
    (!texts.is_empty()).then(|| texts.join(","))
}

/// The written form of a word setting.
pub fn word<T: Words>(value: &T) -> Option<String> {
    Some(value.word().to_string())
}

/// The given value, else the default: a row's optional field.
macro_rules! given {
    (; $default:expr) => {
        $default
    };
    ($given:expr; $default:expr) => {
        $given
    };
}

pub(crate) use given;

/// Defines the settings from their rows (`unreadable`, `unset` and `unit` may be
/// left out: holds, `none`, as written): a key constant, a field of `Settings`, a
/// [`Row`] of `ROWS`, the reader `Settings::read_rows` (each key read in the rows'
/// order by the [`Reader`] method the row names, its default an expression that
/// may use the fields read before it) and `Settings::stored` (each value's written
/// form).
macro_rules! rows {
    ($(
        $(#[doc = $doc:literal])*
        $KEY:ident $field:ident: $ty:ty {
            stored: $stored:ident,
            roles: [$($role:ident),*],
            read: $how:ident($($arg:expr),*),
            default: $default:expr => $shown:literal,
            write: $write:expr,
            when_bad: $bad:expr,
            $(unreadable: $unreadable:ident$(($($why:expr),*))?,)?
            $(unset: $unset:literal,)?
            $(unit: $unit:ident,)?
            samples: $samples:expr,
        }
    )*) => {
        $(
            #[doc = concat!("The key `", stringify!($field), "`.")]
            pub const $KEY: &str = stringify!($field);
        )*

        /// Every setting the room reads from `waitingroom_config`, in the order the
        /// reader reads them, `wrctl config check` and the reference list them.
        pub const ROWS: &[$crate::settings::row::Row] = &[$(
            $crate::settings::row::Row {
                key: $KEY,
                stored: $crate::settings::row::Stored::$stored,
                roles: &[$($crate::settings::row::Role::$role),*],
                default: $shown,
                meaning: concat!($($doc),*),
                when_bad: $bad,
                unreadable: $crate::settings::row::given!(
                    $($crate::settings::row::Unreadable::$unreadable$(($($why),*))?)?;
                    $crate::settings::row::Unreadable::HOLDS
                ),
                unset: $crate::settings::row::given!($($unset)?; "none"),
                unit: $crate::settings::row::given!(
                    $($crate::settings::row::Unit::$unit)?;
                    $crate::settings::row::Unit::Text
                ),
                samples: $samples,
            },
        )*];

        /// The room's settings, as the stores say them: one field a row.
        #[derive(Debug, Clone, PartialEq, Eq)]
        pub struct Settings {
            $(
                $(#[doc = $doc])*
                pub $field: $ty,
            )*
        }

        impl Settings {
            /// Reads every row through `read`, in order.
            fn read_rows(read: &mut $crate::settings::row::Reader<'_>) -> Settings {
                $(
                    let $field: $ty = read.$how($KEY, $($arg,)* $default);
                )*
                Settings { $($field),* }
            }

            /// The text that, stored under `key`, reads as this value of the setting
            /// (the store's form: `fixed`, `Lax`, `/events,/checkout`); `None` when
            /// only a missing key reads as it (an unset option, an empty list) or
            /// `key` is no setting.
            pub fn stored(&self, key: &str) -> Option<String> {
                match key {
                    $($KEY => ($write)(&self.$field),)*
                    _ => None,
                }
            }
        }
    };
}

pub(crate) use rows;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_read_in_any_case_and_write_their_first_form() {
        assert_eq!(parse_word::<bool>(" TRUE "), Some(true));
        assert_eq!(parse_word::<bool>("yes"), None);
        assert_eq!(false.word(), "false");
    }

    #[test]
    fn picks_count_what_they_pick() {
        const ROWS: [Row; 2] = [
            Row {
                key: "a",
                stored: Stored::Own,
                roles: &[Role::Bypass, Role::EventFixed],
                default: "none",
                meaning: "",
                when_bad: "",
                unreadable: Unreadable::HOLDS,
                unset: "none",
                unit: Unit::Text,
                samples: DURATIONS,
            },
            Row {
                key: "b",
                stored: Stored::Member,
                roles: &[Role::EventFixed],
                default: "none",
                meaning: "",
                when_bad: "",
                unreadable: Unreadable::HOLDS,
                unset: "none",
                unit: Unit::Text,
                samples: DURATIONS,
            },
        ];
        assert_eq!(count_where(&ROWS, Pick::Role(Role::Bypass)), 1);
        assert_eq!(
            keys_where::<2>(&ROWS, Pick::Role(Role::EventFixed)),
            ["a", "b"]
        );
        assert_eq!(keys_where::<1>(&ROWS, Pick::Stored(Stored::Member)), ["b"]);
        assert_eq!(count_where(&ROWS, Pick::Role(Role::Controller)), 0);
    }
}
