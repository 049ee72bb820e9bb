//! Where the service room's settings live in `waitingroom_config`, so that a
//! request reads few keys ([`crate::settings::limits`]).
//!
//! The keys the VCL waiting room reads (`enabled`, `allow_percentage`,
//! `allow_period_timeout`, `wait_period_duration`, `cookie_lifetime`,
//! `active_key`, `logger_name`) and the ones the controller writes
//! (`controller_heartbeat`, `fifo_cutoff`, `fifo_rate`) keep keys of their own
//! ([`OWN_KEYS`]): a VCL service's store works as it is, and the controller's
//! writes stay one key each. Every other setting is a member of one JSON object
//! under [`SETTINGS`], as a named room's settings are one object under
//! `room.<name>`:
//!
//! ```json
//! {"protected_paths": "/events,/checkout", "queue_all": false, "bypass_paths": ["/events/static/"]}
//! ```
//!
//! A member's value is text, a number, a boolean or a list of texts
//! ([`text_of`]). A missing `settings` key is an object with no members: every
//! member takes its default. A `settings` value that is not a JSON object, or
//! that cannot be read, gives every member its reading after a failed read
//! ([`crate::settings::config::when_unreadable`]): every path protected, nobody
//! drawn; a failed read also holds the request ([`crate::settings::row::Unreadable`]).

use std::collections::BTreeMap;

use crate::settings::config::{
    KEYS, OWN_KEYS, PROTECTED_PATHS, QUEUE_ALL, text_of, when_unreadable,
};

/// Config-store key of the JSON object holding every other setting.
pub const SETTINGS: &str = "settings";

/// Whether `key` is a setting stored as a member of [`SETTINGS`].
pub fn is_member(key: &str) -> bool {
    KEYS.contains(&key) && !OWN_KEYS.contains(&key)
}

/// The members of a `settings` value, as the room reads them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Members {
    /// No `settings` key: every member at its default.
    Absent,
    /// The object's members as text.
    Read(BTreeMap<String, String>),
    /// Not a JSON object, or its lookup failed: every member unreadable.
    Unreadable,
    /// No `settings` key but `protected_paths` stored as a key of its own: a store
    /// written in the earlier layout, where every setting had a key of its own. Its
    /// paths are kept and the room holds (`queue_all`): read as defaults, the store
    /// would protect other paths than the operator set, and open the room.
    OldLayout(String),
}

impl Members {
    /// Reads the text of a `settings` value (`None`: no such key).
    pub fn parse(raw: Option<&str>) -> Members {
        let Some(raw) = raw else {
            return Members::Absent;
        };
        match serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(raw) {
            Ok(object) => Members::Read(
                object
                    .iter()
                    .filter_map(|(key, value)| Some((key.clone(), text_of(value)?)))
                    .collect(),
            ),
            Err(_) => Members::Unreadable,
        }
    }

    /// The text of member `key`.
    pub fn get(&self, key: &str) -> Option<String> {
        match self {
            Members::Absent => None,
            Members::Read(members) => members.get(key).cloned(),
            Members::Unreadable => when_unreadable(key),
            Members::OldLayout(paths) => match key {
                PROTECTED_PATHS => Some(paths.clone()),
                QUEUE_ALL => Some("true".to_string()),
                _ => None,
            },
        }
    }
}

/// The store's entries for settings given one key each (`key → text`, as the
/// tools and the tests write them): the own keys as they are, every other setting
/// a member of one [`SETTINGS`] object, and any other key (`rooms`, `events`,
/// `room.<name>…`) as it is. What `wrctl` writes for a store configured before
/// the settings moved.
pub fn store_entries<'a>(
    pairs: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> BTreeMap<String, String> {
    let mut entries = BTreeMap::new();
    // The members written so far, serialized once at the end (or before a
    // `settings` pair replaces them): as many calls of [`set`], in linear time.
    let mut members: Option<serde_json::Map<String, serde_json::Value>> = None;
    for (key, value) in pairs {
        if is_member(key) {
            members
                .get_or_insert_with(|| object(&entries))
                .insert(key.to_string(), value.into());
            continue;
        }
        if key == SETTINGS {
            members = None;
        }
        entries.insert(key.to_string(), value.to_string());
    }
    if let Some(members) = members {
        let text = serde_json::Value::Object(members).to_string();
        entries.insert(SETTINGS.to_string(), text);
    }
    entries
}

