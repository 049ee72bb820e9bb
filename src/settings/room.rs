//! Several rooms on one service: which room a request is in, and what makes a
//! room its own (its cookies, [`crate::credentials::cookie_names`]; its signing
//! keys; its keys in the stores).
//!
//! The service's own keys (`enabled`, `protected_paths`, …) are the *service
//! room*: without a `rooms` key a service is that one room, exactly as before.
//! `rooms` names more rooms and their scopes, one JSON object:
//!
//! ```json
//! {"drops": {"paths": ["/drops/"]}, "shop": {"hosts": ["shop.example"], "paths": ["/checkout"]}}
//! ```
//!
//! A request belongs to at most one room: of the rooms whose scope holds it (a
//! host among its `hosts`, or no `hosts`; a path starting with one of its
//! `paths`), the one with the longest matching prefix; on a tie a room with
//! `hosts` wins over one without, a named room over the service room, and then
//! the first name in byte order. The service room takes part only while
//! `enabled`; a named room always owns its scope (its own `enabled` turns it off).

use std::collections::BTreeMap;
use std::fmt;

use serde::Deserialize;

/// Longest room name.
pub const MAX_NAME_LEN: usize = 32;
/// Most named rooms an index holds; later ones are ignored.
pub const MAX_ROOMS: usize = 100;

/// A room's name: 1 to [`MAX_NAME_LEN`] of `a-z`, `0-9`, `_`, `-`, starting with
/// a letter or digit, so it is a word in a log line, a cookie name and a store key.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RoomName(String);

impl RoomName {
    /// The name, if `text` is one.
    pub fn new(text: &str) -> Option<RoomName> {
        let bytes = text.as_bytes();
        let first_ok = bytes
            .first()
            .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
        let rest_ok = bytes
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'_' | b'-'));
        (first_ok && rest_ok && bytes.len() <= MAX_NAME_LEN).then(|| RoomName(text.to_string()))
    }

    /// The name as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The config-store key of the room's settings, and the prefix of its other keys
    /// (the controller's, its pages): `room.<name>`.
    pub fn store_key(&self) -> String {
        format!("room.{}", self.0)
    }

    /// The config-store key of the room's own `key` (`room.<name>.<key>`): the
    /// controller's writes, kept apart from the operator's value of the room.
    pub fn key(&self, key: &str) -> String {
        format!("room.{}.{key}", self.0)
    }
}

impl fmt::Display for RoomName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Which room a request is in.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Room {
    /// The service's own keys: cookie `waiting_room`, no `room=` in the log.
    #[default]
    Service,
    /// A room of the `rooms` index.
    Named(RoomName),
}

impl Room {
    /// The page-store keys to try for a page whose shared keys are `keys`: during
    /// `event`, the event's own first (`event.<event>.<key>`, or for a named room
    /// `room.<name>.event.<event>.<key>`); then a named room's own
    /// (`room.<name>.<key>`); then the shared ones.
    pub fn page_keys(&self, keys: Vec<String>, event: Option<&str>) -> Vec<String> {
        let own = match self {
            Room::Service => String::new(),
            Room::Named(name) => format!("{}.", name.store_key()),
        };
        let mut tried: Vec<String> = Vec::new();
        if let Some(event) = event {
            tried.extend(keys.iter().map(|key| format!("{own}event.{event}.{key}")));
        }
        if !own.is_empty() {
            tried.extend(keys.iter().map(|key| format!("{own}{key}")));
        }
        tried.extend(keys);
        tried
    }

    /// The room's name; `None` for the service room.
    pub fn name(&self) -> Option<&RoomName> {
        match self {
            Room::Service => None,
            Room::Named(name) => Some(name),
        }
    }
}

/// Where a named room applies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scope {
    /// The room.
    pub name: RoomName,
    /// Host names (lower case, no port); empty: every host.
    pub hosts: Vec<String>,
    /// Path prefixes, each starting with `/`.
    pub paths: Vec<String>,
}

impl Scope {
    /// The longest of the room's prefixes that starts `path` on `host`.
    fn matching_prefix(&self, host: Option<&str>, path: &str) -> Option<usize> {
        if !self.hosts.is_empty() && !host.is_some_and(|h| self.hosts.iter().any(|s| s == h)) {
            return None;
        }
        self.paths
            .iter()
            .filter(|prefix| path.starts_with(prefix.as_str()))
            .map(String::len)
            .max()
    }
}

