//! An origin behind the room: every request the room lets through (an `allow`
//! line: the session's first request and the ones it makes after, as the
//! scenario's `--session` states them) is answered by it, slower as it
//! saturates (one server's queueing delay, or with a pool Sakasegawa's M/M/c
//! approximation), with errors past its queue; its capacity may change and warm
//! up over the run. The model and its steady-state figures
//! ([`OriginSpec::load_at_bound`]): `docs/research/simulated-origin.md`.

use std::collections::{HashMap, VecDeque};

use control::origin_rule::OriginAnswer;
use control::record::Record;
use serde::Serialize;
use waiting_room::admission::decision::{Decision, Session};

use crate::rng::Rng;

/// σ of the log-normal jitter of a request's time around the base.
const JITTER_SIGMA: f64 = 0.4;
/// The jitter's 95th percentile: `exp(1.645 σ)`.
pub const JITTER_P95: f64 = 1.930_7;
/// Highest utilisation the queueing delay is computed at.
const MAX_UTILISATION: f64 = 0.99;
/// Weight of one second's utilisation in the average the delay is computed
/// from: about ten seconds, so that a second's burst waits in the backlog, not
/// at a hundred times the base.
const UTILISATION_WEIGHT: f64 = 0.1;

/// From minute `from` until minute `until` (`None`: to the end), the origin's
/// capacity is its nominal times `factor`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Change {
    /// First minute of the change.
    pub from: u64,
    /// Capacity as a share of the nominal.
    pub factor: f64,
    /// First minute back at the nominal.
    pub until: Option<u64>,
}

/// The origin and the sessions it serves, as the scenario states them.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct OriginSpec {
    /// Requests a second served at the base time.
    pub capacity: f64,
    /// The base time of a request, milliseconds (its median; the jitter spreads it).
    pub base_ms: f64,
    /// Seconds of backlog past which requests are refused.
    pub queue: f64,
    /// Milliseconds past which a request fails.
    pub timeout_ms: f64,
    /// A change of its capacity over the run.
    pub change: Option<Change>,
    /// Seconds over which a cold origin warms up (0: warm from the start).
    pub warmup: u64,
    /// Requests it serves at once: the shape of its delay as it saturates.
    pub servers: u32,
}

impl Default for OriginSpec {
    fn default() -> OriginSpec {
        OriginSpec {
            capacity: 100.0,
            base_ms: 100.0,
            queue: 5.0,
            timeout_ms: 10_000.0,
            change: None,
            warmup: 0,
            servers: 1,
        }
    }
}

impl OriginSpec {
    /// Capacity (requests a second at the base time) and base time at second `t`.
    pub fn at(&self, t: u64) -> (f64, f64) {
        let factor = self
            .change
            .filter(|c| c.from * 60 <= t && c.until.is_none_or(|until| t < until * 60))
            .map_or(1.0, |c| c.factor);
        let warm = if self.warmup == 0 {
            1.0
        } else {
            (t as f64 / self.warmup as f64).min(1.0)
        };
        // Cold: a third of the capacity, three times the base.
        let cold = 1.0 / 3.0 + warm * (2.0 / 3.0);
        (self.capacity * factor * cold, self.base_ms / cold)
    }

    /// Requests a second that hold the p95 at `bound_ms` in steady state at
    /// second `t` (0 when not even an idle origin is that fast).
    pub fn load_at_bound(&self, t: u64, bound_ms: f64) -> f64 {
        let (capacity, base) = self.at(t);
        let slowing = bound_ms / (JITTER_P95 * base);
        if slowing <= 1.0 {
            return 0.0;
        }
        if self.servers == 1 {
            return capacity * (1.0 - 1.0 / slowing);
        }
        // The delay rises with the load: halve the interval of loads it is in.
        let (mut low, mut high) = (0.0, MAX_UTILISATION);
        for _ in 0..50 {
            let mid = (low + high) / 2.0;
            if 1.0 / self.speed(mid) < slowing {
                low = mid;
            } else {
                high = mid;
            }
        }
        capacity * low
    }

