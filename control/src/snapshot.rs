//! What a controller shows of itself, for people and for Prometheus.

use crate::origin_rule;
use crate::series::Second;
use waiting_room::settings::config::FifoRate;
use waiting_room::settings::percentage::Percentage;

/// Lines read, and what became of them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counters {
    /// Records counted.
    pub lines: u64,
    /// Lines that were not room log lines, or not readable (the reader counts these).
    pub bad_lines: u64,
    /// Records older than the window.
    pub late_lines: u64,
    /// Records of requests whose store reads failed (`ALERT=unreadable:`).
    pub unreadable_lines: u64,
    /// Records stamped too far in the future.
    pub future_lines: u64,
    /// Writes confirmed.
    pub writes: u64,
    /// Writes that failed.
    pub write_failures: u64,
}

/// The controller's state, for people and for Prometheus.
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    /// Newest log time seen.
    pub now: Option<u64>,
    /// The percentage last written.
    pub written: Option<Percentage>,
    /// The percentage the controller wants in effect.
    pub wanted: Option<Percentage>,
    /// Clock time of the last write.
    pub last_write: Option<u64>,
    /// Addresses holding a live wait token.
    pub waiting: u64,
    /// Addresses holding a live allow token.
    pub active: u64,
    /// Addresses not tracked because the controller's capacity was reached.
    pub overflow: u64,
    /// Lines read, and what became of them.
    pub counters: Counters,
    /// Per-second counts, oldest first.
    pub series: Vec<(u64, Second)>,
    /// The origin rule, when the target follows the origin's health.
    pub origin: Option<origin_rule::OriginStatus>,
}

/// The FIFO rule's own figures ([`crate::fifo_rule`]), for people and for Prometheus.
#[derive(Debug, Clone, PartialEq)]
pub struct FifoStatus {
    /// `fifo_cutoff` last written (Unix ms).
    pub cutoff: Option<u64>,
    /// The cutoff the last tick decided.
    pub wanted_cutoff: Option<u64>,
    /// The highest cutoff the lines showed in effect.
    pub cutoff_in_effect: Option<u64>,
    /// `fifo_rate` last written.
    pub rate: Option<FifoRate>,
    /// The rate the last tick decided.
    pub wanted_rate: Option<FifoRate>,
    /// Share of passed places whose holder showed up, of those still polling
    /// when passed (`docs/research/controller-rules.md`, the FIFO rule).
    pub show_up: f64,
    /// The same, of the places whose holder had stopped polling.
    pub show_up_stale: f64,
    /// Seconds from a write to the first line showing it, as last measured.
    pub propagation: Option<u64>,
    /// Places held beyond the cutoff in effect.
    pub ahead: u64,
    /// Decided lines without `cutoff=` (the room is not in FIFO mode).
    pub not_fifo_lines: u64,
    /// The cutoff in effect each second of the snapshot's series, oldest first.
    pub cutoffs: Vec<Option<u64>>,
}
