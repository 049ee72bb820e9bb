//! The writer's budget of Fastly API requests: when the one writer of
//! `wrctl control` may send its next config-store update ([`Pacer`]), within
//! [`DEFAULT_BUDGET`] updates an hour for all the rooms, spaced by [`interval_for`],
//! spread by the API's rate-limit headers and held after a 429 or a 5xx (at most
//! [`MAX_HOLD`] s): the manual's "The Fastly API's budget" (`docs/operate/wrctl.md`).
//! A config-store file and a dry run have no budget: their pacer never holds. The
//! clock is passed in, so the tests run an hour in a moment.

use std::collections::VecDeque;

/// Modifying requests an hour Fastly's API allows a user by default (the Fastly
/// API reference, "Rate limiting").
pub const FASTLY_HOURLY_LIMIT: u64 = 1000;
/// The writer's default budget: half of [`FASTLY_HOURLY_LIMIT`], the other half
/// left to people and other tools of the same user (`wrctl rotate`, deploys, …).
pub const DEFAULT_BUDGET: u64 = FASTLY_HOURLY_LIMIT / 2;
/// The longest a 429's or a 5xx's hint (or a spent window) holds the writer,
/// seconds: the rules' own longest back-off.
pub const MAX_HOLD: u64 = control::schedule::MAX_BACKOFF;
/// An hour, seconds.
pub const HOUR: u64 = 3600;

/// The least number of seconds between two updates for `budget` requests an
/// hour: 3600 / budget, rounded up (at least 1).
pub fn interval_for(budget: u64) -> u64 {
    HOUR.div_ceil(budget.max(1)).max(1)
}

/// What the API answered to one update: its status, and its rate-limit headers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Answer {
    /// The HTTP status; `None` when no answer came (timeout, connection refused).
    pub status: Option<u16>,
    /// `Fastly-RateLimit-Remaining`.
    pub remaining: Option<u64>,
    /// `Fastly-RateLimit-Reset`, Unix seconds.
    pub reset: Option<u64>,
    /// `Retry-After`, seconds.
    pub retry_after: Option<u64>,
}

/// Why the writer holds its updates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hold {
    /// A 429 Too Many Requests.
    Throttled,
    /// A 5xx with a `Retry-After`.
    ServerError,
    /// `Fastly-RateLimit-Remaining: 0` before the window's reset.
    Spent,
}

impl Hold {
    /// The name `status.json` gives it.
    pub fn name(self) -> &'static str {
        match self {
            Hold::Throttled => "throttled",
            Hold::ServerError => "server-error",
            Hold::Spent => "rate-limit-spent",
        }
    }
}

/// Requests sent, by what became of them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counters {
    /// Updates sent (whatever the answer): what the budget counts.
    pub requests: u64,
    /// Answered with a success.
    pub ok: u64,
    /// Answered 429.
    pub throttled: u64,
    /// Answered with a 5xx.
    pub server_errors: u64,
    /// Any other failure (another status, no answer, a file not written).
    pub other_failures: u64,
    /// Updates a tick had ready but the pacer held back (spacing, a hold).
    pub held: u64,
}

/// The writer's state, as `status.json` and the metrics show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    /// `--api-budget` (`None`: no budget, a file or a dry run).
    pub budget: Option<u64>,
    /// The least spacing the budget sets, seconds.
    pub min_interval: u64,
    /// The spacing now (widened by a low `Fastly-RateLimit-Remaining`), seconds.
    pub interval: u64,
    /// Updates sent in the last hour.
    pub last_hour: u64,
    /// The counters.
    pub counters: Counters,
    /// The last `Fastly-RateLimit-Remaining`, `Fastly-RateLimit-Reset` and status.
    pub remaining: Option<u64>,
    pub reset: Option<u64>,
    pub last_status: Option<u16>,
    /// Unix seconds before which nothing is sent, and why.
    pub hold: Option<(u64, Hold)>,
    /// Clock time of the last update sent.
    pub last_sent: Option<u64>,
}

/// When the writer may send its next update.
#[derive(Debug, Clone, Default)]
pub struct Pacer {
    budget: Option<u64>,
    min_interval: u64,
    /// The widest spacing a low remainder may set: the heartbeat interval.
    widest: u64,
    last_sent: Option<u64>,
    hold: Option<(u64, Hold)>,
    /// Times of the updates sent in the last hour.
    sent: VecDeque<u64>,
    counters: Counters,
    remaining: Option<u64>,
    reset: Option<u64>,
    last_status: Option<u16>,
}

impl Pacer {
    /// No budget: every update may go (a config-store file, a dry run).
    pub fn unlimited() -> Pacer {
        Pacer::default()
    }

