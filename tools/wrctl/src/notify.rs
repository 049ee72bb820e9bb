//! Notifications: `wrctl control` posts a JSON message to the operator's webhook
//! (`WRCTL_WEBHOOK_URL`, from the environment only) on every transition of the
//! alert table ([`crate::alerts::ALERTS`]), as the manual's "Alert notifications"
//! (`docs/operate/wrctl.md`) says. The control thread never waits on the receiver:
//! [`Notifier::notify`] queues without blocking ([`Options`] bounds the queue, the
//! posts a minute, their timeout and retries), and a thread of its own posts in
//! order. The URL is a secret (a Slack webhook's path is its credential): it is
//! never printed, and the errors said on stderr have it replaced by `[webhook]`.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::alerts::{self, Alert, Figures};
use crate::clock::rfc3339;

/// The environment variable holding the webhook's URL (never a flag or a file).
pub const URL_VAR: &str = "WRCTL_WEBHOOK_URL";

/// The default of `--webhook-per-minute`.
pub const DEFAULT_PER_MINUTE: u32 = 20;

/// The default of `--webhook-queue`.
pub const DEFAULT_QUEUE: u32 = 64;

/// How the notifier posts.
#[derive(Debug, Clone)]
pub struct Options {
    /// Messages waiting at most (besides the one being posted).
    pub queue: usize,
    /// Posts in any 60 s at most, retries included.
    pub per_minute: u32,
    /// The wait after a first failed post.
    pub backoff: Duration,
    /// The longest wait between two attempts.
    pub backoff_max: Duration,
    /// Attempts of one message at most, before it is dropped.
    pub attempts: u32,
    /// How long one post may take, connection included.
    pub timeout: Duration,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            queue: DEFAULT_QUEUE as usize,
            per_minute: DEFAULT_PER_MINUTE,
            backoff: Duration::from_secs(1),
            backoff_max: Duration::from_secs(60),
            attempts: 8,
            timeout: Duration::from_secs(10),
        }
    }
}

/// The notifier's counters, as `/metrics` shows them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counters {
    /// Messages delivered (a 2xx answer).
    pub delivered: u64,
    /// Posts that failed (each attempt).
    pub failed_posts: u64,
    /// Messages dropped: the queue full, or every attempt failed.
    pub dropped: u64,
    /// Messages waiting now, the one being posted included.
    pub queued: u64,
}

#[derive(Debug, Default)]
struct Shared {
    delivered: AtomicU64,
    failed_posts: AtomicU64,
    dropped: AtomicU64,
    /// Drops not yet said by a delivered message.
    unreported: AtomicU64,
    queued: AtomicU64,
}

/// One transition of one alert, in one room or for the whole service.
#[derive(Debug, Clone, PartialEq)]
pub struct Transition {
    /// The alert's name (`alert` label).
    pub alert: &'static str,
    /// Raised (`true`) or cleared.
    pub raised: bool,
    /// Where: a room's (`Some(None)`: the service room) or the service's as a
    /// whole (`None`).
    pub room: Option<Option<String>>,
    /// Clock time, Unix seconds.
    pub at: u64,
    /// The figures the condition read, as JSON.
    pub figures: Value,
}

/// The handle the control thread keeps: a bounded queue to the posting thread.
#[derive(Debug, Clone)]
pub struct Notifier {
    tx: SyncSender<Transition>,
    shared: Arc<Shared>,
}

impl Notifier {
    /// Starts the posting thread for `url` with `options`.
    pub fn start(url: String, options: Options) -> std::io::Result<Notifier> {
        let (tx, rx) = sync_channel(options.queue);
        let shared = Arc::new(Shared::default());
        let poster = Poster {
            agent: ureq::Agent::config_builder()
                .timeout_global(Some(options.timeout))
                .http_status_as_error(false)
                .user_agent(concat!("wrctl/", env!("CARGO_PKG_VERSION")))
                .build()
                .into(),
            url,
            options,
            shared: Arc::clone(&shared),
            sent: VecDeque::new(),
        };
        thread::Builder::new()
            .name("webhook".into())
            .spawn(move || poster.run(rx))?;
        Ok(Notifier { tx, shared })
    }

    /// Queues `transition` without waiting; counts it dropped when the queue is full.
    pub fn notify(&self, transition: Transition) {
        self.shared.queued.fetch_add(1, Ordering::SeqCst);
        match self.tx.try_send(transition) {
            Ok(()) => {}
            Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {
                self.shared.queued.fetch_sub(1, Ordering::SeqCst);
                self.shared.dropped.fetch_add(1, Ordering::SeqCst);
                self.shared.unreported.fetch_add(1, Ordering::SeqCst);
            }
        }
    }

