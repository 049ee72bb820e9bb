//! What `GET /status.json` and `GET /metrics` show: a copy of the controller's
//! state, taken by the control thread on request, rendered here.

use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use control::origin_rule::{OriginStatus, State};
use control::record::BadLine;
use control::snapshot::FifoStatus;
use control::snapshot::Snapshot;
use serde_json::{Value, json};
use waiting_room::settings::percentage::Percentage;

use crate::budget;

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

/// Lines that were not readable room lines, by why.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BadCounts {
    /// No `waitingroom` word: another program's line (Viceroy's own output, …).
    pub not_room_line: u64,
    /// A field the controller needs is missing.
    pub missing_field: u64,
    /// A field's value does not parse, or the line is longer than [`MAX_LINE`].
    pub unreadable_field: u64,
}

impl BadCounts {
    /// Counts one bad line.
    pub fn add(&mut self, why: &BadLine) {
        match why {
            BadLine::NotRoomLine => self.not_room_line += 1,
            BadLine::Missing(_) => self.missing_field += 1,
            BadLine::Unreadable(_) => self.unreadable_field += 1,
        }
    }

    /// Adds `other`'s counts.
    pub fn merge(&mut self, other: &BadCounts) {
        self.not_room_line += other.not_room_line;
        self.missing_field += other.missing_field;
        self.unreadable_field += other.unreadable_field;
    }

    /// All bad lines.
    pub fn total(&self) -> u64 {
        self.not_room_line + self.missing_field + self.unreadable_field
    }

