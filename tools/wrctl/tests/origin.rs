//! `wrctl control --origin-healthy`: the target follows the origin's health, read
//! from the room's log lines by the real binary.

use crate::support;

use support::{Wrctl, eventually, run_to_end, unix_now};

const FLAGS: [&str; 7] = [
    "--origin-healthy",
    "p95<800ms,errors<1%",
    "--origin-floor",
    "20",
    "--origin-ceiling",
    "5000",
    "--quiet",
];

/// `wrctl control` following the origin, listening, with `extra` arguments.
fn start(extra: &[&str]) -> Wrctl {
    let args = [
        "control",
        "--target-per-minute",
        "300",
        "--dry-run",
        "--tick",
        "1",
        "--listen",
        "127.0.0.1:0",
    ];
    Wrctl::start(&[&args[..], &FLAGS, extra].concat(), &[])
}

/// `per_second` admitted requests in each second of `[from, to)`, each answered
/// by the origin in `ms` milliseconds, and one newcomer a second waiting.
fn lines(from: u64, to: u64, per_second: u64, ms: u64) -> Vec<String> {
    let mut out = Vec::new();
    for t in from..to {
        out.push(format!(
            "waitingroom t={t} decision=anon uid=198.51.100.{} p=5 exp={} path=/events",
            t % 200,
            t + 30
        ));
        for i in 0..per_second {
            out.push(format!(
                "waitingroom t={t} decision=allow uid=192.0.2.{i} p=5 session=kept exp={} \
                 path=/events origin_ms={ms} origin_status=200",
                t + 600
            ));
        }
    }
    out
}

#[test]
fn a_slow_origin_cuts_the_target_to_the_floor_and_shows_why() {
    let mut wrctl = start(&[]);
    let t = unix_now() - 120;
    wrctl.feed(&lines(t, t + 60, 10, 900));
    let status = eventually("the first reading", || {
        let status = wrctl.status();
        (status["origin"]["state"] != "no-origin-data").then_some(status)
    });
    let origin = &status["origin"];
    assert_eq!(origin["state"], "origin-limited", "{status}");
    assert_eq!(origin["p95_ms"], 900);
    assert_eq!(origin["p95_bound_ms"], 800);
    assert_eq!(origin["healthy"], "p95<800ms,errors<1%,window=60s");
    assert_eq!(origin["alert"], false);
    // One reading: no spread yet, the aim 80 % of the bound.
    assert_eq!(origin["aim_ms"], 640);
    // No healthy reading has shown the origin's base: no session beyond the floor's.
    assert_eq!(origin["live_limit"], 0, "{status}");
    assert_eq!(
        status["target_per_minute"], 20,
        "cut to the floor: {status}"
    );
    assert_eq!(
        status["series"]["origin_p95_ms"]
            .as_array()
            .unwrap()
            .last()
            .unwrap(),
        900
    );
    let metrics = wrctl.get("/metrics");
    assert!(
        metrics.contains("wrctl_origin_state{state=\"origin-limited\"} 1"),
        "{metrics}"
    );
    assert!(
        metrics.contains("wrctl_origin_state{state=\"rising\"} 0"),
        "{metrics}"
    );
    assert_eq!(wrctl.metric("wrctl_origin_p95_milliseconds"), Some(900.0));
    assert_eq!(wrctl.metric("wrctl_origin_live_limit"), Some(0.0));
    assert_eq!(wrctl.metric("wrctl_origin_aim_milliseconds"), Some(640.0));
    assert_eq!(
        wrctl.metric("wrctl_target_new_sessions_per_minute"),
        Some(20.0)
    );

    // Healthy again, half a window on: no queueing, so the target rises from the floor.
    wrctl.feed(&lines(t + 60, t + 120, 10, 100));
    eventually("a rise from the floor", || {
        let status = wrctl.status();
        (status["origin"]["state"] == "rising").then_some(())
    });
    let target = wrctl
        .metric("wrctl_target_new_sessions_per_minute")
        .unwrap();
    assert!(target > 20.0 && target <= 40.0, "{target}");
    // Rising: nothing says where the limit is.
    assert_eq!(
        wrctl.status()["origin"]["live_limit"],
        serde_json::Value::Null
    );
    assert_eq!(wrctl.metric("wrctl_origin_live_limit"), None);
}

#[test]
fn without_origin_lines_the_target_is_held_and_the_state_says_so() {
    let mut wrctl = start(&[]);
    let t = unix_now() - 60;
    wrctl.feed(&lines(t, t + 60, 0, 0));
    let status = eventually("the log read", || {
        let status = wrctl.status();
        (status["lines_total"] == 60).then_some(status)
    });
    assert_eq!(status["origin"]["state"], "no-origin-data", "{status}");
    assert_eq!(status["target_per_minute"], 300);
    assert_eq!(status["origin"]["p95_ms"], serde_json::Value::Null);
}

#[test]
fn origin_options_that_cannot_hold_are_usage_errors() {
    let run = |extra: &[&str]| {
        let args = ["control", "--target-per-minute", "300", "--dry-run"];
        run_to_end(&[&args[..], extra].concat(), &[])
    };
    for (extra, said) in [
        (
            &[
                "--origin-healthy",
                "p95<fast",
                "--origin-floor",
                "1",
                "--origin-ceiling",
                "2",
            ][..],
            "is not a time",
        ),
        (&["--origin-healthy", "p95<800ms"][..], "--origin-floor"),
        (
            &[
                "--origin-healthy",
                "p95<800ms",
                "--origin-floor",
                "50",
                "--origin-ceiling",
                "10",
            ][..],
            "at or above the floor",
        ),
        (&["--origin-floor", "5"][..], "--origin-healthy"),
        (
            &[
                "--origin-healthy",
                "p95<1s",
                "--origin-floor",
                "5",
                "--origin-ceiling",
                "10",
                "--session-length",
                "30",
            ][..],
            "--session-length",
        ),
    ] {
        let (code, stderr) = run(extra);
        assert_eq!(code, Some(2), "{extra:?}: {stderr}");
        assert!(stderr.contains(said), "{extra:?}: {stderr}");
    }
}

#[test]
fn rooms_behind_one_origin_read_each_others_answers_and_share_by_ceiling() {
    let mut wrctl = start(&[
        "--room",
        "drops:origin-ceiling=1000",
        "--room",
        "shop:origin-ceiling=3000",
    ]);
    // Only the shop's requests reach the origin, slowly: the drops room cuts too.
    let t = unix_now() - 120;
    let shop: Vec<String> = lines(t, t + 60, 10, 900)
        .iter()
        .map(|l| l.replacen(" p=5", " room=shop p=5", 1))
        .collect();
    wrctl.feed(&shop);
    let drops = eventually("the drops room's reading", || {
        let status: serde_json::Value =
            serde_json::from_str(&wrctl.get("/status.json?room=drops")).unwrap();
        (status["origin"]["state"] != "no-origin-data").then_some(status)
    });
    assert_eq!(drops["origin"]["state"], "origin-limited", "{drops}");
    assert_eq!(drops["origin"]["p95_ms"], 900);
    assert_eq!(drops["target_per_minute"], 20);
    let err = wrctl.stderr();
    assert!(!err.contains("panicked"), "{err}");
}
