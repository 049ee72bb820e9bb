//! What `GET /status.json` and `GET /metrics` show: a copy of the controller's
//! state, taken by the control thread on request, rendered here.

use std::fmt::Write as _;
use std::sync::Arc;

use serde_json::{Value, json};
use waiting_room::control::Snapshot;
use waiting_room::control::fifo::FifoStatus;
use waiting_room::percentage::Percentage;

use crate::ingest::BadCounts;

/// Seconds of per-second counts `status.json` carries.
pub const SERIES_SECONDS: u64 = 600;

/// What does not change while the controller runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Info {
    /// `--target-per-minute`.
    pub target_per_minute: f64,
    /// `--max-active`.
    pub max_active: Option<u64>,
    /// `--min`.
    pub min: Percentage,
    /// `--max`.
    pub max: Percentage,
    /// `--dry-run`.
    pub dry_run: bool,
    /// Where writes go.
    pub sink: String,
}

/// The controller's state at one moment.
#[derive(Debug, Clone)]
pub struct View {
    /// The controller's own snapshot ([`SERIES_SECONDS`] of series).
    pub snapshot: Snapshot,
    /// The bad lines by reason.
    pub bad: BadCounts,
    /// The options.
    pub info: Arc<Info>,
    /// In FIFO mode (`--queueing fifo`), the FIFO rule's own figures.
    pub fifo: Option<FifoStatus>,
}

/// A share to three decimals.
fn rounded(share: f64) -> f64 {
    (share * 1000.0).round() / 1000.0
}

/// `600` rather than `600.0` for a whole number.
fn whole_or_not(n: f64) -> Value {
    if n.fract() == 0.0 && (0.0..9.0e15).contains(&n) {
        json!(n as u64)
    } else {
        json!(n)
    }
}

/// Sums over the last minute of log time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LastMinute {
    /// New sessions.
    pub admissions: u64,
    /// Lottery draws.
    pub draws: u64,
    /// Visitors who started waiting.
    pub arrivals: u64,
}

impl View {
    /// The last 60 seconds of log time, up to the newest record.
    pub fn last_minute(&self) -> LastMinute {
        let series = &self.snapshot.series;
        let from = series.len().saturating_sub(60);
        series[from..]
            .iter()
            .fold(LastMinute::default(), |sum, (_, s)| LastMinute {
                admissions: sum.admissions + s.admissions,
                draws: sum.draws + s.draws,
                arrivals: sum.arrivals + s.arrivals,
            })
    }

    /// The `status.json` document the dashboard reads. `queueing` says the
    /// mode; in FIFO mode `fifo` holds the cutoff written (`cutoff`, Unix ms, and
    /// `cutoff_wanted`), the highest the lines showed in effect
    /// (`cutoff_in_effect`), `rate` (`fifo_rate` written, ms a second, as text)
    /// and `rate_wanted`, the show-up shares (`show_up`, `show_up_stale`), the
    /// propagation delay measured (`propagation_seconds`), the places held beyond
    /// the cutoff in effect (`ahead`) and the lines not written in FIFO mode
    /// (`not_fifo_lines`); `series.cutoff` is the cutoff in effect each second
    /// (Unix ms, or null where no line said).
    pub fn status_json(&self) -> Value {
        let mut status = self.percentage_status_json();
        if let Some(f) = &self.fifo {
            status["queueing"] = json!("fifo");
            status["fifo"] = json!({
                "cutoff": f.cutoff,
                "cutoff_wanted": f.wanted_cutoff,
                "cutoff_in_effect": f.cutoff_in_effect,
                "rate": f.rate.map(|r| r.to_string()),
                "rate_wanted": f.wanted_rate.map(|r| r.to_string()),
                "show_up": rounded(f.show_up),
                "show_up_stale": rounded(f.show_up_stale),
                "propagation_seconds": f.propagation,
                "ahead": f.ahead,
                "not_fifo_lines": f.not_fifo_lines,
            });
            status["series"]["cutoff"] = json!(f.cutoffs);
        }
        status
    }