    /// The counts with their metric label.
    pub fn by_reason(&self) -> [(&'static str, u64); 3] {
        [
            ("not_room_line", self.not_room_line),
            ("missing_field", self.missing_field),
            ("unreadable_field", self.unreadable_field),
        ]
    }
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
    /// The target held: the origin rule's, when it follows the origin, else
    /// `--target-per-minute` (or the running event's).
    pub fn target_per_minute(&self) -> f64 {
        self.snapshot
            .origin
            .as_ref()
            .map_or(self.info.target_per_minute, |o| o.target)
    }

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
        if let Some(o) = &self.snapshot.origin {
            status["origin"] = origin_json(o);
            let series: Vec<u64> = self.snapshot.series.iter().map(|(t, _)| *t).collect();
            let (p95, errors) = origin_series(o, &series);
            status["series"]["origin_p95_ms"] = json!(p95);
            status["series"]["origin_error_percent"] = json!(errors);
        }
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
            "target_per_minute": whole_or_not(self.target_per_minute()),
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
            "stream_bad_lines_total": self.bad.total(),
            "unreadable_lines_total": s.counters.unreadable_lines,
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
    /// is left out, with its `# HELP` and `# TYPE`. A named room's controller
    /// labels every metric with its room.
    pub fn metrics(&self) -> String {
        let mut m = Metrics::default();
        let labels = self.room_labels();
        self.write_metrics(&mut m, &labels, Some(&labels));
        m.encode()
    }

    /// `room="NAME"` for a named room; none for the service room.
    pub fn room_labels(&self) -> Labels {
        self.info
            .room
            .iter()
            .map(|room| ("room".to_string(), room.clone()))
            .collect()
    }

    /// Adds the room's metrics to `m`, labelled `labels`; with `stream`, the
    /// stream's bad lines too, labelled so.
    fn write_metrics(&self, m: &mut Metrics, labels: &Labels, stream: Option<&Labels>) {
        let s = &self.snapshot;
        let c = &s.counters;
        let minute = self.last_minute();
        m.labels = labels.clone();
        let pct = |p: Option<Percentage>| p.map(|p| f64::from(p.micros()) / 10_000.0);
        m.counter(
            "wrctl_log_lines_total",
            "Room log lines counted by the controller.",
            c.lines,
        );
        if let Some(stream) = stream {
            for (reason, v) in self.bad.by_reason() {
                m.sample(
                    Kind::Counter,
                    "wrctl_bad_log_lines_total",
                    "Lines read that were not readable room log lines, by reason.",
                    with(stream, "reason", reason),
                    Val::U(v),
                );
            }
        }
        m.counter(
            "wrctl_unreadable_log_lines_total",
            "Room log lines of requests whose store reads failed (ALERT=unreadable): each key took its unreadable outcome.",
            c.unreadable_lines,
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
            "The target of new sessions a minute held (--target-per-minute, an event's, or the origin rule's).",
            Some(self.target_per_minute()),
        );
        if let Some(o) = &s.origin {
            write_origin_metrics(m, labels, o);
        }
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
            for (holder, share) in [("live", f.show_up), ("stale", f.show_up_stale)] {
                m.sample(
                    Kind::Float,
                    "wrctl_fifo_show_up_ratio",
                    "Share of places passed by the cutoff whose holder came back and was admitted, \
                     by whether the holder was still polling when passed.",
                    with(labels, "holder", holder),
                    Val::F(rounded(share)),
                );
            }
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
    }
}

/// The origin rule's part of `status.json`: its state, what healthy means, the
/// last reading, the base (the origin's own time), the sessions counted live
/// and their limit.
fn origin_json(o: &OriginStatus) -> Value {
    json!({
        "state": o.state.as_str(),
        "alert": o.state == State::OriginSlow,
        "healthy": o.healthy.to_string(),
        "p95_bound_ms": o.healthy.p95_ms,
        "error_share_bound": o.healthy.error_share,
        "answers": o.reading.answers,
        "answers_per_second": rounded(o.reading.per_second),
        "p95_ms": o.reading.p95_ms,
        "error_share": rounded(o.reading.error_share),
        "base_ms": o.base_ms,
        "aim_ms": o.aim_ms,
        "live_sessions": o.live,
        "live_limit": o.live_limit,
        "target_turns": o.direction_changes,
    })
}

/// The origin's p95 (ms) and error share (percent) for each second of
/// `seconds`: the last reading taken at or before it (`None` before the first).
fn origin_series(o: &OriginStatus, seconds: &[u64]) -> (Vec<Option<u64>>, Vec<Option<f64>>) {
    let mut readings = o.readings.iter().peekable();
    let mut last: Option<&control::origin_rule::Reading> = None;
    seconds
        .iter()
        .map(|&t| {
            while let Some((_, r)) = readings.next_if(|(at, _)| *at <= t) {
                last = Some(r);
            }
            (
                last.and_then(|r| r.p95_ms),
                last.map(|r| (r.error_share * 1000.0).round() / 10.0),
            )
        })
        .unzip()
}

/// The origin rule's metrics.
fn write_origin_metrics(m: &mut Metrics, labels: &Labels, o: &OriginStatus) {
    for state in State::ALL {
        m.sample(
            Kind::Gauge,
            "wrctl_origin_state",
            "What holds the target under --origin-healthy: 1 for the state it is in (origin-slow is an alert).",
            with(labels, "state", state.as_str()),
            Val::U(u64::from(o.state == state)),
        );
    }
    m.gauge(
        "wrctl_origin_p95_milliseconds",
        "The origin's p95 time to the response's headers over the last window; absent before a reading.",
        o.reading.p95_ms,
    );
    m.gauge(
        "wrctl_origin_p95_bound_milliseconds",
        "The p95 bound of --origin-healthy.",
        Some(o.healthy.p95_ms),
    );
    m.ratio(
        "wrctl_origin_error_ratio",
        "Share of the origin's answers over the last window that were errors (5xx, timeouts, failed connections).",
        Some(rounded(o.reading.error_share)),
    );
    m.ratio(
        "wrctl_origin_error_ratio_bound",
        "The error share bound of --origin-healthy.",
        Some(o.healthy.error_share),
    );
    m.ratio(
        "wrctl_origin_answers_per_second",
        "The origin's answers a second over the last window.",
        Some(rounded(o.reading.per_second)),
    );
    m.gauge(
        "wrctl_origin_base_milliseconds",
        "The origin's own time, unloaded, read off the trend of the p95 against the load; absent before a reading.",
        o.base_ms,
    );
    m.gauge(
        "wrctl_origin_aim_milliseconds",
        "The p95 the origin rule aims at: 80 % of the bound, lower by the p95's spread where it is noisy.",
        Some(o.aim_ms),
    );
    m.gauge(
        "wrctl_origin_live_limit",
        "The live sessions (let in over the last --session-length) the origin holds at the aim; absent while rising.",
        o.live_limit,
    );
    m.counter(
        "wrctl_origin_target_turns_total",
        "Times the origin rule's target turned from rising to falling or back.",
        o.direction_changes,
    );
}

/// Every room's state and the writer's, at one moment: what `GET /status.json`
/// and `GET /metrics` show of a controller holding several rooms.
#[derive(Debug, Clone)]
pub struct Views {
    /// Each room's, in the order given on the command line.
    pub rooms: Vec<View>,
    /// The one writer's.
    pub writer: Arc<budget::Status>,
    /// Whether the writer writes through the Fastly API.
    pub api: bool,
    /// Room lines of rooms not held here.
    pub other_room_lines: u64,
    /// Each alert the controller evaluates ([`crate::alerts::ALERTS`]), and
    /// whether it is raised.
    pub alerts: Vec<(&'static str, bool)>,
    /// With `WRCTL_WEBHOOK_URL`: the notifier's counters.
    pub webhook: Option<crate::notify::Counters>,
}

/// Which room `status.json` shows: `?room=NAME`, `?room=` (the service room), or
/// none (the first room).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Which {
    /// The first room held.
    First,
    /// The service room.
    Service,
    /// The named room.
    Named(String),
}

impl Which {
    /// From a request's query string (`room=NAME`; other parameters ignored).
    pub fn from_query(query: Option<&str>) -> Which {
        let room = query.and_then(|q| {
            q.split('&').find_map(|pair| {
                pair.strip_prefix("room=")
                    .or((pair == "room").then_some(""))
            })
        });
        match room {
            None => Which::First,
            Some("") => Which::Service,
            Some(name) => Which::Named(name.to_string()),
        }
    }
}

impl Views {
    /// The room `which` names, if held here.
    pub fn room(&self, which: &Which) -> Option<&View> {
        match which {
            Which::First => self.rooms.first(),
            Which::Service => self.rooms.iter().find(|v| v.info.room.is_none()),
            Which::Named(name) => self
                .rooms
                .iter()
                .find(|v| v.info.room.as_deref() == Some(name.as_str())),
        }
    }