    /// `budget` updates an hour at most, and with a low remainder no further apart
    /// than `heartbeat_every` seconds.
    pub fn budgeted(budget: u64, heartbeat_every: u64) -> Pacer {
        let min_interval = interval_for(budget);
        Pacer {
            budget: Some(budget.max(1)),
            min_interval,
            widest: heartbeat_every.max(min_interval),
            ..Pacer::unlimited()
        }
    }

    /// The spacing at clock time `now`: the budget's, widened to spread what
    /// remains of the API's window over the time left, up to the heartbeat
    /// interval.
    pub fn interval(&self, now: u64) -> u64 {
        match (self.remaining, self.reset) {
            (Some(left), Some(reset)) if self.budget.is_some() && left > 0 && reset > now => (reset
                - now)
                .div_ceil(left)
                .clamp(self.min_interval, self.widest),
            _ => self.min_interval,
        }
    }

    /// Whether an update may be sent at clock time `now`.
    pub fn may_send(&mut self, now: u64) -> bool {
        self.forget(now);
        if self.hold.is_some_and(|(until, _)| now < until) {
            return false;
        }
        if let Some(budget) = self.budget
            && self.sent.len() as u64 >= budget
        {
            return false;
        }
        self.last_sent
            .is_none_or(|last| now >= last.saturating_add(self.interval(now)))
    }

    /// An update was ready at `now` but not sent.
    pub fn held(&mut self) {
        self.counters.held += 1;
    }

    /// An update was sent at clock time `now`: `ok` whether it was taken, with
    /// the API's `answer` when there was one. Returns what to tell the operator
    /// (a hold begun), if anything.
    pub fn sent(&mut self, now: u64, ok: bool, answer: Option<Answer>) -> Option<String> {
        self.forget(now);
        self.counters.requests += 1;
        self.sent.push_back(now);
        self.last_sent = Some(now);
        let answer = answer.unwrap_or_default();
        self.last_status = answer.status;
        if answer.remaining.is_some() {
            self.remaining = answer.remaining;
            self.reset = answer.reset;
        }
        let reset_in = answer
            .reset
            .map(|r| r.saturating_sub(now))
            .filter(|&s| s > 0);
        let (hold, wait, from) = match answer.status {
            _ if ok => {
                self.counters.ok += 1;
                self.hold = None;
                match (answer.remaining, reset_in) {
                    (Some(0), Some(wait)) => (Hold::Spent, wait, "Fastly-RateLimit-Reset"),
                    _ => return None,
                }
            }
            Some(429) => {
                self.counters.throttled += 1;
                match (answer.retry_after, reset_in) {
                    (Some(wait), _) => (Hold::Throttled, wait, "Retry-After"),
                    (None, Some(wait)) => (Hold::Throttled, wait, "Fastly-RateLimit-Reset"),
                    (None, None) => {
                        return Some("the Fastly API answered 429: backing off".into());
                    }
                }
            }
            Some(s) if (500..600).contains(&s) => {
                self.counters.server_errors += 1;
                match answer.retry_after {
                    Some(wait) => (Hold::ServerError, wait, "Retry-After"),
                    None => return None,
                }
            }
            _ => {
                self.counters.other_failures += 1;
                return None;
            }
        };
        let wait = wait.clamp(1, MAX_HOLD);
        let until = now.saturating_add(wait);
        self.hold = Some((until, hold));
        Some(format!(
            "no update before {} ({wait} s, from the answer's {from}{})",
            crate::clock::rfc3339(until),
            if wait == MAX_HOLD { ", at most" } else { "" }
        ))
    }

    /// Forgets the updates older than an hour, and a hold that ended.
    fn forget(&mut self, now: u64) {
        while self
            .sent
            .front()
            .is_some_and(|&t| t.saturating_add(HOUR) <= now)
        {
            self.sent.pop_front();
        }
        if self.hold.is_some_and(|(until, _)| now >= until) {
            self.hold = None;
        }
    }

    /// The counters so far.
    pub fn counters(&self) -> Counters {
        self.counters
    }

