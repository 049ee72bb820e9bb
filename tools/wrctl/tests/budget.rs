//! One writer for the rooms of a service, within the Fastly API's budget: the
//! control thread with several rooms, each with its own rule and crowd, writing
//! through the API client to the local stand-in, which enforces the API's
//! documented rate limit (1,000 modifying requests an hour window, the
//! `Fastly-RateLimit-*` headers on every answer, 429 past it). The clock is the
//! test's: an hour runs in a few seconds.

use crate::support;

use std::collections::BTreeMap;

use control::fifo_rule::{FifoController, FifoOptions};
use control::options::Options;
use control::percentage_rule::Controller;
use control::record::Record;
use serde_json::Value;
use support::{FASTLY_HOURLY_LIMIT, MockApi, info};
use waiting_room::settings::room::RoomName;
use wrctl::budget::{self, Pacer};
use wrctl::control::{Control, Held, Room};
use wrctl::ingest::{Batch, Msg};
use wrctl::sink::FastlyApi;
use wrctl::state::Which;
use wrctl::synthetic::Crowd;

const HOUR: u64 = 3600;
/// A Unix time on an hour's boundary, where one of the stand-in's windows starts.
const T0: u64 = 1_800_000_000;

fn name(room: Option<&str>) -> Option<RoomName> {
    room.map(|r| RoomName::new(r).unwrap())
}

/// A room of the lottery with `target` a minute, ticking each `tick` seconds.
fn lottery(room: Option<&str>, target: f64, tick: u64, heartbeat_every: u64) -> Box<dyn Held> {
    let options = Options {
        target_per_minute: target,
        tick,
        heartbeat_every,
        start: Some("10".parse().unwrap()),
        ..Options::default()
    };
    let rule = Controller::new(options).unwrap();
    Box::new(Room::new(
        rule,
        info(room, target, false, "fastly config store STORE"),
        name(room),
    ))
}

/// A FIFO room with `target` a minute.
fn fifo(room: Option<&str>, target: f64, tick: u64, heartbeat_every: u64) -> Box<dyn Held> {
    let options = FifoOptions {
        target_per_minute: target,
        tick,
        heartbeat_every,
        expected_propagation: None,
        ..FifoOptions::default()
    };
    let rule = FifoController::new(options).unwrap();
    Box::new(Room::new(
        rule,
        info(room, target, false, "fastly config store STORE"),
        name(room),
    ))
}