    /// The `status.json` of the room `which` names ([`View::status_json`]),
    /// with the rooms held here (`rooms`: each one's `name`, `null` for the
    /// service room, and the `query` that shows it), the room lines of other
    /// rooms (`other_room_lines_total`) and the writer's state (`writer`, see
    /// [`Views::writer_json`]). `None`: not a room held here.
    pub fn status_json(&self, which: &Which) -> Option<Value> {
        let mut status = self.room(which)?.status_json();
        status["rooms"] = self
            .rooms
            .iter()
            .map(|v| {
                json!({
                    "name": v.info.room,
                    "query": format!("?room={}", v.info.room.as_deref().unwrap_or("")),
                })
            })
            .collect();
        status["other_room_lines_total"] = json!(self.other_room_lines);
        status["writer"] = self.writer_json();
        Some(status)
    }

    /// The writer's state: `rooms` held, `api` (whether it writes through the
    /// Fastly API), `budget_per_hour` (`--api-budget`; `null` without the API),
    /// `fastly_limit_per_hour` (1,000, the API's documented default), the
    /// spacing (`min_interval_seconds`, and `interval_seconds` now), the updates
    /// (`updates_last_hour`, `updates_total`, `held_total` for those the pacer
    /// held back), the answers (`throttled_total` for 429s,
    /// `server_errors_total`, `failures_total` for every failed update), the
    /// API's rate-limit headers last seen (`rate_limit_remaining`,
    /// `rate_limit_reset`), `last_status`, `last_update`, and while the writer
    /// holds its updates `hold_until` and `hold_reason` (`throttled`,
    /// `server-error`, `rate-limit-spent`).
    pub fn writer_json(&self) -> Value {
        let w = &self.writer;
        let c = &w.counters;
        json!({
            "rooms": self.rooms.len(),
            "api": self.api,
            "budget_per_hour": w.budget,
            "fastly_limit_per_hour": self.api.then_some(budget::FASTLY_HOURLY_LIMIT),
            "min_interval_seconds": w.min_interval,
            "interval_seconds": w.interval,
            "updates_last_hour": w.last_hour,
            "updates_total": c.requests,
            "held_total": c.held,
            "throttled_total": c.throttled,
            "server_errors_total": c.server_errors,
            "failures_total": c.throttled + c.server_errors + c.other_failures,
            "rate_limit_remaining": w.remaining,
            "rate_limit_reset": w.reset,
            "last_status": w.last_status,
            "last_update": w.last_sent,
            "hold_until": w.hold.map(|(until, _)| until),
            "hold_reason": w.hold.map(|(_, why)| why.name()),
        })
    }

