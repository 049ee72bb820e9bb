//! The settings of the room a request is in, as the edge reads them: each
//! config-store key looked up at most once (a lookup is a host call, and an
//! execution may make only so many).
//!
//! 1. The service's [`BYPASS_KEYS`] and the `rooms` index: enough to pick the
//!    room, and all a request outside every room needs.
//! 2. The service room: its other keys. A named room: its value (`room.<name>`,
//!    a JSON object of the same keys) and the controller's keys for it
//!    (`room.<name>.allow_percentage`, `…controller_heartbeat`, `…fifo_cutoff`,
//!    `…fifo_rate`),
//!    which win over the value. `logger_name` and `uid_ipv6_prefix` stay the
//!    service's: one log endpoint and one identity per service.
//!
//! A named room's value that is missing or not a JSON object holds everyone (on,
//! with `queue_all`: nobody new is admitted, live sessions go on) and the line
//! says `config_fallback=room`; an index with problems says `config_fallback=rooms`.

use std::cell::{OnceCell, RefCell};
use std::collections::BTreeMap;

use crate::settings::config::{
    ALLOW_PERCENTAGE, ALLOW_PERCENTAGE_FALLBACK, BYPASS_KEYS, CONTROLLER_HEARTBEAT,
    CONTROLLER_KEYS, ENABLED, EVENT_FIXED_KEYS, EVENTS, FIFO_CUTOFF, PROTECTED_PATHS, QUEUE_ALL,
    QUEUE_OPENS_AT, ROOMS, SERVICE_WIDE_KEYS, Settings, text_of, when_unreadable,
};
use crate::settings::context::{Refusal, RequestContext};
use crate::settings::events::{Phase, Schedule};
use crate::settings::layout::{Members, SETTINGS, is_member};
use crate::settings::path_readings::readings;
use crate::settings::room::{Index, Room, Scope};

/// Named in `fallbacks` when a named room's value is not a JSON object.
pub const ROOM_FALLBACK: &str = "room";

/// A config-store lookup that failed: the execution's lookups are used, the value
/// is too long, or the host failed otherwise. Never read as a missing key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LookupFailed;

/// What one lookup gives: the value, `None` for a missing key, or a failure.
pub type Looked = Result<Option<String>, LookupFailed>;

/// A config-store lookup that asks the store once per key, and names the keys
/// whose lookup failed.
pub struct Remembered<'a> {
    lookup: Box<dyn Fn(&str) -> Looked + 'a>,
    seen: RefCell<BTreeMap<String, Looked>>,
}

impl<'a> Remembered<'a> {
    /// Wraps a lookup that cannot fail (a map, a file the tools read).
    pub fn new(lookup: impl Fn(&str) -> Option<String> + 'a) -> Self {
        Remembered::fallible(move |key: &str| Ok(lookup(key)))
    }

    /// Wraps the host's lookup.
    pub fn fallible(lookup: impl Fn(&str) -> Looked + 'a) -> Self {
        Remembered {
            lookup: Box::new(lookup),
            seen: RefCell::default(),
        }
    }

    /// What the store gave for `key`, asked of it the first time only.
    pub fn read(&self, key: &str) -> Looked {
        if let Some(value) = self.seen.borrow().get(key) {
            return value.clone();
        }
        let value = (self.lookup)(key);
        self.seen
            .borrow_mut()
            .insert(key.to_string(), value.clone());
        value
    }

    /// The value of `key`; for a failed lookup, its unreadable outcome
    /// ([`when_unreadable`]), never its default when that would open a guard.
    pub fn get(&self, key: &str) -> Option<String> {
        self.read(key)
            .unwrap_or_else(|LookupFailed| when_unreadable(key))
    }

    /// The keys whose lookup failed, in order.
    pub fn failed(&self) -> Vec<String> {
        self.seen
            .borrow()
            .iter()
            .filter(|(_, value)| value.is_err())
            .map(|(key, _)| key.clone())
            .collect()
    }
}

/// The service room's settings as stored ([`crate::settings::layout`]): its own
/// keys looked up, every other setting a member of `settings`, read at the first
/// member asked.
struct ServiceStore<'r, 'a> {
    lookup: &'r Remembered<'a>,
    members: OnceCell<Members>,
}

impl<'r, 'a> ServiceStore<'r, 'a> {
    fn new(lookup: &'r Remembered<'a>) -> Self {
        ServiceStore {
            lookup,
            members: OnceCell::new(),
        }
    }

