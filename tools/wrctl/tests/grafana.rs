//! The Grafana dashboard `deploy/grafana/waiting-room.json` against a real
//! Prometheus (Grafana itself is not on the test machines): every panel's
//! expression, with the dashboard's variables substituted, parses and returns the
//! series it should from two running `wrctl control` processes scraped on loopback,
//! one with a lottery service room and a FIFO room `drops`, the other with a FIFO
//! service room and a lottery room `vip`, both watching the origin and writing to
//! the Fastly API stand-in. The service rooms' series (no `room` label) and the
//! named rooms' both show; the `room` variable picks one. The harness and its
//! opt-out are `support::prometheus`'s (`WAITING_ROOM_SKIP_PROMTOOL=1`).

use crate::support;

use std::collections::BTreeSet;
use std::path::Path;
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;
use support::prometheus::{self, Prometheus};
use support::{BOUND, MockApi, Wrctl, in_room, unix_now};
use wrctl::synthetic::Crowd;

/// Which rooms a panel's series come from.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Mode {
    /// Every room.
    Any,
    /// Lottery rooms only (`allow_percentage`).
    Random,
    /// FIFO rooms only.
    Fifo,
    /// One series set per controller (the writer's and the stream's metrics).
    Controller,
}

/// Every panel of the dashboard, by title, and whose series it shows.
const PANELS: &[(&str, Mode)] = &[
    ("New sessions a minute vs target", Mode::Any),
    ("People waiting and admitted", Mode::Any),
    (
        "Wait at the FIFO cutoff: now, p50 and p95 over 10 min",
        Mode::Fifo,
    ),
    ("Allow percentage (lottery rooms)", Mode::Random),
    ("FIFO cutoff, seconds behind now", Mode::Fifo),
    ("FIFO rate and places ahead", Mode::Fifo),
    ("Origin p95 vs bound", Mode::Any),
    ("Origin error share vs bound", Mode::Any),
    ("Store writes and failures a minute", Mode::Any),
    (
        "Fastly API: throttled, 5xx and held updates a minute; requests left",
        Mode::Controller,
    ),
    ("Unreadable store keys: lines a minute", Mode::Any),
    ("Bad log lines a minute, by reason", Mode::Controller),
    ("Controller alerts (wrctl_alert)", Mode::Controller),
];

fn dashboard() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/grafana/waiting-room.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// `expr` with the dashboard's variables substituted: `$instance` every
/// controller, `$room` the regex `room`, `$__rate_interval` a minute.
fn substituted(expr: &str, room: &str) -> String {
    expr.replace("$__rate_interval", "1m")
        .replace("$instance", ".*")
        .replace("$room", room)
}

/// A lottery crowd's last two minutes in `room`, the origin answering the
/// admitted in 200 ms.
fn lottery_lines(room: Option<&str>, seed: u64) -> Vec<String> {
    let mut crowd = Crowd::new(unix_now() - 120, seed);
    crowd.arrivals_per_second = 10;
    crowd
        .lines(120)
        .iter()
        .map(|l| {
            let l = in_room(l, room);
            if l.contains("decision=allow") {
                format!("{l} origin_ms=200 origin_status=200")
            } else {
                l
            }
        })
        .collect()
}

/// A FIFO room's last two minutes in `room`: three arrivals a second waiting
/// behind a cutoff 20 s back, one admitted a second.
fn fifo_lines(room: Option<&str>, base: u32) -> Vec<String> {
    let now = unix_now();
    let mut out = Vec::new();
    for t in now - 120..now {
        let cutoff = (t - 20) * 1000;
        for i in 0..3 {
            let uid = base + (t % 1000) as u32 * 3 + i;
            out.push(format!(
                "waitingroom t={t} decision=wait uid=10.{}.{}.{} p=5 exp={} arr={} cutoff={cutoff} \
                 path=/events",
                uid >> 16 & 255,
                uid >> 8 & 255,
                uid & 255,
                t + 30,
                t * 1000 + u64::from(i),
            ));
        }
        out.push(format!(
            "waitingroom t={t} decision=allow uid=10.200.{}.{} p=5 session=new exp={} arr={} \
             cutoff={cutoff} path=/events origin_ms=200 origin_status=200",
            (t >> 8) & 255,
            t & 255,
            t + 600,
            (t - 25) * 1000,
        ));
    }
    out.iter().map(|l| in_room(l, room)).collect()
}

/// A controller of two rooms writing to `api`, watching the origin.
fn controller(api: &MockApi, store: &str, rooms: &[&str]) -> Wrctl {
    let url = api.url();
    let mut args = vec![
        "control",
        "--fastly-store-id",
        store,
        "--fastly-api-url",
        &url,
        "--api-budget",
        "3600",
        "--tick",
        "1",
        "--log-silence",
        "0",
        "--quiet",
        "--origin-healthy",
        "p95<800ms,errors<1%",
        "--origin-floor",
        "20",
        "--origin-ceiling",
        "5000",
        "--listen",
        "127.0.0.1:0",
        "--service-room",
    ];
    args.extend_from_slice(rooms);
    Wrctl::start(&args, &[("FASTLY_API_TOKEN", "test-token")])
}