/// The `rooms` index: the named rooms and their scopes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Index {
    /// The rooms, by name.
    pub rooms: Vec<Scope>,
    /// Why entries were ignored, for the log and `wrctl config check`.
    pub problems: Vec<String>,
}

/// One entry of the index as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ScopeText {
    #[serde(default)]
    hosts: Vec<String>,
    paths: Vec<String>,
}

impl Index {
    /// Reads the index. An index that is not a JSON object is ignored whole; an
    /// entry with a bad name, no paths, a path not starting with `/` or an unknown
    /// field is ignored alone; each is named in [`Index::problems`].
    pub fn parse(raw: &str) -> Index {
        let entries: BTreeMap<String, serde_json::Value> = match serde_json::from_str(raw) {
            Ok(entries) => entries,
            Err(_) => {
                return Index {
                    rooms: Vec::new(),
                    problems: vec!["rooms: not a JSON object of rooms".to_string()],
                };
            }
        };
        let mut index = Index::default();
        for (name, value) in entries {
            if index.rooms.len() == MAX_ROOMS {
                index
                    .problems
                    .push(format!("rooms: more than {MAX_ROOMS} rooms"));
                break;
            }
            match Scope::read(&name, value) {
                Ok(scope) => index.rooms.push(scope),
                Err(why) => index.problems.push(format!("room {name:?}: {why}")),
            }
        }
        index
    }

    /// The room `host` and `path` fall in, given the longest prefix the service
    /// room claims (`None`: it claims nothing). `None`: the service room's, or none.
    pub fn room_for(
        &self,
        host: Option<&str>,
        path: &str,
        service_claim: Option<usize>,
    ) -> Option<&Scope> {
        // Rank: longest prefix, then a room with hosts, then a named room; `max_by_key`
        // keeps the last of equals, so the names are walked in reverse.
        let best = self
            .rooms
            .iter()
            .rev()
            .filter_map(|scope| {
                let len = scope.matching_prefix(host, path)?;
                Some((len, !scope.hosts.is_empty(), scope))
            })
            .max_by_key(|&(len, hosts, _)| (len, hosts))?;
        match service_claim {
            Some(service) if service > best.0 => None,
            _ => Some(best.2),
        }
    }
}

impl Scope {
    fn read(name: &str, value: serde_json::Value) -> Result<Scope, String> {
        let name = RoomName::new(name)
            .ok_or("a name is 1 to 32 of a-z, 0-9, _ and -, starting with a letter or digit")?;
        let text: ScopeText = serde_json::from_value(value).map_err(|e| e.to_string())?;
        if text.paths.is_empty() {
            return Err("no paths".to_string());
        }
        if let Some(bad) = text
            .paths
            .iter()
            .find(|p| !p.starts_with('/') || p.contains(','))
        {
            return Err(format!(
                "path {bad:?} does not start with / or holds a comma"
            ));
        }
        let hosts = text.hosts.iter().map(|h| host_of(h)).collect();
        Ok(Scope {
            name,
            hosts,
            paths: text.paths,
        })
    }
}

