//! The origin rule end to end: the built wasm in Viceroy in front of a demo
//! origin with a capacity (6 requests at once, 100 ms each: 60 a second, far
//! below what this machine serves, so the semaphore and not the CPU decides),
//! Viceroy's log piped into a real `wrctl control --origin-healthy`, and
//! `scripts/real-crowd.py`'s browser-like crowd: 2,000 people on their own
//! loopback addresses, each admitted tab browsing 10 pages 6 s apart (a
//! session of a minute, longer while the origin is slow: a tab waits for each
//! page). The target starts at 120 new sessions a minute, its ceiling 240: about
//! 40 requests a second, two thirds of the origin's capacity; the origin's health
//! is read over 30 s windows. At a minute and a half the origin loses half its
//! capacity, below that load. Under five minutes, bounded.
//!
//! The checks: before the loss the rule finds room and raises the target from
//! its start; within two minutes of the loss it cuts the target to the floor
//! and the new sessions fall; and the origin's p95, read from the room's own
//! log by the controller, comes back under its bound before the end.

use std::thread;
use std::time::{Duration, Instant};

use demo_origin::Capacity;
use support::controller::Controller;
use support::real_crowd::{Crowd, new_sessions_per_minute};
use support::viceroy_room::{Backend, Room, RoomSpec};

const BOUND_MS: u64 = 600;
const FLOOR: f64 = 20.0;
const START: f64 = 120.0;
/// Seconds from the crowd's start to the loss of half the capacity.
const LOSS_AT: u64 = 90;
const SECONDS: u64 = 270;

/// What one of the controller's lines said: the target it holds, the origin
/// rule's state and the p95 it read (`wrote …| … / target N | origin STATE p95 P ms …`).
#[derive(Debug, Clone, PartialEq)]
struct Said {
    at: u64,
    target: f64,
    state: String,
    p95: Option<u64>,
}

fn said(output: &str) -> Vec<Said> {
    output
        .lines()
        .filter_map(|line| {
            let at = waiting_room::settings::unix_time::parse_seconds(line.split(' ').next()?)?;
            let target = line
                .split(" / target ")
                .nth(1)?
                .split(' ')
                .next()?
                .parse()
                .ok()?;
            let origin = line.split(" | origin ").nth(1)?;
            let mut words = origin.split(' ');
            let state = words.next()?.to_string();
            let p95 = words.nth(1)?.parse().ok();
            Some(Said {
                at,
                target,
                state,
                p95,
            })
        })
        .collect()
}

fn capacity(places: usize) -> Capacity {
    Capacity::new(places)
        .with_service(Duration::from_millis(100))
        .with_queue(120)
}

#[test]
fn losing_half_the_origin_cuts_admissions_and_its_p95_comes_back() {
    let origin = demo_origin::Origin::start_with("127.0.0.1:0", Some(capacity(6)))
        .expect("a demo origin on a free port");
    let mut room = Room::launch(RoomSpec {
        config: &[
            ("allow_percentage", "1"),
            ("wait_period_duration", "10"),
            ("allow_period_timeout", "600"),
        ],
        backend: Backend::Origin(origin.addr()),
        pipe_stdout: true,
        ..RoomSpec::default()
    });
    let controller = Controller::start(
        &mut room,
        &[
            "--target-per-minute",
            &START.to_string(),
            "--wait-period",
            "10",
            "--start",
            "1",
            "--max",
            "50",
            "--tick",
            "5",
            "--heartbeat-every",
            "5",
            "--origin-healthy",
            &format!("p95<{BOUND_MS}ms,errors<1%,window=30s"),
            "--origin-floor",
            &FLOOR.to_string(),
            "--origin-ceiling",
            "240",
            "--session-length",
            "60",
        ],
    );
    let mut crowd = Crowd::start(
        room.addr,
        &[
            "--people",
            "2000",
            "--tabs",
            "1",
            "--arrive-over",
            "10",
            "--browse",
            "10",
            "--browse-every",
            "6",
            "--duration",
            &SECONDS.to_string(),
        ],
    );
    let began = Instant::now();
    let began_unix = support::viceroy_room::now();
    let mut lost = false;
    while crowd.running() {
        assert!(
            began.elapsed() < Duration::from_secs(SECONDS + 60),
            "the crowd did not stop"
        );
        if !lost && began.elapsed() >= Duration::from_secs(LOSS_AT) {
            origin.set_capacity(Some(capacity(3))).unwrap();
            lost = true;
        }
        thread::sleep(Duration::from_millis(200));
    }
    let loss = began_unix + LOSS_AT;
    let (table, report) = crowd.finish();
    let lines = said(&controller.output());
    let summary = format!(
        "{table}\norigin {:?}\ncontroller:\n{}",
        origin.stats(),
        lines
            .iter()
            .map(|s| format!(
                "{:+} s: target {} {} p95 {:?}",
                s.at as i64 - loss as i64,
                s.target,
                s.state,
                s.p95
            ))
            .collect::<Vec<_>>()
            .join("\n")
    );
    eprintln!("{summary}");
    assert_eq!(report["errors"].as_u64(), Some(0), "{summary}");

    // Before the loss: the origin has room, and the rule raises the target.
    let before: Vec<&Said> = lines.iter().filter(|s| s.at < loss).collect();
    assert!(
        before.iter().any(|s| s.target > START * 1.3),
        "never raised: {summary}"
    );
    // Within two minutes of the loss: the target at the floor, for the origin.
    let cut = lines
        .iter()
        .find(|s| s.at >= loss && s.target <= FLOOR && s.state == "origin-limited")
        .unwrap_or_else(|| panic!("never cut: {summary}"));
    assert!(
        cut.at <= loss + 120,
        "cut {} s after the loss: {summary}",
        cut.at - loss
    );
    // The new sessions fall: the minute after the cut against the minute before the loss.
    let minutes = new_sessions_per_minute(&report);
    let minute_of = |t: u64| ((t - began_unix) / 60) as usize;
    let (pre, post) = (minute_of(loss) - 1, minute_of(cut.at) + 1);
    assert!(
        post < minutes.len() && minutes[post] < minutes[pre],
        "new sessions {minutes:?}, minute {pre} against {post}: {summary}"
    );
    // The p95 comes back under the bound before the end.
    let last = lines.iter().rev().find(|s| s.p95.is_some()).unwrap();
    assert!(
        last.p95.is_some_and(|p| p <= BOUND_MS) && last.at > cut.at,
        "p95 at the end {:?}: {summary}",
        last.p95
    );
}
