//! The POP's ceiling on new sessions (`pop_new_sessions_per_minute`): a guard
//! under the controller, for what its percentage cannot see coming.
//!
//! The controller's percentage reaches the edge a propagation delay after it
//! saw the log. A wave that arrives meanwhile draws at the old percentage, and
//! where writes take a minute to land, its first minute admits up to twice the
//! target or more; so does the crowd's last minute, once the controller has
//! opened the room to 100 %. With a ceiling set, each POP counts the new sessions
//! it started in the last minute (Fastly's edge rate counters, shared by the
//! POP's nodes), and a request that would start one while the count is at the
//! ceiling is held: the visitor waits on with a new wait token, as after a
//! lost draw (`transition=ceiling-reached` in the log). A new session counts
//! once per token (the address and the wait token's end, or the second, for a
//! visitor without one): tabs and devices that present one token count once,
//! through the POP's penalty box. Sessions kept or renewed are neither counted
//! nor held, and FIFO mode has its own order: the ceiling is random mode's.
//!
//! The counts are the POP's, so the ceiling is per POP: set it to what the
//! busiest POP may admit. Where the edge cannot count (edge rate limiting not
//! enabled on the account; local runs, where the counters read zero), the
//! ceiling holds nobody: the room is what it is without it.

/// What the POP counted: the edge's rate counter and penalty box, or the
/// simulator's and the tests' exact counts.
pub trait PopCounts: std::fmt::Debug {
    /// New sessions this POP counted in the last minute (`None`: unknown, and
    /// the ceiling holds nobody).
    fn last_minute(&self, now: u64) -> Option<u32>;
    /// Whether the new session of `token` (its [`draw_key`]) was counted already.
    fn counted(&self, token: &str) -> bool;
}

/// What the ceiling says of a new session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ceiling {
    /// Admit it; count it under this key when `Some` (the edge's business, after
    /// the response is planned).
    Admit(Option<String>),
    /// Hold it: the POP started its ceiling's worth in the last minute.
    Hold,
}

/// What identifies a new session to count: the address, and the end of the
/// wait token it presented (or the second, without one).
pub fn draw_key(uid: &str, exp: u64) -> String {
    format!("{uid} {exp}")
}

/// The ceiling's word on a new session for `uid` at `now`, whose wait token
/// ends at `exp` (`now` without one), with `per_minute` the setting and
/// `counts` the POP's.
pub fn judge(
    per_minute: Option<u32>,
    counts: Option<&dyn PopCounts>,
    now: u64,
    uid: &str,
    exp: u64,
) -> Ceiling {
    let (Some(per_minute), Some(counts)) = (per_minute, counts) else {
        return Ceiling::Admit(None);
    };
    let key = draw_key(uid, exp);
    if counts.counted(&key) {
        return Ceiling::Admit(None);
    }
    match counts.last_minute(now) {
        Some(seen) if seen >= per_minute => Ceiling::Hold,
        _ => Ceiling::Admit(Some(key)),
    }
}

/// Exact counts for one POP, at a virtual clock: the simulator's and the
/// tests'. New sessions by ten-second bucket (the edge's counters keep ten-second
/// buckets too) and the tokens counted in the last minute.
#[derive(Debug, Clone, Default)]
pub struct ExactCounts {
    buckets: std::collections::VecDeque<(u64, u32)>,
    counted: std::collections::HashMap<String, u64>,
    /// When the counted tokens were last pruned.
    pruned_at: u64,
}

/// Seconds a counted token stays counted (the edge's penalty box keeps an
/// entry a minute at least).
const COUNTED_FOR: u64 = 60;

impl ExactCounts {
    /// Counts the new session `key` at `now`.
    pub fn count(&mut self, now: u64, key: String) {
        let bucket = now / 10;
        match self.buckets.back_mut() {
            Some((b, n)) if *b == bucket => *n += 1,
            _ => self.buckets.push_back((bucket, 1)),
        }
        while self.buckets.front().is_some_and(|&(b, _)| b + 6 <= bucket) {
            self.buckets.pop_front();
        }
        self.counted.insert(key, now);
        // Once a minute: a token stays counted one to two minutes, as in the
        // edge's penalty box, and pruning costs nothing per count.
        if now >= self.pruned_at + COUNTED_FOR {
            self.counted.retain(|_, at| *at + COUNTED_FOR > now);
            self.pruned_at = now;
        }
    }
}

impl PopCounts for ExactCounts {
    fn last_minute(&self, now: u64) -> Option<u32> {
        let bucket = now / 10;
        Some(
            self.buckets
                .iter()
                .filter(|&&(b, _)| b + 6 > bucket && b <= bucket)
                .map(|&(_, n)| n)
                .sum(),
        )
    }

    fn counted(&self, token: &str) -> bool {
        self.counted.contains_key(token)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_a_setting_or_counts_every_win_is_admitted_uncounted() {
        let counts = ExactCounts::default();
        assert_eq!(
            judge(None, Some(&counts), 100, "10.0.0.1", 90),
            Ceiling::Admit(None)
        );
        assert_eq!(
            judge(Some(5), None, 100, "10.0.0.1", 90),
            Ceiling::Admit(None)
        );
    }

    #[test]
    fn wins_are_held_once_the_minute_holds_the_ceiling_and_admitted_as_it_passes() {
        let mut counts = ExactCounts::default();
        for i in 0..3u64 {
            match judge(Some(3), Some(&counts), 100 + i, "10.0.0.1", 90 + i) {
                Ceiling::Admit(Some(key)) => counts.count(100 + i, key),
                other => panic!("win {i}: {other:?}"),
            }
        }
        assert_eq!(counts.last_minute(102), Some(3));
        assert_eq!(
            judge(Some(3), Some(&counts), 130, "10.0.0.2", 120),
            Ceiling::Hold
        );
        // A token counted already (another tab) is admitted, and not counted again.
        assert_eq!(
            judge(Some(3), Some(&counts), 130, "10.0.0.1", 91),
            Ceiling::Admit(None)
        );
        // The bucket of 100-109 leaves the minute at 160.
        assert_eq!(counts.last_minute(159), Some(3));
        assert_eq!(counts.last_minute(160), Some(0));
        assert_eq!(
            judge(Some(3), Some(&counts), 160, "10.0.0.2", 150),
            Ceiling::Admit(Some(draw_key("10.0.0.2", 150)))
        );
    }

    #[test]
    fn an_unknown_count_holds_nobody() {
        #[derive(Debug)]
        struct Blind;
        impl PopCounts for Blind {
            fn last_minute(&self, _: u64) -> Option<u32> {
                None
            }
            fn counted(&self, _: &str) -> bool {
                false
            }
        }
        assert_eq!(
            judge(Some(1), Some(&Blind), 100, "10.0.0.1", 90),
            Ceiling::Admit(Some(draw_key("10.0.0.1", 90)))
        );
    }
}
