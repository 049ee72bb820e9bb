//! The alert rules in a real Prometheus, end to end: Prometheus on loopback
//! (`support::prometheus`: a temporary data folder, a generated configuration
//! scraping every second, the committed rules with each `for:` rewritten to `1s`
//! in a temporary copy) scrapes a running `wrctl control` whose writes to the
//! Fastly API stand-in all fail, and a second target where nothing listens; the
//! test asks Prometheus's HTTP API (`/api/v1/alerts` and `ALERTS`) until the
//! rules fire. `WAITING_ROOM_SKIP_PROMTOOL=1` skips it; without Prometheus it fails.

use crate::support;

use std::net::TcpListener;

use serde_json::Value;
use support::prometheus::{self, Prometheus};
use support::{MockApi, Wrctl, eventually, to_fastly, unix_now};
use wrctl::synthetic::Crowd;

/// The names of the alerts firing now.
fn firing(prometheus: &Prometheus) -> Vec<String> {
    let mut names: Vec<String> = prometheus
        .alerts()
        .iter()
        .filter(|a| a["state"] == "firing")
        .map(|a| a["labels"]["alertname"].as_str().unwrap_or("").to_string())
        .collect();
    names.sort();
    names.dedup();
    names
}

#[test]
fn failing_writes_and_a_dead_controller_fire_their_rules_in_prometheus() {
    let Some(bin) = prometheus::binary("the end-to-end Prometheus test") else {
        return;
    };
    let api = MockApi::start(&[500], r#"{"msg":"down for the test"}"#);
    let mut wrctl = Wrctl::start(
        &to_fastly(
            &api.url(),
            &[
                "--api-budget",
                "3600",
                "--tick",
                "1",
                "--log-silence",
                "0",
                "--listen",
                "127.0.0.1:0",
            ],
        ),
        &[("FASTLY_API_TOKEN", "test-token")],
    );
    let mut crowd = Crowd::new(unix_now() - 60, 3);
    crowd.arrivals_per_second = 5;
    wrctl.feed(&crowd.lines(60));
    // A target where nothing listens: `up` is 0 there.
    let dead = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let prometheus = Prometheus::start(
        &bin,
        &[wrctl.addr.unwrap().to_string(), dead.to_string()],
        &prometheus::rules_with_short_for(),
    );
    let expected = ["WrctlControllerStale", "WrctlDown", "WrctlWritesFailing"];
    let names = eventually("the rules to fire", || {
        let names = firing(&prometheus);
        expected
            .iter()
            .all(|e| names.iter().any(|n| n == e))
            .then_some(names)
    });
    // The rules that should stay quiet do (the crowd's admissions are off the
    // target, so that one may fire too).
    for quiet in [
        "WrctlAbsent",
        "WrctlApiThrottled",
        "WrctlBadLogLines",
        "WrctlOriginUnhealthy",
        "WrctlUnauthenticatedLogs",
        "WrctlUnreadableStoreKeys",
    ] {
        assert!(!names.iter().any(|n| n == quiet), "{quiet}: {names:?}");
    }
    assert!(!api.requests().is_empty(), "the writes were tried");
    // The same through the ALERTS series, with the table's labels.
    let series = prometheus
        .query(r#"ALERTS{alertstate="firing",alertname="WrctlWritesFailing"}"#)
        .unwrap();
    let labels: &Value = &series[0]["metric"];
    assert_eq!(labels["severity"], "critical", "{labels}");
    assert_eq!(labels["wrctl_alert"], "writes-failing", "{labels}");
    assert_eq!(labels["instance"], wrctl.addr.unwrap().to_string());
    // The controller's own gauge says it too.
    let gauge = prometheus
        .query(r#"wrctl_alert{alert="writes-failing"} == 1"#)
        .unwrap();
    assert_eq!(gauge.len(), 1, "{gauge:?}");
}
