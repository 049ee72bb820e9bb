//! The origin's answers over the last window of log time: how many, how many
//! failed, and how slow the 95th percentile was.

use std::collections::VecDeque;

/// What the origin answered one request, as the room's log line records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OriginAnswer {
    /// Answered: milliseconds to the response's headers, and its status.
    Answered {
        /// Milliseconds from sending the request to the response's headers.
        ms: u64,
        /// The response's status.
        status: u16,
    },
    /// No answer: a timeout or a failed connection.
    Failed,
}

impl OriginAnswer {
    /// Whether it counts against the error share: a failure or a 5xx.
    pub fn is_error(self) -> bool {
        match self {
            OriginAnswer::Failed => true,
            OriginAnswer::Answered { status, .. } => status >= 500,
        }
    }
}

/// Most answer times kept for one second of log: past it, answers are still
/// counted, and the times kept are the second's first. At the cap (ten times
/// what the demo's largest crowd asks of its origin) the p95 is that of a
/// sample of 20,000 a second, far inside its own noise.
pub const MAX_TIMES_PER_SECOND: usize = 20_000;

/// One second of answers.
#[derive(Debug, Clone)]
struct Second {
    t: u64,
    answers: u64,
    /// Of those, the answers to the room's own requests.
    own: u64,
    errors: u64,
    /// Milliseconds to the response's headers, of the answers that came and
    /// were not errors.
    times: Vec<u32>,
}

/// What the window showed (the default: nothing, no answer yet).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Reading {
    /// Answers (errors included).
    pub answers: u64,
    /// Answers a second over the window.
    pub per_second: f64,
    /// Answers a second to the room's own requests (the rest: the other rooms'
    /// behind the same origin).
    pub own_per_second: f64,
    /// The 95th percentile of the times of the answers that were not errors,
    /// milliseconds (`None`: every request failed).
    pub p95_ms: Option<u64>,
    /// The low end of the p95's 95 % confidence interval, milliseconds: the
    /// time at the rank `0.95 n − 1.96 √(0.95 × 0.05 × n)` of the `n` times,
    /// whatever their distribution (of 60 answers, the 54th; of 1,000, the
    /// 937th). A p95 of a few answers is that far from certain.
    pub p95_low_ms: Option<u64>,
    /// The high end of that interval: the time at the rank
    /// `0.95 n + 1.96 √(0.95 × 0.05 × n)` (`None` under 73 times, where the
    /// rank passes the slowest: the interval is not bounded above).
    pub p95_high_ms: Option<u64>,
    /// Share of the answers that were errors: a 5xx, a timeout, a failed
    /// connection.
    pub error_share: f64,
}

/// The answers of the last `len` seconds up to the newest second seen.
#[derive(Debug, Clone)]
pub struct Window {
    len: u64,
    seconds: VecDeque<Second>,
}

impl Window {
    /// An empty window of `len` seconds (at least 1).
    pub fn new(len: u64) -> Window {
        Window {
            len: len.max(1),
            seconds: VecDeque::new(),
        }
    }

    /// Takes the answer of a request logged at Unix second `t` (`own`: a request
    /// of the room's own). An answer older than the window is dropped; lines come
    /// nearly in order, so its second is found from the newest end.
    pub fn add(&mut self, t: u64, answer: OriginAnswer, own: bool) {
        let newest = self.seconds.back().map_or(t, |s| s.t.max(t));
        if t + self.len <= newest {
            return;
        }
        let at = match self.seconds.iter().rposition(|s| s.t <= t) {
            Some(i) if self.seconds[i].t == t => i,
            found => {
                let i = found.map_or(0, |i| i + 1);
                self.seconds.insert(
                    i,
                    Second {
                        t,
                        answers: 0,
                        own: 0,
                        errors: 0,
                        times: Vec::new(),
                    },
                );
                i
            }
        };
        let second = &mut self.seconds[at];
        second.answers += 1;
        second.own += u64::from(own);
        second.errors += u64::from(answer.is_error());
        // A 5xx is an error, however fast: its time is no measure of the origin's.
        if let OriginAnswer::Answered { ms, status } = answer
            && status < 500
            && second.times.len() < MAX_TIMES_PER_SECOND
        {
            second.times.push(u32::try_from(ms).unwrap_or(u32::MAX));
        }
        while self
            .seconds
            .front()
            .is_some_and(|s| s.t + self.len <= newest)
        {
            self.seconds.pop_front();
        }
    }

    /// The newest second of an answer taken.
    pub fn newest(&self) -> Option<u64> {
        self.seconds.back().map(|s| s.t)
    }

    /// The window's answers in the `len` seconds up to `newest`.
    pub fn read(&self, newest: u64) -> Reading {
        let from = (newest + 1).saturating_sub(self.len);
        let seconds = || {
            self.seconds
                .iter()
                .filter(|s| (from..=newest).contains(&s.t))
        };
        let answers: u64 = seconds().map(|s| s.answers).sum();
        let errors: u64 = seconds().map(|s| s.errors).sum();
        let own: u64 = seconds().map(|s| s.own).sum();
        let mut times: Vec<u32> = seconds().flat_map(|s| s.times.iter().copied()).collect();
        let p95_ms = p95(&mut times);
        let p95_low_ms = p95_low(&mut times);
        let p95_high_ms = p95_high(&mut times);
        Reading {
            answers,
            per_second: answers as f64 / self.len as f64,
            own_per_second: own as f64 / self.len as f64,
            p95_ms,
            p95_low_ms,
            p95_high_ms,
            error_share: if answers == 0 {
                0.0
            } else {
                errors as f64 / answers as f64
            },
        }
    }
}