    fn get(&self, key: &str) -> Option<String> {
        if !is_member(key) {
            return self.lookup.get(key);
        }
        self.members().get(key)
    }

    fn members(&self) -> &Members {
        self.members
            .get_or_init(|| match self.lookup.read(SETTINGS) {
                // No `settings`: one lookup tells a store of the earlier layout.
                Ok(None) => match self.lookup.read(PROTECTED_PATHS) {
                    Ok(None) => Members::Absent,
                    Ok(Some(paths)) => Members::OldLayout(paths),
                    Err(LookupFailed) => Members::Unreadable,
                },
                Ok(raw) => Members::parse(raw.as_deref()),
                Err(LookupFailed) => Members::Unreadable,
            })
    }

    /// `context` with what reading the store found: a `settings` present but not a
    /// JSON object (a fallback), a store of the earlier layout
    /// ([`Members::OldLayout`]), the lookups that failed.
    fn noted(&self, mut context: RequestContext) -> RequestContext {
        if self.members.get() == Some(&Members::Unreadable)
            && matches!(self.lookup.read(SETTINGS), Ok(Some(_)))
        {
            context.fallbacks.push(SETTINGS);
        }
        context.old_layout = matches!(self.members.get(), Some(Members::OldLayout(_)));
        context.unreadable = self.lookup.failed();
        context
    }
}

impl RequestContext {
    /// The context of a request for `path` on `host` (lower case, no port), for the
    /// edge: the room it is in (see the module's documentation), or, outside every
    /// room, the bypass keys with every other key at its default.
    pub fn for_request(
        lookup: &Remembered<'_>,
        host: Option<&str>,
        path: &str,
        now: u64,
    ) -> RequestContext {
        let service = ServiceStore::new(lookup);
        let mut bypass = RequestContext::of(Settings::read(&|key| {
            BYPASS_KEYS
                .contains(&key)
                .then(|| service.get(key))
                .flatten()
        }));
        let index = match lookup.read(ROOMS) {
            Ok(raw) => raw.map(|raw| Index::parse(&raw)),
            // Nothing can be placed without the rooms' scopes: refused, never a
            // named room's request let through as one outside every room.
            Err(LookupFailed) => {
                bypass.refusal = Some(Refusal::Unreadable);
                bypass.unreadable = lookup.failed();
                return bypass;
            }
        };
        let here = placement(&bypass.settings, index.as_ref(), host, path);
        // Every reading an origin may give the path must fall in the same room.
        let ambiguous = readings(path).iter().skip(1).any(|reading| {
            !same_room(
                placement(&bypass.settings, index.as_ref(), host, reading),
                here,
            )
        });
        let mut context = match here {
            _ if ambiguous => RequestContext {
                refusal: Some(Refusal::AmbiguousPath),
                ..bypass
            },
            Some(Some(scope)) => RequestContext::for_named_room(&service, scope, now),
            Some(None) => RequestContext::service_room(&service, now),
            None => bypass,
        };
        if let Some(index) = &index {
            if !index.problems.is_empty() {
                context.fallbacks.push(ROOMS);
            }
            context.named_rooms = index.rooms.iter().map(|s| s.name.clone()).collect();
        }
        service.noted(context)
    }

    /// Every setting of the service room as stored (its own keys and the members of
    /// `settings`), through `lookup`: what the tools read of a store, and what the
    /// edge reads for a page outside every room.
    pub fn from_store(lookup: &Remembered<'_>) -> RequestContext {
        let service = ServiceStore::new(lookup);
        service.noted(RequestContext::of(Settings::read(&|key| service.get(key))))
    }

    /// The service room's settings: its keys, and its `events` at `now` (events that
    /// cannot be read hold the request: [`RequestContext::holds`]).
    fn service_room(service: &ServiceStore<'_, '_>, now: u64) -> RequestContext {
        let events = service.lookup.read(EVENTS).ok().flatten();
        RequestContext::scheduled(|key| service.get(key), events, now)
    }

    /// A named room's settings (see the module's documentation).
    fn for_named_room(service: &ServiceStore<'_, '_>, scope: &Scope, now: u64) -> RequestContext {
        let room = NamedRoom::read(|key: &str| service.get(key), scope);
        let mut context = RequestContext::scheduled(|key| room.get(key), room.get(EVENTS), now);
        if !room.readable() {
            context.fallbacks.push(ROOM_FALLBACK);
        }
        context.room = Room::Named(scope.name.clone());
        context
    }