/// A host as scopes compare it (a request's `Host`, or a scope's `hosts`): lower
/// case, without port, brackets or the trailing dot of a fully qualified name.
pub fn host_of(header: &str) -> String {
    let header = header.trim();
    let host = match header.strip_prefix('[') {
        // An IPv6 literal: `[::1]:8080`.
        Some(rest) => rest.split(']').next().unwrap_or(rest),
        None => header.split(':').next().unwrap_or(header),
    };
    host.trim_end_matches('.').to_ascii_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn index(raw: &str) -> Index {
        Index::parse(raw)
    }

    fn name_for(index: &Index, host: Option<&str>, path: &str, service: Option<usize>) -> String {
        index
            .room_for(host, path, service)
            .map_or("service".to_string(), |s| s.name.to_string())
    }

    #[test]
    fn names_are_words_of_a_few_safe_characters() {
        for good in ["a", "drops", "shop-2", "x_y", "9", &"a".repeat(32)] {
            assert!(RoomName::new(good).is_some(), "{good}");
        }
        for bad in [
            "",
            "Drops",
            "-a",
            "_a",
            "a b",
            "a.b",
            "a=b",
            "é",
            &"a".repeat(33),
        ] {
            assert!(RoomName::new(bad).is_none(), "{bad}");
        }
        let name = RoomName::new("drops").unwrap();
        assert_eq!(name.store_key(), "room.drops");
        assert_eq!(name.key("allow_percentage"), "room.drops.allow_percentage");
    }

    #[test]
    fn a_named_rooms_pages_come_first_then_the_shared_ones() {
        let keys = vec!["keepwaiting.de".to_string(), "keepwaiting".to_string()];
        assert_eq!(Room::Service.page_keys(keys.clone(), None), keys);
        assert_eq!(
            Room::Service.page_keys(vec!["deny".into()], Some("drop-1")),
            ["event.drop-1.deny", "deny"]
        );
        let drops = Room::Named(RoomName::new("drops").unwrap());
        assert_eq!(
            drops.page_keys(vec!["deny".into()], Some("drop-1")),
            ["room.drops.event.drop-1.deny", "room.drops.deny", "deny"]
        );
        assert_eq!(
            drops.page_keys(keys, None),
            [
                "room.drops.keepwaiting.de",
                "room.drops.keepwaiting",
                "keepwaiting.de",
                "keepwaiting"
            ]
        );
    }

    #[test]
    fn the_most_specific_prefix_wins() {
        let idx = index(r#"{"drops": {"paths": ["/drops/"]}, "vip": {"paths": ["/drops/vip/"]}}"#);
        assert_eq!(name_for(&idx, None, "/drops/vip/1", None), "vip");
        assert_eq!(name_for(&idx, None, "/drops/1", None), "drops");
        assert_eq!(name_for(&idx, None, "/about", None), "service");
        // The service room's longer prefix wins; an equal one loses to a named room.
        assert_eq!(name_for(&idx, None, "/drops/1", Some(8)), "service");
        assert_eq!(name_for(&idx, None, "/drops/1", Some(7)), "drops");
    }

    #[test]
    fn hosts_narrow_a_room_and_win_a_tie() {
        let idx = index(
            r#"{"any": {"paths": ["/checkout"]},
                "shop": {"hosts": ["Shop.Example"], "paths": ["/checkout"]}}"#,
        );
        assert_eq!(
            name_for(&idx, Some("shop.example"), "/checkout", None),
            "shop"
        );
        assert_eq!(
            name_for(&idx, Some("other.example"), "/checkout", None),
            "any"
        );
        assert_eq!(name_for(&idx, None, "/checkout", None), "any");
        let only = index(r#"{"shop": {"hosts": ["shop.example"], "paths": ["/"]}}"#);
        assert_eq!(
            name_for(&only, Some("other.example"), "/x", None),
            "service"
        );
    }

    #[test]
    fn equal_rooms_go_to_the_first_name() {
        let idx = index(r#"{"b": {"paths": ["/x"]}, "a": {"paths": ["/x"]}}"#);
        assert_eq!(name_for(&idx, None, "/x", None), "a");
    }

    #[test]
    fn bad_entries_are_ignored_and_named() {
        let idx = index(
            r#"{"ok": {"paths": ["/ok"]}, "Bad": {"paths": ["/b"]}, "none": {"paths": []},
                "rel": {"paths": ["x"]}, "typo": {"path": ["/t"]}, "num": 5,
                "comma": {"paths": ["/a,/b"]}}"#,
        );
        assert_eq!(idx.rooms.len(), 1);
        assert_eq!(idx.rooms[0].name.as_str(), "ok");
        assert_eq!(idx.problems.len(), 6, "{:?}", idx.problems);
        for raw in ["", "[]", "not json", "{\"a\": "] {
            let idx = index(raw);
            assert!(idx.rooms.is_empty() && idx.problems.len() == 1, "{raw:?}");
        }
    }

    #[test]
    fn an_index_holds_at_most_max_rooms() {
        let entries: Vec<String> = (0..MAX_ROOMS + 5)
            .map(|i| format!("\"r{i:03}\": {{\"paths\": [\"/{i}\"]}}"))
            .collect();
        let idx = index(&format!("{{{}}}", entries.join(",")));
        assert_eq!(idx.rooms.len(), MAX_ROOMS);
        assert_eq!(idx.problems.len(), 1);
    }

    #[test]
    fn hosts_are_compared_without_port_or_case() {
        assert_eq!(host_of("Shop.Example:8443"), "shop.example");
        assert_eq!(host_of("shop.example"), "shop.example");
        assert_eq!(host_of("[2001:DB8::1]:443"), "2001:db8::1");
        assert_eq!(host_of(" 127.0.0.1:7676 "), "127.0.0.1");
        assert_eq!(host_of("Shop.Example.:443"), "shop.example");
        let idx = index(r#"{"shop": {"hosts": ["shop.example:443"], "paths": ["/"]}}"#);
        assert_eq!(
            name_for(&idx, Some(&host_of("SHOP.example.")), "/x", None),
            "shop"
        );
    }
}
