//! `wrctl config check`: what the room would make of a `waitingroom_config` store.
//!
//! The settings are read by the room's own [`Settings::from_lookup`], so the
//! effective values and the fallbacks are exactly the room's (every key: the edge
//! reads only the keys a request can use, so a request's `config_fallback` names
//! the unusable keys among those); this module only adds warnings about
//! combinations that work but are probably not meant.

use std::collections::BTreeMap;

use waiting_room::admission::ceiling::UNDER_COUNT_PERCENT;
use waiting_room::admission::estimate::draw_interval;
use waiting_room::admission::refresh;
use waiting_room::bots::challenge::ChallengeSettings;
use waiting_room::bots::toll;
use waiting_room::credentials::keys::{
    MAX_KID_LEN, MIN_STRONG_KEY_LEN, SigningKey, is_storable_kid,
};
use waiting_room::settings::config::{self, Heartbeat, QueueingMethod, Settings};
use waiting_room::settings::draw_grid::DrawGrid;
use waiting_room::settings::refresh_mode::RefreshMode;

use waiting_room::settings::config::{EVENT_FIXED_KEYS, EVENTS, OWN_KEYS, ROOMS, ROWS};
use waiting_room::settings::context::RequestContext;
use waiting_room::settings::events::Schedule;
use waiting_room::settings::layout::{self, Members, SETTINGS};
use waiting_room::settings::limits::CONFIG_LOOKUP_BUDGET;
use waiting_room::settings::room::{Index, Scope};
use waiting_room::settings::room_settings::{NamedRoom, Remembered};
use waiting_room::settings::row::Unit;
use waiting_room::settings::table;

use crate::clock::{utc, utc_millis};
use crate::config_login::{self, KeysIn};

/// Every setting the room reads from `waitingroom_config`, in the order of the settings
/// table (and docs/operate/configuration.md's).
pub use waiting_room::settings::config::KEYS;

/// A `wait_period_duration` above this many seconds gets a warning: a new
/// visitor's first draw can be up to three slots away.
pub const LONG_WAIT_PERIOD: u64 = 300;

/// A `pop_new_sessions_per_minute` under this many gets a warning: at 100 a
/// minute the edge counters' documented under-count ([`UNDER_COUNT_PERCENT`]) is
/// 10 sessions; below it, a handful, and the ceiling rests on what Fastly does not
/// document: how its estimating counters count so few, and how many of a POP's
/// nodes start at zero, which in the simulator puts a crowd's first minute tens of
/// sessions over the ceiling (docs/operate/platform-limits.md).
pub const FEW_POP_SESSIONS: u32 = 100;

pub use crate::config_report::{Report, Store};

/// The flat keys of `store` the room no longer reads: settings stored as keys of
/// their own that belong in `settings`.
pub fn moved_keys(store: &Store) -> Vec<&str> {
    store
        .keys()
        .map(String::as_str)
        .filter(|key| layout::is_member(key))
        .collect()
}

/// Reads a config-store file: a flat JSON object of string values (a Viceroy store
/// file such as `local/config.json`), or the array of `{"item_key", "item_value"}`
/// objects that `fastly config-store-entry list --json` prints.
pub fn parse_store(text: &str) -> Result<Store, String> {
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    let mut store = Store::new();
    match value {
        serde_json::Value::Object(map) => {
            for (key, value) in map {
                let serde_json::Value::String(value) = value else {
                    return Err(format!(
                        "the value of {key:?} is not a string (a config store holds only \
                         strings: write it in quotes)"
                    ));
                };
                store.insert(key, value);
            }
        }
        serde_json::Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                // A deleted entry, if the export lists one, is not in the store.
                if item.get("deleted_at").is_some_and(|d| !d.is_null()) {
                    continue;
                }
                let key = item.get("item_key").and_then(|v| v.as_str());
                let value = item.get("item_value").and_then(|v| v.as_str());
                let (Some(key), Some(value)) = (key, value) else {
                    return Err(format!(
                        "item {i} of the array has no string item_key and item_value (expected \
                         the output of `fastly config-store-entry list --json`)"
                    ));
                };
                store.insert(key.to_string(), value.to_string());
            }
        }
        _ => {
            return Err(
                "expected a JSON object of string values, or an array of {\"item_key\", \
                 \"item_value\"} objects"
                    .into(),
            );
        }
    }
    Ok(store)
}

