//! What the crowd counts, minute by minute from its start: people arrived, new
//! sessions (distinct allow tokens), people admitted, requests, waiting pages,
//! errors, and the controller's writes it watched; then the table and the JSON.
//!
//! A new session is a distinct `(uid, exp)` of an allow token, counted in the minute
//! a response first set it: that is what the room logs as `session=new` and the
//! controller counts (two tabs of one person admitted in the same second hold one
//! token, in different seconds two). A person is admitted in the minute one of
//! their tabs first got the origin's page.

use std::collections::{BTreeMap, HashSet};
use std::fmt::Write as _;

use serde_json::{Value, json};

use crate::token;

/// How one response (or its absence) is counted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// A waiting page (it carries `Refresh`).
    Waiting,
    /// The origin's page: the person is in.
    Admitted,
    /// Anything else (a deny page, the room's 503, an unexpected status): counted
    /// as an error, of this kind.
    Other(String),
    /// No response (connection refused, reset, timed out): an error of this kind.
    Failed(String),
}

/// One minute's counts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Minute {
    /// People whose first tab opened.
    pub arrived: u64,
    /// Distinct allow tokens first seen.
    pub new_sessions: u64,
    /// People first admitted.
    pub admitted: u64,
    /// Requests answered or failed.
    pub requests: u64,
    /// Waiting pages among them.
    pub waiting: u64,
    /// Errors among them (no response, or neither a waiting page nor the origin's).
    pub errors: u64,
    /// Changes of `allow_percentage` seen in the watched config file.
    pub writes: u64,
}

impl Minute {
    fn add(&mut self, other: &Minute) {
        self.arrived += other.arrived;
        self.new_sessions += other.new_sessions;
        self.admitted += other.admitted;
        self.requests += other.requests;
        self.waiting += other.waiting;
        self.errors += other.errors;
        self.writes += other.writes;
    }
}

/// A change of `allow_percentage` in the watched config file.
#[derive(Debug, Clone, PartialEq)]
pub struct Write {
    /// Seconds since the crowd's start when it was seen.
    pub t: f64,
    /// Unix seconds when it was seen.
    pub unix: f64,
    /// The value written (as the file holds it), `None` when the key is absent.
    pub allow_percentage: Option<String>,
}

/// The crowd's counts.
#[derive(Debug, Default)]
pub struct Tally {
    minutes: Vec<Minute>,
    tokens: HashSet<(String, u64)>,
    admitted: HashSet<usize>,
    arrived: HashSet<usize>,
    error_kinds: BTreeMap<String, u64>,
    writes: Vec<Write>,
}

/// The minute (from 0) of `t` seconds since the start.
fn minute_of(t: f64) -> usize {
    (t.max(0.0) / 60.0) as usize
}

impl Tally {
    /// An empty tally.
    pub fn new() -> Tally {
        Tally::default()
    }

    fn minute(&mut self, t: f64) -> &mut Minute {
        let m = minute_of(t);
        if self.minutes.len() <= m {
            self.minutes.resize(m + 1, Minute::default());
        }
        &mut self.minutes[m]
    }

    /// Person `person` opened their first tab at `t`.
    pub fn arrive(&mut self, t: f64, person: usize) {
        if self.arrived.insert(person) {
            self.minute(t).arrived += 1;
        }
    }

