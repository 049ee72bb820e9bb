//! What `GET /status.json` and `GET /metrics` show: a copy of the controller's
//! state, taken by the control thread on request, rendered here.

use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::{Metric, Registry};

use control::Snapshot;
use control::fifo::FifoStatus;
use serde_json::{Value, json};
use waiting_room::settings::percentage::Percentage;

use crate::ingest::BadCounts;

/// The `Content-Type` of `GET /metrics`.
pub const METRICS_CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

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
    /// `--room`: the named room held; `None`: the service room.
    pub room: Option<String>,
    /// `--room-dashboard`: the other rooms' controllers' dashboards (name, URL).
    pub room_dashboards: Vec<(String, String)>,
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
    /// New sessions the POP's ceiling held.
    pub held_wins: u64,
    /// Draws and admissions held for an unpaid bot toll.
    pub toll_held: u64,
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
                held_wins: sum.held_wins + s.held_wins,
                toll_held: sum.toll_held + s.toll_held,
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
        let column = |f: fn(&control::series::Second) -> u64| -> Vec<u64> {
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
            "room": self.info.room,
            "room_dashboards": self
                .info
                .room_dashboards
                .iter()
                .map(|(name, url)| json!({"name": name, "url": url}))
                .collect::<Vec<_>>(),
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
                "toll_held": column(|x| x.toll_held),
                "admissions": column(|x| x.admissions),
                "renewals": column(|x| x.renewals),
                "releases": column(|x| x.releases),
                "active": active,
                "percentage": percentage,
            },
        })
    }

    /// The metrics, in the OpenMetrics text format ([`METRICS_CONTENT_TYPE`]),
    /// by `prometheus-client`'s encoder. A value not known yet (no write, no line)
    /// is left out, with its `# HELP` and `# TYPE`.
    pub fn metrics(&self) -> String {
        let s = &self.snapshot;
        let c = &s.counters;
        let minute = self.last_minute();
        // A named room's controller labels every metric with its room.
        let mut m = Metrics(Registry::with_labels(
            self.info
                .room
                .iter()
                .map(|room| ("room".into(), room.clone().into())),
        ));
        let pct = |p: Option<Percentage>| p.map(|p| f64::from(p.micros()) / 10_000.0);
        m.counter(
            "wrctl_log_lines_total",
            "Room log lines counted by the controller.",
            c.lines,
        );
        let bad = Family::<[(&'static str, &'static str); 1], Counter>::default();
        for (reason, v) in self.bad.by_reason() {
            bad.get_or_create(&[("reason", reason)]).inc_by(v);
        }
        m.register(
            "wrctl_bad_log_lines_total",
            "Lines read that were not readable room log lines, by reason.",
            bad,
        );
        m.counter(
            "wrctl_late_log_lines_total",
            "Room log lines older than the controller's one-hour window, not counted.",
            c.late_lines,
        );
        m.counter(
            "wrctl_future_log_lines_total",
            "Room log lines stamped more than 300 s ahead of the controller's clock, not counted.",
            c.future_lines,
        );
        m.counter(
            "wrctl_writes_total",
            "Writes to the config store confirmed (in a dry run: writes that would have been made).",
            c.writes,
        );
        m.counter(
            "wrctl_write_failures_total",
            "Writes to the config store that failed.",
            c.write_failures,
        );
        m.ratio(
            "wrctl_allow_percentage",
            "allow_percentage last written, in percent.",
            pct(s.written),
        );
        m.ratio(
            "wrctl_wanted_allow_percentage",
            "allow_percentage the controller's last decision asked for, in percent.",
            pct(s.wanted),
        );
        m.ratio(
            "wrctl_target_new_sessions_per_minute",
            "The target of new sessions a minute (--target-per-minute).",
            Some(self.info.target_per_minute),
        );
        m.gauge(
            "wrctl_max_active_sessions",
            "The most live sessions allowed (--max-active); absent when not set.",
            self.info.max_active,
        );
        let seen = s.now.is_some();
        m.gauge(
            "wrctl_waiting_addresses",
            "Addresses holding a live wait token.",
            seen.then_some(s.waiting),
        );
        m.gauge(
            "wrctl_active_sessions",
            "Addresses holding a live allow token.",
            seen.then_some(s.active),
        );
        m.gauge(
            "wrctl_untracked_addresses",
            "Addresses not tracked because the controller's capacity was reached.",
            Some(s.overflow),
        );
        m.gauge(
            "wrctl_admissions_last_minute",
            "New sessions in the last 60 s of log time.",
            Some(minute.admissions),
        );
        m.gauge(
            "wrctl_held_wins_last_minute",
            "New sessions the POP's ceiling held (transition=ceiling-reached) in the last 60 s of log time.",
            Some(minute.held_wins),
        );
        m.gauge(
            "wrctl_toll_held_last_minute",
            "Draws and admissions held for an unpaid bot toll (transition=toll-unpaid lines) in the last 60 s of log time.",
            Some(minute.toll_held),
        );
        m.gauge(
            "wrctl_draws_last_minute",
            "Lottery draws in the last 60 s of log time.",
            Some(minute.draws),
        );
        m.gauge(
            "wrctl_arrivals_last_minute",
            "Visitors who started waiting in the last 60 s of log time.",
            Some(minute.arrivals),
        );
        if let Some(f) = &self.fifo {
            m.gauge(
                "wrctl_fifo_cutoff_milliseconds",
                "fifo_cutoff last written, Unix milliseconds; absent before the first.",
                f.cutoff,
            );
            m.gauge(
                "wrctl_fifo_cutoff_in_effect_milliseconds",
                "The highest fifo_cutoff the room's lines showed in effect, Unix milliseconds.",
                f.cutoff_in_effect,
            );
            m.ratio(
                "wrctl_fifo_rate",
                "fifo_rate last written: arrival milliseconds the cutoff passes a second.",
                f.rate.map(|r| r.thousandths() as f64 / 1000.0),
            );
            let show_up =
                Family::<[(&'static str, &'static str); 1], Gauge<f64, AtomicU64>>::default();
            show_up
                .get_or_create(&[("holder", "live")])
                .set(rounded(f.show_up));
            show_up
                .get_or_create(&[("holder", "stale")])
                .set(rounded(f.show_up_stale));
            m.register(
                "wrctl_fifo_show_up_ratio",
                "Share of places passed by the cutoff whose holder came back and was admitted, \
                 by whether the holder was still polling when passed.",
                show_up,
            );
            m.gauge(
                "wrctl_fifo_places_ahead",
                "Places held beyond the cutoff in effect.",
                seen.then_some(f.ahead),
            );
            m.gauge(
                "wrctl_propagation_delay_seconds",
                "Seconds from a write to the first log line showing it in effect, as last measured.",
                f.propagation,
            );
            m.counter(
                "wrctl_not_fifo_log_lines_total",
                "Decided lines without cutoff= (the room is not in FIFO mode).",
                f.not_fifo_lines,
            );
        }
        m.gauge(
            "wrctl_last_write_timestamp_seconds",
            "Unix time of the last confirmed write; absent before the first.",
            s.last_write,
        );
        m.gauge(
            "wrctl_newest_log_timestamp_seconds",
            "Unix time of the newest room log line counted; absent before the first.",
            s.now,
        );
        m.encode()
    }
}

