//! What a simulation runs: who arrives when, on which devices and addresses, and
//! the room's settings.

use std::collections::BTreeMap;
use std::str::FromStr;

use control::origin_rule::{Healthy, OriginOptions};
use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};
use waiting_room::settings::config::{
    ALLOW_PERCENTAGE, ALLOW_PERIOD_TIMEOUT, BOT_TOLL_BITS, DRAW_GRID, ENABLED,
    POP_NEW_SESSIONS_PER_MINUTE, WAIT_PERIOD_DURATION,
};
use waiting_room::settings::config::{KEYS, Settings};
use waiting_room::settings::percentage::Percentage;
use waiting_room::settings::refresh_mode::RefreshMode;
use waiting_room::settings::room::RoomName;

use crate::bots::Bots;
use crate::origin_model::OriginSpec;
use crate::rng::Rng;

/// Unix time of the run's second 0 (a whole minute, so slots line up with minutes).
pub const START: u64 = 1_700_000_040;

/// When visitors arrive, in seconds from the start of the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "profile", rename_all = "kebab-case")]
pub enum Arrivals {
    /// Uniformly over the first `seconds`.
    Steady {
        /// Length of the arrival window.
        seconds: u64,
    },
    /// Everyone within the first `seconds` (a flash crowd).
    Flash {
        /// Length of the crowd's arrival.
        seconds: u64,
    },
    /// `count` flash crowds, one every `every` seconds, each `width` seconds wide.
    Waves {
        /// Number of waves.
        count: u64,
        /// Seconds from one wave's start to the next.
        every: u64,
        /// Seconds each wave lasts.
        width: u64,
    },
}

impl Arrivals {
    /// Parses `steady:SECONDS`, `flash:SECONDS` or `waves:COUNT:EVERY:WIDTH`.
    pub fn parse(spec: &str) -> Result<Arrivals, String> {
        let parts: Vec<&str> = spec.split(':').collect();
        let number = |i: usize| -> Result<u64, String> {
            parts
                .get(i)
                .and_then(|p| p.parse().ok())
                .filter(|n| *n > 0)
                .ok_or(format!(
                    "arrivals {spec:?}: part {i} is not a positive number"
                ))
        };
        match (parts[0], parts.len()) {
            ("steady", 2) => Ok(Arrivals::Steady {
                seconds: number(1)?,
            }),
            ("flash", 2) => Ok(Arrivals::Flash {
                seconds: number(1)?,
            }),
            ("waves", 4) => Ok(Arrivals::Waves {
                count: number(1)?,
                every: number(2)?,
                width: number(3)?,
            }),
            _ => Err(format!(
                "arrivals {spec:?}: expected steady:SECONDS, flash:SECONDS or waves:COUNT:EVERY:WIDTH"
            )),
        }
    }

    /// One arrival time, in seconds from the start.
    pub fn draw(&self, rng: &mut Rng) -> u64 {
        match *self {
            Arrivals::Steady { seconds } | Arrivals::Flash { seconds } => rng.below(seconds),
            Arrivals::Waves {
                count,
                every,
                width,
            } => rng.below(count) * every + rng.below(width),
        }
    }
}

impl FromStr for Arrivals {
    type Err = String;

    fn from_str(spec: &str) -> Result<Arrivals, String> {
        Arrivals::parse(spec)
    }
}

/// Who the visitors are, beyond one person with one device on their own address.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Mix {
    /// Share of people who join on several devices behind their one address.
    pub multi_device_share: f64,
    /// Devices each of them uses.
    pub devices: u32,
    /// Seconds over which their devices join: each device after the first
    /// arrives uniformly within this many seconds of the person's first arrival.
    pub device_spread: u64,
    /// Share of people behind a shared (NAT) address.
    pub nat_share: f64,
    /// People per shared address.
    pub nat_size: u32,
    /// Share of people whose devices each come from an address of their own
    /// (none in the named mixes).
    pub multi_address_share: f64,
    /// Addresses (one device on each) each of them uses; their devices join
    /// within `device_spread`, as several devices behind one address do.
    pub addresses_each: u32,
    /// Share of people who keep copies of their tokens and replay them.
    pub attacker_share: f64,
    /// Share of devices with several tabs open on the waiting page, sharing
    /// the device's cookie jar, each following the page's `Refresh`.
    pub tabs_share: f64,
    /// Tabs each of them has open.
    pub tabs: u32,
    /// Share of devices that are apps polling on their own interval instead of
    /// following `Refresh`.
    pub poller_share: f64,
    /// Their interval, seconds: each app's drawn uniformly from this range.
    pub poll_every: (u64, u64),
    /// Share of devices whose person reloads early: at half the page's `Refresh`.
    pub early_share: f64,
    /// Share of people who give up waiting.
    pub abandon_share: f64,
    /// Each of them gives up at a moment drawn uniformly within this many
    /// seconds of arriving (if not admitted by then).
    pub patience: u64,
    /// Bots besides the people, each on an address of its own (none in the
    /// named mixes).
    pub bots: Bots,
}