    fn percentage_status_json(&self) -> Value {
        let s = &self.snapshot;
        let series = &s.series;
        let column = |f: fn(&waiting_room::control::series::Second) -> u64| -> Vec<u64> {
            series.iter().map(|(_, sec)| f(sec)).collect()
        };
        let mut last_active = None;
        let active: Vec<Option<u64>> = series
            .iter()
            .map(|(_, sec)| {
                last_active = sec.active.or(last_active);
                last_active
            })
            .collect();
        let percentage: Vec<Option<f64>> = series
            .iter()
            .map(|(_, sec)| sec.percentage_micros.map(|m| f64::from(m) / 10_000.0))
            .collect();
        let seen = s.now.is_some();
        json!({
            "now": s.now,
            "queueing": "random",
            "target_per_minute": whole_or_not(self.info.target_per_minute),
            "max_active": self.info.max_active,
            "min_percentage": self.info.min.to_string(),
            "max_percentage": self.info.max.to_string(),
            "allow_percentage": s.written.map(|p| p.to_string()),
            "wanted_percentage": s.wanted.map(|p| p.to_string()),
            "last_write": s.last_write,
            "writes_total": s.counters.writes,
            "write_failures_total": s.counters.write_failures,
            "lines_total": s.counters.lines,
            "bad_lines_total": s.counters.bad_lines,
            "dry_run": self.info.dry_run,
            "sink": self.info.sink,
            "waiting_estimate": seen.then_some(s.waiting),
            "active_sessions": seen.then_some(s.active),
            "series": {
                "t": series.iter().map(|(t, _)| *t).collect::<Vec<u64>>(),
                "arrivals": column(|x| x.arrivals),
                "draws": column(|x| x.draws),
                "admissions": column(|x| x.admissions),
                "renewals": column(|x| x.renewals),
                "releases": column(|x| x.releases),
                "active": active,
                "percentage": percentage,
            },
        })
    }

