//! The alerts: one table ([`ALERTS`]), one row an alert, with its name, its
//! severity, the condition the controller evaluates over its own figures
//! ([`Figures`]), the PromQL expression and `for:` a Prometheus rule uses, the
//! response, and the runbook it links to (the incident runbook in SECURITY.md).
//!
//! From the one table come: the `wrctl_alert{alert="NAME"}` gauges of
//! `GET /metrics` (1 while the controller's condition holds, else 0; rows
//! without a condition are Prometheus's alone: what a controller cannot say of
//! itself, that it is down or gone), the Prometheus rules file committed as
//! `deploy/prometheus/wrctl-rules.yml` ([`rules_yaml`]), and the runbook's table in
//! SECURITY.md ([`runbook_markdown`]); `tools/wrctl/tests/alerts.rs` fails when
//! either committed file differs from what the table renders
//! (`WRCTL_WRITE_ALERTS=1` rewrites them).
//!
//! The controller's gauge is its condition now; the rule's `for:` is how long
//! Prometheus waits on its own expression (over the raw metrics, so that it
//! holds even when the controller's own view is wrong) before it fires.

use std::fmt::Write as _;

/// Where every alert's runbook is: the controller's alerts in SECURITY.md's
/// incident runbook.
pub const RUNBOOK: &str = "SECURITY.md#controller-alerts";

/// Where the rules file is committed, from the repository's root.
pub const RULES_PATH: &str = "deploy/prometheus/wrctl-rules.yml";

/// The lines around the runbook's generated table in SECURITY.md.
pub const RUNBOOK_BEGIN: &str = "<!-- BEGIN the alerts generated from wrctl's alert table \
(tools/wrctl/src/alerts.rs); edit the table, not this part -->";
/// See [`RUNBOOK_BEGIN`].
pub const RUNBOOK_END: &str = "<!-- END of the generated alerts -->";

/// The Prometheus job the rules expect the controllers to be scraped under.
pub const JOB: &str = "wrctl";

/// How far back the controller looks for the alerts over counts (writes,
/// failures, bad lines): the rules' `[5m]`.
pub const WINDOW_SECONDS: u64 = 300;

/// A write older than this is stale: the room's default `controller_timeout`,
/// after which the edge falls back.
pub const STALE_SECONDS: u64 = 120;

/// Admissions further from the target than this share of it, with people
/// waiting, are far from it.
pub const OFF_TARGET_SHARE: f64 = 0.5;

/// Bad lines above this share of the room lines.
pub const BAD_LINE_SHARE: f64 = 0.01;

/// How urgent an alert is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Severity {
    /// Someone acts now: the room is not held as it should be.
    Critical,
    /// Someone looks today.
    Warning,
}

impl Severity {
    /// The `severity` label.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Critical => "critical",
            Severity::Warning => "warning",
        }
    }
}

/// One room's figures, as the alerts read them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RoomFigures {
    /// Unix time of the last confirmed write (`None`: none yet).
    pub last_write: Option<u64>,
    /// New sessions in the last minute of log time.
    pub admissions_last_minute: u64,
    /// The target held, new sessions a minute.
    pub target_per_minute: f64,
    /// Addresses holding a live wait token.
    pub waiting: u64,
    /// With `--origin-healthy`: the origin's reading.
    pub origin: Option<OriginFigures>,
}

/// The origin's reading, as the alerts read it.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct OriginFigures {
    /// In the state `origin-slow` (unhealthy at the floor for a session length).
    pub slow: bool,
    /// The p95 over the last window, ms.
    pub p95_ms: Option<u64>,
    /// `--origin-healthy`'s p95 bound, ms.
    pub p95_bound_ms: u64,
    /// The share of errors over the last window.
    pub error_share: f64,
    /// `--origin-healthy`'s bound on it.
    pub error_bound: f64,
}

/// Counts over the last [`WINDOW_SECONDS`] (since the start, before that).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Room log lines counted, every room's.
    pub lines: u64,
    /// Lines that were room lines the controller could not read (a missing
    /// field, a field that does not parse): not other programs' lines.
    pub bad_lines: u64,
    /// Lines of requests whose store reads failed (`ALERT=unreadable:`).
    pub unreadable_lines: u64,
    /// Writes confirmed, every room's.
    pub writes: u64,
    /// Writes failed, every room's.
    pub write_failures: u64,
    /// Updates the Fastly API answered 429.
    pub throttled: u64,
}