impl Default for Mix {
    fn default() -> Self {
        Mix {
            multi_device_share: 0.1,
            devices: 3,
            device_spread: 10,
            nat_share: 0.02,
            nat_size: 20,
            multi_address_share: 0.0,
            addresses_each: 3,
            attacker_share: 0.001,
            tabs_share: 0.3,
            tabs: 3,
            poller_share: 0.05,
            poll_every: (3, 6),
            early_share: 0.1,
            abandon_share: 0.1,
            patience: 1800,
            bots: Bots::default(),
        }
    }
}

impl Mix {
    /// The mix called `name`: `plain`, `devices`, `default` or `heavy`.
    pub fn named(name: &str) -> Option<Mix> {
        match name {
            "plain" => Some(Mix::plain()),
            "devices" => Some(Mix::devices()),
            "default" => Some(Mix::default()),
            "heavy" => Some(Mix::heavy()),
            _ => None,
        }
    }

    /// The default's devices, shared addresses and replayers, and nothing
    /// else: one tab each, following `Refresh`, never giving up (the mix the
    /// simulator's first figures were taken with).
    pub fn devices() -> Mix {
        Mix {
            tabs_share: 0.0,
            poller_share: 0.0,
            early_share: 0.0,
            abandon_share: 0.0,
            ..Mix::default()
        }
    }

    /// More of everything: a third on several devices joining over two
    /// minutes, a tenth behind shared addresses, one in a hundred replaying,
    /// most with several tabs, more apps and early reloaders, and three in ten
    /// giving up within 20 minutes.
    pub fn heavy() -> Mix {
        Mix {
            multi_device_share: 0.3,
            devices: 3,
            device_spread: 120,
            nat_share: 0.1,
            nat_size: 20,
            multi_address_share: 0.0,
            addresses_each: 3,
            attacker_share: 0.01,
            tabs_share: 0.6,
            tabs: 4,
            poller_share: 0.15,
            poll_every: (2, 8),
            early_share: 0.3,
            abandon_share: 0.3,
            patience: 1200,
            bots: Bots::default(),
        }
    }

    /// Everyone alone on one device, in one tab that follows `Refresh`, and
    /// waiting as long as it takes.
    pub fn plain() -> Mix {
        Mix {
            multi_device_share: 0.0,
            nat_share: 0.0,
            attacker_share: 0.0,
            tabs_share: 0.0,
            poller_share: 0.0,
            early_share: 0.0,
            abandon_share: 0.0,
            ..Mix::default()
        }
    }
}

impl FromStr for Mix {
    type Err = String;

    /// [`Mix::named`], or why not.
    fn from_str(name: &str) -> Result<Mix, String> {
        Mix::named(name).ok_or_else(|| {
            format!("{name:?} is not a mix: expected plain, devices, default or heavy")
        })
    }
}

/// The room under test: its settings as the config store holds them, key → text,
/// read by the room's own reader (so every setting it has is one the simulator
/// takes), and how the simulated POP counts new sessions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Room {
    /// The stored text of each key set, as the reader reads it back
    /// ([`Settings::stored`]).
    stored: BTreeMap<String, String>,
    /// `stored`, read.
    settings: Settings,
    /// How the POP counts its new sessions for `pop_new_sessions_per_minute`.
    pub pop_counts: PopCountsModel,
}

impl Default for Room {
    /// The room's defaults, but 20 % let through.
    fn default() -> Self {
        let room = Room {
            stored: BTreeMap::new(),
            settings: Settings::default(),
            pop_counts: PopCountsModel::default(),
        };
        room.with(ALLOW_PERCENTAGE, 20)
    }
}