    /// A request's unqueued time over its time at utilisation `u` (below 1).
    fn speed(&self, u: f64) -> f64 {
        if self.servers == 1 {
            return 1.0 - u;
        }
        let c = f64::from(self.servers);
        1.0 / (1.0 + u.powf((2.0 * (c + 1.0)).sqrt() - 1.0) / (c * (1.0 - u)))
    }
}

/// One minute of the origin, as the report shows it.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct OriginMinute {
    /// Minute from the start, from 1.
    pub minute: u64,
    /// New sessions (allow tokens) let in.
    pub new_sessions: u64,
    /// New sessions of the last session length, at the minute's end.
    pub live_sessions: u64,
    /// Requests the origin was asked.
    pub requests: u64,
    /// 95th percentile of the answers' times, milliseconds.
    pub p95_ms: u64,
    /// Share of the requests that failed or were refused.
    pub error_share: f64,
    /// The origin's capacity at the minute's end, requests a second.
    pub capacity: f64,
    /// Requests a second that would hold p95 at the bound in steady state.
    pub load_at_bound: f64,
    /// New sessions a minute that would: the load over the requests a session
    /// made in the run (filled in by the report).
    pub at_bound: f64,
    /// The controller's target at the minute's end.
    pub target: f64,
    /// The origin rule's state at the minute's end.
    pub state: String,
    /// The origin rule's live-session limit at the minute's end, when it has one.
    pub live_limit: Option<u64>,
}

/// The origin, answering the requests of one run.
#[derive(Debug)]
pub struct Origin {
    spec: OriginSpec,
    bound_ms: f64,
    /// Seconds a session lasts: the new sessions of the last this many count as live.
    session: u64,
    rng: Rng,
    /// The second being answered, from the start.
    second: u64,
    /// Requests answered in it so far.
    load: f64,
    /// Share of the capacity asked for, averaged over the last seconds (above 1
    /// while overloaded).
    utilisation: f64,
    /// Requests beyond capacity carried over.
    backlog: f64,
    /// Each new session's token (address, expiry): when it started, and the
    /// requests made with it.
    tokens: HashMap<(String, u64), (u64, u32)>,
    /// Seconds the new sessions started, oldest first.
    starts: VecDeque<u64>,
    minute: OriginMinute,
    times: Vec<u32>,
    errors: u64,
    minutes: Vec<OriginMinute>,
}

impl Origin {
    /// The origin of `spec`, serving sessions of `session` seconds, judged
    /// against a p95 bound of `bound_ms` in its report.
    pub fn new(spec: OriginSpec, session: u64, bound_ms: f64, seed: u64) -> Origin {
        Origin {
            spec,
            bound_ms,
            session,
            rng: Rng::new(seed ^ 0x6f72_6967_696e),
            second: 0,
            load: 0.0,
            utilisation: 0.0,
            backlog: 0.0,
            tokens: HashMap::new(),
            starts: VecDeque::new(),
            minute: OriginMinute::default(),
            times: Vec::new(),
            errors: 0,
            minutes: Vec::new(),
        }
    }

    /// The request of `record`, logged at second `t` from the start: when the
    /// room let it through, the origin's answer (a new session's token counted
    /// once).
    pub fn answer(&mut self, t: u64, record: &Record) -> Option<OriginAnswer> {
        if record.decision != Some(Decision::Allow) {
            return None;
        }
        self.advance(t);
        if let Some(exp) = record.exp {
            let key = (record.uid.clone(), exp);
            match self.tokens.get_mut(&key) {
                Some((_, requests)) => *requests += 1,
                None if record.session == Some(Session::New) => {
                    self.tokens.insert(key, (t, 1));
                    self.starts.push_back(t);
                    self.minute.new_sessions += 1;
                }
                None => {}
            }
        }
        let (capacity, base) = self.spec.at(t);
        self.load += 1.0;
        self.minute.requests += 1;
        let full = capacity * self.spec.queue;
        let answer = if self.backlog >= full {
            OriginAnswer::Answered { ms: 1, status: 503 }
        } else {
            let jitter = (JITTER_SIGMA * self.rng.normal()).exp();
            let waited = self.backlog / capacity * 1000.0;
            let speed = self.spec.speed(self.utilisation.min(MAX_UTILISATION));
            let ms = base * jitter / speed + waited;
            if ms > self.spec.timeout_ms {
                OriginAnswer::Failed
            } else {
                OriginAnswer::Answered {
                    ms: ms.round() as u64,
                    status: 200,
                }
            }
        };
        if let OriginAnswer::Answered { ms, .. } = answer {
            self.times.push(u32::try_from(ms).unwrap_or(u32::MAX));
        }
        self.errors += u64::from(answer.is_error());
        Some(answer)
    }