/// The `settings` object of `entries`, or an empty one when it is absent or no object.
fn object(entries: &BTreeMap<String, String>) -> serde_json::Map<String, serde_json::Value> {
    entries
        .get(SETTINGS)
        .and_then(|raw| serde_json::from_str(raw).ok())
        .unwrap_or_default()
}

/// Writes setting `key` where it lives in `entries` (a store's `key → value`): its
/// own key, or a member of the `settings` object (one is started when absent, and
/// one that is not an object is replaced).
pub fn set(entries: &mut BTreeMap<String, String>, key: &str, value: &str) {
    if !is_member(key) {
        entries.insert(key.to_string(), value.to_string());
        return;
    }
    let mut members = object(entries);
    members.insert(key.to_string(), value.into());
    entries.insert(
        SETTINGS.to_string(),
        serde_json::Value::Object(members).to_string(),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::config::{
        BOT_CHALLENGE, BOT_TOLL_BITS, BYPASS_PATHS, CONTROLLER_HEARTBEAT, ENABLED, PROTECTED_PATHS,
        QUEUE_ALL,
    };

    #[test]
    fn the_vcls_keys_and_the_controllers_stay_keys_of_their_own() {
        let entries = store_entries([
            (ENABLED, "true"),
            (CONTROLLER_HEARTBEAT, "1700000000"),
            (QUEUE_ALL, "true"),
            (BYPASS_PATHS, "/a/,/b/"),
            ("rooms", "{}"),
        ]);
        assert_eq!(entries[ENABLED], "true");
        assert_eq!(entries[CONTROLLER_HEARTBEAT], "1700000000");
        assert_eq!(entries["rooms"], "{}");
        assert!(!entries.contains_key(QUEUE_ALL));
        let members = Members::parse(entries.get(SETTINGS).map(String::as_str));
        assert_eq!(members.get(QUEUE_ALL).as_deref(), Some("true"));
        assert_eq!(members.get(BYPASS_PATHS).as_deref(), Some("/a/,/b/"));
        assert_eq!(members.get(PROTECTED_PATHS), None);
    }

    #[test]
    fn members_read_as_text_and_lists_as_commas() {
        let members = Members::parse(Some(
            r#"{"queue_all": true, "waiting_status": 429, "bypass_paths": ["/a/", "/b/"]}"#,
        ));
        assert_eq!(members.get(QUEUE_ALL).as_deref(), Some("true"));
        assert_eq!(members.get("waiting_status").as_deref(), Some("429"));
        assert_eq!(members.get(BYPASS_PATHS).as_deref(), Some("/a/,/b/"));
    }

    #[test]
    fn an_unreadable_object_holds_and_grants_nothing() {
        for raw in ["[1, 2]", "not json", "\"text\""] {
            let members = Members::parse(Some(raw));
            assert_eq!(members, Members::Unreadable, "{raw}");
            assert_eq!(members.get(QUEUE_ALL).as_deref(), Some("true"));
            assert_eq!(members.get(BOT_TOLL_BITS).as_deref(), Some("32"));
            assert_eq!(members.get(BOT_CHALLENGE).as_deref(), Some("unreadable"));
            assert_eq!(members.get(BYPASS_PATHS), None);
        }
        assert_eq!(Members::parse(None).get(QUEUE_ALL), None);
    }

    #[test]
    fn the_unreadable_toll_asks_the_most_bits() {
        assert_eq!(
            when_unreadable(BOT_TOLL_BITS).and_then(|b| crate::bots::toll::parse_bits(&b)),
            Some(crate::bots::toll::MAX_BITS)
        );
    }
}