    /// Reads the settings through `base`, with the schedule `events` (its text)
    /// applied at `now` ([`crate::settings::events`]).
    fn scheduled(
        base: impl Fn(&str) -> Option<String>,
        events: Option<String>,
        now: u64,
    ) -> RequestContext {
        let schedule = events.map(|raw| Schedule::parse(&raw));
        let phase = schedule.as_ref().map_or(Phase::Idle, |s| s.phase(now));
        let mut context = RequestContext::of(match phase {
            Phase::Prequeue(event) | Phase::Running(event) => {
                let prequeue = matches!(phase, Phase::Prequeue(_));
                // While a controller holds the room, its writes govern.
                let controlled = base(CONTROLLER_HEARTBEAT).is_some();
                Settings::read(&|key| match key {
                    QUEUE_ALL if prequeue => Some("true".to_string()),
                    QUEUE_OPENS_AT => Some(event.start.to_string()),
                    ALLOW_PERCENTAGE | FIFO_CUTOFF if controlled => base(key),
                    _ if EVENT_FIXED_KEYS.contains(&key) => base(key),
                    _ => event.settings.get(key).cloned().or_else(|| base(key)),
                })
            }
            // After an event that shows the ended page the room is closed: nobody
            // is let in, and sessions end.
            Phase::Ended(_) => Settings::read(&|key| match key {
                ALLOW_PERCENTAGE => Some("0".to_string()),
                ALLOW_PERCENTAGE_FALLBACK | QUEUE_ALL => None,
                _ => base(key),
            }),
            Phase::Idle => Settings::read(&base),
        });
        match phase {
            Phase::Prequeue(event) | Phase::Running(event) => {
                context.event = Some(event.name.to_string());
            }
            Phase::Ended(event) => context.event_ended = Some(event.name.to_string()),
            Phase::Idle => {}
        }
        if schedule.is_some_and(|s| !s.problems.is_empty()) {
            context.fallbacks.push(EVENTS);
        }
        context
    }
}

/// Where a path falls: `None` outside every room, `Some(None)` in the service
/// room, `Some(Some(scope))` in a named room.
type Placement<'a> = Option<Option<&'a Scope>>;

/// Whether two placements name the same room.
fn same_room(a: Placement<'_>, b: Placement<'_>) -> bool {
    match (a, b) {
        (Some(Some(a)), Some(Some(b))) => a.name == b.name,
        (a, b) => a.is_none() == b.is_none() && a.flatten().is_none() && b.flatten().is_none(),
    }
}

/// The room `path` on `host` falls in (see the module's documentation), given the
/// service's bypass settings (`enabled`, `protected_paths`) and the rooms' index.
fn placement<'a>(
    service: &Settings,
    index: Option<&'a Index>,
    host: Option<&str>,
    path: &str,
) -> Placement<'a> {
    let named = index.and_then(|index| {
        let service_claim = service
            .enabled
            .then(|| {
                service
                    .protected_paths
                    .iter()
                    .filter(|prefix| path.starts_with(prefix.as_str()))
                    .map(String::len)
                    .max()
            })
            .flatten();
        index.room_for(host, path, service_claim)
    });
    match named {
        Some(scope) => Some(Some(scope)),
        None if service.protects(path) => Some(None),
        None => None,
    }
}

/// A named room's keys as the edge reads them: its value's (a JSON object), the
/// controller's keys for it over those, the service's `logger_name` and
/// `uid_ipv6_prefix`, its scope's paths as `protected_paths`. A room whose value
/// cannot be read holds everyone (`enabled` and `queue_all`): a mistake never opens
/// the room, and fixing it strands nobody. `wrctl config check` reads rooms through
/// it too.
pub struct NamedRoom<'a, F> {
    lookup: F,
    scope: &'a Scope,
    value: Option<BTreeMap<String, serde_json::Value>>,
}

impl<'a, F: Fn(&str) -> Option<String>> NamedRoom<'a, F> {
    /// The room of `scope`, its value read through `lookup` (the config store).
    pub fn read(lookup: F, scope: &'a Scope) -> Self {
        let value = lookup(&scope.name.store_key())
            .as_deref()
            .and_then(|raw| serde_json::from_str(raw).ok());
        NamedRoom {
            lookup,
            scope,
            value,
        }
    }

    /// Whether the room's value could be read.
    pub fn readable(&self) -> bool {
        self.value.is_some()
    }

    /// The keys the room's value sets (known or not).
    pub fn value_keys(&self) -> impl Iterator<Item = &str> {
        self.value.iter().flat_map(|v| v.keys().map(String::as_str))
    }