    /// Closes every second before `t`: the backlog and the utilisation the next
    /// second's requests see.
    fn advance(&mut self, t: u64) {
        while self.second < t {
            let (capacity, _) = self.spec.at(self.second);
            // The average load decides both the queueing delay and the backlog:
            // a second's burst is the delay's business, a lasting excess the
            // backlog's.
            self.utilisation += UTILISATION_WEIGHT * (self.load / capacity - self.utilisation);
            self.backlog = (self.backlog + (self.utilisation - 1.0) * capacity)
                .clamp(0.0, capacity * self.spec.queue);
            self.load = 0.0;
            self.second += 1;
        }
    }

    /// Closes minute `minute` (from 1) at second `t`, with the controller's
    /// `target`, origin `state` and live-session limit.
    pub fn close_minute(
        &mut self,
        minute: u64,
        t: u64,
        target: f64,
        state: &str,
        live_limit: Option<u64>,
    ) {
        self.advance(t);
        while self.starts.front().is_some_and(|s| s + self.session <= t) {
            self.starts.pop_front();
        }
        let mut done = std::mem::take(&mut self.minute);
        done.minute = minute;
        done.live_sessions = self.starts.len() as u64;
        done.p95_ms = control::origin_rule::p95(&mut self.times).unwrap_or(0);
        done.error_share = if done.requests == 0 {
            0.0
        } else {
            self.errors as f64 / done.requests as f64
        };
        done.capacity = self.spec.at(t).0;
        done.load_at_bound = self.spec.load_at_bound(t, self.bound_ms);
        done.target = target;
        done.state = state.to_string();
        done.live_limit = live_limit;
        self.times.clear();
        self.errors = 0;
        self.minutes.push(done);
    }

    /// The minutes closed so far, each with the new sessions a minute that hold
    /// the bound, from the requests a session made: the mean over the sessions
    /// that had their whole length before second `end`.
    pub fn minutes(&self, end: u64) -> Vec<OriginMinute> {
        let whole: Vec<u32> = self
            .tokens
            .values()
            .filter(|(start, _)| start + self.session < end)
            .map(|&(_, requests)| requests)
            .collect();
        let per_session = if whole.is_empty() {
            f64::NAN
        } else {
            f64::from(whole.iter().sum::<u32>()) / whole.len() as f64
        };
        self.minutes
            .iter()
            .map(|m| OriginMinute {
                at_bound: m.load_at_bound * 60.0 / per_session,
                ..m.clone()
            })
            .collect()
    }
}

/// The origin's minutes, judged as the origin rule's checks read them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OriginReport {
    /// The p95 bound, milliseconds.
    pub bound_ms: f64,
    /// First minute judged (from 1).
    pub from_minute: u64,
    /// Minutes judged: from `from_minute` while people waited all minute.
    pub minutes_judged: u64,
    /// Of those, minutes whose p95 was over the bound.
    pub minutes_over_bound: u64,
    /// New sessions over the admissions that hold p95 at the bound, mean of
    /// the minutes judged.
    pub mean_share_of_bound_admissions: Option<f64>,
    /// The lowest of those shares.
    pub lowest_share_of_bound_admissions: Option<f64>,
    /// Times the target turned from rising to falling or back.
    pub direction_changes: u64,
    /// Every minute.
    pub minutes: Vec<OriginMinute>,
}

