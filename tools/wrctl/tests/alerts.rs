//! The alert table (`wrctl::alerts`) is the one source of the alerts: the
//! committed Prometheus rules file and SECURITY.md's runbook table are what it
//! renders (`WRCTL_WRITE_ALERTS=1` rewrites them), and a real `wrctl control`
//! exports `wrctl_alert{alert=...}` for each of its rows with a condition,
//! raising the one whose condition holds.

use crate::support;

use std::path::{Path, PathBuf};

use support::{MockApi, Wrctl, eventually, metric, to_fastly};
use test_support::docs;
use wrctl::alerts::{self, ALERTS};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn the_committed_rules_file_is_the_tables() {
    let path = root().join(alerts::RULES_PATH);
    let wanted = alerts::rules_yaml();
    if std::env::var_os("WRCTL_WRITE_ALERTS").is_some() {
        std::fs::write(&path, &wanted).unwrap();
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap();
    assert!(
        committed == wanted,
        "{} is not what wrctl's alert table renders: regenerate it with \
         WRCTL_WRITE_ALERTS=1 cargo test -p wrctl --test wrctl alerts::\n--- committed\n{committed}\n--- wanted\n{wanted}",
        alerts::RULES_PATH
    );
    // Every row is a rule, with its expression, for:, severity and runbook.
    for alert in ALERTS {
        let rule = format!("      - alert: {}\n", alert.rule_name());
        let at = committed.find(&rule).unwrap_or_else(|| panic!("{rule}"));
        let body = &committed[at..];
        assert!(body.contains(&format!("for: {}\n", alert.for_)));
        assert!(body.contains(&format!("severity: {}\n", alert.severity.as_str())));
        assert!(body.contains("runbook_url: 'SECURITY.md#controller-alerts'"));
    }
}

#[test]
fn security_md_runbook_lists_every_alert() {
    docs::check_generated(&docs::Generated {
        path: &root().join("SECURITY.md"),
        begin: alerts::RUNBOOK_BEGIN,
        end: alerts::RUNBOOK_END,
        text: alerts::runbook_markdown(),
        write_var: "WRCTL_WRITE_ALERTS",
        regenerate: "WRCTL_WRITE_ALERTS=1 cargo test -p wrctl --test wrctl alerts::",
    });
    let security = std::fs::read_to_string(root().join("SECURITY.md")).unwrap();
    // The runbook link's anchor.
    assert!(security.contains("\n### Controller alerts\n"));
    assert_eq!(alerts::RUNBOOK, "SECURITY.md#controller-alerts");
}

/// The value of `wrctl_alert{alert="NAME"}` in a metrics text.
fn alert(text: &str, name: &str) -> Option<f64> {
    metric(text, &format!("wrctl_alert{{alert=\"{name}\"}}"))
}

#[test]
fn a_calm_controller_exports_every_alert_at_0() {
    let wrctl = Wrctl::start(
        &[
            "control",
            "--target-per-minute",
            "60",
            "--dry-run",
            "--listen",
            "127.0.0.1:0",
        ],
        &[],
    );
    let text = wrctl.get("/metrics");
    for a in ALERTS {
        let value = alert(&text, a.name);
        if a.condition.is_some() {
            assert_eq!(value, Some(0.0), "{}:\n{text}", a.name);
        } else {
            assert_eq!(value, None, "{} is Prometheus's alone", a.name);
        }
    }
}

#[test]
fn failing_writes_raise_writes_failing_and_throttling_api_throttled() {
    // Every update answered 500: failures, never a write confirmed.
    let api = MockApi::start(&[500], r#"{"msg":"down"}"#);
    let url = api.url();
    let wrctl = Wrctl::start(
        &to_fastly(&url, &["--listen", "127.0.0.1:0"]),
        &[("FASTLY_API_TOKEN", "token-for-tests")],
    );
    // The first tick writes the start; it fails.
    let text = eventually("a failed write", || {
        let text = wrctl.get("/metrics");
        (metric(&text, "wrctl_write_failures_total")? >= 1.0).then_some(text)
    });
    assert_eq!(alert(&text, "writes-failing"), Some(1.0), "{text}");
    assert_eq!(alert(&text, "api-throttled"), Some(0.0), "{text}");
    // A 429: throttled.
    let api = MockApi::start(&[429], r#"{"msg":"slow down"}"#);
    let url = api.url();
    let wrctl = Wrctl::start(
        &to_fastly(&url, &["--listen", "127.0.0.1:0"]),
        &[("FASTLY_API_TOKEN", "token-for-tests")],
    );
    let text = eventually("a throttled write", || {
        let text = wrctl.get("/metrics");
        (metric(&text, "wrctl_api_throttled_total")? >= 1.0).then_some(text)
    });
    assert_eq!(alert(&text, "api-throttled"), Some(1.0), "{text}");
}

#[test]
fn unreadable_and_bad_lines_raise_their_alerts() {
    let mut wrctl = Wrctl::start(
        &[
            "control",
            "--target-per-minute",
            "60",
            "--dry-run",
            "--listen",
            "127.0.0.1:0",
            "--quiet",
        ],
        &[],
    );
    let t = support::unix_now();
    let good = format!(
        "waitingroom t={t} decision=anon uid=192.0.2.1 p=50 exp={} path=/events",
        t + 30
    );
    wrctl.feed(&[good.clone(), good.clone()]);
    eventually("the good lines", || {
        (wrctl.metric("wrctl_log_lines_total")? == 2.0).then_some(())
    });
    let text = wrctl.get("/metrics");
    assert_eq!(alert(&text, "bad-log-lines"), Some(0.0), "{text}");
    assert_eq!(alert(&text, "unreadable-store-keys"), Some(0.0), "{text}");
    // A room line without its uid: bad; other programs' lines are not.
    wrctl.feed(&[
        "some other program's line".into(),
        format!("waitingroom t={t} decision=anon p=50"),
        format!(
            "waitingroom t={t} decision=anon uid=192.0.2.2 p=50 exp={} path=/events ALERT=unreadable:allow_percentage",
            t + 30
        ),
    ]);
    let text = eventually("the bad line", || {
        let text = wrctl.get("/metrics");
        (alert(&text, "bad-log-lines")? == 1.0).then_some(text)
    });
    assert_eq!(alert(&text, "unreadable-store-keys"), Some(1.0), "{text}");
}