/// The settings of `store` one key each, as the room reads them: its keys of their
/// own and the members of `settings` (a setting stored as a key of its own that
/// belongs in `settings` is left out: the room does not read it).
fn as_read(store: &Store) -> Store {
    let members = match Members::parse(store.get(SETTINGS).map(String::as_str)) {
        Members::Read(members) => members,
        Members::Absent | Members::Unreadable | Members::OldLayout(_) => Store::new(),
    };
    store
        .iter()
        .filter(|(key, _)| !layout::is_member(key) && key.as_str() != SETTINGS)
        .map(|(k, v)| (k.clone(), v.clone()))
        // Unknown members stay, to be named as unknown keys.
        .chain(
            members
                .into_iter()
                .filter(|(key, _)| !OWN_KEYS.contains(&key.as_str())),
        )
        .collect()
}

/// Checks the store `stored`, and the signing keys `keys` when given, kept where
/// `keys_in` says.
pub fn check(stored: &Store, keys: Option<&Store>, keys_in: KeysIn, now: u64) -> Report {
    let read = RequestContext::from_store(&Remembered::new(|key: &str| stored.get(key).cloned()));
    let flat = as_read(stored);
    let (settings, fallbacks) = (&read.settings, &read.fallbacks);
    let mut report = check_settings(settings, fallbacks, &flat, keys, keys_in, now);
    config_login::check_service(&mut report, settings, &flat, fallbacks);
    check_layout(&mut report, stored);
    report
}

/// Checks `settings`, read from `store` (one key each) with `fallbacks`.
fn check_settings(
    settings: &Settings,
    fallbacks: &[&str],
    store: &Store,
    keys: Option<&Store>,
    keys_in: KeysIn,
    now: u64,
) -> Report {
    let mut report = Report::default();
    for key in unique_keys() {
        let state = if fallbacks.contains(&key) {
            "fallback: the stored value is unusable, the default is used"
        } else if store.contains_key(key) {
            "set"
        } else {
            "default"
        };
        let value = match key {
            // The index and the schedule are shown below, room by room and event by event.
            ROOMS => match store.get(ROOMS) {
                Some(raw) => list(Index::parse(raw).rooms.iter().map(|s| s.name.to_string())),
                None => "none (one room: the service's)".into(),
            },
            EVENTS => match store.get(EVENTS) {
                Some(raw) => format!("{} event(s)", Schedule::parse(raw).events.len()),
                None => "none".into(),
            },
            _ => effective(settings, key),
        };
        report.effective.push(format!("{key} = {value}  ({state})"));
    }
    if !fallbacks.is_empty() {
        report.fallback_field = Some(format!("config_fallback={}", fallbacks.join(",")));
        for key in fallbacks {
            let stored = store.get(*key).map_or("", String::as_str);
            let when_bad = config::row(key).map_or("", |row| row.when_bad);
            report.errors.push(format!(
                "{key} = {} is unusable ({when_bad}): the room uses {} and logs \
                 config_fallback={key} on the requests that read it",
                config_login::stored(key, stored),
                effective(settings, key)
            ));
        }
    }
    if let Some(raw) = store.get(EVENTS) {
        let schedule = Schedule::parse(raw);
        for event in &schedule.events {
            report.effective.push(format!(
                "event {}: pre-queue {}, start {}, end {}{}, {} setting(s) of its own",
                event.name,
                utc(event.prequeue_start),
                utc(event.start),
                utc(event.end),
                if event.ended_page {
                    " (then the ended page)"
                } else {
                    ""
                },
                event.settings.len()
            ));
        }
        for event in &schedule.events {
            for key in event.settings.keys() {
                if EVENT_FIXED_KEYS.contains(&key.as_str()) {
                    report.warnings.push(format!(
                        "event {} sets {key}, which an event cannot change: ignored",
                        event.name
                    ));
                } else if !KEYS.contains(&key.as_str()) {
                    let hint = closest(key, &KEYS)
                        .map_or(String::new(), |k| format!(" (did you mean {k}?)"));
                    report.warnings.push(format!(
                        "event {} sets unknown key {key:?}{hint}: ignored",
                        event.name
                    ));
                }
            }
        }
        for problem in schedule.problems {
            report.errors.push(format!(
                "{problem}: the room ignores it and logs config_fallback=events"
            ));
        }
    }
    warn(&mut report, store, settings, now);
    config_login::check_room(&mut report, settings, store, keys_in);
    if !is_storable_kid(&settings.active_key) {
        report.errors.push(format!(
            "active_key {:?} is not a key id the room reads (1 to {MAX_KID_LEN} letters, \
             digits, -, _ and .): no token is issued (ALERT=active-key-unusable)",
            settings.active_key.escape_debug().to_string()
        ));
    }
    if let Some(keys) = keys {
        check_keys(&mut report, keys, settings);
    }
    report
}

