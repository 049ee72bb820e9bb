//! A browser-like crowd against the closed loop, end to end: the built wasm in
//! Viceroy in front of the demo origin, Viceroy's standard output piped into a
//! real `wrctl control` process writing the room's JSON config store, from the
//! safe start (the room and `--start` at 1 %), while `scripts/real-crowd.py`
//! plays 450 people on their own loopback addresses, two tabs each sharing one
//! cookie jar, every tab following the page's `Refresh`, admitted tabs browsing
//! and closing. Four minutes, bounded.
//!
//! The checks are counts: no write of `allow_percentage` above twice the lowest
//! written over the draw period before it (the controller's rise bound), and
//! from the third minute on, the new sessions of each minute (distinct allow
//! tokens, as the crowd saw them handed out) within ±35 % of the target: the
//! lottery's own noise at 60 a minute is about ±13 % (one standard deviation),
//! so the band is wide enough not to fail by chance and narrow enough to fail a
//! controller that jumps (the rule before this one let in 16× its target).

use test_support as support;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use control::{MAX_RISE_PER_DRAW_PERIOD, largest_rise};
use support::controller::Controller;
use support::room::{Room, RoomSpec};

const TARGET_PER_MINUTE: f64 = 60.0;
const WAIT_PERIOD: u64 = 10;
const MINUTES: u64 = 4;

/// Kills a child process when the test ends, whatever happens.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn allow_percentage(config: &Path) -> Option<f64> {
    let text = std::fs::read_to_string(config).ok()?;
    let json: serde_json::Value = serde_json::from_str(&text).ok()?;
    json["allow_percentage"].as_str()?.parse().ok()
}

/// The percentages the controller wrote, with its clock's second: its lines
/// `<RFC 3339> wrote allow_percentage=<p> …`.
fn controller_writes(output: &str) -> Vec<(u64, f64)> {
    output
        .lines()
        .filter_map(|line| {
            let (at, rest) = line.split_once(" wrote allow_percentage=")?;
            let p = rest.split_whitespace().next()?.parse().ok()?;
            Some((waiting_room::settings::unix_time::parse_seconds(at)?, p))
        })
        .collect()
}

#[test]
fn a_browser_like_crowd_is_held_near_the_target_without_a_jump() {
    let mut room = Room::launch(RoomSpec {
        config: &[
            ("allow_percentage", "1"),
            ("wait_period_duration", "10"),
            ("allow_period_timeout", "600"),
        ],
        pipe_stdout: true,
        ..RoomSpec::default()
    });
    let config = room.config_path();
    let controller = Controller::start(
        &mut room,
        &[
            "--target-per-minute",
            "60",
            "--wait-period",
            &WAIT_PERIOD.to_string(),
            "--start",
            "1",
            "--max",
            "50",
        ],
    );
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/real-crowd.py");
    let json = std::env::temp_dir().join(format!("real-crowd-{}.json", std::process::id()));
    let duration = MINUTES * 60 + 5;
    let crowd = Killed(
        Command::new("python3")
            .arg(&script)
            .args(["--room", &format!("http://{}", room.addr)])
            .args(["--people", "450", "--tabs", "2", "--arrive-over", "10"])
            .args(["--duration", &duration.to_string()])
            .arg("--json")
            .arg(&json)
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3 is needed for the crowd (scripts/real-crowd.py)"),
    );

    // Every write of the percentage, as the store shows it, until the crowd ends.
    let started = Instant::now();
    let mut writes: Vec<(Duration, f64)> = Vec::new();
    let mut crowd = crowd;
    while crowd.0.try_wait().unwrap().is_none() {
        assert!(
            started.elapsed() < Duration::from_secs(duration + 60),
            "the crowd did not stop"
        );
        if let Some(p) = allow_percentage(&config)
            && writes.last().is_none_or(|&(_, last)| last != p)
        {
            writes.push((started.elapsed(), p));
        }
        thread::sleep(Duration::from_millis(200));
    }
    let mut table = String::new();
    use std::io::Read;
    let _ = crowd.0.stdout.take().unwrap().read_to_string(&mut table);
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let minutes: Vec<u64> = report["minutes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["new_sessions"].as_u64().unwrap())
        .collect();
    let summary = format!(
        "{table}\nwrites (s, %): {writes:?}\ncontroller:\n{}",
        controller
            .output()
            .lines()
            .rev()
            .take(20)
            .collect::<Vec<_>>()
            .join("\n")
    );
    eprintln!("{summary}");
    assert_eq!(report["errors"].as_u64(), Some(0), "{summary}");

    // No write rises above twice the lowest of the draw period before it: every
    // write as the controller made it, on its own clock (the store, polled, can
    // show a write late and move it across a period's edge), and the store holds
    // the last of them (a write lands in the store just before its line is printed,
    // so a tick between the two reads is read again).
    let in_store = |written: &[(u64, f64)]| {
        let stored = allow_percentage(&config);
        written.last().map(|&(_, p)| p) == stored
    };
    let mut written = controller_writes(&controller.output());
    for _ in 0..10 {
        if in_store(&written) {
            break;
        }
        thread::sleep(Duration::from_millis(100));
        written = controller_writes(&controller.output());
    }
    assert!(!written.is_empty(), "{summary}");
    if let Some(rise) = largest_rise(&written, 2 * WAIT_PERIOD) {
        assert!(rise <= MAX_RISE_PER_DRAW_PERIOD + 1e-4, "{rise}: {summary}");
    }
    assert!(
        in_store(&written),
        "store {:?}, writes {written:?}: {summary}",
        allow_percentage(&config)
    );
    // From the third minute, each minute's new sessions near the target.
    assert_eq!(minutes.len() as u64, MINUTES, "{summary}");
    for (minute, &n) in minutes.iter().enumerate().skip(2) {
        let ratio = n as f64 / TARGET_PER_MINUTE;
        assert!(
            (0.65..=1.35).contains(&ratio),
            "minute {minute}: {n} new sessions: {summary}"
        );
    }
}
