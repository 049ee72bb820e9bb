//! FIFO end to end: the real `wrctl control --queueing fifo` process on a live
//! stream. The test plays the room with the room's own code: a crowd of visitors,
//! each with its own cookie jar, polls on the wall clock; every request is decided
//! by `decision::decide` (to the millisecond) with the settings read afresh from
//! the config file the controller writes, and its log line, written by
//! `log::decision_line`, is piped to the controller's stdin. The controller must
//! move `fifo_cutoff` forward in that file, with `fifo_rate` and the heartbeat,
//! and the crowd must come in, in order, near the target. Bounded: about 20 s of
//! wall clock, loopback nothing (stdin and a file).

use crate::support;

use std::collections::{BTreeSet, HashMap};
use std::fs;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};
use support::Wrctl;
use waiting_room::admission::decision::{self, CookieAction, Decision};
use waiting_room::settings::config::Settings;
use waiting_room::{log, outlook};

const CROWD: u32 = 80;
const TARGET_PER_MINUTE: u64 = 120;
const RUN: Duration = Duration::from_secs(16);

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

struct Visitor {
    uid: String,
    cookie: Option<String>,
    next_ms: u64,
    arr: Option<u64>,
    admitted_ms: Option<u64>,
}

fn settings(path: &std::path::Path) -> (Settings, Value) {
    let json: Value = serde_json::from_str(&fs::read_to_string(path).unwrap()).unwrap();
    let store = json.clone();
    let settings = Settings::from_lookup(|key| store[key].as_str().map(str::to_string));
    (settings, json)
}

#[test]
fn the_controller_moves_the_fifo_cutoff_of_a_live_room() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.json");
    let config = json!({
        "enabled": "true",
        "queueing_method": "fifo",
        "allow_percentage": "50",
        "wait_period_duration": "3",
        "fifo_hold": "9",
        "controller_timeout": "30",
        "active_key": "key1",
    });
    fs::write(&path, config.to_string()).unwrap();
    let keys = HashMap::from([(
        "key1".to_string(),
        "a-test-signing-key-of-more-than-32-bytes".to_string(),
    )]);
    let mut wrctl = Wrctl::start(
        &[
            "control",
            "--queueing",
            "fifo",
            "--target-per-minute",
            &TARGET_PER_MINUTE.to_string(),
            "--wait-period",
            "3",
            "--fifo-hold",
            "9",
            "--tick",
            "1",
            "--heartbeat-every",
            "5",
            "--expected-propagation",
            "0",
            "--config-file",
            path.to_str().unwrap(),
        ],
        &[],
    );

    // The crowd arrives over the first two seconds, each at their own millisecond.
    let start = now_ms();
    let mut crowd: Vec<Visitor> = (0..CROWD)
        .map(|i| Visitor {
            uid: format!("192.0.2.{}", i + 1),
            cookie: None,
            next_ms: start + u64::from(i) * 2000 / u64::from(CROWD),
            arr: None,
            admitted_ms: None,
        })
        .collect();
    let mut cutoffs = BTreeSet::new();
    let mut written = Vec::new();
    let began = Instant::now();
    while began.elapsed() < RUN {
        let (settings, json) = settings(&path);
        if let Some(cutoff) = json["fifo_cutoff"].as_str() {
            let cutoff: u64 = cutoff.parse().unwrap();
            if cutoffs.insert(cutoff) {
                written.push(cutoff);
            }
        }
        let now = now_ms();
        let mut lines = Vec::new();
        for v in crowd.iter_mut() {
            if v.admitted_ms.is_some() || v.next_ms > now {
                continue;
            }
            let request = decision::Request {
                now: now / 1000,
                millis: (now % 1000) as u16,
                uid: &v.uid,
                cookie: v.cookie.as_deref(),
            };
            let verdict = decision::decide(&request, &decision::Context::new(&settings), &keys);
            lines.push(log::decision_line(
                now / 1000,
                &v.uid,
                "/events",
                &verdict,
                &settings.clone().into(),
            ));
            match &verdict.cookie {
                CookieAction::Set(value) => v.cookie = Some(value.clone()),
                CookieAction::Delete => v.cookie = None,
                CookieAction::Keep => {}
            }
            match verdict.decision {
                Decision::Allow => v.admitted_ms = Some(now),
                Decision::Anon | Decision::Wait | Decision::ReWait => {
                    v.arr = v.arr.or(verdict.arr);
                    let exp = verdict.wait_exp.unwrap();
                    let o = outlook(now / 1000, exp, verdict.arr, &v.uid, &settings);
                    v.next_ms = now + o.refresh_after * 1000;
                }
                Decision::Deny => panic!("denied: {}", lines.last().unwrap()),
            }
        }
        if !lines.is_empty() {
            wrctl.feed(&lines);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    wrctl.close_stdin();
    assert_eq!(wrctl.wait(), Some(0), "{}", wrctl.stderr());
    let (_, json) = settings(&path);
    let report = format!(
        "cutoffs written {written:?}\nfile {json}\nwrctl:\n{}",
        wrctl.stderr()
    );

    // A moving cutoff, never back, with its rate and the heartbeat beside it,
    // and the room's own keys kept.
    assert!(written.len() >= 5, "{report}");
    assert!(written.windows(2).all(|w| w[0] < w[1]), "{report}");
    assert!(json["fifo_rate"].as_str().is_some(), "{report}");
    let heartbeat: u64 = json["controller_heartbeat"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(heartbeat.abs_diff(now_ms() / 1000) <= 5, "{report}");
    assert_eq!(json["queueing_method"], "fifo");
    assert_eq!(json["fifo_hold"], "9");

    // Two a second are wanted: over the 14 s after the first write, about 28. The
    // first places pass a second after the crowd's first lines, and a visitor sees
    // the cutoff at their next poll (every 3 s).
    let admitted: Vec<&Visitor> = crowd.iter().filter(|v| v.admitted_ms.is_some()).collect();
    assert!(
        (12..=45).contains(&admitted.len()),
        "{} admitted\n{report}",
        admitted.len()
    );
    // In order: nobody admitted whose place is after a place still waiting
    // behind the cutoff the file holds at the end.
    let last = *written.last().unwrap();
    for v in &crowd {
        let arr = v.arr.unwrap();
        if v.admitted_ms.is_some() {
            assert!(arr <= last, "{arr} admitted past {last}\n{report}");
        }
    }
    let waiting_before = crowd
        .iter()
        .filter(|v| v.admitted_ms.is_none() && v.arr.unwrap() <= *written.first().unwrap())
        .count();
    assert_eq!(waiting_before, 0, "{report}");
    assert!(wrctl.stderr().contains("wrote fifo_cutoff="), "{report}");
    eprintln!("{} admitted\n{report}", admitted.len());
}