/// The 95th percentile of `times` by the nearest rank: the smallest time at or
/// above 95 % of them (`None` when there is none). Reorders `times`.
pub fn p95(times: &mut [u32]) -> Option<u64> {
    nth_smallest(times, (times.len() * 95).div_ceil(100))
}

/// The standard normal's quantile that bounds a two-sided 95 % interval.
pub const Z95: f64 = 1.96;

/// The rank, counted from 1, that bounds the 95 % confidence interval of the
/// p95 of `n` times by the order statistics: `0.95 n + z √(0.95 × 0.05 × n)`,
/// rounded up (`z` = −[`Z95`] for the low end, +[`Z95`] for the high).
fn interval_rank(n: usize, z: f64) -> usize {
    let n = n as f64;
    (0.95 * n + z * (0.0475 * n).sqrt()).ceil() as usize
}

/// The low end of the 95 % confidence interval of the p95 of `times`, by the
/// order statistics: the time at the rank `0.95 n − 1.96 √(0.0475 n)`, at
/// least the first (`None` when there is none). Reorders `times`.
pub fn p95_low(times: &mut [u32]) -> Option<u64> {
    nth_smallest(times, interval_rank(times.len(), -Z95))
}

/// The high end of the 95 % confidence interval of the p95 of `times`, by
/// the order statistics: the time at the rank `0.95 n + 1.96 √(0.0475 n)`
/// (`None` when that rank passes the slowest). Reorders `times`.
pub fn p95_high(times: &mut [u32]) -> Option<u64> {
    let rank = interval_rank(times.len(), Z95);
    if rank > times.len() {
        return None;
    }
    nth_smallest(times, rank)
}

/// The `rank`-th smallest of `times`, counted from 1 (at least the first;
/// `None` when there is none). Reorders `times`.
fn nth_smallest(times: &mut [u32], rank: usize) -> Option<u64> {
    let last = times.len().checked_sub(1)?;
    let index = rank.saturating_sub(1).min(last);
    Some(u64::from(*times.select_nth_unstable(index).1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(ms: u64) -> OriginAnswer {
        OriginAnswer::Answered { ms, status: 200 }
    }

    #[test]
    fn reads_the_nearest_rank_p95_and_the_error_share() {
        let mut w = Window::new(60);
        for ms in 1..=100 {
            w.add(1000 + ms % 60, ok(ms), ms % 2 == 0);
        }
        w.add(1010, OriginAnswer::Failed, false);
        w.add(1011, OriginAnswer::Answered { ms: 7, status: 503 }, false);
        let r = w.read(1059);
        assert_eq!(r.answers, 102);
        assert!((r.own_per_second - 50.0 / 60.0).abs() < 1e-12);
        // 100 times (not the 503's): rank ceil(0.95 * 100) = 95, the 95th smallest.
        assert_eq!(r.p95_ms, Some(95));
        // 95 - 1.96 * sqrt(4.75) = 90.7: the 91st smallest.
        assert_eq!(r.p95_low_ms, Some(91));
        // 95 + 4.27 = 99.3: the 100th, the slowest.
        assert_eq!(r.p95_high_ms, Some(100));
        assert!((r.error_share - 2.0 / 102.0).abs() < 1e-12);
        assert!((r.per_second - 102.0 / 60.0).abs() < 1e-12);
    }

    #[test]
    fn the_p95_of_fewer_than_73_times_is_not_bounded_above() {
        // Of 73 times, the rank 69.35 + 3.65 is the slowest; of 72, past it.
        let mut times: Vec<u32> = (1..=73).collect();
        assert_eq!(p95_high(&mut times), Some(73));
        assert_eq!(p95_high(&mut times[..72]), None);
    }

    #[test]
    fn forgets_what_leaves_the_window_and_drops_what_comes_too_late() {
        let mut w = Window::new(10);
        w.add(100, ok(900), true);
        w.add(105, ok(10), true);
        w.add(109, ok(20), true);
        assert_eq!(w.read(109).p95_ms, Some(900));
        w.add(110, ok(30), true); // second 100 leaves
        assert_eq!(w.read(110).answers, 3);
        assert_eq!(w.read(110).p95_ms, Some(30));
        w.add(99, ok(5000), true); // older than the window: dropped
        w.add(103, ok(40), true); // late but inside: counted in its second
        assert_eq!(w.read(110).answers, 4);
        assert_eq!(w.read(110).p95_ms, Some(40));
    }

    #[test]
    fn an_empty_or_failed_window_has_no_time() {
        let mut w = Window::new(60);
        assert_eq!(w.read(5).answers, 0);
        assert_eq!(w.read(5).error_share, 0.0);
        w.add(5, OriginAnswer::Failed, true);
        let r = w.read(5);
        assert_eq!((r.answers, r.p95_ms, r.error_share), (1, None, 1.0));
    }

    #[test]
    fn keeps_at_most_the_cap_of_times_a_second_but_counts_every_answer() {
        let mut w = Window::new(1);
        for _ in 0..MAX_TIMES_PER_SECOND + 5 {
            w.add(7, ok(1), true);
        }
        w.add(7, ok(100_000), true);
        let r = w.read(7);
        assert_eq!(r.answers, MAX_TIMES_PER_SECOND as u64 + 6);
        assert_eq!(r.p95_ms, Some(1));
        assert_eq!(w.seconds[0].times.len(), MAX_TIMES_PER_SECOND);
    }
}