/// A registry of metrics for one answer, named as they are exposed.
struct Metrics(Registry);

impl Metrics {
    /// Registers `metric` as `name` (a counter's without the `_total` the encoder
    /// adds) with `help` (without the full stop the encoder adds).
    fn register(&mut self, name: &str, help: &str, metric: impl Metric) {
        let name = name.strip_suffix("_total").unwrap_or(name);
        self.0.register(name, help.trim_end_matches('.'), metric);
    }

    /// A counter; `name` ends in `_total`.
    fn counter(&mut self, name: &str, help: &str, value: u64) {
        let counter = Counter::<u64>::default();
        counter.inc_by(value);
        self.register(name, help, counter);
    }

    /// A whole-number gauge; left out when `None`.
    fn gauge(&mut self, name: &str, help: &str, value: Option<u64>) {
        if let Some(value) = value {
            let gauge = Gauge::<i64>::default();
            gauge.set(i64::try_from(value).unwrap_or(i64::MAX));
            self.register(name, help, gauge);
        }
    }

    /// A gauge with a fraction; left out when `None`.
    fn ratio(&mut self, name: &str, help: &str, value: Option<f64>) {
        if let Some(value) = value {
            let gauge = Gauge::<f64, AtomicU64>::default();
            gauge.set(value);
            self.register(name, help, gauge);
        }
    }

    fn encode(&self) -> String {
        let mut out = String::with_capacity(4096);
        // Writing to a String cannot fail.
        let _ = encode(&mut out, &self.0);
        out
    }
}