impl Counts {
    /// The counts from `earlier` to `self` (counters only grow).
    pub fn since(&self, earlier: &Counts) -> Counts {
        Counts {
            lines: self.lines.saturating_sub(earlier.lines),
            bad_lines: self.bad_lines.saturating_sub(earlier.bad_lines),
            unreadable_lines: self
                .unreadable_lines
                .saturating_sub(earlier.unreadable_lines),
            writes: self.writes.saturating_sub(earlier.writes),
            write_failures: self.write_failures.saturating_sub(earlier.write_failures),
            throttled: self.throttled.saturating_sub(earlier.throttled),
        }
    }
}

/// What the controller knows of itself at one moment: what the conditions read.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Figures {
    /// Clock time, Unix seconds.
    pub now: u64,
    /// Seconds since the controller started.
    pub up_seconds: u64,
    /// Each room's.
    pub rooms: Vec<RoomFigures>,
    /// The counts over the last [`WINDOW_SECONDS`].
    pub recent: Counts,
    /// `Fastly-RateLimit-Remaining` of the API's last answer.
    pub rate_limit_remaining: Option<u64>,
    /// Log POSTs taken without a secret (`--accept-unauthenticated-logs`).
    pub unauthenticated_logs: bool,
}

/// One alert.
#[derive(Debug, Clone, Copy)]
pub struct Alert {
    /// Its name: the `alert` label of `wrctl_alert`, and the rule's `wrctl_alert` label.
    pub name: &'static str,
    /// How urgent.
    pub severity: Severity,
    /// When it is raised, in words (the rule's summary).
    pub summary: &'static str,
    /// What to do (the runbook's row).
    pub response: &'static str,
    /// The controller's condition over its own figures; `None`: Prometheus's
    /// alone (the controller cannot say it of itself).
    pub condition: Option<fn(&Figures) -> bool>,
    /// The PromQL expression of the rule.
    pub expr: &'static str,
    /// The rule's `for:`.
    pub for_: &'static str,
}

impl Alert {
    /// The rule's name: `Wrctl` and the name in camel case.
    pub fn rule_name(&self) -> String {
        let mut out = String::from("Wrctl");
        for word in self.name.split('-') {
            let mut chars = word.chars();
            if let Some(first) = chars.next() {
                out.push(first.to_ascii_uppercase());
                out.push_str(chars.as_str());
            }
        }
        out
    }

    /// Whether the controller raises it now (`false` for Prometheus's alone).
    pub fn raised(&self, figures: &Figures) -> bool {
        self.condition.is_some_and(|c| c(figures))
    }
}

fn stale(f: &Figures) -> bool {
    f.rooms.iter().any(|r| match r.last_write {
        Some(t) => f.now.saturating_sub(t) > STALE_SECONDS,
        None => f.up_seconds > STALE_SECONDS,
    })
}

fn writes_failing(f: &Figures) -> bool {
    f.recent.write_failures > 0 && f.recent.writes == 0
}

fn api_throttled(f: &Figures) -> bool {
    f.recent.throttled > 0 || f.rate_limit_remaining == Some(0)
}

fn origin_unhealthy(f: &Figures) -> bool {
    f.rooms.iter().filter_map(|r| r.origin).any(|o| {
        o.slow || o.p95_ms.is_some_and(|p| p > o.p95_bound_ms) || o.error_share > o.error_bound
    })
}

fn unreadable_store_keys(f: &Figures) -> bool {
    f.recent.unreadable_lines > 0
}

fn admissions_off_target(f: &Figures) -> bool {
    f.rooms.iter().any(|r| {
        r.waiting > 0
            && (r.admissions_last_minute as f64 - r.target_per_minute).abs()
                > OFF_TARGET_SHARE * r.target_per_minute
    })
}

fn bad_log_lines(f: &Figures) -> bool {
    f.recent.bad_lines as f64 > BAD_LINE_SHARE * f.recent.lines as f64
}

fn unauthenticated_logs(f: &Figures) -> bool {
    f.unauthenticated_logs
}