    /// Every room's metrics (each labelled `room="NAME"`, the service room's
    /// unlabelled), the stream's and the writer's (labelled as the room when
    /// one named room is held, unlabelled otherwise), in the OpenMetrics text
    /// format.
    pub fn metrics(&self) -> String {
        let mut m = Metrics::default();
        let process = match self.rooms.as_slice() {
            [one] => one.room_labels(),
            _ => Labels::new(),
        };
        for (i, view) in self.rooms.iter().enumerate() {
            view.write_metrics(&mut m, &view.room_labels(), (i == 0).then_some(&process));
        }
        m.labels = process;
        m.counter(
            "wrctl_other_room_log_lines_total",
            "Room log lines of rooms this controller does not hold, not counted.",
            self.other_room_lines,
        );
        if self.api {
            self.api_metrics(&mut m);
        }
        if let Some(w) = &self.webhook {
            m.counter(
                "wrctl_webhook_delivered_total",
                "Alert notifications the webhook (WRCTL_WEBHOOK_URL) took with a 2xx.",
                w.delivered,
            );
            m.counter(
                "wrctl_webhook_failed_posts_total",
                "Posts to the webhook that failed (no answer in time, or not 2xx); each is retried with back-off.",
                w.failed_posts,
            );
            m.counter(
                "wrctl_webhook_dropped_total",
                "Alert notifications dropped: the queue was full, or every attempt failed.",
                w.dropped,
            );
            m.gauge(
                "wrctl_webhook_queued",
                "Alert notifications waiting to be posted, the one being posted included.",
                Some(w.queued),
            );
        }
        for (alert, raised) in &self.alerts {
            m.sample(
                Kind::Gauge,
                "wrctl_alert",
                "1 while the controller's condition of the alert holds, else 0 (the alerts: SECURITY.md, Controller alerts).",
                with(&m.labels.clone(), "alert", alert),
                Val::U(u64::from(*raised)),
            );
        }
        m.encode()
    }

    /// The writer's metrics, when it writes through the Fastly API.
    fn api_metrics(&self, m: &mut Metrics) {
        let w = &self.writer;
        let c = &w.counters;
        m.counter(
            "wrctl_api_writes_total",
            "Config-store updates sent to the Fastly API (one PATCH each, every room's items of a tick), whatever the answer.",
            c.requests,
        );
        m.counter(
            "wrctl_api_throttled_total",
            "Updates the Fastly API answered 429 Too Many Requests.",
            c.throttled,
        );
        m.counter(
            "wrctl_api_server_errors_total",
            "Updates the Fastly API answered with a 5xx.",
            c.server_errors,
        );
        m.counter(
            "wrctl_api_held_updates_total",
            "Updates a tick had ready that the writer held back (spacing, a 429's or a 5xx's hold).",
            c.held,
        );
        m.gauge(
            "wrctl_api_writes_last_hour",
            "Updates sent to the Fastly API in the last hour.",
            Some(w.last_hour),
        );
        m.gauge(
            "wrctl_api_budget_writes_per_hour",
            "The writer's budget of Fastly API updates an hour (--api-budget).",
            w.budget,
        );
        m.gauge(
            "wrctl_api_write_interval_seconds",
            "The least seconds between two updates now (the budget's, widened by a low Fastly-RateLimit-Remaining).",
            Some(w.interval),
        );
        m.gauge(
            "wrctl_api_rate_limit_remaining",
            "Fastly-RateLimit-Remaining of the last answer: modifying requests left in the API's window.",
            w.remaining,
        );
        m.gauge(
            "wrctl_api_rate_limit_reset_timestamp_seconds",
            "Fastly-RateLimit-Reset of the last answer: Unix time the API's window resets.",
            w.reset,
        );
        m.gauge(
            "wrctl_api_backoff_until_timestamp_seconds",
            "Unix time before which no update is sent (a 429, a 5xx with Retry-After, a spent window); absent when none.",
            w.hold.map(|(until, _)| until),
        );
    }
}

/// A metric's labels, in order.
pub type Labels = Vec<(String, String)>;

/// `labels` and `key="value"` after them.
fn with(labels: &Labels, key: &str, value: &str) -> Labels {
    let mut all = labels.clone();
    all.push((key.to_string(), value.to_string()));
    all
}

/// A metric family's kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Counter,
    Gauge,
    Float,
}