/// What `wrctl config check` found for one named room.
#[derive(Debug)]
pub struct RoomReport {
    /// The room's name.
    pub name: String,
    /// Its hosts and paths.
    pub scope: String,
    /// Its settings, checked as the service's are.
    pub report: Report,
}

/// Checks the `rooms` index of `store` and each named room: its settings as the
/// edge reads them (its value, the controller's keys for it, the service's
/// `logger_name` and `uid_ipv6_prefix`), with the same checks as the service's.
/// The index's own problems are errors of the service (in `index_errors`).
pub fn check_rooms(
    store: &Store,
    keys: Option<&Store>,
    keys_in: KeysIn,
    now: u64,
) -> (Vec<String>, Vec<RoomReport>) {
    let Some(raw) = store.get(ROOMS) else {
        return (Vec::new(), Vec::new());
    };
    let index = Index::parse(raw);
    let mut errors: Vec<String> = index
        .problems
        .iter()
        .map(|p| format!("{p}: the room is ignored and requests log config_fallback=rooms"))
        .collect();
    let mut reports = Vec::new();
    for scope in &index.rooms {
        let (room_store, value_error) = room_store(store, scope);
        let (settings, fallbacks) = Settings::read(&|key| room_store.get(key).cloned());
        let mut report = check_settings(&settings, &fallbacks, &room_store, keys, keys_in, now);
        // The index is the service's.
        report
            .effective
            .retain(|line| !line.starts_with(&format!("{ROOMS} = ")));
        if let Some(why) = value_error {
            report.errors.insert(0, why);
        }
        reports.push(RoomReport {
            name: scope.name.to_string(),
            scope: describe_scope(scope),
            report,
        });
    }
    if index.rooms.is_empty() && errors.is_empty() {
        errors.push("rooms lists no room".into());
    }
    (errors, reports)
}

fn describe_scope(scope: &Scope) -> String {
    let hosts = if scope.hosts.is_empty() {
        "every host".to_string()
    } else {
        scope.hosts.join(",")
    };
    format!("{hosts}, paths {}", scope.paths.join(","))
}

/// A named room's settings as one flat store, as the edge reads them; and why its
/// value is unusable, if it is.
fn room_store(store: &Store, scope: &Scope) -> (Store, Option<String>) {
    let key = scope.name.store_key();
    // The service-wide settings it takes are members of `settings`: read as the edge reads them.
    let service = as_read(store);
    let named = NamedRoom::read(|k: &str| service.get(k).cloned(), scope);
    // Every key the room reads, and whatever else its value sets (to be warned about).
    let keys: Vec<String> = unique_keys()
        .map(str::to_string)
        .chain(named.value_keys().map(str::to_string))
        .collect();
    let room: Store = keys
        .into_iter()
        .filter_map(|k| {
            let value = named.get(&k)?;
            Some((k, value))
        })
        .collect();
    let value_error = (!named.readable()).then(|| {
        let why = match store.get(&key) {
            None => "is missing".to_string(),
            Some(raw) => match serde_json::from_str::<BTreeMap<String, serde_json::Value>>(raw) {
                Err(e) => format!("is not a JSON object ({e})"),
                Ok(_) => "is not a JSON object".to_string(),
            },
        };
        format!("{key} {why}: the room holds everyone (queue-all), logged config_fallback=room")
    });
    (room, value_error)
}