/// Every alert, the controller's first, then Prometheus's alone.
pub const ALERTS: &[Alert] = &[
    Alert {
        name: "controller-stale",
        severity: Severity::Critical,
        summary: "a room's last confirmed write is older than 120 s (the edge's default controller_timeout), or none after 120 s: the edge runs on allow_percentage_fallback",
        response: "The edge logs `ALERT=controller-stale`. Look for the cause in the other alerts (writes failing, throttled, no log lines: the controller writes nothing while deaf) and on the controller's stderr; restart it (it rebuilds from the log stream) or go back to manual tuning ([controller.md](docs/operate/controller.md#back-to-manual-tuning)).",
        condition: Some(stale),
        expr: "time() - wrctl_last_write_timestamp_seconds > 120 or (wrctl_log_lines_total unless on (job, instance, room) wrctl_last_write_timestamp_seconds)",
        for_: "2m",
    },
    Alert {
        name: "writes-failing",
        severity: Severity::Critical,
        summary: "writes to the config store failed over the last 5 minutes and none was confirmed",
        response: "The write's error is on the controller's stderr (`write failed: …`; the token is never printed). Check the API token (`FASTLY_API_TOKEN`, scope `global`), the store ID, the file's permissions for `--config-file`; `status.json`'s `writer.last_status`.",
        condition: Some(writes_failing),
        expr: "increase(wrctl_write_failures_total[5m]) > 0 and increase(wrctl_writes_total[5m]) == 0",
        for_: "1m",
    },
    Alert {
        name: "api-throttled",
        severity: Severity::Warning,
        summary: "the Fastly API answered 429 in the last 5 minutes, or its rate-limit window is spent",
        response: "The writer holds its updates until the window resets ([the API's budget](docs/operate/wrctl.md#the-fastly-apis-budget)); another tool of the same API user is spending it. Lower `--api-budget` or move the other tool to another user; a hold over 120 s lets the heartbeat go stale.",
        condition: Some(api_throttled),
        expr: "increase(wrctl_api_throttled_total[5m]) > 0 or wrctl_api_rate_limit_remaining == 0",
        for_: "0m",
    },
    Alert {
        name: "origin-unhealthy",
        severity: Severity::Critical,
        summary: "with --origin-healthy: the origin is slow at the floor (origin-slow), or its p95 or error share is over its bound",
        response: "The target is cut towards `--origin-floor` ([origin-health.md](docs/operate/origin-health.md)). Look at the origin; if it is down, stop admissions (`allow_percentage = 0` or `queue_all`); if the floor itself is too much, lower it.",
        condition: Some(origin_unhealthy),
        expr: "wrctl_origin_state{state=\"origin-slow\"} == 1 or wrctl_origin_p95_milliseconds > wrctl_origin_p95_bound_milliseconds or wrctl_origin_error_ratio > wrctl_origin_error_ratio_bound",
        for_: "5m",
    },
    Alert {
        name: "unreadable-store-keys",
        severity: Severity::Warning,
        summary: "room lines in the last 5 minutes say a store read failed (ALERT=unreadable:<keys>)",
        response: "The room holds on those keys ([when a read fails](docs/operate/configuration.md#when-a-read-fails)); the log lines name them. `wrctl config check` prints the store's worst-path lookups and values over Fastly's limits.",
        condition: Some(unreadable_store_keys),
        expr: "increase(wrctl_unreadable_log_lines_total[5m]) > 0",
        for_: "5m",
    },
    Alert {
        name: "admissions-off-target",
        severity: Severity::Warning,
        summary: "with people waiting, a room's new sessions in the last minute are more than 50 % away from its target",
        response: "Check that `--wait-period` equals the room's `wait_period_duration` and that every POP's lines reach the controller (its log-line counter); lower `--max` to cap the worst case at once.",
        condition: Some(admissions_off_target),
        expr: "abs(wrctl_admissions_last_minute - wrctl_target_new_sessions_per_minute) > 0.5 * wrctl_target_new_sessions_per_minute and wrctl_waiting_addresses > 0",
        for_: "10m",
    },
    Alert {
        name: "bad-log-lines",
        severity: Severity::Warning,
        summary: "over 1 % of the room lines in the last 5 minutes could not be read (a field missing or unreadable)",
        response: "The edge and the controller disagree on the log line (a release of one without the other?), or the log endpoint mangles lines (its format must be the line alone: `--message-type blank`). `wrctl_bad_log_lines_total{reason}` says which.",
        condition: Some(bad_log_lines),
        expr: "sum by (job, instance) (increase(wrctl_bad_log_lines_total{reason!=\"not_room_line\"}[5m])) > 0.01 * sum by (job, instance) (increase(wrctl_log_lines_total[5m]))",
        for_: "10m",
    },
    Alert {
        name: "unauthenticated-logs",
        severity: Severity::Critical,
        summary: "the controller takes log lines without WRCTL_LOG_SECRET (--accept-unauthenticated-logs): anyone who reaches it can steer it",
        response: "Set `WRCTL_LOG_SECRET` and the log endpoint's `Authorization: Bearer` header ([controller.md](docs/operate/controller.md#wire-it-to-a-real-service)) and restart without the flag; if lines may have been forged, lower `--max` until it runs on the edge's own lines again.",
        condition: Some(unauthenticated_logs),
        expr: "wrctl_alert{alert=\"unauthenticated-logs\"} == 1",
        for_: "0m",
    },
    Alert {
        name: "down",
        severity: Severity::Critical,
        summary: "Prometheus cannot scrape a controller (up == 0)",
        response: "The process is gone or its `--listen` (or `--state-listen`) address unreachable: the heartbeat stops and the edge falls back after `controller_timeout`. Restart it; check the host and the proxy in front.",
        condition: None,
        expr: "up{job=\"wrctl\"} == 0",
        for_: "2m",
    },
    Alert {
        name: "absent",
        severity: Severity::Critical,
        summary: "no controller is scraped at all (job wrctl absent)",
        response: "Prometheus has no target of the job `wrctl`: its scrape configuration lost the controller, or service discovery did. Nothing watches the room's controller until it is back.",
        condition: None,
        expr: "absent(up{job=\"wrctl\"})",
        for_: "10m",
    },
];