    /// A request of `person` ended at `t` with `outcome`; `set_cookies` are the
    /// response's `Set-Cookie` values.
    pub fn response<'a>(
        &mut self,
        t: f64,
        person: usize,
        outcome: &Outcome,
        set_cookies: impl IntoIterator<Item = &'a str>,
    ) {
        for header in set_cookies {
            let session = token::from_set_cookie(header)
                .and_then(token::decode)
                .and_then(|t| t.session());
            if let Some(session) = session
                && self.tokens.insert(session)
            {
                self.minute(t).new_sessions += 1;
            }
        }
        let first_admission = *outcome == Outcome::Admitted && self.admitted.insert(person);
        let minute = self.minute(t);
        minute.requests += 1;
        match outcome {
            Outcome::Waiting => minute.waiting += 1,
            Outcome::Admitted => minute.admitted += u64::from(first_admission),
            Outcome::Other(kind) | Outcome::Failed(kind) => {
                minute.errors += 1;
                *self.error_kinds.entry(kind.clone()).or_default() += 1;
            }
        }
    }

    /// The watched file's `allow_percentage` changed (or was first read) at `t`.
    pub fn write(&mut self, t: f64, unix: f64, allow_percentage: Option<String>) {
        self.minute(t).writes += 1;
        self.writes.push(Write {
            t,
            unix,
            allow_percentage,
        });
    }

    /// The report of a run that lasted `duration` seconds from `start_unix`.
    pub fn report(&self, start_unix: f64, duration: f64) -> Report {
        let count = (duration / 60.0).ceil().max(1.0) as usize;
        let mut minutes = self.minutes.clone();
        minutes.resize(count.max(minutes.len()), Minute::default());
        let mut totals = Minute::default();
        minutes.iter().for_each(|m| totals.add(m));
        let rows = minutes
            .into_iter()
            .enumerate()
            .map(|(i, counts)| {
                let end = (i as f64 + 1.0) * 60.0;
                let seconds = (duration - i as f64 * 60.0).clamp(0.0, 60.0);
                // The value in effect at the minute's end: the last change before it.
                let allow_percentage = self
                    .writes
                    .iter()
                    .rfind(|w| w.t < end)
                    .and_then(|w| w.allow_percentage.clone());
                Row {
                    minute: i + 1,
                    start_unix: start_unix + i as f64 * 60.0,
                    seconds,
                    counts,
                    allow_percentage,
                }
            })
            .collect();
        Report {
            start_unix,
            duration,
            rows,
            totals,
            people_admitted: self.admitted.len() as u64,
            error_kinds: self.error_kinds.clone(),
            writes: self.writes.clone(),
        }
    }
}

/// One minute of the report.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// From 1.
    pub minute: usize,
    /// Unix seconds at its start.
    pub start_unix: f64,
    /// How much of it the run covered (60 but for a last, partial minute).
    pub seconds: f64,
    /// Its counts.
    pub counts: Minute,
    /// `allow_percentage` in the watched file at its end, if watched.
    pub allow_percentage: Option<String>,
}

/// The whole run's counts.
#[derive(Debug, Clone)]
pub struct Report {
    /// Unix seconds at the crowd's start.
    pub start_unix: f64,
    /// Seconds the crowd ran.
    pub duration: f64,
    /// Minute by minute.
    pub rows: Vec<Row>,
    /// The sums.
    pub totals: Minute,
    /// People admitted at least once.
    pub people_admitted: u64,
    /// Errors by kind.
    pub error_kinds: BTreeMap<String, u64>,
    /// The watched writes.
    pub writes: Vec<Write>,
}

impl Report {
    /// The minute table, with the error kinds and the writes under it.
    pub fn table(&self) -> String {
        let watched = !self.writes.is_empty();
        let mut out = String::new();
        let _ = write!(
            out,
            "{:>6}  {:>7}  {:>12}  {:>8}  {:>8}  {:>7}  {:>6}",
            "minute", "arrived", "new sessions", "admitted", "requests", "waiting", "errors"
        );
        if watched {
            let _ = write!(out, "  {:>6}  {:>14}", "writes", "allow % at end");
        }
        out.push('\n');
        let line = |out: &mut String, label: String, m: &Minute, p: Option<&str>| {
            let _ = write!(
                out,
                "{label:>6}  {:>7}  {:>12}  {:>8}  {:>8}  {:>7}  {:>6}",
                m.arrived, m.new_sessions, m.admitted, m.requests, m.waiting, m.errors
            );
            if watched {
                let _ = write!(out, "  {:>6}  {:>14}", m.writes, p.unwrap_or("-"));
            }
            out.push('\n');
        };
        let mut partial = None;
        for row in &self.rows {
            let mut label = row.minute.to_string();
            if row.seconds < 60.0 {
                label.push('*');
                partial = Some(row.seconds);
            }
            line(
                &mut out,
                label,
                &row.counts,
                row.allow_percentage.as_deref(),
            );
        }
        line(&mut out, "total".into(), &self.totals, None);
        if let Some(seconds) = partial {
            let _ = writeln!(out, "* a partial minute ({seconds:.0} s)");
        }
        if !self.error_kinds.is_empty() {
            let kinds: Vec<String> = self
                .error_kinds
                .iter()
                .map(|(k, n)| format!("{k}: {n}"))
                .collect();
            let _ = writeln!(out, "errors by kind: {}", kinds.join(", "));
        }
        out
    }

