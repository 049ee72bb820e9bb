//! Taking in the room's log records, for both rules.
//!
//! The percentage controller ([`crate::percentage_rule::Controller`]) and the FIFO rule
//! ([`super::fifo_rule::FifoController`]) read the log alike: a line stamped more than
//! [`MAX_CLOCK_SKEW`] ahead of the clock is refused (a wrong clock or a forged
//! line must not move the window), one older than the window is counted late, and
//! the rest are counted into their second of the per-second [`Series`], the crowd
//! noted in a second as it closes. One type does it for both, so that the two
//! rules cannot drift apart in what they take in, count and show.

use super::series::{Second, Series};
use super::tokens::Seen;
use crate::options::{MAX_CLOCK_SKEW, WINDOW};
use crate::record::Record;
use crate::snapshot::Counters;
use waiting_room::admission::decision::{Session, Transition};
use waiting_room::settings::percentage::Percentage;

/// The crowd's sizes, noted in the newest second when it closes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Sizes {
    /// Addresses waiting.
    pub waiting: u64,
    /// Addresses holding a live allow token.
    pub active: u64,
}

/// The per-second counts of the log, and of the lines read what became of them.
#[derive(Debug, Clone)]
pub(super) struct Intake {
    series: Series,
    /// Log time of the first record taken since the rule started.
    first_record: Option<u64>,
    /// Whether a line showed a wait token handed out before the log began
    /// ([`Seen::stranger`]).
    stranger_seen: bool,
    /// Lines read, and what became of them (the rule adds its writes).
    pub counters: Counters,
}

impl Intake {
    /// An empty intake over [`WINDOW`] seconds.
    pub fn new() -> Intake {
        Intake {
            series: Series::new(WINDOW as usize),
            first_record: None,
            stranger_seen: false,
            counters: Counters::default(),
        }
    }

    /// Takes in one record at clock time `now` (Unix seconds), `crowd` as it
    /// stands before it: whether it was counted (`false`: refused as too far
    /// ahead, or too old for the window).
    pub fn take(&mut self, record: &Record, now: u64, crowd: Sizes) -> bool {
        if record.t > now.saturating_add(MAX_CLOCK_SKEW) {
            self.counters.future_lines += 1;
            return false;
        }
        if self.series.newest().is_some_and(|newest| record.t > newest) {
            // The newest second is complete: note the crowd as it stood.
            self.note_crowd(crowd);
        }
        let Some(second) = self.series.at_mut(record.t) else {
            self.counters.late_lines += 1;
            return false;
        };
        self.counters.lines += 1;
        self.counters.unreadable_lines += u64::from(record.unreadable);
        self.first_record.get_or_insert(record.t);
        count(second, record);
        true
    }

    /// Adds what a record taken at log time `t` showed per token ([`Seen`]);
    /// `p` is the percentage its draw saw.
    pub fn tally(&mut self, t: u64, seen: Seen, p: Option<Percentage>) {
        self.stranger_seen |= seen.stranger;
        let Some(second) = self.series.at_mut(t) else {
            return;
        };
        second.arrivals += u64::from(seen.arrival);
        second.admissions += u64::from(seen.new_session);
        if let Some(won) = seen.draw {
            second.draws += 1;
            second.chances_micros += u64::from(p.map_or(0, Percentage::micros));
            second.draw_lag_seconds += seen.draw_lag;
            second.drawn_admissions += u64::from(won);
            second.held_wins += u64::from(seen.held);
        }
    }

    /// Counts one line that was not a readable room log line.
    pub fn bad_line(&mut self) {
        self.counters.bad_lines += 1;
    }

    /// Notes the crowd's sizes in the newest second.
    pub fn note_crowd(&mut self, crowd: Sizes) {
        if let Some(newest) = self.series.newest()
            && let Some(second) = self.series.at_mut(newest)
        {
            second.waiting = Some(crowd.waiting);
            second.active = Some(crowd.active);
        }
    }

    /// The per-second counts.
    pub fn series(&self) -> &Series {
        &self.series
    }

    /// The newest second of log seen.
    pub fn newest(&self) -> Option<u64> {
        self.series.newest()
    }

    /// Log time of the first record taken.
    pub fn first_record(&self) -> Option<u64> {
        self.first_record
    }

    /// Whether a line showed a wait token handed out before the log began.
    pub fn stranger_seen(&self) -> bool {
        self.stranger_seen
    }

    /// The last `seconds` seconds of counts up to the newest, oldest first.
    pub fn recent(&self, seconds: u64) -> Vec<(u64, Second)> {
        self.series.newest().map_or_else(Vec::new, |n| {
            let from = n.saturating_sub(seconds.saturating_sub(1));
            self.series.range(from, n).map(|(t, s)| (t, *s)).collect()
        })
    }
}

/// Adds one record to its second's counts of lines (the counts per token come
/// through [`Intake::tally`]).
fn count(second: &mut Second, record: &Record) {
    second.requests += 1;
    if let Some(p) = record.percentage {
        second.percentage_micros = Some(p.micros());
    }
    if matches!(record.session, Some(Session::Renewed | Session::Kept)) {
        second.renewals += 1;
    }
    if record.released {
        second.releases += 1;
    }
    if record.transition == Some(Transition::TollUnpaid) {
        second.toll_held += 1;
    }
}
