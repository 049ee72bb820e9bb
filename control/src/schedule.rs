//! When a controller writes, and what it keeps of its writes.
//!
//! Both rules, the percentage ([`crate::percentage_rule::Controller`]) and the FIFO cutoff
//! ([`super::fifo_rule::FifoController`]), write to the same config store under the
//! same heartbeat rule, so they share one answer to *when*: a write at most
//! once a tick, the heartbeat when it falls due, a pause that doubles after each
//! failed write, and nothing at all once the log has gone silent (the edge's
//! heartbeat rule must take over from a controller gone blind). What they write
//! differs (`V`: a percentage, a cutoff); what they remember of it does not: the
//! value last written, and the writes not yet seen in effect, from which the
//! propagation delay is measured.

use std::collections::VecDeque;

/// Longest wait between two attempts after failed writes, seconds.
pub const MAX_BACKOFF: u64 = 300;

/// Writes remembered until the log shows them in effect (to measure the delay).
const PENDING_WRITES: usize = 64;

/// The options a schedule keeps to, seconds (as the controllers' options say).
/// Public in a private module: the policies' `start` hands it to the frame,
/// and nothing outside the crate can name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timing {
    /// Between two ticks: the first wait after a failed write.
    pub tick: u64,
    /// After which the heartbeat is written even if nothing changed.
    pub heartbeat_every: u64,
    /// Without a log record after which nothing is written. `None`: never.
    pub log_silence: Option<u64>,
    /// From a write to the edge using it, until measured. `None`: none.
    pub expected_propagation: Option<u64>,
}

/// A controller's writes of `V`: when the next may be made, and what became of
/// the last ones.
#[derive(Debug, Clone)]
pub(super) struct Schedule<V> {
    pub(super) timing: Timing,
    /// The value last written (confirmed).
    written: Option<V>,
    /// Clock time of the last confirmed write.
    last_write: Option<u64>,
    /// Failed writes in a row, and when the next attempt may be made.
    failures_in_a_row: u32,
    next_attempt: u64,
    /// The clock when the controller last heard anything: a record, or its first tick.
    last_heard: Option<u64>,
    /// Values written and when, not yet seen in effect in the log.
    pending: VecDeque<(V, u64)>,
    /// Seconds from a write to the first line showing it in effect, as last measured.
    propagation: Option<u64>,
    /// Log time of the newest line seen showing a value in effect.
    last_line: Option<u64>,
}

impl<V: Copy + PartialEq> Schedule<V> {
    pub(super) fn new(timing: Timing) -> Schedule<V> {
        Schedule {
            timing,
            written: None,
            last_write: None,
            failures_in_a_row: 0,
            next_attempt: 0,
            last_heard: None,
            pending: VecDeque::new(),
            propagation: None,
            last_line: None,
        }
    }

    /// A log record came at clock time `now`.
    pub(super) fn heard(&mut self, now: u64) {
        self.last_heard = Some(self.last_heard.map_or(now, |heard| heard.max(now)));
    }

    /// Whether a tick at clock time `now` may write: not while backing off after
    /// failed writes, nor after `log_silence` without a record. Until a record
    /// comes, the silence counts from the first tick (the controller's start).
    pub(super) fn may_write(&mut self, now: u64) -> bool {
        let heard = *self.last_heard.get_or_insert(now);
        now >= self.next_attempt && !self.silent(now, heard)
    }

    /// `wanted`, when it is not the value last written.
    pub(super) fn changed(&self, wanted: Option<V>) -> Option<V> {
        wanted.filter(|&v| Some(v) != self.written)
    }

    /// Whether a tick has passed since the last write at clock time `now`.
    pub(super) fn a_tick_on(&self, now: u64) -> bool {
        self.last_write
            .is_none_or(|last| now >= last.saturating_add(self.timing.tick))
    }

    /// Whether the heartbeat is due at `now`: nothing was written yet, or the
    /// last write is `heartbeat_every` old.
    pub(super) fn heartbeat_due(&self, now: u64) -> bool {
        self.last_write
            .is_none_or(|last| now >= last.saturating_add(self.timing.heartbeat_every))
    }

    fn silent(&self, now: u64, heard: u64) -> bool {
        self.timing
            .log_silence
            .is_some_and(|silence| now.saturating_sub(heard) > silence)
    }

    /// Whether writing has stopped because no record has come for longer than
    /// `log_silence` (at clock time `now`).
    pub(super) fn deaf(&self, now: u64) -> bool {
        self.last_heard.is_some_and(|heard| self.silent(now, heard))
    }

    /// A write was carried out at clock time `now`, with `value` when it wrote one.
    pub(super) fn succeeded(&mut self, value: Option<V>, now: u64) {
        if let Some(v) = value {
            self.written = Some(v);
            if self.pending.len() == PENDING_WRITES {
                self.pending.pop_front();
            }
            self.pending.push_back((v, now));
        }
        self.last_write = Some(now);
        self.failures_in_a_row = 0;
        self.next_attempt = 0;
    }

    /// A write failed at clock time `now`: the next attempt waits one tick,
    /// doubling with each failure in a row up to [`MAX_BACKOFF`] seconds.
    pub(super) fn failed(&mut self, now: u64) {
        self.failures_in_a_row = self.failures_in_a_row.saturating_add(1);
        let doublings = (self.failures_in_a_row - 1).min(16);
        let wait = self
            .timing
            .tick
            .saturating_mul(1 << doublings)
            .min(MAX_BACKOFF);
        self.next_attempt = now.saturating_add(wait);
    }

    /// A line at log time `t` showed a value in effect, and `shows(v)` tells
    /// whether a write of `v` is among what it shows: the newest such write made
    /// at or before `t` measures the propagation delay (older writes are dropped
    /// with it). The write landed after the line before this one, which did not
    /// show it, and by `t`: where the log was quiet in between, the delay as
    /// last measured is kept if it lies within those bounds, or else the nearer
    /// bound (a sparse log would otherwise read its silence as delay).
    pub(super) fn measure_propagation(&mut self, t: u64, shows: impl Fn(V) -> bool) {
        let before = self
            .last_line
            .replace(self.last_line.map_or(t, |l| l.max(t)));
        if let Some(i) = self
            .pending
            .iter()
            .rposition(|&(v, at)| shows(v) && at <= t)
        {
            let at = self.pending[i].1;
            let most = t - at;
            let least = before.map_or(0, |b| (b + 1).saturating_sub(at)).min(most);
            self.propagation = Some(self.propagation.map_or(most, |p| p.clamp(least, most)));
            self.pending.drain(..=i);
        }
    }

    /// The propagation delay as last measured, or as expected until then.
    pub(super) fn propagation_delay(&self) -> u64 {
        self.propagation
            .or(self.timing.expected_propagation)
            .unwrap_or(0)
    }

    /// The propagation delay as last measured (`None` before a write showed).
    pub(super) fn propagation(&self) -> Option<u64> {
        self.propagation
    }

    /// The value last written.
    pub(super) fn written(&self) -> Option<V> {
        self.written
    }

    /// Clock time of the last confirmed write.
    pub(super) fn last_write(&self) -> Option<u64> {
        self.last_write
    }
}

#[cfg(test)]
mod tests;