/// The crowds of the service: a lottery crowd in each lottery room, arrivals
/// holding FIFO places in the FIFO room, each line with its room's `room=`.
struct Crowds {
    lottery: Vec<(Option<&'static str>, Crowd)>,
    fifo: Option<&'static str>,
    t: u64,
}

impl Crowds {
    fn new(t: u64, lottery: &[Option<&'static str>], fifo: Option<&'static str>) -> Crowds {
        let lottery = lottery
            .iter()
            .enumerate()
            .map(|(i, room)| {
                let mut crowd = Crowd::new(t, 7 + i as u64);
                crowd.arrivals_per_second = 3;
                (*room, crowd)
            })
            .collect();
        Crowds { lottery, fifo, t }
    }

    /// The records of the next second, every room's.
    fn next_second(&mut self) -> Vec<Record> {
        let t = self.t;
        self.t += 1;
        let mut records = Vec::new();
        for (room, crowd) in &mut self.lottery {
            for line in crowd.next_second() {
                records.push(support::in_room(&line, *room).parse().unwrap());
            }
        }
        if let Some(room) = self.fifo {
            for i in 0..3u64 {
                let line = format!(
                    "waitingroom t={t} decision=anon uid=10.99.{}.{} room={room} p=50 exp={} \
                     arr={} path=/events cutoff=none ALERT=fifo-no-cutoff",
                    (t % 200),
                    i,
                    t + 300,
                    t * 1000 + 300 * i
                );
                records.push(line.parse().unwrap());
            }
        }
        records
    }
}

fn feed(control: &mut Control, records: Vec<Record>, now: u64) {
    control.handle_at(
        Msg::Batch(Batch {
            records,
            ..Default::default()
        }),
        now,
    );
}

/// The items of a request the stand-in received: key to value.
fn items(request: &support::Received) -> BTreeMap<String, String> {
    let body: Value = serde_json::from_str(&request.body).unwrap();
    body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| {
            assert_eq!(item["op"], "upsert", "{item}");
            (
                item["item_key"].as_str().unwrap().to_string(),
                item["item_value"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// The tick an update was made at: its heartbeats' time.
fn tick_of(request: &support::Received) -> u64 {
    items(request)
        .iter()
        .filter(|(k, _)| k.ends_with("controller_heartbeat"))
        .map(|(_, v)| v.parse::<u64>().unwrap())
        .max()
        .unwrap()
}

const HEARTBEATS: [&str; 4] = [
    "controller_heartbeat",
    "room.drops.controller_heartbeat",
    "room.vip.controller_heartbeat",
    "room.sale.controller_heartbeat",
];

#[test]
fn one_writer_holds_four_busy_rooms_within_half_the_budget_over_an_hour() {
    let api = MockApi::with_budget(&[200], "{}", FASTLY_HOURLY_LIMIT, T0);
    // Four rooms as busy as rooms can be: each wants a write every second (a
    // tick of 1 s, a heartbeat due every second), each with a crowd; one in FIFO
    // mode. A controller per room would send 4 × 3600 updates an hour.
    let rooms = vec![
        lottery(None, 600.0, 1, 1),
        fifo(Some("drops"), 300.0, 1, 1),
        lottery(Some("vip"), 60.0, 1, 1),
        lottery(Some("sale"), 120.0, 1, 1),
    ];
    let sink = FastlyApi::new(&api.url(), "STORE", "tok".into());
    let mut control = Control::of_rooms(rooms, Box::new(sink), true)
        .with_pacer(Pacer::budgeted(budget::DEFAULT_BUDGET, 1));
    let mut crowds = Crowds::new(T0, &[None, Some("vip"), Some("sale")], Some("drops"));
    for now in T0..T0 + HOUR {
        api.set_clock(now);
        feed(&mut control, crowds.next_second(), now);
        control.tick(now);
    }
    let requests = api.requests();
    let limit = api.limit();
    // Within half of the API's documented budget: 3600 / 8 s = 450.
    assert!(requests.len() <= 450, "{} updates", requests.len());
    assert!(requests.len() >= 440, "{} updates", requests.len());
    assert!((requests.len() as u64) * 2 <= FASTLY_HOURLY_LIMIT);
    assert_eq!(limit.refused, 0, "no 429");
    // Every update carries every room's heartbeat of its tick; the first, the
    // percentages and the cutoff too.
    let mut last: BTreeMap<&str, u64> = BTreeMap::new();
    let mut widest = 0;
    for (i, request) in requests.iter().enumerate() {
        assert_eq!(request.method, "PATCH");
        assert_eq!(request.path, "/resources/stores/config/STORE/items");
        let items = items(request);
        let beats: Vec<u64> = HEARTBEATS
            .iter()
            .map(|key| items[*key].parse().unwrap())
            .collect();
        assert!(
            beats.iter().all(|b| *b == beats[0]),
            "one tick's: {items:?}"
        );
        for key in HEARTBEATS {
            if let Some(before) = last.insert(key, beats[0]) {
                widest = widest.max(beats[0] - before);
            }
        }
        if i == 0 {
            for key in ["allow_percentage", "room.vip.allow_percentage"] {
                assert!(items.contains_key(key), "{key} in {items:?}");
            }
            assert!(items.contains_key("room.drops.fifo_cutoff"), "{items:?}");
        }
    }
    assert_eq!(widest, 8, "a heartbeat each 8 s");
    let status = control.writer(T0 + HOUR - 1);
    assert_eq!(status.counters.requests, requests.len() as u64);
    assert_eq!(status.last_hour, requests.len() as u64);
    assert!(status.counters.held > 3000, "{:?}", status.counters);
    assert_eq!(status.remaining, Some(FASTLY_HOURLY_LIMIT - limit.used));

    let views = control.views_at(T0 + HOUR - 1);
    let drops = views.status_json(&Which::Named("drops".into())).unwrap();
    assert_eq!(drops["room"], "drops");
    assert_eq!(drops["queueing"], "fifo");
    assert_eq!(drops["writer"]["rooms"], 4);
    assert_eq!(drops["writer"]["budget_per_hour"], 500);
    assert_eq!(drops["writer"]["fastly_limit_per_hour"], 1000);
    assert_eq!(drops["writer"]["min_interval_seconds"], 8);
    assert_eq!(drops["writer"]["updates_last_hour"], requests.len());
    assert_eq!(drops["rooms"].as_array().unwrap().len(), 4);
    assert_eq!(drops["rooms"][0]["name"], Value::Null);
    assert_eq!(drops["rooms"][1]["query"], "?room=drops");
    let service = views.status_json(&Which::Service).unwrap();
    assert_eq!(service["room"], Value::Null);
    assert_eq!(service["target_per_minute"], 600);
    assert!(views.status_json(&Which::Named("nope".into())).is_none());
    let metrics = views.metrics();
    let value = |name: &str| support::metric(&metrics, name);
    assert_eq!(
        value("wrctl_api_writes_total"),
        Some(requests.len() as f64),
        "{metrics}"
    );
    assert_eq!(value("wrctl_api_throttled_total"), Some(0.0));
    assert_eq!(value("wrctl_api_budget_writes_per_hour"), Some(500.0));
    assert_eq!(value("wrctl_api_write_interval_seconds"), Some(8.0));
    assert_eq!(
        value("wrctl_api_rate_limit_remaining"),
        Some((FASTLY_HOURLY_LIMIT - limit.used) as f64)
    );
    for room in ["drops", "vip", "sale"] {
        let writes = value(&format!("wrctl_writes_total{{room=\"{room}\"}}"));
        assert_eq!(writes, Some(requests.len() as f64), "{room}");
    }
    assert_eq!(value("wrctl_writes_total"), Some(requests.len() as f64));
    assert_eq!(metrics.matches("# TYPE wrctl_writes counter").count(), 1);
}

/// Runs `control` and the crowds from `from` to `to` (one tick a second), calling
/// `each` after every tick with the clock.
fn run(
    api: &MockApi,
    control: &mut Control,
    crowds: &mut Crowds,
    (from, to): (u64, u64),
    mut each: impl FnMut(&Control, u64),
) {
    for now in from..to {
        api.set_clock(now);
        feed(control, crowds.next_second(), now);
        control.tick(now);
        each(control, now);
    }
}

/// Three rooms at the default timing (a tick of 8 s, as `--api-budget 500`
/// makes it; a heartbeat each 30 s).
fn three_rooms(api: &MockApi) -> Control {
    let rooms = vec![
        lottery(None, 600.0, 8, 30),
        lottery(Some("vip"), 60.0, 8, 30),
        fifo(Some("drops"), 300.0, 8, 30),
    ];
    let sink = FastlyApi::new(&api.url(), "STORE", "tok".into());
    Control::of_rooms(rooms, Box::new(sink), true)
        .with_pacer(Pacer::budgeted(budget::DEFAULT_BUDGET, 30))
}

/// The oldest heartbeat any room has in the store at `now`: the age the edge sees.
fn oldest_heartbeat(control: &Control, now: u64) -> u64 {
    control
        .views_at(now)
        .rooms
        .iter()
        .map(|v| now - v.snapshot.last_write.unwrap_or(now))
        .max()
        .unwrap()
}

#[test]
fn a_429_holds_the_writer_until_the_reset_and_it_recovers_before_the_heartbeat_goes_stale() {
    let reset = T0 + HOUR;
    let start = reset - 150;
    let api = MockApi::with_budget(&[200], "{}", FASTLY_HOURLY_LIMIT, start);
    let mut control = three_rooms(&api);
    let mut crowds = Crowds::new(start, &[None, Some("vip")], Some("drops"));
    run(
        &api,
        &mut control,
        &mut crowds,
        (start, reset - 60),
        |_, _| {},
    );
    let before = api.requests().len();
    assert!(before >= 10, "{before} updates");
    assert_eq!(api.limit().refused, 0);

    // Another tool of the same user spends what the window has left: the next
    // update is answered 429, with the window's reset, 60 s away.
    api.spend(FASTLY_HOURLY_LIMIT);
    let mut oldest = 0;
    let mut held_at = None;
    run(
        &api,
        &mut control,
        &mut crowds,
        (reset - 60, reset + 90),
        |control, now| {
            oldest = oldest.max(oldest_heartbeat(control, now));
            let writer = control.writer(now);
            if held_at.is_none() && writer.hold.is_some() {
                held_at = Some(now);
                let views = control.views_at(now);
                let status = views.status_json(&Which::First).unwrap();
                assert_eq!(status["writer"]["hold_reason"], "throttled");
                assert_eq!(status["writer"]["hold_until"], reset);
                assert_eq!(status["writer"]["throttled_total"], 1);
                assert_eq!(status["writer"]["last_status"], 429);
                assert_eq!(status["writer"]["rate_limit_remaining"], 0);
                let metrics = views.metrics();
                let value = |name| support::metric(&metrics, name);
                assert_eq!(value("wrctl_api_throttled_total"), Some(1.0));
                assert_eq!(
                    value("wrctl_api_backoff_until_timestamp_seconds"),
                    Some(reset as f64)
                );
            }
        },
    );
    let held_at = held_at.expect("a hold after the 429");
    assert!(held_at < reset - 50, "held at {held_at}");
    // One 429, not one a tick: the writer waited for the reset the answer named.
    assert_eq!(api.limit().refused, 1);
    let requests = api.requests();
    let refused = tick_of(&requests[before]);
    assert!((reset - 60..reset - 50).contains(&refused), "{refused}");
    let after: Vec<u64> = requests[before + 1..].iter().map(tick_of).collect();
    assert!(
        after
            .first()
            .is_some_and(|&t| (reset..reset + 9).contains(&t)),
        "the first update after the reset: {after:?}"
    );
    // The edge never saw a heartbeat older than its controller_timeout (120 s).
    assert!(
        oldest < waiting_room::settings::config::Settings::default().controller_timeout,
        "oldest heartbeat {oldest} s"
    );
    assert!(
        oldest >= 60,
        "the hold shows in the heartbeat's age: {oldest} s"
    );
    let writer = control.writer(reset + 89);
    assert_eq!(writer.hold, None);
    assert_eq!(writer.last_status, Some(200));
    assert_eq!(
        writer.remaining,
        Some(FASTLY_HOURLY_LIMIT - api.limit().used)
    );
}

#[test]
fn a_low_remainder_spreads_the_updates_and_keeps_the_heartbeat_fresh() {
    let reset = T0 + HOUR;
    let start = reset - 300;
    let api = MockApi::with_budget(&[200], "{}", FASTLY_HOURLY_LIMIT, start);
    // Others have used all but 12 of the window: 300 s to go, one update each 25 s.
    api.spend(FASTLY_HOURLY_LIMIT - 12);
    let mut control = three_rooms(&api);
    let mut crowds = Crowds::new(start, &[None, Some("vip")], Some("drops"));
    let mut oldest = 0;
    run(
        &api,
        &mut control,
        &mut crowds,
        (start, reset + 60),
        |control, now| {
            if now > start + 40 {
                oldest = oldest.max(oldest_heartbeat(control, now));
            }
        },
    );
    assert_eq!(api.limit().refused, 0, "no 429: the remainder lasted");
    let beats: Vec<u64> = api.requests().iter().map(tick_of).collect();
    let in_window: Vec<u64> = beats.iter().copied().filter(|&t| t < reset).collect();
    assert!(in_window.len() <= 12, "{in_window:?}");
    let gaps: Vec<u64> = in_window.windows(2).map(|w| w[1] - w[0]).collect();
    assert!(
        gaps.iter().all(|&g| (16..=32).contains(&g)),
        "spread out, within the heartbeat interval: {gaps:?}"
    );
    assert!(oldest <= 40, "the heartbeat stayed fresh: {oldest} s");
    // The new window: the budget's spacing again.
    assert_eq!(control.writer(reset + 59).interval, 8);
}

#[test]
fn the_stand_in_refuses_past_its_budget_with_the_documented_headers() {
    let api = MockApi::with_budget(&[200], "{}", 3, T0 + 10);
    let client = wrctl::fastly_api::Client::new(&api.url(), "tok".into());
    let body = r#"{"items":[{"op":"upsert","item_key":"k","item_value":"v"}]}"#;
    let answers: Vec<_> = (0..4)
        .map(|_| client.patch_items_answered("STORE", body.into()))
        .collect();
    for (i, (result, answer)) in answers.iter().enumerate() {
        assert_eq!(answer.reset, Some(T0 + HOUR), "{i}");
        if i < 3 {
            assert!(result.is_ok(), "{i}: {result:?}");
            assert_eq!(answer.remaining, Some(2 - i as u64));
            assert_eq!(answer.status, Some(200));
        } else {
            assert!(
                result.as_ref().is_err_and(|e| e.contains("429")),
                "{result:?}"
            );
            assert_eq!(answer.status, Some(429));
            assert_eq!(answer.remaining, Some(0));
        }
    }
    // Reads are not counted; a new window starts afresh.
    assert!(
        client
            .config_items("STORE")
            .is_err_and(|e| e.contains("JSON"))
    );
    api.set_clock(T0 + HOUR);
    let (result, answer) = client.patch_items_answered("STORE", body.into());
    assert!(result.is_ok());
    assert_eq!(answer.remaining, Some(2));
    assert_eq!(answer.reset, Some(T0 + 2 * HOUR));
    // A request the API would refuse is refused.
    let bad = client.patch_items_answered("STORE", r#"{"items":[{"op":"upsert"}]}"#.into());
    assert_eq!(bad.1.status, Some(400));
    let keyless = wrctl::fastly_api::Client::new(&api.url(), String::new());
    assert_eq!(
        keyless.patch_items_answered("STORE", body.into()).1.status,
        Some(401)
    );
}
