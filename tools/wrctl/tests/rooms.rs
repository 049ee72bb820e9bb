//! One real `wrctl control` process holding three rooms of a service (the
//! service room, `drops` in FIFO mode and `vip`), fed one log stream that also
//! carries another room's lines: each line goes to its room's controller, and
//! every tick's writes of all the rooms make one update, of the Viceroy file or
//! through the Fastly API (the local stand-in, which enforces the API's rate
//! limit and checks each request).

use crate::support;

use std::fs;

use serde_json::{Value, json};
use support::{FASTLY_HOURLY_LIMIT, MockApi, Wrctl, eventually, unix_now};
use wrctl::synthetic::Crowd;

/// The three rooms, with a target each, and a tick of 1 s.
const ROOMS: [&str; 9] = [
    "--target-per-minute",
    "60",
    "--service-room",
    "--room",
    "drops:target=30,queueing=fifo,fifo-hold=120",
    "--room",
    "vip:target=10,max-active=500",
    "--tick",
    "1",
];

/// Two minutes of the service's log up to now: a lottery crowd in the service
/// room and in vip, FIFO arrivals in drops, and a room nobody here holds.
fn lines() -> Vec<String> {
    let now = unix_now();
    let mut service = Crowd::new(now - 120, 1);
    service.arrivals_per_second = 5;
    let mut vip = Crowd::new(now - 120, 2);
    vip.arrivals_per_second = 2;
    let mut out = Vec::new();
    for t in now - 120..now {
        out.extend(service.next_second());
        out.extend(
            vip.next_second()
                .iter()
                .map(|l| support::in_room(l, Some("vip"))),
        );
        for i in 0..2u64 {
            out.push(format!(
                "waitingroom t={t} decision=anon uid=10.7.{}.{i} room=drops p=100 exp={} arr={} \
                 path=/drops/x cutoff=none ALERT=fifo-no-cutoff",
                t % 250,
                t + 120,
                t * 1000 + 400 * i
            ));
        }
        out.push(format!(
            "waitingroom t={t} decision=anon uid=10.8.0.1 room=elsewhere p=5 exp={} path=/e",
            t + 30
        ));
    }
    // Two bad lines: one of vip's, one of another program.
    out.push(format!(
        "waitingroom t={now} decision=maybe uid=10.9.0.1 room=vip"
    ));
    out.push("another program's line".to_string());
    out
}

fn read(path: &std::path::Path) -> Option<Value> {
    serde_json::from_str(&fs::read_to_string(path).ok()?).ok()
}

const HEARTBEATS: [&str; 3] = [
    "controller_heartbeat",
    "room.drops.controller_heartbeat",
    "room.vip.controller_heartbeat",
];

#[test]
fn three_rooms_one_file_replaced_once_a_tick_with_every_rooms_keys() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.json");
    let original = json!({
        "enabled": "true",
        "allow_percentage": "10",
        "rooms": r#"{"drops": {"paths": ["/drops/"]}, "vip": {"paths": ["/vip/"]}}"#,
        "room.vip": r#"{"enabled": true, "wait_period_duration": 45}"#,
    });
    fs::write(&path, original.to_string()).unwrap();
    let args = ["control", "--config-file", path.to_str().unwrap()];
    let listen = ["--listen", "127.0.0.1:0"];
    let mut wrctl = Wrctl::start(&[&args[..], &ROOMS, &listen].concat(), &[]);
    wrctl.feed(&lines());
    // Every update holds every room's heartbeat of one tick.
    let settings = eventually("the three rooms' keys", || {
        let settings = read(&path)?;
        let beats: Vec<&str> = HEARTBEATS
            .iter()
            .map(|k| settings[*k].as_str())
            .collect::<Option<_>>()?;
        let all = ["room.drops.fifo_cutoff", "room.vip.allow_percentage"];
        all.iter().all(|k| settings.get(*k).is_some()).then(|| {
            assert!(beats.iter().all(|b| *b == beats[0]), "{settings}");
            settings.clone()
        })
    });
    assert_eq!(settings["rooms"], original["rooms"]);
    assert_eq!(settings["room.vip"], original["room.vip"]);
    assert_eq!(support::file_names(dir.path()), ["config.json"]);

    // The first room's status, each room's by ?room=, and 404 for one not held.
    let status = wrctl.status();
    assert_eq!(status["room"], Value::Null);
    assert_eq!(status["writer"]["rooms"], 3);
    assert_eq!(status["writer"]["api"], false);
    assert_eq!(status["writer"]["budget_per_hour"], Value::Null);
    eventually("the other room's lines counted", || {
        let status = wrctl.status();
        (status["other_room_lines_total"].as_u64()? >= 120).then_some(())
    });
    let vip: Value = serde_json::from_str(&wrctl.get("/status.json?room=vip")).unwrap();
    assert_eq!(
        (vip["room"].as_str(), vip["target_per_minute"].as_u64()),
        (Some("vip"), Some(10))
    );
    assert_eq!(vip["max_active"], 500);
    // A bad line counts for the room it names; the log's count holds them all.
    let vip = eventually("the two bad lines counted", || {
        let vip: Value = serde_json::from_str(&wrctl.get("/status.json?room=vip")).ok()?;
        (vip["stream_bad_lines_total"].as_u64()? == 2).then_some(vip)
    });
    assert_eq!(vip["bad_lines_total"], 1);
    let drops = eventually("drops' 240 lines counted", || {
        let drops: Value = serde_json::from_str(&wrctl.get("/status.json?room=drops")).ok()?;
        (drops["lines_total"].as_u64()? >= 240).then_some(drops)
    });
    assert_eq!(drops["queueing"], "fifo");
    let service: Value = serde_json::from_str(&wrctl.get("/status.json?room=")).unwrap();
    assert_eq!(service["room"], Value::Null);
    assert_eq!(
        (
            drops["bad_lines_total"].as_u64(),
            service["bad_lines_total"].as_u64()
        ),
        (Some(0), Some(0))
    );
    assert_eq!(
        wrctl
            .request("GET", "/status.json?room=elsewhere", &[], b"")
            .status,
        404
    );
    let metrics = wrctl.get("/metrics");
    for name in [
        "wrctl_log_lines_total{room=\"vip\"}",
        "wrctl_log_lines_total{room=\"drops\"}",
        "wrctl_log_lines_total",
        "wrctl_other_room_log_lines_total",
    ] {
        assert!(
            support::metric(&metrics, name).is_some(),
            "{name}:\n{metrics}"
        );
    }
    assert!(!metrics.contains("wrctl_api_"), "no API here:\n{metrics}");
    assert!(wrctl.get("/?room=vip").contains("Waiting room controller"));

    // With --listen it keeps running: what it said so far.
    let err = wrctl.stderr();
    assert!(
        err.contains("holding the service room, room drops, room vip in one writer"),
        "{err}"
    );
    for tag in [
        "[service room] wrote ",
        "[drops] wrote fifo_",
        "[vip] wrote ",
    ] {
        assert!(err.contains(tag), "{tag} in:\n{err}");
    }
}