/// The (instance, room) of each series (`""`: no room label).
fn places(series: &[Value]) -> BTreeSet<(String, String)> {
    series
        .iter()
        .map(|s| {
            let m = &s["metric"];
            (
                m["instance"].as_str().unwrap_or("").to_string(),
                m["room"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

#[test]
fn every_panel_shows_its_series_from_a_real_prometheus_in_both_modes() {
    let Some(bin) = prometheus::binary("the Grafana dashboard test") else {
        return;
    };
    let board = dashboard();
    let api = MockApi::start(&[200], "{}");
    // A: a lottery service room, a FIFO room drops.
    let mut a = controller(
        &api,
        "storeA",
        &[
            "--target-per-minute",
            "600",
            "--room",
            "drops:target=300,queueing=fifo",
        ],
    );
    // B: a FIFO service room, a lottery room vip.
    let mut b = controller(
        &api,
        "storeB",
        &[
            "--queueing",
            "fifo",
            "--target-per-minute",
            "300",
            "--room",
            "vip:target=100,queueing=random",
        ],
    );
    a.feed(&lottery_lines(None, 11));
    a.feed(&fifo_lines(Some("drops"), 0));
    b.feed(&fifo_lines(None, 1 << 20));
    b.feed(&lottery_lines(Some("vip"), 12));
    let (ia, ib) = (a.addr.unwrap().to_string(), b.addr.unwrap().to_string());
    let prometheus = Prometheus::start(
        &bin,
        &[ia.clone(), ib.clone()],
        &prometheus::rules_with_short_for(),
    );
    let place = |i: &str, room: &str| (i.to_string(), room.to_string());
    let expected = |mode: Mode| -> BTreeSet<(String, String)> {
        match mode {
            Mode::Any => [
                place(&ia, ""),
                place(&ia, "drops"),
                place(&ib, ""),
                place(&ib, "vip"),
            ]
            .into(),
            Mode::Random => [place(&ia, ""), place(&ib, "vip")].into(),
            Mode::Fifo => [place(&ia, "drops"), place(&ib, "")].into(),
            Mode::Controller => [place(&ia, ""), place(&ib, "")].into(),
        }
    };

    let panels = board["panels"].as_array().unwrap();
    let titles: Vec<&str> = panels
        .iter()
        .map(|p| p["title"].as_str().unwrap())
        .collect();
    assert_eq!(
        titles,
        PANELS.iter().map(|(t, _)| *t).collect::<Vec<_>>(),
        "the test knows every panel"
    );
    // Every expression, with the room variable at All (.*), the service room
    // alone (^$, as room=~"") and a named room, until each shows what it should.
    let deadline = Instant::now() + BOUND;
    loop {
        let mut missing = Vec::new();
        for (panel, (title, mode)) in panels.iter().zip(PANELS) {
            assert_eq!(panel["datasource"]["uid"], "${DS_PROMETHEUS}", "{title}");
            for target in panel["targets"].as_array().unwrap() {
                assert_eq!(target["datasource"]["uid"], "${DS_PROMETHEUS}", "{title}");
                let expr = target["expr"].as_str().unwrap();
                let all = substituted(expr, ".*");
                let series = prometheus
                    .query(&all)
                    .unwrap_or_else(|e| panic!("{title}: {all}: {e}"));
                let shown = places(&series);
                if shown != expected(*mode) {
                    missing.push(format!("{title}: {all}: {shown:?}"));
                    continue;
                }
                if *mode == Mode::Controller {
                    continue;
                }
                // The room variable picks the rooms.
                for room in ["", "drops", "vip"] {
                    let one = substituted(expr, room);
                    let shown = places(&prometheus.query(&one).unwrap());
                    let want: BTreeSet<_> = expected(*mode)
                        .into_iter()
                        .filter(|(_, r)| r == room)
                        .collect();
                    assert_eq!(shown, want, "{title}: {one}");
                }
            }
        }
        if missing.is_empty() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "panels without their series:\n{}",
            missing.join("\n")
        );
        thread::sleep(Duration::from_millis(500));
    }

    // The variables: the data source's, and the instance and room queries,
    // answered by Prometheus as Grafana asks them (label_values).
    let vars = board["templating"]["list"].as_array().unwrap();
    let var = |name: &str| vars.iter().find(|v| v["name"] == name).unwrap();
    assert_eq!(var("DS_PROMETHEUS")["type"], "datasource");
    assert_eq!(var("DS_PROMETHEUS")["query"], "prometheus");
    assert_eq!(board["__inputs"][0]["name"], "DS_PROMETHEUS");
    for (name, want) in [
        ("instance", vec![ia.clone(), ib.clone()]),
        ("room", vec!["drops".into(), "vip".into()]),
    ] {
        let definition = var(name)["definition"].as_str().unwrap();
        let inner = definition
            .strip_prefix("label_values(")
            .and_then(|d| d.strip_suffix(&format!(", {name})")))
            .unwrap_or_else(|| panic!("{definition}"));
        let selector = substituted(inner, ".*");
        let values = prometheus
            .api(&format!("label/{name}/values"), &[("match[]", &selector)])
            .unwrap();
        let values: Vec<String> = values
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap().to_string())
            .collect();
        let mut want = want;
        want.sort();
        assert_eq!(values, want, "{name}: {selector}");
        assert_eq!(
            var(name)["allValue"],
            ".*",
            "{name}: All matches the service room too"
        );
    }
}