    /// The counters now.
    pub fn counters(&self) -> Counters {
        Counters {
            delivered: self.shared.delivered.load(Ordering::SeqCst),
            failed_posts: self.shared.failed_posts.load(Ordering::SeqCst),
            dropped: self.shared.dropped.load(Ordering::SeqCst),
            queued: self.shared.queued.load(Ordering::SeqCst),
        }
    }
}

/// The posting thread's state.
struct Poster {
    agent: ureq::Agent,
    url: String,
    options: Options,
    shared: Arc<Shared>,
    /// When the posts of the last 60 s were made.
    sent: VecDeque<Instant>,
}

impl Poster {
    fn run(mut self, rx: Receiver<Transition>) {
        while let Ok(transition) = rx.recv() {
            self.deliver(&transition);
            self.shared.queued.fetch_sub(1, Ordering::SeqCst);
        }
    }

    /// Waits until a post is within `--webhook-per-minute`.
    fn pace(&mut self) {
        let minute = Duration::from_secs(60);
        loop {
            let now = Instant::now();
            while self.sent.front().is_some_and(|t| now - *t >= minute) {
                self.sent.pop_front();
            }
            if self.sent.len() < self.options.per_minute.max(1) as usize {
                self.sent.push_back(now);
                return;
            }
            let oldest = self.sent[0];
            thread::sleep((oldest + minute).saturating_duration_since(now));
        }
    }

    /// Posts `transition` until it is taken or its attempts are spent.
    fn deliver(&mut self, transition: &Transition) {
        let mut wait = self.options.backoff;
        for attempt in 1..=self.options.attempts.max(1) {
            self.pace();
            let dropped = self.shared.unreported.load(Ordering::SeqCst);
            let body = message(transition, dropped).to_string();
            let result = self
                .agent
                .post(&self.url)
                .header("Content-Type", "application/json")
                .send(body);
            let why = match result {
                Ok(response) if response.status().is_success() => {
                    self.shared.delivered.fetch_add(1, Ordering::SeqCst);
                    self.shared.unreported.fetch_sub(dropped, Ordering::SeqCst);
                    return;
                }
                Ok(response) => format!("the receiver answered {}", response.status()),
                Err(e) => redact(&self.url, &e.to_string()),
            };
            self.shared.failed_posts.fetch_add(1, Ordering::SeqCst);
            let last = attempt == self.options.attempts.max(1);
            eprintln!(
                "{} webhook: {} {} not delivered (attempt {attempt}): {why}{}",
                rfc3339(crate::clock::unix_now()),
                transition.alert,
                if transition.raised {
                    "raised"
                } else {
                    "cleared"
                },
                if last { "; dropped" } else { "" }
            );
            if last {
                break;
            }
            thread::sleep(wait);
            wait = (wait * 2).min(self.options.backoff_max);
        }
        self.shared.dropped.fetch_add(1, Ordering::SeqCst);
        self.shared.unreported.fetch_add(1, Ordering::SeqCst);
    }
}

/// `text` with the webhook's URL, and its path and query, replaced by `[webhook]`.
pub fn redact(url: &str, text: &str) -> String {
    let mut out = text.replace(url, "[webhook]");
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    if let Some(at) = rest.find(['/', '?']) {
        let tail = &rest[at..];
        if tail.len() > 1 {
            out = out.replace(tail, "[webhook]");
        }
    }
    // Credentials before the host (user:password@).
    if let Some((creds, _)) = rest.split_once('@')
        && !creds.contains('/')
    {
        out = out.replace(creds, "[webhook]");
    }
    out
}