impl Room {
    /// Stores `text` under `key`, as the text that reads back as its value; an
    /// error naming them, and the room unchanged, when `key` is no setting or the
    /// reader refuses what is stored (it would fall back).
    pub fn set(&mut self, key: &str, text: &str) -> Result<(), String> {
        if !KEYS.contains(&key) {
            return Err(format!(
                "{key}={text}: {key:?} is not a setting of the room (one of {})",
                KEYS.join(", ")
            ));
        }
        let mut stored = self.stored.clone();
        stored.insert(key.to_string(), text.to_string());
        // The simulated room is on unless told otherwise.
        let on = |key: &str| (key == ENABLED).then(|| "true".to_string());
        let (settings, fallbacks) = Settings::read(&|k| stored.get(k).cloned().or_else(|| on(k)));
        // A key set earlier may refuse in the light of this one (bypass_paths and
        // protected_paths), so every key is checked.
        if let Some(bad) = fallbacks.first() {
            return Err(format!(
                "{bad}={}: the room refuses this value (it would fall back to its default)",
                stored[*bad]
            ));
        }
        match settings.stored(key) {
            Some(text) => stored.insert(key.to_string(), text),
            None => stored.remove(key),
        };
        (self.stored, self.settings) = (stored, settings);
        Ok(())
    }

    /// This room with `key` set to `value`, which the room must take.
    pub fn with(mut self, key: &str, value: impl std::fmt::Display) -> Room {
        self.set(key, &value.to_string())
            .unwrap_or_else(|why| panic!("{why}"));
        self
    }

    /// The room's settings, as its reader reads them.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// The stored text of `key`, when set.
    pub fn stored(&self, key: &str) -> Option<&str> {
        self.stored.get(key).map(String::as_str)
    }

    /// The core's settings for this room, refreshing in `mode` (the run's).
    pub fn refreshing(&self, mode: RefreshMode) -> Settings {
        Settings {
            refresh_mode: mode,
            ..self.settings.clone()
        }
    }
}

/// The settings every report shows, set or not (see [`Room`]'s `serialize`).
const SHOWN: [&str; 6] = [
    ALLOW_PERCENTAGE,
    WAIT_PERIOD_DURATION,
    ALLOW_PERIOD_TIMEOUT,
    DRAW_GRID,
    POP_NEW_SESSIONS_PER_MINUTE,
    BOT_TOLL_BITS,
];

impl Serialize for Room {
    /// Under the config store's keys: the [`SHOWN`] settings as values (the
    /// percentage a number of percent), the POP's counts, then every other key
    /// set, as stored.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let s = &self.settings;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry(ALLOW_PERCENTAGE, &percent_value(s.allow_percentage))?;
        map.serialize_entry(WAIT_PERIOD_DURATION, &s.wait_period_duration)?;
        map.serialize_entry(ALLOW_PERIOD_TIMEOUT, &s.allow_period_timeout)?;
        map.serialize_entry(DRAW_GRID, &s.draw_grid.to_string())?;
        map.serialize_entry(POP_NEW_SESSIONS_PER_MINUTE, &s.pop_new_sessions_per_minute)?;
        map.serialize_entry("pop_counts", &self.pop_counts)?;
        map.serialize_entry(BOT_TOLL_BITS, &s.bot_toll_bits)?;
        for (key, text) in &self.stored {
            if !SHOWN.contains(&key.as_str()) {
                map.serialize_entry(key, text)?;
            }
        }
        map.end()
    }
}

/// How the simulated POP counts the new sessions the ceiling reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "model", rename_all = "lowercase")]
pub enum PopCountsModel {
    /// Every new session counted at once, every read exact.
    Exact,
    /// Fastly's edge rate counter as documented
    /// ([`waiting_room::admission::ceiling::DocumentedCounts`]): each read 10 % low,
    /// the reads spread over `nodes` nodes, each reading zero at its first use.
    Edge {
        /// Nodes of the POP.
        nodes: u32,
    },
}

impl Default for PopCountsModel {
    fn default() -> Self {
        PopCountsModel::Edge {
            nodes: waiting_room::admission::ceiling::DEFAULT_NODES,
        }
    }
}

/// A percentage as a JSON number of percent (`12.5`), exact to its four decimals.
pub fn percent<S: Serializer>(p: &Percentage, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_f64(percent_value(*p))
}

fn optional_percent<S: Serializer>(
    p: &Option<Percentage>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    match p {
        Some(p) => percent(p, serializer),
        None => serializer.serialize_none(),
    }
}

/// A percentage as a number of percent (`12.5`).
pub fn percent_value(p: Percentage) -> f64 {
    f64::from(p.micros()) / 10_000.0
}

/// What an admitted visitor does: `requests` more requests, `interval` seconds apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Session {
    /// Requests after the one that admitted them.
    pub requests: u32,
    /// Seconds between two of them.
    pub interval: u64,
}

impl Default for Session {
    fn default() -> Self {
        Session {
            requests: 5,
            interval: 60,
        }
    }
}