/// The layout and Fastly's limits on a store: settings stored as keys of their own
/// that belong in `settings` (the room ignores them), `settings` that is not a JSON
/// object, the entries against a store's 500 (100 on a trial account), each key's
/// 255 bytes and each value's 8,000 characters, and the lookups of the worst path.
fn check_layout(report: &mut Report, store: &Store) {
    let moved = moved_keys(store);
    if !moved.is_empty() {
        report.errors.push(format!(
            "{} {} stored as keys of their own, which the room no longer reads: they belong \
             in the {SETTINGS} JSON object (`wrctl config migrate FILE` prints the store \
             with them moved; `wrctl config set KEY VALUE` writes one)",
            moved.join(", "),
            if moved.len() == 1 { "is" } else { "are" },
        ));
    }
    if store.contains_key(SETTINGS)
        && Members::parse(store.get(SETTINGS).map(String::as_str)) == Members::Unreadable
    {
        report.errors.push(format!(
            "{SETTINGS} is not a JSON object: the room holds everyone (queue-all), the toll \
             and the challenge hold every draw, no bypass rule or custom page applies; logged \
             config_fallback={SETTINGS}"
        ));
    }
    let entries = store.len();
    if entries > MAX_STORE_ENTRIES {
        report.errors.push(format!(
            "{entries} entries: a config store holds at most {MAX_STORE_ENTRIES}"
        ));
    } else if entries > TRIAL_STORE_ENTRIES {
        report.warnings.push(format!(
            "{entries} entries: more than a trial account's store holds ({TRIAL_STORE_ENTRIES})"
        ));
    }
    for (key, value) in store {
        if key.len() > config::MAX_KEY_LEN {
            report.errors.push(format!(
                "key {:?}… is {} bytes: Fastly accepts at most {}",
                key.chars().take(40).collect::<String>(),
                key.len(),
                config::MAX_KEY_LEN
            ));
        }
        let chars = value.chars().count();
        if chars > MAX_VALUE_CHARS {
            report.errors.push(format!(
                "{key}'s value is {chars} characters: Fastly stores at most {MAX_VALUE_CHARS}"
            ));
        }
    }
    let (lookups, path) = worst_lookups(store);
    let line = format!(
        "{lookups} config-store lookups on the worst path, of the room's budget of \
         {CONFIG_LOOKUP_BUDGET} ({path}; with the signing keys in a config store, 2 more)"
    );
    match lookups + 2 > CONFIG_LOOKUP_BUDGET {
        true => report.errors.push(line),
        false => report.effective.push(format!("lookups = {line}")),
    }
}

/// The most config-store lookups a request makes on this store (the signing keys
/// aside): its settings, read by the room's own reader for a protected path of each
/// room, and a custom page when any is listed.
fn worst_lookups(store: &Store) -> (u32, String) {
    let mut paths: Vec<(String, String)> =
        RequestContext::from_store(&Remembered::new(|k: &str| store.get(k).cloned()))
            .settings
            .protected_paths
            .iter()
            .map(|p| (p.clone(), "the service room".to_string()))
            .collect();
    if let Some(raw) = store.get(ROOMS) {
        for scope in Index::parse(raw).rooms {
            for path in &scope.paths {
                paths.push((path.clone(), format!("room {}", scope.name)));
            }
        }
    }
    paths
        .into_iter()
        .map(|(path, room)| {
            let asked = std::cell::Cell::new(0);
            let lookup = Remembered::new(|k: &str| {
                asked.set(asked.get() + 1);
                store.get(k).cloned()
            });
            let context = RequestContext::for_request(&lookup, None, &path, 0);
            let page = u32::from(!context.settings.custom_pages.is_empty());
            drop(lookup);
            (asked.get() + page, format!("{room}, {path}"))
        })
        .max_by_key(|(n, _)| *n)
        .unwrap_or((0, "no protected path".into()))
}