    /// The watched writes, one a line: seconds since the start, UTC time, value.
    pub fn writes_text(&self) -> String {
        let mut out = String::new();
        for w in &self.writes {
            let _ = writeln!(
                out,
                "{:>8.1} s  {}  allow_percentage={}",
                w.t,
                utc_clock(w.unix),
                w.allow_percentage.as_deref().unwrap_or("(none)")
            );
        }
        out
    }

    /// The report as JSON.
    pub fn json(&self, settings: Value) -> Value {
        let counts = |m: &Minute| {
            json!({
                "arrived": m.arrived,
                "new_sessions": m.new_sessions,
                "admitted": m.admitted,
                "requests": m.requests,
                "waiting": m.waiting,
                "errors": m.errors,
                "writes": m.writes,
            })
        };
        let minutes: Vec<Value> = self
            .rows
            .iter()
            .map(|r| {
                let mut v = counts(&r.counts);
                v["minute"] = json!(r.minute);
                v["start_unix"] = json!(r.start_unix);
                v["seconds"] = json!(r.seconds);
                v["allow_percentage"] = json!(r.allow_percentage);
                v
            })
            .collect();
        let mut totals = counts(&self.totals);
        totals["people_admitted"] = json!(self.people_admitted);
        json!({
            "settings": settings,
            "start_unix": self.start_unix,
            "duration": self.duration,
            "minutes": minutes,
            "totals": totals,
            "error_kinds": self.error_kinds,
            "writes": self.writes.iter().map(|w| json!({
                "t": w.t,
                "unix": w.unix,
                "allow_percentage": w.allow_percentage,
            })).collect::<Vec<Value>>(),
        })
    }
}