#[test]
fn three_rooms_one_patch_a_tick_within_the_apis_budget() {
    let token = "the-token-0123456789";
    let api = MockApi::with_budget(&[200], "{}", FASTLY_HOURLY_LIMIT, unix_now());
    let url = api.url();
    let args = [
        "control",
        "--fastly-store-id",
        "STORE7",
        "--fastly-api-url",
        &url,
        // A budget of one a second, so the test need not wait 8 s a tick.
        "--api-budget",
        "3600",
        "--listen",
        "127.0.0.1:0",
    ];
    let args = [&args[..], &ROOMS].concat();
    let mut wrctl = Wrctl::start(&args, &[("FASTLY_API_TOKEN", token)]);
    wrctl.feed(&lines());
    let requests = eventually("two updates", || {
        let requests = api.requests();
        (requests.len() >= 2).then_some(requests)
    });
    for request in &requests {
        assert_eq!(request.method, "PATCH");
        assert_eq!(request.path, "/resources/stores/config/STORE7/items");
        assert_eq!(request.header("Fastly-Key"), Some(token));
        let body: Value = serde_json::from_str(&request.body).unwrap();
        let keys: Vec<&str> = body["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["item_key"].as_str().unwrap())
            .collect();
        for key in HEARTBEATS {
            assert!(keys.contains(&key), "{key} in {keys:?}");
        }
    }
    assert_eq!(api.limit().refused, 0);
    let status = eventually("the writer's state", || {
        let status = wrctl.status();
        status["writer"]["rate_limit_remaining"]
            .is_u64()
            .then_some(status)
    });
    let writer = &status["writer"];
    assert_eq!(writer["api"], true);
    assert_eq!(writer["budget_per_hour"], 3600);
    assert_eq!(writer["fastly_limit_per_hour"], 1000);
    assert_eq!(writer["min_interval_seconds"], 1);
    assert_eq!(writer["throttled_total"], 0);
    assert_eq!(writer["last_status"], 200);
    let metrics = wrctl.get("/metrics");
    for name in [
        "wrctl_api_writes_total",
        "wrctl_api_throttled_total",
        "wrctl_api_rate_limit_remaining",
        "wrctl_api_rate_limit_reset_timestamp_seconds",
        "wrctl_api_budget_writes_per_hour",
        "wrctl_writes_total{room=\"drops\"}",
    ] {
        assert!(
            support::metric(&metrics, name).is_some(),
            "{name}:\n{metrics}"
        );
    }
    let err = wrctl.stderr();
    assert!(err.contains("--api-budget 3600 is more than half"), "{err}");
    assert!(!err.contains(token));
}

#[test]
fn with_the_fastly_api_the_tick_is_raised_to_the_budgets_spacing() {
    let api = MockApi::with_budget(&[200], "{}", FASTLY_HOURLY_LIMIT, unix_now());
    let url = api.url();
    let mut wrctl = Wrctl::start(
        &[
            "control",
            "--target-per-minute",
            "60",
            "--tick",
            "1",
            "--room",
            "drops",
            "--fastly-store-id",
            "S",
            "--fastly-api-url",
            &url,
        ],
        &[("FASTLY_API_TOKEN", "tok")],
    );
    wrctl.close_stdin();
    assert_eq!(wrctl.wait(), Some(0));
    let err = wrctl.stderr();
    assert!(err.contains("--tick 1 raised to 8 s"), "{err}");
    assert!(
        err.contains("at most 500 Fastly API updates an hour (--api-budget), one each 8 s"),
        "{err}"
    );
    // One named room alone: said as its controller always said it.
    assert!(
        err.contains("to fastly config store S (room drops)"),
        "{err}"
    );
}