/// Entries a config store holds (Fastly's limits), and on a trial account.
const MAX_STORE_ENTRIES: usize = 500;
const TRIAL_STORE_ENTRIES: usize = 100;
/// Characters a config-store value holds.
pub const MAX_VALUE_CHARS: usize = 8_000;

/// Every key the room reads from `waitingroom_config`: the settings table's rows, the
/// settings then the other keys.
fn unique_keys() -> impl Iterator<Item = &'static str> {
    ROWS.iter().chain(&table::OTHER_ROWS).map(|row| row.key)
}

/// The value the room uses for `key`, as text: the store's text
/// ([`Settings::stored`]) in its row's unit, or its row's text for an unset one.
fn effective(s: &Settings, key: &str) -> String {
    let Some(row) = config::row(key) else {
        return "none".into();
    };
    if let Some(shown) = config_login::effective(s, key) {
        return shown;
    }
    let Some(text) = s.stored(key) else {
        return row.unset.into();
    };
    let text = text.escape_debug().to_string();
    match (row.unit, text.parse::<u64>()) {
        (Unit::Seconds, _) => format!("{text} s"),
        (Unit::MillisPerSecond, _) => format!("{text} ms/s"),
        (Unit::UnixSeconds, Ok(t)) => format!("{t} ({})", utc(t)),
        (Unit::UnixMillis, Ok(t)) => format!("{t} ms ({})", utc_millis(t)),
        _ => text,
    }
}

fn list(items: impl Iterator<Item = String>) -> String {
    let items: Vec<String> = items.collect();
    if items.is_empty() {
        "none".into()
    } else {
        items.join(",")
    }
}

/// The longest `refresh_after` a waiting page gets, and how long after its wait
/// token's expiry that visitor comes back, by the room's refresh rule. In
/// `eligible` mode the page comes back one second after the expiry, plus on the
/// global grid the visitor's phase (at most `d − 2`); on the address grid a token
/// expires up to `3d − 1` ahead. In `fixed` mode the page comes back every `d`
/// seconds, so on either grid the worst case is a token expiring on a multiple of
/// `d` after the request (`grid::global_expiry`): one whole period late.
pub fn longest_refresh(mode: RefreshMode, grid: DrawGrid, d: u64) -> (u64, u64) {
    let now = d.saturating_mul(1000);
    let uid = "192.0.2.1";
    match mode {
        RefreshMode::Eligible => {
            let (exp, worst_phase) = match grid {
                DrawGrid::Global => (
                    waiting_room::admission::grid::global_expiry(now, d),
                    d.saturating_sub(2),
                ),
                DrawGrid::Address => (now.saturating_add(d.saturating_mul(3)).saturating_sub(1), 0),
            };
            let longest = refresh::refresh_after(mode, DrawGrid::Address, now, exp, uid, d)
                .saturating_add(worst_phase);
            (longest, (now + longest).saturating_sub(exp))
        }
        RefreshMode::Fixed => {
            let exp = waiting_room::admission::grid::global_expiry(now, d);
            // Comes back every `refresh_after` until past the expiry.
            let mut at = now;
            let mut longest = 0;
            while at <= exp {
                let after = refresh::refresh_after(mode, grid, at, exp, uid, d).max(1);
                longest = longest.max(after);
                at = at.saturating_add(after);
            }
            (longest, at - exp)
        }
    }
}

/// The warnings: combinations that work but are probably not meant, in the order
/// they are printed.
fn warn(report: &mut Report, store: &Store, s: &Settings, now: u64) {
    let w = &mut report.warnings;
    w.extend(room_off(store, s));
    w.extend(toll_and_challenge(store, s));
    w.extend(nobody_admitted(s));
    w.extend(refresh_and_cookie(s));
    w.extend(fifo_keys(store, s));
    w.extend(one_win_one_session(s));
    w.extend(pop_ceiling(store, s));
    w.extend(short_ipv6_prefix(s));
    w.extend(heartbeat(s, now));
    w.extend(long_wait_period(s));
    w.extend(wide_bypass(s));
    w.extend(unknown_keys(store));
}