/// The JSON message of `transition`, with `dropped` messages dropped before it.
pub fn message(t: &Transition, dropped: u64) -> Value {
    let alert = alerts::ALERTS.iter().find(|a| a.name == t.alert);
    let (rule, severity, summary) = alert.map_or((String::new(), "", ""), |a| {
        (a.rule_name(), a.severity.as_str(), a.summary)
    });
    let state = if t.raised { "raised" } else { "cleared" };
    let place = match &t.room {
        Some(Some(room)) => format!("room {room}"),
        Some(None) => "the service room".to_string(),
        None => "the service".to_string(),
    };
    let figures = match &t.figures {
        Value::Object(map) if !map.is_empty() => map
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(", "),
        _ => "none".to_string(),
    };
    let mut text = format!(
        "{} {rule} ({severity}) {state} for {place}: {summary}. Figures: {figures}. Runbook: {}",
        if t.raised { "[ALERT]" } else { "[CLEARED]" },
        alerts::RUNBOOK,
    );
    if dropped > 0 {
        text.push_str(&format!(
            " ({dropped} earlier notification(s) dropped: see wrctl_alert)"
        ));
    }
    let mut body = json!({
        "text": text,
        "state": state,
        "alert": t.alert,
        "rule": rule,
        "severity": severity,
        "summary": summary,
        "scope": if t.room.is_some() { "room" } else { "service" },
        "figures": t.figures,
        "runbook": alerts::RUNBOOK,
        "at": rfc3339(t.at),
        "dropped_before": dropped,
    });
    if let Some(room) = &t.room {
        body["room"] = room.as_ref().map_or(Value::Null, |r| json!(r));
    }
    body
}

/// Whether `alert`'s condition reads a room's figures (it is raised per room).
pub fn per_room(alert: &Alert) -> bool {
    matches!(
        alert.name,
        "controller-stale" | "origin-unhealthy" | "admissions-off-target"
    )
}

/// The figures `alert` read in `figures` (of one room for a room's alert).
pub fn figures_of(alert: &Alert, f: &Figures) -> Value {
    let r = &f.recent;
    let window = alerts::WINDOW_SECONDS;
    match alert.name {
        "controller-stale" => {
            let room = f.rooms.first();
            let last = room.and_then(|r| r.last_write);
            json!({
                "last_write": last.map(rfc3339),
                "last_write_age_seconds": last.map(|t| f.now.saturating_sub(t)),
                "up_seconds": f.up_seconds,
                "stale_after_seconds": alerts::STALE_SECONDS,
            })
        }
        "writes-failing" => json!({
            "writes": r.writes, "write_failures": r.write_failures, "window_seconds": window,
        }),
        "api-throttled" => json!({
            "throttled": r.throttled,
            "rate_limit_remaining": f.rate_limit_remaining,
            "window_seconds": window,
        }),
        "origin-unhealthy" => match f.rooms.first().and_then(|r| r.origin) {
            Some(o) => json!({
                "origin_slow": o.slow,
                "p95_ms": o.p95_ms,
                "p95_bound_ms": o.p95_bound_ms,
                "error_share": o.error_share,
                "error_bound": o.error_bound,
            }),
            None => json!({}),
        },
        "unreadable-store-keys" => json!({
            "unreadable_lines": r.unreadable_lines, "window_seconds": window,
        }),
        "admissions-off-target" => match f.rooms.first() {
            Some(room) => json!({
                "admissions_last_minute": room.admissions_last_minute,
                "target_per_minute": room.target_per_minute,
                "waiting": room.waiting,
            }),
            None => json!({}),
        },
        "bad-log-lines" => json!({
            "bad_lines": r.bad_lines, "lines": r.lines, "window_seconds": window,
        }),
        _ => json!({}),
    }
}