    /// The state at clock time `now`.
    pub fn status(&self, now: u64) -> Status {
        Status {
            budget: self.budget,
            min_interval: self.min_interval,
            interval: self.interval(now),
            last_hour: self
                .sent
                .iter()
                .filter(|&&t| t.saturating_add(HOUR) > now)
                .count() as u64,
            counters: self.counters,
            remaining: self.remaining,
            reset: self.reset,
            last_status: self.last_status,
            hold: self.hold.filter(|&(until, _)| now < until),
            last_sent: self.last_sent,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(remaining: u64, reset: u64) -> Option<Answer> {
        Some(Answer {
            status: Some(200),
            remaining: Some(remaining),
            reset: Some(reset),
            retry_after: None,
        })
    }

    #[test]
    fn the_budget_sets_the_spacing() {
        assert_eq!(interval_for(500), 8);
        assert_eq!(interval_for(1000), 4);
        assert_eq!(interval_for(360), 10);
        assert_eq!(interval_for(7200), 1);
        assert_eq!(interval_for(0), HOUR);
    }

    #[test]
    fn updates_keep_the_spacing_and_an_hour_holds_at_most_the_budget() {
        let mut pacer = Pacer::budgeted(500, 30);
        let mut sent = 0;
        for now in 1000..1000 + HOUR {
            if pacer.may_send(now) {
                pacer.sent(now, true, None);
                sent += 1;
            }
        }
        assert_eq!(sent, 450);
        let status = pacer.status(1000 + HOUR - 1);
        assert_eq!(status.last_hour, 450);
        assert_eq!(status.interval, 8);
    }

    #[test]
    fn no_budget_never_holds() {
        let mut pacer = Pacer::unlimited();
        for now in 0..100 {
            assert!(pacer.may_send(now));
            pacer.sent(now, true, None);
        }
        assert_eq!(pacer.status(99).budget, None);
    }

    #[test]
    fn a_low_remainder_spreads_the_updates_up_to_the_heartbeat_interval() {
        let mut pacer = Pacer::budgeted(500, 30);
        // 600 s to the reset, 50 left: one each 12 s.
        pacer.sent(1000, true, ok(50, 1600));
        assert_eq!(pacer.interval(1000), 12);
        assert!(!pacer.may_send(1011));
        assert!(pacer.may_send(1012));
        // 10 left: one each 60 s would be, but the heartbeat needs one each 30 s.
        pacer.sent(1012, true, ok(10, 1600));
        assert_eq!(pacer.interval(1012), 30);
        assert!(pacer.may_send(1042));
        // Plenty left: the budget's spacing.
        pacer.sent(1042, true, ok(900, 1600));
        assert_eq!(pacer.interval(1042), 8);
    }

    #[test]
    fn a_spent_window_holds_until_its_reset() {
        let mut pacer = Pacer::budgeted(500, 30);
        let note = pacer.sent(1000, true, ok(0, 1040)).unwrap();
        assert!(note.contains("Fastly-RateLimit-Reset"), "{note}");
        assert_eq!(pacer.status(1000).hold, Some((1040, Hold::Spent)));
        assert!(!pacer.may_send(1039));
        assert!(pacer.may_send(1040));
        assert_eq!(pacer.status(1040).hold, None);
    }

    #[test]
    fn a_429_holds_until_retry_after_or_the_reset_at_most_300_s() {
        let throttled = |retry_after, reset| {
            Some(Answer {
                status: Some(429),
                remaining: Some(0),
                reset,
                retry_after,
            })
        };
        let mut pacer = Pacer::budgeted(500, 30);
        pacer.sent(1000, false, throttled(Some(20), Some(5000)));
        assert_eq!(pacer.status(1000).hold, Some((1020, Hold::Throttled)));
        assert!(!pacer.may_send(1019) && pacer.may_send(1020));

        pacer.sent(1020, false, throttled(None, Some(1065)));
        assert_eq!(pacer.status(1020).hold, Some((1065, Hold::Throttled)));

        let note = pacer
            .sent(1065, false, throttled(None, Some(9999)))
            .unwrap();
        assert!(note.contains("300 s") && note.contains("at most"), "{note}");
        assert_eq!(pacer.status(1065).hold, Some((1365, Hold::Throttled)));

        // Without a hint, the rules' own back-off alone.
        pacer.sent(1365, false, throttled(None, None));
        assert_eq!(pacer.status(1365).hold, None);
        let status = pacer.status(1365);
        assert_eq!(status.counters.throttled, 4);
        assert_eq!(status.last_status, Some(429));
    }

    #[test]
    fn a_5xx_holds_only_for_its_retry_after() {
        let mut pacer = Pacer::budgeted(500, 30);
        let answer = |retry_after| {
            Some(Answer {
                status: Some(503),
                retry_after,
                ..Answer::default()
            })
        };
        assert!(pacer.sent(1000, false, answer(None)).is_none());
        assert_eq!(pacer.status(1000).hold, None);
        pacer.sent(1008, false, answer(Some(15)));
        assert_eq!(pacer.status(1008).hold, Some((1023, Hold::ServerError)));
        assert_eq!(pacer.status(1008).counters.server_errors, 2);
        // A success lifts a hold.
        pacer.sent(1023, true, ok(900, 2000));
        assert_eq!(pacer.status(1023).hold, None);
    }
}