/// `enabled` missing or not exactly `true`: the room is off.
fn room_off(store: &Store, s: &Settings) -> Option<String> {
    match store.get(config::ENABLED) {
        None => Some(
            "enabled is missing: the room is off, every request goes to the origin (set \
             enabled = \"true\")"
                .into(),
        ),
        Some(v) if !s.enabled => Some(format!(
            "enabled = {:?} is not exactly `true`: the room is off, every request goes to \
             the origin",
            v.escape_debug().to_string()
        )),
        Some(_) => None,
    }
}

/// A toll too dear for a phone, a toll or a challenge nobody meets, both at once,
/// a challenge that does not read.
fn toll_and_challenge(store: &Store, s: &Settings) -> Vec<String> {
    let mut w = Vec::new();
    let bits = s.bot_toll_bits;
    let open = s.allow_percentage.is_hundred() && !s.queue_all;
    if toll::phone_seconds(bits) > toll::PHONE_SECONDS_WARNED {
        w.push(format!(
            "bot_toll_bits {bits} costs a phone about {:.0} s of work before its first draw \
             (more than {} s): people on slow devices may give up; each bit less halves it",
            toll::phone_seconds(bits),
            toll::PHONE_SECONDS_WARNED
        ));
    }
    if bits > 0 && open {
        w.push(format!(
            "bot_toll_bits {bits} with allow_percentage 100: an open room admits without draws, \
             so nobody pays the toll"
        ));
    }
    if s.bot_challenge.is_on() && bits > 0 {
        w.push(format!(
            "bot_challenge and bot_toll_bits {bits} are both set: the challenge replaces the \
             proof of work, which nobody is asked while bot_challenge is set"
        ));
    }
    if let Some(Err(why)) = store
        .get(config::BOT_CHALLENGE)
        .map(|raw| ChallengeSettings::parse(raw))
    {
        w.push(format!("bot_challenge does not read: {why}"));
    }
    if s.bot_challenge.is_on() && open {
        w.push(
            "bot_challenge with allow_percentage 100: an open room admits without draws, \
             so nobody is challenged"
                .into(),
        );
    }
    w
}

/// An enabled room at 0 %.
fn nobody_admitted(s: &Settings) -> Option<String> {
    (s.enabled && s.allow_percentage.micros() == 0).then(|| {
        "allow_percentage is 0 with the room enabled: every visitor to a protected path \
         gets the deny page"
            .into()
    })
}

/// A redeem window shorter than the refresh, a cookie shorter than the session.
fn refresh_and_cookie(s: &Settings) -> Vec<String> {
    let mut w = Vec::new();
    let d = s.wait_period_duration;
    let (longest, late) = longest_refresh(s.refresh_mode, s.draw_grid, d);
    if s.redeem_window() < late {
        w.push(format!(
            "redeem_window {} s is shorter than the refresh: with wait_period_duration {d} s \
             and refresh_mode {}, a waiting page comes back after up to {longest} s, {late} s \
             after its token expired; those visitors re-wait without a draw",
            s.redeem_window(),
            format!("{:?}", s.refresh_mode).to_ascii_lowercase()
        ));
    }
    if s.cookie_lifetime < s.allow_period_timeout {
        w.push(format!(
            "cookie_lifetime {} s is shorter than allow_period_timeout {} s: a session \
             outlives its cookie, and the visitor waits again when the cookie goes",
            s.cookie_lifetime, s.allow_period_timeout
        ));
    }
    w
}

/// FIFO mode without a cutoff; FIFO keys in a lottery room.
fn fifo_keys(store: &Store, s: &Settings) -> Option<String> {
    if s.queueing_method == QueueingMethod::Fifo {
        return s.fifo_cutoff.is_none().then(|| {
            "queueing_method is fifo without a usable fifo_cutoff: nobody is admitted until \
             a cutoff is written (by `wrctl control` or by hand)"
                .into()
        });
    }
    [
        config::FIFO_CUTOFF,
        config::FIFO_RATE,
        config::FIFO_HOLD,
        config::QUEUE_OPENS_AT,
    ]
    .iter()
    .find(|key| store.contains_key(**key))
    .map(|key| format!("{key} is set but queueing_method is random: it has no effect"))
}