/// The alerts' state last said, to find the transitions.
#[derive(Debug, Default)]
pub struct Transitions {
    /// Each (alert, where) raised now.
    raised: Vec<(&'static str, Option<Option<String>>)>,
}

impl Transitions {
    /// The transitions since the last call, from `figures` (every room's, in
    /// order) and the rooms' names `rooms` (`None`: the service room).
    pub fn update(&mut self, figures: &Figures, rooms: &[Option<String>]) -> Vec<Transition> {
        let mut now: Vec<(&'static str, Option<Option<String>>, Value)> = Vec::new();
        for alert in alerts::ALERTS.iter().filter(|a| a.condition.is_some()) {
            if per_room(alert) {
                for (room, name) in figures.rooms.iter().zip(rooms) {
                    let one = Figures {
                        rooms: vec![room.clone()],
                        ..figures.clone()
                    };
                    if alert.raised(&one) {
                        now.push((alert.name, Some(name.clone()), figures_of(alert, &one)));
                    }
                }
            } else if alert.raised(figures) {
                now.push((alert.name, None, figures_of(alert, figures)));
            }
        }
        let mut out = Vec::new();
        for (alert, room, values) in &now {
            if !self.raised.iter().any(|(a, r)| a == alert && r == room) {
                out.push(Transition {
                    alert,
                    raised: true,
                    room: room.clone(),
                    at: figures.now,
                    figures: values.clone(),
                });
            }
        }
        for (alert, room) in &self.raised {
            if !now.iter().any(|(a, r, _)| a == alert && r == room) {
                // What the condition reads now that it no longer holds.
                let one = match room {
                    Some(name) => {
                        let i = rooms.iter().position(|r| r == name);
                        Figures {
                            rooms: i
                                .map(|i| vec![figures.rooms[i].clone()])
                                .unwrap_or_default(),
                            ..figures.clone()
                        }
                    }
                    None => figures.clone(),
                };
                let a = alerts::ALERTS.iter().find(|a| a.name == *alert);
                out.push(Transition {
                    alert,
                    raised: false,
                    room: room.clone(),
                    at: figures.now,
                    figures: a.map_or(json!({}), |a| figures_of(a, &one)),
                });
            }
        }
        self.raised = now.into_iter().map(|(a, r, _)| (a, r)).collect();
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::alerts::{Counts, RoomFigures};

    fn figures(failures: u64, writes: u64, last_writes: &[Option<u64>]) -> Figures {
        Figures {
            now: 10_000,
            up_seconds: 600,
            rooms: last_writes
                .iter()
                .map(|w| RoomFigures {
                    last_write: *w,
                    ..RoomFigures::default()
                })
                .collect(),
            recent: Counts {
                writes,
                write_failures: failures,
                ..Counts::default()
            },
            ..Figures::default()
        }
    }

    #[test]
    fn transitions_are_raised_once_and_cleared_once_per_room() {
        let rooms = [None, Some("drops".to_string())];
        let mut t = Transitions::default();
        assert_eq!(
            t.update(&figures(0, 3, &[Some(9_990), Some(9_990)]), &rooms),
            vec![]
        );
        let raised = t.update(&figures(2, 0, &[Some(9_990), Some(9_000)]), &rooms);
        let said: Vec<_> = raised
            .iter()
            .map(|t| (t.alert, t.raised, t.room.clone()))
            .collect();
        assert_eq!(
            said,
            [
                ("controller-stale", true, Some(Some("drops".to_string()))),
                ("writes-failing", true, None),
            ]
        );
        assert_eq!(raised[0].figures["last_write_age_seconds"], 1_000);
        assert_eq!(raised[1].figures["write_failures"], 2);
        // Still raised: nothing new.
        assert_eq!(
            t.update(&figures(3, 0, &[Some(9_990), Some(9_000)]), &rooms),
            vec![]
        );
        let cleared = t.update(&figures(3, 1, &[Some(9_990), Some(9_995)]), &rooms);
        let said: Vec<_> = cleared.iter().map(|t| (t.alert, t.raised)).collect();
        assert_eq!(
            said,
            [("controller-stale", false), ("writes-failing", false)]
        );
        assert_eq!(cleared[0].figures["last_write_age_seconds"], 5);
    }

    #[test]
    fn the_message_has_the_text_the_place_the_figures_and_the_drops() {
        let t = Transition {
            alert: "controller-stale",
            raised: true,
            room: Some(Some("drops".into())),
            at: 1_700_000_000,
            figures: json!({"last_write_age_seconds": 130}),
        };
        let m = message(&t, 3);
        assert_eq!(m["room"], "drops");
        assert_eq!(m["state"], "raised");
        assert_eq!(m["dropped_before"], 3);
        assert_eq!(m["runbook"], alerts::RUNBOOK);
        let text = m["text"].as_str().unwrap();
        for part in [
            "WrctlControllerStale",
            "room drops",
            "last_write_age_seconds=130",
            "3 earlier notification(s) dropped",
            alerts::RUNBOOK,
        ] {
            assert!(text.contains(part), "{part} not in {text}");
        }
        let service = message(
            &Transition {
                room: None,
                raised: false,
                ..t
            },
            0,
        );
        assert!(service.get("room").is_none());
        assert_eq!(service["scope"], "service");
        assert!(!service["text"].as_str().unwrap().contains("dropped"));
    }

    #[test]
    fn the_url_its_path_and_credentials_are_redacted() {
        let url = "https://user:pw@hooks.example/services/T0/B1/s3cret?k=v";
        let said = redact(
            url,
            &format!("failed {url}; path /services/T0/B1/s3cret?k=v; user:pw"),
        );
        assert!(!said.contains("s3cret") && !said.contains("pw"), "{said}");
    }
}