/// The closed loop: the room's own controller holding a target of new sessions a
/// minute, reading the room's log lines late and writing settings that reach the
/// edge late.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Control {
    /// New sessions a minute to hold.
    pub target_per_minute: f64,
    /// Seconds from a write to the config store until the edge reads it.
    pub propagation_delay: u64,
    /// Seconds from a request until the controller reads its log line.
    pub log_delay: u64,
    /// Seconds between two controller ticks.
    pub tick: u64,
    /// At most this many live sessions.
    pub max_active: Option<u64>,
    /// Written at the first tick, before the controller has computed a percentage.
    #[serde(serialize_with = "optional_percent")]
    pub start: Option<Percentage>,
    /// Propagation delay the controller assumes until it has measured one, seconds.
    pub expected_propagation: Option<u64>,
    /// Lowest percentage the controller writes.
    #[serde(serialize_with = "percent")]
    pub min: Percentage,
    /// Highest percentage the controller writes.
    #[serde(serialize_with = "percent")]
    pub max: Percentage,
    /// The origin rule, when the target follows the origin's health (its
    /// session length is the scenario's).
    #[serde(serialize_with = "origin_rule")]
    pub origin: Option<OriginRule>,
}

/// The origin rule's options but the session length, which is the scenario's.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OriginRule {
    /// What healthy means.
    pub healthy: Healthy,
    /// New sessions a minute never cut below.
    pub floor: f64,
    /// New sessions a minute never exceeded.
    pub ceiling: f64,
}

impl OriginRule {
    /// The options, for sessions of `session` seconds.
    pub fn options(&self, session: u64) -> OriginOptions {
        OriginOptions {
            healthy: self.healthy,
            floor: self.floor,
            ceiling: self.ceiling,
            session,
        }
    }
}

fn origin_rule<S: Serializer>(rule: &Option<OriginRule>, serializer: S) -> Result<S::Ok, S::Error> {
    match rule {
        Some(r) => serializer.serialize_str(&format!(
            "{} floor={} ceiling={}",
            r.healthy, r.floor, r.ceiling
        )),
        None => serializer.serialize_none(),
    }
}

impl Control {
    /// The controller's defaults, holding `target_per_minute`.
    pub fn new(target_per_minute: f64) -> Control {
        let defaults = control::options::Options::default();
        Control {
            target_per_minute,
            propagation_delay: 30,
            log_delay: 5,
            tick: defaults.tick,
            max_active: None,
            start: None,
            expected_propagation: defaults.expected_propagation,
            min: defaults.min,
            max: defaults.max,
            origin: None,
        }
    }

    /// The controller's options for `room`.
    pub fn options(&self, room: &Room) -> control::options::Options {
        control::options::Options {
            target_per_minute: self.target_per_minute,
            max_active: self.max_active,
            min: self.min,
            max: self.max,
            tick: self.tick,
            wait_period: room.settings().wait_period_duration,
            start: self.start,
            expected_propagation: self.expected_propagation,
            ..control::options::Options::default()
        }
    }
}

impl Scenario {
    /// Seconds a session lasts: its requests after the first, one interval apart.
    pub fn session_seconds(&self) -> u64 {
        u64::from(self.session.requests) * self.session.interval
    }

    /// The controller of the closed loop in random mode, when one runs.
    pub fn controller(
        &self,
    ) -> Option<Result<control::percentage_rule::Controller, control::options::BadOptions>> {
        let spec = self.control?;
        let controller = control::percentage_rule::Controller::new(spec.options(&self.room));
        Some(match spec.origin {
            Some(rule) => {
                controller.and_then(|c| c.following_origin(rule.options(self.session_seconds())))
            }
            None => controller,
        })
    }
}

/// One simulation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Scenario {
    /// People (a person may have several devices).
    pub visitors: u64,
    /// When they arrive.
    pub arrivals: Arrivals,
    /// Who they are.
    pub mix: Mix,
    /// The room.
    pub room: Room,
    /// What admitted visitors do.
    pub session: Session,
    /// Virtual seconds simulated.
    pub duration: u64,
    /// Seed of every random choice.
    pub seed: u64,
    /// The controller, when it runs (`None`: the static `allow_percentage` throughout).
    pub control: Option<Control>,
    /// The origin behind the room, when one answers the requests let through
    /// (it needs the closed loop: the answers are in the log's lines).
    pub origin: Option<OriginSpec>,
}

impl Default for Scenario {
    fn default() -> Self {
        Scenario {
            visitors: 100_000,
            arrivals: Arrivals::Steady { seconds: 3000 },
            mix: Mix::default(),
            room: Room::default(),
            session: Session::default(),
            duration: 3600,
            seed: 1,
            control: None,
            origin: None,
        }
    }
}