    /// The metrics, in Prometheus text format 0.0.4.
    pub fn metrics(&self) -> String {
        let s = &self.snapshot;
        let c = &s.counters;
        let minute = self.last_minute();
        let mut out = String::with_capacity(4096);
        let mut metric = |name: &str, kind: &str, help: &str, samples: &[(&str, Option<f64>)]| {
            let _ = writeln!(out, "# HELP {name} {help}");
            let _ = writeln!(out, "# TYPE {name} {kind}");
            for (labels, value) in samples {
                if let Some(value) = value {
                    let _ = writeln!(out, "{name}{labels} {value}");
                }
            }
        };
        let n = |v: u64| Some(v as f64);
        let pct = |p: Option<Percentage>| p.map(|p| f64::from(p.micros()) / 10_000.0);
        metric(
            "wrctl_log_lines_total",
            "counter",
            "Room log lines counted by the controller.",
            &[("", n(c.lines))],
        );
        let bad = self.bad.by_reason();
        let bad_samples: Vec<(String, Option<f64>)> = bad
            .iter()
            .map(|(reason, v)| (format!("{{reason=\"{reason}\"}}"), n(*v)))
            .collect();
        let bad_samples: Vec<(&str, Option<f64>)> =
            bad_samples.iter().map(|(l, v)| (l.as_str(), *v)).collect();
        metric(
            "wrctl_bad_log_lines_total",
            "counter",
            "Lines read that were not readable room log lines, by reason.",
            &bad_samples,
        );
        metric(
            "wrctl_late_log_lines_total",
            "counter",
            "Room log lines older than the controller's one-hour window, not counted.",
            &[("", n(c.late_lines))],
        );
        metric(
            "wrctl_future_log_lines_total",
            "counter",
            "Room log lines stamped more than 300 s ahead of the controller's clock, not counted.",
            &[("", n(c.future_lines))],
        );
        metric(
            "wrctl_writes_total",
            "counter",
            "Writes to the config store confirmed (in a dry run: writes that would have been made).",
            &[("", n(c.writes))],
        );
        metric(
            "wrctl_write_failures_total",
            "counter",
            "Writes to the config store that failed.",
            &[("", n(c.write_failures))],
        );
        metric(
            "wrctl_allow_percentage",
            "gauge",
            "allow_percentage last written, in percent.",
            &[("", pct(s.written))],
        );
        metric(
            "wrctl_wanted_allow_percentage",
            "gauge",
            "allow_percentage the controller's last decision asked for, in percent.",
            &[("", pct(s.wanted))],
        );
        metric(
            "wrctl_target_new_sessions_per_minute",
            "gauge",
            "The target of new sessions a minute (--target-per-minute).",
            &[("", Some(self.info.target_per_minute))],
        );
        metric(
            "wrctl_max_active_sessions",
            "gauge",
            "The most live sessions allowed (--max-active); absent when not set.",
            &[("", self.info.max_active.map(|v| v as f64))],
        );
        let seen = s.now.is_some();
        metric(
            "wrctl_waiting_addresses",
            "gauge",
            "Addresses holding a live wait token.",
            &[("", seen.then_some(s.waiting as f64))],
        );
        metric(
            "wrctl_active_sessions",
            "gauge",
            "Addresses holding a live allow token.",
            &[("", seen.then_some(s.active as f64))],
        );
        metric(
            "wrctl_untracked_addresses",
            "gauge",
            "Addresses not tracked because the controller's capacity was reached.",
            &[("", n(s.overflow))],
        );
        metric(
            "wrctl_admissions_last_minute",
            "gauge",
            "New sessions in the last 60 s of log time.",
            &[("", n(minute.admissions))],
        );
        metric(
            "wrctl_draws_last_minute",
            "gauge",
            "Lottery draws in the last 60 s of log time.",
            &[("", n(minute.draws))],
        );
        metric(
            "wrctl_arrivals_last_minute",
            "gauge",
            "Visitors who started waiting in the last 60 s of log time.",
            &[("", n(minute.arrivals))],
        );
        if let Some(f) = &self.fifo {
            let ms = |v: Option<u64>| v.map(|v| v as f64);
            metric(
                "wrctl_fifo_cutoff_milliseconds",
                "gauge",
                "fifo_cutoff last written, Unix milliseconds; absent before the first.",
                &[("", ms(f.cutoff))],
            );
            metric(
                "wrctl_fifo_cutoff_in_effect_milliseconds",
                "gauge",
                "The highest fifo_cutoff the room's lines showed in effect, Unix milliseconds.",
                &[("", ms(f.cutoff_in_effect))],
            );
            metric(
                "wrctl_fifo_rate",
                "gauge",
                "fifo_rate last written: arrival milliseconds the cutoff passes a second.",
                &[("", f.rate.map(|r| r.thousandths() as f64 / 1000.0))],
            );
            metric(
                "wrctl_fifo_show_up_ratio",
                "gauge",
                "Share of places passed by the cutoff whose holder came back and was admitted, \
                 by whether the holder was still polling when passed.",
                &[
                    ("{holder=\"live\"}", Some(rounded(f.show_up))),
                    ("{holder=\"stale\"}", Some(rounded(f.show_up_stale))),
                ],
            );
            metric(
                "wrctl_fifo_places_ahead",
                "gauge",
                "Places held beyond the cutoff in effect.",
                &[("", seen.then_some(f.ahead as f64))],
            );
            metric(
                "wrctl_propagation_delay_seconds",
                "gauge",
                "Seconds from a write to the first log line showing it in effect, as last measured.",
                &[("", f.propagation.map(|p| p as f64))],
            );
            metric(
                "wrctl_not_fifo_log_lines_total",
                "counter",
                "Decided lines without cutoff= (the room is not in FIFO mode).",
                &[("", n(f.not_fifo_lines))],
            );
        }
        metric(
            "wrctl_last_write_timestamp_seconds",
            "gauge",
            "Unix time of the last confirmed write; absent before the first.",
            &[("", s.last_write.map(|t| t as f64))],
        );
        metric(
            "wrctl_newest_log_timestamp_seconds",
            "gauge",
            "Unix time of the newest room log line counted; absent before the first.",
            &[("", s.now.map(|t| t as f64))],
        );
        out
    }
}