    /// The text of `key` for the room, as its settings read it.
    pub fn get(&self, key: &str) -> Option<String> {
        if key == PROTECTED_PATHS {
            // Scope paths hold no comma (the index refuses them).
            return Some(self.scope.paths.join(","));
        }
        if SERVICE_WIDE_KEYS.contains(&key) {
            return (self.lookup)(key);
        }
        if CONTROLLER_KEYS.contains(&key)
            && let Some(written) = (self.lookup)(&self.scope.name.key(key))
        {
            return Some(written);
        }
        match &self.value {
            Some(value) => value.get(key).and_then(text_of),
            None if key == ENABLED || key == QUEUE_ALL => Some("true".to_string()),
            None => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::config::{LOGGER_NAME, WAIT_PERIOD_DURATION};
    use crate::settings::percentage::Percentage;
    use crate::settings::room::RoomName;

    /// The settings for `path` on `host` from `pairs`, and how often each key was asked.
    fn read(
        pairs: &[(&str, &str)],
        host: Option<&str>,
        path: &str,
    ) -> (RequestContext, BTreeMap<String, usize>) {
        let map = crate::settings::layout::store_entries(pairs.iter().copied());
        let asked = RefCell::new(BTreeMap::new());
        let lookup = Remembered::new(|key: &str| {
            *asked.borrow_mut().entry(key.to_string()).or_default() += 1;
            map.get(key).cloned()
        });
        let settings = RequestContext::for_request(&lookup, host, path, 0);
        drop(lookup);
        (settings, asked.into_inner())
    }

    const ROOMS_VALUE: &str = r#"{"drops": {"paths": ["/drops/"]}}"#;

    #[test]
    fn a_named_room_reads_its_value_and_the_controllers_keys() {
        let pairs = [
            (ENABLED, "true"),
            (PROTECTED_PATHS, "/events"),
            (LOGGER_NAME, "log"),
            (ALLOW_PERCENTAGE, "80"),
            (ROOMS, ROOMS_VALUE),
            (
                "room.drops",
                r#"{"enabled": true, "allow_percentage": 10, "wait_period_duration": "45", "logger_name": "other"}"#,
            ),
            ("room.drops.allow_percentage", "25"),
        ];
        let (settings, asked) = read(&pairs, None, "/drops/1");
        assert_eq!(settings.room, Room::Named(RoomName::new("drops").unwrap()));
        assert!(settings.settings.enabled && settings.settings.protects("/drops/1"));
        // The controller's key wins over the room's value; the rest is the room's,
        // the logger the service's.
        assert_eq!(settings.settings.allow_percentage, Percentage::whole(25));
        assert_eq!(settings.settings.wait_period_duration, 45);
        assert_eq!(settings.settings.logger_name.as_deref(), Some("log"));
        assert_eq!(
            crate::credentials::cookie_names::of_named_rooms(&settings.named_rooms),
            vec![
                "waiting_room_drops",
                "waiting_pass_drops",
                "waiting_toll_drops"
            ]
        );
        assert!(settings.fallbacks.is_empty(), "{:?}", settings.fallbacks);
        // The bypass keys (`enabled`, `controller_heartbeat`, `logger_name` and
        // `settings`), the index, the value and four controller keys, once each.
        assert_eq!(asked.len(), 4 + 1 + 1 + 4, "{asked:?}");
        assert!(asked.values().all(|&n| n == 1));
        assert!(!asked.contains_key(WAIT_PERIOD_DURATION));
        // The service room keeps the rest.
        let (service, _) = read(&pairs, None, "/events/1");
        assert_eq!(
            (service.room, service.settings.allow_percentage),
            (Room::Service, Percentage::whole(80))
        );
    }

    #[test]
    fn a_named_rooms_challenge_is_an_object_of_its_value() {
        use crate::bots::challenge::{BotChallenge, Provider};
        use crate::settings::config::BOT_CHALLENGE;
        let room = |challenge: &str| {
            let value = format!(r#"{{"enabled": true, "bot_challenge": {challenge}}}"#);
            let pairs = [(ROOMS, ROOMS_VALUE), ("room.drops", value.as_str())];
            read(&pairs, None, "/drops/x").0
        };
        let on = room(r#"{"provider": "turnstile", "site_key": "1x00000000000000000000AA"}"#);
        assert_eq!(
            on.settings.bot_challenge.settings().map(|c| c.provider),
            Some(Provider::Turnstile)
        );
        assert!(on.fallbacks.is_empty(), "{:?}", on.fallbacks);
        // Its text, as the service's key holds it, reads the same.
        let text =
            room(r#""{\"provider\": \"turnstile\", \"site_key\": \"1x00000000000000000000AA\"}""#);
        assert_eq!(text.settings.bot_challenge, on.settings.bot_challenge);
        assert_eq!(room("null").settings.bot_challenge, BotChallenge::Off);
        for typo in [r#"{"provider": "turnstile"}"#, "[1]", "7", "true"] {
            let s = room(typo);
            assert_eq!(s.settings.bot_challenge, BotChallenge::Unreadable, "{typo}");
            assert_eq!(s.fallbacks, vec![BOT_CHALLENGE], "{typo}");
        }
    }

    #[test]
    fn a_room_without_a_readable_value_holds_everyone() {
        for value in [None, Some("not json"), Some("[1]")] {
            let mut pairs = vec![(ROOMS, ROOMS_VALUE)];
            if let Some(v) = value {
                pairs.push(("room.drops", v));
            }
            let (settings, _) = read(&pairs, None, "/drops/x");
            assert!(
                settings.settings.protects("/drops/x") && settings.settings.queue_all,
                "{value:?}"
            );
            assert_eq!(settings.fallbacks, vec![ROOM_FALLBACK], "{value:?}");
            assert!(matches!(settings.room, Room::Named(_)));
        }
    }

    #[test]
    fn values_of_other_types_fall_back_like_bad_text() {
        let pairs = [
            (ROOMS, ROOMS_VALUE),
            (
                "room.drops",
                r#"{"enabled": true, "wait_period_duration": [1], "cookie_lifetime": null}"#,
            ),
        ];
        let (settings, _) = read(&pairs, None, "/drops/x");
        assert_eq!(settings.fallbacks, vec![WAIT_PERIOD_DURATION]);
        assert_eq!(
            settings.settings.cookie_lifetime,
            Settings::default().cookie_lifetime
        );
    }

    #[test]
    fn a_bad_index_leaves_the_service_room_and_says_so() {
        let pairs = [(ENABLED, "true"), (PROTECTED_PATHS, "/"), (ROOMS, "{oops")];
        let (settings, _) = read(&pairs, None, "/drops/x");
        assert_eq!(settings.room, Room::Service);
        assert!(settings.settings.protects("/drops/x"));
        assert_eq!(settings.fallbacks, vec![ROOMS]);
    }

    /// A store written before the settings moved into `settings`: its protected
    /// paths are kept and the room holds them, never reads them as the defaults.
    #[test]
    fn a_store_of_the_earlier_layout_holds_its_own_paths() {
        let old = |key: &str| {
            let store = BTreeMap::from([
                (ENABLED, "true"),
                (PROTECTED_PATHS, "/shop"),
                (ALLOW_PERCENTAGE, "100"),
                (QUEUE_ALL, "false"),
            ]);
            store.get(key).map(|v| v.to_string())
        };
        for (path, held) in [("/shop/x", true), ("/events/x", false)] {
            let context = RequestContext::for_request(&Remembered::new(old), None, path, 0);
            assert!(context.old_layout, "{path}");
            assert_eq!(context.settings.protects(path), held, "{path}");
            // In the room, nobody new is let in (outside it, nothing is read).
            assert_eq!(context.settings.queue_all, held, "{path}");
        }
        assert!(RequestContext::from_store(&Remembered::new(old)).old_layout);
        // The current layout, and a store without either, are not it.
        let (current, _) = read(
            &[(ENABLED, "true"), (PROTECTED_PATHS, "/shop")],
            None,
            "/shop",
        );
        assert!(!current.old_layout && !current.settings.queue_all);
        let (empty, _) = read(&[], None, "/events");
        assert!(!empty.old_layout && empty.fallbacks.is_empty());
        // A failed probe is a failed `settings`: held, and said so.
        let failing = Remembered::fallible(|key: &str| match key {
            PROTECTED_PATHS => Err(LookupFailed),
            ENABLED => Ok(Some("true".to_string())),
            _ => Ok(None),
        });
        let context = RequestContext::for_request(&failing, None, "/events", 0);
        assert!(context.settings.queue_all && !context.old_layout);
        assert_eq!(context.unreadable, vec![PROTECTED_PATHS.to_string()]);
        // `settings` is absent, not unusable.
        assert!(
            !context.fallbacks.contains(&SETTINGS),
            "{:?}",
            context.fallbacks
        );
    }
}