/// One win, one session: a session a wait token starts runs from a second of
/// that token only while that leaves at least half the timeout.
fn one_win_one_session(s: &Settings) -> Option<String> {
    let fifo = s.queueing_method == QueueingMethod::Fifo;
    let half = s.allow_period_timeout / 2;
    let (late, what) = if fifo {
        (s.fifo_hold, "fifo_hold")
    } else {
        (s.redeem_window().saturating_sub(1), "redeem_window")
    };
    let value = if fifo { s.fifo_hold } else { s.redeem_window() };
    (late > half).then(|| {
        format!(
            "{what} {value} s is over half of allow_period_timeout {} s: an admission more \
             than {half} s after its {} starts its session at the request, so the tabs and \
             devices presenting one win then get allow tokens of their own and count as \
             several sessions",
            s.allow_period_timeout,
            if fifo { "hold's start" } else { "draw" },
        )
    })
}

/// A POP ceiling in FIFO mode (no effect), or one too low to count.
fn pop_ceiling(store: &Store, s: &Settings) -> Option<String> {
    if s.queueing_method == QueueingMethod::Fifo {
        return store
            .contains_key(config::POP_NEW_SESSIONS_PER_MINUTE)
            .then(|| {
                "pop_new_sessions_per_minute is set but queueing_method is fifo: the ceiling holds \
             lottery wins only, so it has no effect"
                    .into()
            });
    }
    let n = s
        .pop_new_sessions_per_minute
        .filter(|n| *n < FEW_POP_SESSIONS)?;
    Some(format!(
        "pop_new_sessions_per_minute {n} is under {FEW_POP_SESSIONS}: Fastly documents its \
         edge counters to {UNDER_COUNT_PERCENT} % (here under {} sessions a minute), not how \
         they count so few nor how many nodes start at zero (tens of sessions in a crowd's \
         first minute): a rough guard, not a cap (docs/operate/platform-limits.md)",
        u64::from(FEW_POP_SESSIONS) * UNDER_COUNT_PERCENT / 100
    ))
}

/// An IPv6 prefix wider than a /64: a network shares one place.
fn short_ipv6_prefix(s: &Settings) -> Option<String> {
    (s.uid_ipv6_prefix < 64).then(|| {
        format!(
            "uid_ipv6_prefix /{} is shorter than a /64: everyone in that network shares one \
             place, as behind a NAT",
            s.uid_ipv6_prefix
        )
    })
}

/// A heartbeat that does not read or is stale, or one without a fallback.
fn heartbeat(s: &Settings, now: u64) -> Vec<String> {
    let mut w = Vec::new();
    match s.controller_heartbeat {
        Heartbeat::Absent => return w,
        Heartbeat::Unreadable => w.push(
            "controller_heartbeat is neither Unix seconds nor RFC 3339: the room counts it as \
             stale, and every log line says ALERT=controller-stale"
                .into(),
        ),
        Heartbeat::At(beat) if s.controller_stale(now) => w.push(format!(
            "controller_heartbeat {beat} is {} s from now, more than controller_timeout {} \
             s: stale now",
            beat.abs_diff(now),
            s.controller_timeout
        )),
        Heartbeat::At(_) => {}
    }
    if s.allow_percentage_fallback.is_none() {
        w.push(
            "controller_heartbeat without allow_percentage_fallback: when the controller \
             stops, the last allow_percentage stays (fail static); set \
             allow_percentage_fallback to choose"
                .into(),
        );
    }
    w
}

/// A wait period longer than visitors wait on a page.
fn long_wait_period(s: &Settings) -> Option<String> {
    let d = s.wait_period_duration;
    let (longest, _) = longest_refresh(s.refresh_mode, s.draw_grid, d);
    (d > LONG_WAIT_PERIOD).then(|| {
        format!(
            "wait_period_duration {d} s is long: a new visitor's first draw can be {longest} s \
             away and each lost draw adds {} s, more than visitors wait on a page",
            draw_interval(d)
        )
    })
}