/// A sample's value.
#[derive(Debug, Clone, Copy)]
enum Val {
    U(u64),
    F(f64),
}

/// One family: name (a counter's with `_total`), help, kind and samples.
#[derive(Debug)]
struct Fam {
    name: &'static str,
    help: &'static str,
    kind: Kind,
    samples: Vec<(Labels, Val)>,
}

/// The metrics of one answer, gathered by family (the rooms' samples of a
/// metric under one `# HELP` and `# TYPE`), then encoded by
/// `prometheus-client`.
#[derive(Debug, Default)]
struct Metrics {
    families: Vec<Fam>,
    /// The labels [`Metrics::counter`], [`Metrics::gauge`] and
    /// [`Metrics::ratio`] give their sample.
    labels: Labels,
}

impl Metrics {
    /// Adds a sample of `name` (`help` without the full stop the encoder adds).
    fn sample(
        &mut self,
        kind: Kind,
        name: &'static str,
        help: &'static str,
        labels: Labels,
        v: Val,
    ) {
        let i = match self.families.iter().position(|f| f.name == name) {
            Some(i) => i,
            None => {
                self.families.push(Fam {
                    name,
                    help,
                    kind,
                    samples: Vec::new(),
                });
                self.families.len() - 1
            }
        };
        self.families[i].samples.push((labels, v));
    }

    /// A counter; `name` ends in `_total`.
    fn counter(&mut self, name: &'static str, help: &'static str, value: u64) {
        let labels = self.labels.clone();
        self.sample(Kind::Counter, name, help, labels, Val::U(value));
    }

    /// A whole-number gauge; left out when `None`.
    fn gauge(&mut self, name: &'static str, help: &'static str, value: Option<u64>) {
        if let Some(value) = value {
            let labels = self.labels.clone();
            self.sample(Kind::Gauge, name, help, labels, Val::U(value));
        }
    }

    /// A gauge with a fraction; left out when `None`.
    fn ratio(&mut self, name: &'static str, help: &'static str, value: Option<f64>) {
        if let Some(value) = value {
            let labels = self.labels.clone();
            self.sample(Kind::Float, name, help, labels, Val::F(value));
        }
    }

    fn encode(&self) -> String {
        let mut registry = Registry::default();
        for f in &self.families {
            let name = f.name.strip_suffix("_total").unwrap_or(f.name);
            let help = f.help.trim_end_matches('.');
            let as_u64 = |v: Val| match v {
                Val::U(n) => n,
                Val::F(x) => x as u64,
            };
            let as_f64 = |v: Val| match v {
                Val::U(n) => n as f64,
                Val::F(x) => x,
            };
            match f.kind {
                Kind::Counter => {
                    let family = Family::<Labels, Counter>::default();
                    for (labels, v) in &f.samples {
                        family.get_or_create(labels).inc_by(as_u64(*v));
                    }
                    registry.register(name, help, family);
                }
                Kind::Gauge => {
                    let family = Family::<Labels, Gauge>::default();
                    for (labels, v) in &f.samples {
                        family
                            .get_or_create(labels)
                            .set(i64::try_from(as_u64(*v)).unwrap_or(i64::MAX));
                    }
                    registry.register(name, help, family);
                }
                Kind::Float => {
                    let family = Family::<Labels, Gauge<f64, AtomicU64>>::default();
                    for (labels, v) in &f.samples {
                        family.get_or_create(labels).set(as_f64(*v));
                    }
                    registry.register(name, help, family);
                }
            }
        }
        let mut out = String::with_capacity(4096);
        // Writing to a String cannot fail.
        let _ = encode(&mut out, &registry);
        out
    }
}