/// A named room of the same service, run at once with a scenario's room (the
/// service room): its own crowd, settings and controller, and one log stream
/// for both rooms.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SecondRoom {
    /// The room's name: its lines say `room=NAME`, its tokens are its own.
    #[serde(serialize_with = "room_name")]
    pub name: RoomName,
    /// Its crowd, settings and controller.
    pub scenario: Scenario,
}

fn room_name<S: Serializer>(name: &RoomName, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.collect_str(name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use waiting_room::settings::draw_grid::DrawGrid;

    #[test]
    fn arrival_specs_parse_and_stay_in_their_windows() {
        assert_eq!(
            Arrivals::parse("steady:60"),
            Ok(Arrivals::Steady { seconds: 60 })
        );
        assert_eq!(
            Arrivals::parse("flash:5"),
            Ok(Arrivals::Flash { seconds: 5 })
        );
        let waves = Arrivals::parse("waves:3:600:10").unwrap();
        for bad in ["", "steady", "flash:0", "flash:x", "waves:3:600", "burst:5"] {
            assert!(Arrivals::parse(bad).is_err(), "{bad:?}");
            assert!(bad.parse::<Arrivals>().is_err(), "{bad:?}");
        }
        assert_eq!("waves:3:600:10".parse(), Ok(waves));
        let mut rng = Rng::new(3);
        for _ in 0..1000 {
            let t = waves.draw(&mut rng);
            assert!(t < 1210 && t % 600 < 10, "{t}");
        }
    }

    #[test]
    fn mixes_parse_by_name() {
        assert_eq!("plain".parse(), Ok(Mix::plain()));
        assert_eq!("devices".parse(), Ok(Mix::devices()));
        assert_eq!("default".parse(), Ok(Mix::default()));
        assert_eq!("heavy".parse(), Ok(Mix::heavy()));
        for bad in ["", "Heavy", "crowded"] {
            assert!(bad.parse::<Mix>().is_err(), "{bad:?}");
        }
    }

    #[test]
    fn room_settings_come_from_the_core_defaults() {
        let room = Room::default();
        let s = room.refreshing(RefreshMode::Fixed);
        assert!(s.enabled);
        assert_eq!(
            (s.allow_percentage, s.wait_period_duration),
            (Percentage::whole(20), 30)
        );
        assert_eq!(s.refresh_mode, RefreshMode::Fixed);
        assert_eq!(s.active_key, Settings::default().active_key);
        assert_eq!(s.draw_grid, DrawGrid::Address);
        let global = room.with(DRAW_GRID, DrawGrid::Global);
        assert_eq!(global.settings().draw_grid, DrawGrid::Global);
        assert_eq!(global.stored(DRAW_GRID), Some("global"));
    }

    #[test]
    fn a_room_keeps_what_the_reader_reads_back_and_refuses_the_rest() {
        let mut room = Room::default();
        // Stored as the store's own text reads back.
        room.set("cookie_samesite", " strict").unwrap();
        assert_eq!(room.stored("cookie_samesite"), Some("Strict"));
        // An empty list is a missing key.
        room.set("bypass_paths", "").unwrap();
        assert_eq!(room.stored("bypass_paths"), None);
        room.set("enabled", "false").unwrap();
        assert!(!room.settings().enabled);
        for (key, text) in [
            ("wait_period", "30"),
            ("draw_grid", "vcl"),
            ("fifo_hold", "0"),
        ] {
            let why = Room::default().set(key, text).unwrap_err();
            assert!(why.starts_with(&format!("{key}={text}: ")), "{why}");
        }
        // A key that refuses only beside another one.
        let mut room = Room::default();
        room.set("bypass_paths", "/events/faq").unwrap();
        let why = room
            .set("protected_paths", "/events/faq/x,/events")
            .unwrap_err();
        assert!(why.starts_with("bypass_paths=/events/faq: "), "{why}");
        // A refused value leaves the room as it was.
        assert_eq!(room.stored("protected_paths"), None);
        assert_eq!(room.settings().bypass_paths, ["/events/faq"]);
    }

    #[test]
    fn a_room_is_reported_under_the_stores_keys() {
        let room = Room::default()
            .with(WAIT_PERIOD_DURATION, 20)
            .with("session_mode", "fixed");
        let json = serde_json::to_value(&room).unwrap();
        let expected = serde_json::json!({
            "allow_percentage": 20.0,
            "wait_period_duration": 20,
            "allow_period_timeout": 3600,
            "draw_grid": "address",
            "pop_new_sessions_per_minute": null,
            "pop_counts": {"model": "edge", "nodes": 16},
            "bot_toll_bits": 0,
            "session_mode": "fixed",
        });
        assert_eq!(json, expected);
    }
}
