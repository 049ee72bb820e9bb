//! The dashboard page served by a real `wrctl control --listen … --dry-run`, fed ten
//! minutes of recorded-style log lines, in headless Chromium: the root's
//! `tests/browser/dashboard.mjs` checks what the page shows of the live
//! `status.json`, axe-core's WCAG 2.1 A/AA rules at two widths, and what it says when
//! the controller stops answering. Needs Chromium, Node.js and the npm packages of
//! `tests/browser` (scripts/setup.sh); `WAITING_ROOM_SKIP_BROWSER=1` skips it.

use crate::support;

use std::path::Path;

use std::time::Duration;
use test_support::browser;

use support::{FASTLY_HOURLY_LIMIT, MockApi, Wrctl, eventually, unix_now};
use wrctl::pages::thousands;
use wrctl::synthetic::Crowd;

const SCRIPT_BOUND: Duration = Duration::from_secs(120);

#[test]
fn the_controllers_own_dashboard_passes_in_chromium() {
    let Some(driver) = browser::driver_dir("the wrctl dashboard test") else {
        return;
    };
    let mut wrctl = Wrctl::start(
        &[
            "control",
            "--target-per-minute",
            "600",
            "--max-active",
            "20000",
            "--dry-run",
            "--tick",
            "1",
            "--quiet",
            "--listen",
            "127.0.0.1:0",
            // The room picker, checked by axe with the rest of the page.
            "--room-dashboard",
            "drops=http://127.0.0.1:7679/",
            "--room-dashboard",
            "vip=http://127.0.0.1:7680/",
        ],
        &[],
    );
    let mut crowd = Crowd::new(unix_now() - 600, 9);
    crowd.arrivals_per_second = 30;
    let mut lines = crowd.lines(600);
    lines.push("Viceroy's own line".into());
    wrctl.feed(&lines);
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let url = format!("http://{}/", wrctl.addr.unwrap());
    // The percentage follows the clock as well as the log (a write lands in the
    // draw slot after the log's lag), so it can move while the browser looks, with
    // no new line. A failure is retried only when the percentage expected moved
    // meanwhile; with the same percentage before and after, it stands.
    for attempt in 1.. {
        let status = settled_status(&wrctl, lines.len());
        let percentage = status["allow_percentage"].as_str().unwrap();
        let texts = [
            "DRY RUN".to_string(),
            format!("{percentage} %"),
            "range 0.0001–100 %".into(),
            "target 600".into(),
            "max 20,000".into(),
            thousands(status["lines_total"].as_u64().unwrap() as usize),
            "0 bad (1 in the whole log)".into(),
            "dry run".into(),
            "service room".into(),
            "vip".into(),
        ];
        let charts = [
            "New sessions per second, last 600 s",
            "; target 10.",
            "New sessions in the last 60 s, last 600 s",
            "Arrivals and draws per second, last 600 s",
            "; max active 20,000.",
            "Allow percentage in effect, last 600 s: percentage in effect latest 10",
        ];
        let absent = ["NaN", "undefined", "Infinity", "Connection lost"];
        let checks = browser::DashboardChecks {
            texts: &texts,
            charts: &charts,
            absent: &absent,
        };
        let checked = browser::try_check_dashboard(
            &driver,
            &url,
            &root.join("artifacts/wrctl-dashboard"),
            &checks,
            SCRIPT_BOUND,
        );
        let moved = wrctl.status()["allow_percentage"] != status["allow_percentage"];
        match checked {
            Ok(_) => break,
            Err(why) if moved && attempt < 3 => {
                eprintln!("the percentage moved during attempt {attempt}; again:\n{why}");
            }
            Err(why) => panic!("{why}"),
        }
    }
}

/// The controller's status once every one of `lines` is counted and its
/// percentage held for more than a tick (1 s).
fn settled_status(wrctl: &Wrctl, lines: usize) -> serde_json::Value {
    eventually("the lines counted and a percentage decided on them", || {
        let before = wrctl.status();
        let counted =
            before["lines_total"].as_u64()? + before["stream_bad_lines_total"].as_u64()?;
        if counted != lines as u64 || !before["allow_percentage"].is_string() {
            return None;
        }
        std::thread::sleep(Duration::from_millis(1500));
        let after = wrctl.status();
        (after["allow_percentage"] == before["allow_percentage"]).then_some(after)
    })
}

/// One controller of three rooms writing to the Fastly API stand-in, whose
/// window another tool has spent: the page of room drops (`?room=drops`) names
/// its room, lists the three in its picker, and says the API throttled the
/// writer and until when; it passes axe-core as the other.
#[test]
fn the_dashboard_of_one_room_of_three_shows_the_apis_429() {
    let Some(driver) = browser::driver_dir("the wrctl dashboard test") else {
        return;
    };
    // The stand-in's clock 10 minutes ahead: its window resets at least that far off,
    // so the writer holds for its longest hold (5 min), however near the wall clock is
    // to the hour (at the hour itself the hold would end in the middle of the test).
    let api = MockApi::with_budget(&[200], "{}", FASTLY_HOURLY_LIMIT, unix_now() + 600);
    api.spend(FASTLY_HOURLY_LIMIT);
    let url = api.url();
    let mut wrctl = Wrctl::start(
        &[
            "control",
            "--target-per-minute",
            "600",
            "--service-room",
            "--room",
            "drops:target=300",
            "--room",
            "vip:target=100",
            "--fastly-store-id",
            "STORE",
            "--fastly-api-url",
            &url,
            "--api-budget",
            "3600",
            "--tick",
            "1",
            "--quiet",
            "--listen",
            "127.0.0.1:0",
        ],
        &[("FASTLY_API_TOKEN", "tok")],
    );
    let mut crowd = Crowd::new(unix_now() - 120, 3);
    crowd.arrivals_per_second = 10;
    let lines: Vec<String> = crowd
        .lines(120)
        .iter()
        .map(|l| support::in_room(l, Some("drops")))
        .collect();
    wrctl.feed(&lines);
    eventually("the 429 and the hold", || {
        let status = wrctl.status();
        (status["writer"]["hold_reason"] == "throttled").then_some(())
    });
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let texts = [
        "Waiting room controller: room drops".to_string(),
        "service room".into(),
        "room vip".into(),
        "Fastly API throttled (429): no update before".into(),
        "1 throttled (429)".into(),
        "budget 3,600 an hour of the API's 1,000".into(),
        "0 left until".into(),
        "target 300".into(),
    ];
    let charts = ["New sessions per second, last"];
    let absent = ["NaN", "undefined", "Infinity", "Connection lost", "DRY RUN"];
    let checks = browser::DashboardChecks {
        texts: &texts,
        charts: &charts,
        absent: &absent,
    };
    let page = format!("http://{}/?room=drops", wrctl.addr.unwrap());
    if let Err(why) = browser::try_check_dashboard(
        &driver,
        &page,
        &root.join("artifacts/wrctl-dashboard-rooms"),
        &checks,
        SCRIPT_BOUND,
    ) {
        panic!("{why}");
    }
}