impl OriginReport {
    /// Judges `minutes` against `bound_ms` from minute `from_minute`, counting
    /// a minute only while people waited (`waiting`: at each minute's end).
    pub fn judge(
        minutes: &[OriginMinute],
        bound_ms: f64,
        from_minute: u64,
        waiting: &[u64],
        direction_changes: u64,
    ) -> OriginReport {
        let judged: Vec<&OriginMinute> = minutes
            .iter()
            .filter(|m| m.minute >= from_minute)
            .filter(|m| {
                let i = m.minute as usize;
                i >= 2
                    && waiting.get(i - 2).is_some_and(|&w| w > 0)
                    && waiting.get(i - 1).is_some_and(|&w| w > 0)
            })
            .collect();
        let shares: Vec<f64> = judged
            .iter()
            .filter(|m| m.at_bound > 0.0)
            .map(|m| m.new_sessions as f64 / m.at_bound)
            .collect();
        OriginReport {
            bound_ms,
            from_minute,
            minutes_judged: judged.len() as u64,
            minutes_over_bound: judged.iter().filter(|m| m.p95_ms as f64 > bound_ms).count() as u64,
            mean_share_of_bound_admissions: (!shares.is_empty())
                .then(|| shares.iter().sum::<f64>() / shares.len() as f64),
            lowest_share_of_bound_admissions: shares.iter().copied().reduce(f64::min),
            direction_changes,
            minutes: minutes.to_vec(),
        }
    }

    /// The minutes as a table, one line each.
    pub fn table(&self) -> String {
        let mut out = String::from(
            "minute  new  live  limit   p95ms  errors  capacity/s  at-bound/min  share  target  state\n",
        );
        for m in &self.minutes {
            let share = if m.at_bound > 0.0 {
                format!("{:.2}", m.new_sessions as f64 / m.at_bound)
            } else {
                "-".into()
            };
            out.push_str(&format!(
                "{:6} {:4} {:5} {:>6} {:7} {:6.2}% {:11.0} {:13.0} {:>6} {:7.0}  {}{}\n",
                m.minute,
                m.new_sessions,
                m.live_sessions,
                m.live_limit.map_or("-".into(), |n| n.to_string()),
                m.p95_ms,
                m.error_share * 100.0,
                m.capacity,
                m.at_bound,
                share,
                m.target,
                m.state,
                if m.p95_ms as f64 > self.bound_ms {
                    "  over"
                } else {
                    ""
                },
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn origin(servers: u32) -> OriginSpec {
        OriginSpec {
            servers,
            ..OriginSpec::default()
        }
    }

    #[test]
    fn the_load_at_the_bound_holds_the_p95_there() {
        for servers in [1, 6, 20] {
            let spec = origin(servers);
            let load = spec.load_at_bound(0, 800.0);
            let p95 = JITTER_P95 * spec.base_ms / spec.speed(load / spec.capacity);
            assert!((p95 - 800.0).abs() < 0.01, "{servers} servers: {p95}");
        }
        // Not even idle is it that fast: no load holds it. A large pool is
        // within the bound up to the most the delay is computed at.
        assert_eq!(origin(6).load_at_bound(0, 150.0), 0.0);
        let full = origin(50).load_at_bound(0, 800.0);
        assert!((full - MAX_UTILISATION * 100.0).abs() < 1e-6, "{full}");
    }

    #[test]
    fn a_pool_of_servers_hardly_slows_until_it_is_nearly_full() {
        let (one, pool) = (origin(1), origin(6));
        assert_eq!(one.speed(0.5), 0.5);
        // At half its capacity, one server doubles a request's time; a pool
        // of six adds a twentieth.
        assert!(1.0 / pool.speed(0.5) < 1.06, "{}", pool.speed(0.5));
        // Nearly full, it queues as one server does at nine tenths.
        assert!(1.0 / pool.speed(0.98) > 8.0, "{}", pool.speed(0.98));
        assert!(pool.load_at_bound(0, 800.0) > one.load_at_bound(0, 800.0) + 10.0);
    }
}