/// `HH:MM:SS.s` UTC of Unix seconds.
pub fn utc_clock(unix: f64) -> String {
    let day = unix.rem_euclid(86_400.0);
    let (h, m) = ((day / 3600.0) as u64, ((day % 3600.0) / 60.0) as u64);
    format!("{h:02}:{m:02}:{:04.1}Z", day % 60.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine as _;
    use base64::engine::general_purpose::STANDARD;

    fn set_cookie(fields: &str) -> String {
        format!(
            "waiting_room={}; path=/; max-age=7200; HttpOnly; SameSite=Lax",
            STANDARD.encode(fields)
        )
    }

    fn allow(uid: &str, exp: u64) -> String {
        set_cookie(&format!(
            "dec=allow&exp={exp}&uid={uid}&kid=key1&sig=abc{exp}"
        ))
    }

    #[test]
    fn new_sessions_are_distinct_allow_tokens_in_the_minute_first_seen() {
        let mut tally = Tally::new();
        let a = allow("127.0.1.1", 1000);
        // Three tabs of one person admitted in the same second: one token.
        for _ in 0..3 {
            tally.response(5.0, 0, &Outcome::Admitted, [a.as_str()]);
        }
        // The same person's tab admitted a second later: a second token.
        let a2 = allow("127.0.1.1", 1001);
        tally.response(6.0, 0, &Outcome::Admitted, [a2.as_str()]);
        // The first token seen again in a later minute counts nothing new.
        tally.response(70.0, 0, &Outcome::Admitted, [a.as_str()]);
        // Another person, same exp: another session.
        let b = allow("127.0.1.2", 1000);
        let origin = "demo_origin=1; path=/";
        tally.response(75.0, 1, &Outcome::Admitted, [origin, b.as_str()]);
        // Wait tokens, deletions and foreign cookies are no sessions.
        let wait = set_cookie("dec=wait&exp=1000&uid=127.0.1.3&kid=key1&sig=ff");
        let deleted = "waiting_room=deleted; path=/; expires=Thu, 01 Jan 1970 00:00:00 GMT";
        tally.response(80.0, 2, &Outcome::Waiting, [wait.as_str(), deleted]);

        let report = tally.report(1_700_000_000.0, 120.0);
        let sessions: Vec<u64> = report.rows.iter().map(|r| r.counts.new_sessions).collect();
        assert_eq!(sessions, [2, 1]);
        let admitted: Vec<u64> = report.rows.iter().map(|r| r.counts.admitted).collect();
        assert_eq!(admitted, [1, 1]);
        assert_eq!(report.totals.new_sessions, 3);
        assert_eq!(report.totals.requests, 7);
        assert_eq!(report.totals.waiting, 1);
        assert_eq!(report.people_admitted, 2);
    }

    #[test]
    fn errors_are_counted_by_kind_and_minutes_cover_the_run() {
        let mut tally = Tally::new();
        tally.arrive(0.5, 0);
        tally.arrive(0.7, 0);
        tally.arrive(61.0, 1);
        tally.response(1.0, 0, &Outcome::Failed("connect".into()), []);
        tally.response(2.0, 0, &Outcome::Other("status 503".into()), []);
        tally.response(3.0, 0, &Outcome::Failed("connect".into()), []);
        let report = tally.report(0.0, 150.0);
        assert_eq!(report.rows.len(), 3);
        assert_eq!(report.rows[2].seconds, 30.0);
        assert_eq!(report.rows[0].counts.errors, 3);
        assert_eq!(report.rows[0].counts.arrived, 1);
        assert_eq!(report.rows[1].counts.arrived, 1);
        assert_eq!(report.error_kinds["connect"], 2);
        assert_eq!(report.error_kinds["status 503"], 1);
        let table = report.table();
        assert!(table.contains("3*"), "{table}");
        assert!(table.contains("a partial minute (30 s)"), "{table}");
        assert!(table.contains("connect: 2"), "{table}");
    }

    #[test]
    fn the_percentage_at_each_minutes_end_is_the_last_write_before_it() {
        let mut tally = Tally::new();
        tally.write(0.0, 100.0, Some("1".into()));
        tally.write(30.0, 130.0, Some("2".into()));
        tally.write(59.9, 159.9, Some("1.5".into()));
        tally.write(150.0, 250.0, Some("3".into()));
        let report = tally.report(100.0, 180.0);
        let at_end: Vec<Option<&str>> = report
            .rows
            .iter()
            .map(|r| r.allow_percentage.as_deref())
            .collect();
        assert_eq!(at_end, [Some("1.5"), Some("1.5"), Some("3")]);
        let writes: Vec<u64> = report.rows.iter().map(|r| r.counts.writes).collect();
        assert_eq!(writes, [3, 0, 1]);
        assert!(report.table().contains("allow % at end"));
        assert!(report.writes_text().contains("allow_percentage=1.5"));
        let json = report.json(json!({}));
        assert_eq!(json["minutes"][0]["allow_percentage"], "1.5");
        assert_eq!(json["writes"][3]["t"], 150.0);
    }

    #[test]
    fn the_report_never_shows_a_cookie() {
        let mut tally = Tally::new();
        let a = allow("127.0.1.1", 1000);
        tally.response(1.0, 0, &Outcome::Admitted, [a.as_str()]);
        let report = tally.report(0.0, 60.0);
        let value = token::from_set_cookie(&a).unwrap();
        let text = format!("{}{}", report.table(), report.json(json!({})));
        assert!(!text.contains(value) && !text.contains("abc1000"), "{text}");
    }

    #[test]
    fn utc_clock_reads_the_time_of_day() {
        assert_eq!(utc_clock(1_700_000_000.5), "22:13:20.5Z");
        assert_eq!(utc_clock(86_399.0), "23:59:59.0Z");
    }
}