/// Bypass blocks wider than a /8 or a /16.
fn wide_bypass(s: &Settings) -> Vec<String> {
    s.bypass_addresses
        .iter()
        .filter(|b| b.is_very_wide())
        .map(|block| {
            format!(
                "bypass_addresses holds {block}, wider than a /8 (IPv4) or /16 (IPv6): is \
                 everyone in it staff?"
            )
        })
        .collect()
}

/// Keys the room does not read (a room's own keys aside), with a hint.
fn unknown_keys(store: &Store) -> Vec<String> {
    let known: Vec<&str> = unique_keys().collect();
    let rooms = store
        .get(ROOMS)
        .map(|raw| Index::parse(raw))
        .unwrap_or_default();
    let a_rooms_key = |key: &str| {
        rooms.rooms.iter().any(|scope| {
            let own = scope.name.store_key();
            key == own
                || key
                    .strip_prefix(&own)
                    .is_some_and(|rest| rest.starts_with('.'))
        })
    };
    store
        .keys()
        .filter(|k| !known.contains(&k.as_str()) && !a_rooms_key(k))
        .map(|key| {
            let hint = if ["startwaiting", "keepwaiting", "deny"]
                .iter()
                .any(|p| key == p || key.starts_with(&format!("{p}.")))
            {
                " (a page: it belongs in the waitingroom_pages store)".to_string()
            } else {
                closest(key, &known).map_or(String::new(), |k| format!(" (did you mean {k}?)"))
            };
            format!(
                "unknown key {:?}{hint}: the room ignores it; it reads {}",
                key.escape_debug().to_string(),
                known.join(", ")
            )
        })
        .collect()
}

/// The keys file against the settings: the active key, and each stored key's id and
/// strength (never a secret).
fn check_keys(report: &mut Report, keys: &Store, s: &Settings) {
    let kid = &s.active_key;
    if is_storable_kid(kid) && keys.get(kid).and_then(SigningKey::new).is_none() {
        report.errors.push(format!(
            "active_key {:?} is not in the keys file (or its secret is empty): no token is \
             issued (ALERT=active-key-unusable)",
            kid.escape_debug().to_string()
        ));
    }
    for id in keys.keys().filter(|id| !is_storable_kid(id)) {
        report.errors.push(format!(
            "signing key {:?} is under an id the room never reads (1 to {MAX_KID_LEN} \
             letters, digits, -, _ and .; all a Secret Store name may hold): a token or \
             pass naming it is refused as unknown-key",
            id.escape_debug().to_string()
        ));
    }
    for (id, secret) in keys {
        if let Some(key) = SigningKey::new(secret)
            && key.is_weak()
        {
            report.warnings.push(format!(
                "signing key {:?} is {} bytes, shorter than {MIN_STRONG_KEY_LEN}: it works, \
                 but every request using it logs WARN=weak-key",
                id.escape_debug().to_string(),
                secret.len()
            ));
        }
    }
}

/// The known key within two edits of `key`, if any.
fn closest<'a>(key: &str, known: &[&'a str]) -> Option<&'a str> {
    let key = key.to_ascii_lowercase();
    known
        .iter()
        .map(|k| (strsim::levenshtein(&key, k), *k))
        .filter(|(d, _)| *d <= 2)
        .min()
        .map(|(_, k)| k)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every row of the settings table is printed with a value, at its default and
    /// at each of its valid samples.
    #[test]
    fn every_row_has_an_effective_value() {
        for row in ROWS {
            assert!(
                !effective(&Settings::default(), row.key).is_empty(),
                "{}",
                row.key
            );
            for raw in row.samples.valid {
                let s = Settings::from_lookup(|k| (k == row.key).then(|| raw.to_string()));
                assert!(!effective(&s, row.key).is_empty(), "{}: {raw:?}", row.key);
            }
        }
        let keys: Vec<&str> = unique_keys().collect();
        assert_eq!(keys, [&KEYS[..], &[ROOMS, EVENTS]].concat());
    }
}