/// `text` as a YAML single-quoted scalar.
fn quoted(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

/// The Prometheus rules file: one group, a rule an alert of [`ALERTS`].
pub fn rules_yaml() -> String {
    let mut out = String::from(
        "# Prometheus alerting rules for wrctl control, generated from its alert table\n\
         # (tools/wrctl/src/alerts.rs): do not edit. Regenerate with\n\
         # WRCTL_WRITE_ALERTS=1 cargo test -p wrctl --test wrctl alerts::\n\
         # Scrape every controller's /metrics under the job \"wrctl\".\n\
         groups:\n  - name: wrctl\n    rules:\n",
    );
    for alert in ALERTS {
        let _ = write!(
            out,
            "      - alert: {}\n        expr: {}\n        for: {}\n        labels:\n          \
             severity: {}\n          wrctl_alert: {}\n        annotations:\n          \
             summary: {}\n          runbook_url: {}\n",
            alert.rule_name(),
            quoted(alert.expr),
            alert.for_,
            alert.severity.as_str(),
            alert.name,
            quoted(alert.summary),
            quoted(RUNBOOK),
        );
    }
    out
}

/// The runbook's table of the alerts (SECURITY.md, "Controller alerts").
pub fn runbook_markdown() -> String {
    let mut out =
        String::from("| alert | severity | raised when | response |\n|---|---|---|---|\n");
    for alert in ALERTS {
        let by = if alert.condition.is_some() {
            format!("`wrctl_alert{{alert=\"{}\"}}`", alert.name)
        } else {
            "Prometheus alone".to_string()
        };
        let _ = writeln!(
            out,
            "| `{}` ({by}) | {} | {} (rule: `{}` for {}) | {} |",
            alert.rule_name(),
            alert.severity.as_str(),
            alert.summary,
            alert.expr.replace('|', "\\|"),
            alert.for_,
            alert.response,
        );
    }
    out
}

/// The alerts the controller evaluates, each with whether it is raised now.
pub fn evaluate(figures: &Figures) -> Vec<(&'static str, bool)> {
    ALERTS
        .iter()
        .filter(|a| a.condition.is_some())
        .map(|a| (a.name, a.raised(figures)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An alert's name, and the change to [`calm`]'s figures that raises it alone.
    type Case = (&'static str, fn(&mut Figures));

    fn alert(name: &str) -> &'static Alert {
        ALERTS.iter().find(|a| a.name == name).unwrap()
    }

    /// A controller up 10 minutes, one room written 10 s ago, on target.
    fn calm() -> Figures {
        Figures {
            now: 10_000,
            up_seconds: 600,
            rooms: vec![RoomFigures {
                last_write: Some(9_990),
                admissions_last_minute: 600,
                target_per_minute: 600.0,
                waiting: 5_000,
                origin: Some(OriginFigures {
                    slow: false,
                    p95_ms: Some(300),
                    p95_bound_ms: 800,
                    error_share: 0.001,
                    error_bound: 0.01,
                }),
            }],
            recent: Counts {
                lines: 100_000,
                bad_lines: 10,
                unreadable_lines: 0,
                writes: 30,
                write_failures: 1,
                throttled: 0,
            },
            rate_limit_remaining: Some(400),
            unauthenticated_logs: false,
        }
    }

    #[test]
    fn a_calm_controller_raises_nothing() {
        assert_eq!(
            evaluate(&calm())
                .iter()
                .filter(|(_, on)| *on)
                .collect::<Vec<_>>(),
            Vec::<&(&str, bool)>::new()
        );
    }

    #[test]
    fn each_condition_fires_on_its_figures_and_only_its_alert() {
        let cases: [Case; 12] = [
            ("controller-stale", |f| f.rooms[0].last_write = Some(9_879)),
            ("controller-stale", |f| {
                f.rooms[0].last_write = None;
                f.up_seconds = 121;
            }),
            ("writes-failing", |f| f.recent.writes = 0),
            ("api-throttled", |f| f.recent.throttled = 1),
            ("api-throttled", |f| f.rate_limit_remaining = Some(0)),
            ("origin-unhealthy", |f| {
                f.rooms[0].origin.as_mut().unwrap().slow = true;
            }),
            ("origin-unhealthy", |f| {
                f.rooms[0].origin.as_mut().unwrap().p95_ms = Some(801);
            }),
            ("origin-unhealthy", |f| {
                f.rooms[0].origin.as_mut().unwrap().error_share = 0.02;
            }),
            ("unreadable-store-keys", |f| f.recent.unreadable_lines = 1),
            ("admissions-off-target", |f| {
                f.rooms[0].admissions_last_minute = 299;
            }),
            ("bad-log-lines", |f| f.recent.bad_lines = 1_001),
            ("unauthenticated-logs", |f| f.unauthenticated_logs = true),
        ];
        for (name, change) in cases {
            let mut figures = calm();
            change(&mut figures);
            let raised: Vec<&str> = evaluate(&figures)
                .into_iter()
                .filter(|(_, on)| *on)
                .map(|(n, _)| n)
                .collect();
            assert_eq!(raised, vec![name], "{figures:?}");
        }
    }

    #[test]
    fn conditions_hold_at_their_bounds() {
        let mut f = calm();
        f.rooms[0].last_write = Some(f.now - STALE_SECONDS);
        assert!(
            !alert("controller-stale").raised(&f),
            "120 s old is not stale"
        );
        f.rooms[0].last_write = None;
        f.up_seconds = STALE_SECONDS;
        assert!(!alert("controller-stale").raised(&f));
        let mut f = calm();
        f.rooms[0].admissions_last_minute = 900;
        assert!(!alert("admissions-off-target").raised(&f), "50 % away");
        f.rooms[0].admissions_last_minute = 901;
        assert!(alert("admissions-off-target").raised(&f));
        f.rooms[0].waiting = 0;
        assert!(
            !alert("admissions-off-target").raised(&f),
            "nobody waiting: nothing to admit"
        );
        let mut f = calm();
        f.recent.bad_lines = 1_000;
        assert!(!alert("bad-log-lines").raised(&f), "1 % exactly");
        let mut f = calm();
        f.recent.write_failures = 0;
        f.recent.writes = 0;
        assert!(!alert("writes-failing").raised(&f), "nothing tried");
        let mut f = calm();
        f.rooms[0].origin = None;
        f.rooms[0].last_write = Some(f.now);
        assert!(!alert("origin-unhealthy").raised(&f));
    }

    #[test]
    fn names_are_unique_and_prometheus_alone_rows_have_no_condition() {
        for (i, a) in ALERTS.iter().enumerate() {
            assert!(
                ALERTS[..i].iter().all(|b| b.name != a.name),
                "{} twice",
                a.name
            );
            assert!(
                a.name.bytes().all(|b| b.is_ascii_lowercase() || b == b'-'),
                "{}",
                a.name
            );
        }
        let prometheus_alone: Vec<&str> = ALERTS
            .iter()
            .filter(|a| a.condition.is_none())
            .map(|a| a.name)
            .collect();
        assert_eq!(prometheus_alone, ["down", "absent"]);
        assert_eq!(
            alert("controller-stale").rule_name(),
            "WrctlControllerStale"
        );
    }

    #[test]
    fn yaml_quotes_single_quotes() {
        assert_eq!(quoted("it's"), "'it''s'");
    }
}
