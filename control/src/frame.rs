//! The frame both rules run in: it takes in the log (the per-second counts and
//! the tokens), keeps the writes (when, the value last written, the propagation
//! delay), the options and their target, and shows the snapshot. What to write
//! is its [`Policy`]'s: the percentage ([`crate::percentage_rule::PercentagePolicy`]) or the FIFO
//! cutoff ([`crate::fifo_rule::FifoPolicy`]). Written once, so that the two rules
//! cannot drift apart in what they read, when they write and what they show;
//! the loops drive the frame itself.

use std::fmt::Debug;

use crate::intake::{Intake, Sizes};
use crate::options::BadOptions;
use crate::origin_rule::{Governor, LEAVING_SPAN, OriginAnswer, OriginOptions, Sessions};
use crate::record::Record;
use crate::schedule::{Schedule, Timing};
use crate::snapshot::{Counters, FifoStatus, Snapshot};
use crate::store_write::StoreWrite;
use crate::tokens::Tokens;
use waiting_room::settings::config::QueueingMethod;
use waiting_room::settings::percentage::Percentage;

/// What a rule decides. Each hook is given the whole frame, the policy's own
/// state being its `policy`.
pub trait Policy: Sized + Clone + Debug {
    /// What the operator asks of the rule.
    type Options: Clone + Debug;
    /// The setting it moves, as written and remembered (a percentage, a cutoff).
    type Value: Copy + PartialEq + Debug;
    /// One write to the config store.
    type Write: StoreWrite;
    /// The queueing method of the room it holds (the lines it expects).
    const QUEUEING: QueueingMethod;

    /// For `options`, once checked: the policy's state before any record, when
    /// the frame writes, and its token counts.
    fn start(options: &Self::Options) -> Result<(Self, Timing, Tokens), BadOptions>;
    /// The target in `options`, new sessions a minute.
    fn target(options: &mut Self::Options) -> &mut f64;
    /// Addresses waiting, as the rule counts them, and those left uncounted
    /// for want of capacity.
    fn waiting(frame: &Frame<Self>) -> (u64, u64);
    /// What the rule reads of a record, once the frame has counted it.
    fn observe(frame: &mut Frame<Self>, record: &Record, now: u64);
    /// At a tick at clock time `now`, before the decision: what the rule
    /// forgets or settles as the log's second `newest` closes.
    fn close_second(frame: &mut Frame<Self>, newest: u64, now: u64);
    /// The tick's decision at clock time `now`: the frame's `wanted`, and what
    /// goes with it.
    fn decide(frame: &mut Frame<Self>, now: u64);
    /// The write of what was decided, if one is due at clock time `now` (the
    /// frame has checked that it may write).
    fn write(frame: &Frame<Self>, now: u64) -> Option<Self::Write>;
    /// A write of the heartbeat alone at clock time `now`: what the rule writes
    /// when its heartbeat is due and nothing else changed (`wrctl control`
    /// sends it with another room's write).
    fn heartbeat_alone(now: u64) -> Self::Write;
    /// The config store took `write` at clock time `now`.
    fn written(frame: &mut Frame<Self>, write: &Self::Write, now: u64);
    /// A write failed.
    fn failed(_: &mut Frame<Self>) {}
    /// A value as the [`Snapshot`] shows it: only percentages are shown there.
    fn shown(value: Self::Value) -> Option<Percentage>;
    /// What `write` sets, for a person.
    fn describe(frame: &Frame<Self>, write: &Self::Write) -> String;
    /// The FIFO rule's own figures, with `seconds` of series.
    fn fifo_status(_: &Frame<Self>, _seconds: u64) -> Option<FifoStatus> {
        None
    }
}

/// A controller: state in, decision out, deciding as its policy `P` does.
#[derive(Debug, Clone)]
pub struct Frame<P: Policy> {
    pub(super) options: P::Options,
    /// The per-second counts, the first record and the lines' counters.
    pub(super) intake: Intake,
    /// Who holds which token.
    pub(super) tokens: Tokens,
    /// When to write, the value last written, and the propagation delay.
    pub(super) schedule: Schedule<P::Value>,
    /// The value the last decision asked for.
    pub(super) wanted: Option<P::Value>,
    /// What the policy keeps of its own.
    pub(super) policy: P,
    /// The origin rule, when the target follows the origin's health.
    pub(super) origin: Option<Governor>,
}

impl<P: Policy> Frame<P> {
    /// A controller with checked options.
    pub fn new(options: P::Options) -> Result<Frame<P>, BadOptions> {
        let (policy, timing, tokens) = P::start(&options)?;
        Ok(Frame {
            options,
            intake: Intake::new(),
            tokens,
            schedule: Schedule::new(timing),
            wanted: None,
            policy,
            origin: None,
        })
    }

    /// The same controller with its target set by the origin's health
    /// ([`crate::origin_rule`]): the options' target is where it starts, within the
    /// floor and the ceiling.
    pub fn following_origin(mut self, origin: OriginOptions) -> Result<Frame<P>, BadOptions> {
        let mut governor = Governor::new(origin)?;
        let target = P::target(&mut self.options);
        *target = governor.hold(*target);
        self.origin = Some(governor);
        Ok(self)
    }

    /// The options it runs with.
    pub fn options(&self) -> &P::Options {
        &self.options
    }

    /// Lines read, and what became of them.
    pub fn counters(&self) -> Counters {
        self.intake.counters
    }

    /// The crowd's current sizes.
    fn sizes(&self) -> Sizes {
        Sizes {
            waiting: P::waiting(self).0,
            active: self.tokens.active.len(),
        }
    }
}

impl<P: Policy> Frame<P> {
    /// The origin rule's reading, when one is due at the log's newest second
    /// `newest`: the target it sets.
    fn follow_origin(&mut self, newest: u64) {
        let Some(options) = self.origin.as_ref().map(|g| *g.options()) else {
            return;
        };
        // A write made now lands a propagation delay and up to a tick later.
        let ahead = self.schedule.propagation_delay() + self.schedule.timing.tick;
        let sessions = live_sessions(
            self.intake.series(),
            newest,
            (options.session, options.healthy.window),
            ahead,
        );
        let waiting = P::waiting(self).0;
        let target = *P::target(&mut self.options);
        if let Some(governor) = &mut self.origin
            && let Some(next) = governor.tick(newest, sessions, waiting, target)
        {
            *P::target(&mut self.options) = next;
        }
    }
}

/// The sessions let in over the last `session` seconds up to `newest`, their
/// mean over the `window` seconds up to it, and the rate a minute at which
/// sessions end around the half window that starts `ahead` seconds after
/// `newest` (over [`LEAVING_SPAN`] centred on it).
fn live_sessions(
    series: &crate::series::Series,
    newest: u64,
    (session, window): (u64, u64),
    ahead: u64,
) -> Sessions {
    // Admissions of each second from `session + window` before `newest`.
    let start = (newest + 1).saturating_sub(session + window.max(LEAVING_SPAN));
    let admissions: Vec<u64> = (start..=newest)
        .map(|t| series.get(t).map_or(0, |s| s.admissions))
        .collect();
    let at = |t: u64| admissions[(t - start) as usize];
    let from = (newest + 1).saturating_sub(session);
    let mut live: u64 = (from..=newest).map(at).sum();
    // Those ending over LEAVING_SPAN centred on the half window from `ahead`
    // on (until the next reading's write lands), ended ones included.
    let middle = newest + ahead + (window / 2).max(1) / 2;
    let leaving_from = (middle + 1)
        .saturating_sub(session + LEAVING_SPAN / 2)
        .max(start);
    let leaving_to = (middle + LEAVING_SPAN / 2)
        .saturating_sub(session)
        .min(newest);
    let leaving: u64 = (leaving_from..=leaving_to).map(at).sum();
    // Back one second at a time: what came in that second leaves the count,
    // what came a session length before it joins.
    let (now, mut total, mut seconds) = (live, 0, 0u64);
    for t in ((newest + 1).saturating_sub(window)..=newest).rev() {
        total += live;
        seconds += 1;
        live -= at(t);
        if let Some(back) = t.checked_sub(session).filter(|&b| b >= start) {
            live += at(back);
        }
    }
    Sessions {
        live: now,
        over_window: total as f64 / seconds.max(1) as f64,
        leaving: leaving as f64 * 60.0 / LEAVING_SPAN as f64,
    }
}

/// What a loop (`wrctl control`, the simulator's closed loop) drives: records
/// and bad lines in, ticks, the outcome of each write, and what it shows.
impl<P: Policy> Frame<P> {
    /// The queueing method of the room it holds (the lines it expects).
    pub const QUEUEING: QueueingMethod = P::QUEUEING;

    /// A log record reaches the rule at clock time `now` (Unix seconds).
    pub fn observe(&mut self, record: &Record, now: u64) {
        self.schedule.heard(now);
        if !self.intake.take(record, now, self.sizes()) {
            return;
        }
        let seen = self.tokens.see(record);
        self.intake.tally(record.t, seen, record.percentage);
        if let (Some(governor), Some(answer)) = (&mut self.origin, record.origin) {
            governor.observe(record.t, answer, true);
        }
        P::observe(self, record, now);
    }

    /// A log line that did not parse.
    pub fn bad_line(&mut self) {
        self.intake.bad_line();
    }

    /// The rule's tick at clock time `now`: a write, if one is due (one a call
    /// at most; none while backing off after failed writes, none at all after
    /// `log_silence` without a record). Report the outcome with
    /// [`Frame::written`] or [`Frame::failed`].
    pub fn tick(&mut self, now: u64) -> Option<P::Write> {
        if let Some(newest) = self.intake.newest() {
            self.tokens.expire(newest);
            P::close_second(self, newest, now);
            let sizes = self.sizes();
            self.intake.note_crowd(sizes);
        }
        // The origin's answers may be another room's alone: the newest of either.
        let answered = self.origin.as_ref().and_then(Governor::newest);
        if let Some(newest) = self.intake.newest().max(answered) {
            self.follow_origin(newest);
        }
        P::decide(self, now);
        if !self.schedule.may_write(now) {
            return None;
        }
        P::write(self, now)
    }

    /// The config store took `write` at clock time `now`.
    pub fn written(&mut self, write: &P::Write, now: u64) {
        P::written(self, write, now);
        self.intake.counters.writes += 1;
    }

    /// The write failed at clock time `now`: the next attempt waits one tick,
    /// doubling with each failure in a row up to [`crate::schedule::MAX_BACKOFF`] seconds.
    pub fn failed(&mut self, now: u64) {
        P::failed(self);
        self.schedule.failed(now);
        self.intake.counters.write_failures += 1;
    }

    /// Whether it has stopped writing for want of log records.
    pub fn deaf(&self, now: u64) -> bool {
        self.schedule.deaf(now)
    }

    /// Seconds between two ticks.
    pub fn tick_seconds(&self) -> u64 {
        self.schedule.timing.tick
    }

    /// Seconds without a record after which it stops writing (`None`: never).
    pub fn log_silence(&self) -> Option<u64> {
        self.schedule.timing.log_silence
    }

    /// What the dashboard and the metrics show, with `seconds` of series.
    pub fn snapshot(&self, seconds: u64) -> Snapshot {
        let (waiting, overflow) = P::waiting(self);
        Snapshot {
            now: self.intake.newest(),
            written: self.schedule.written().and_then(P::shown),
            wanted: self.wanted.and_then(P::shown),
            last_write: self.schedule.last_write(),
            waiting,
            active: self.tokens.active.len(),
            overflow: overflow + self.tokens.active.overflow,
            counters: self.intake.counters,
            series: self.intake.recent(seconds),
            origin: self.origin.as_ref().map(|g| g.status(seconds)),
        }
    }

    /// The FIFO rule's own figures (`None` for the percentage).
    pub fn fifo_status(&self, seconds: u64) -> Option<FifoStatus> {
        P::fifo_status(self, seconds)
    }

    /// What `write` sets, for a person: the value written or the one kept.
    pub fn describe(&self, write: &P::Write) -> String {
        P::describe(self, write)
    }

    /// Holds `per_minute` new sessions a minute from now on (a scheduled event's
    /// target); a value that is not a positive number is ignored.
    pub fn set_target(&mut self, per_minute: f64) {
        if !(per_minute.is_finite() && per_minute > 0.0) {
            return;
        }
        match &mut self.origin {
            // The origin sets the target: an event's target is its ceiling.
            Some(governor) => *P::target(&mut self.options) = governor.set_ceiling(per_minute),
            None => *P::target(&mut self.options) = per_minute,
        }
    }

    /// The origin's answer to another room's request, logged at Unix second `t`:
    /// rooms behind one origin share its health ([`crate::origin_rule`]). Nothing
    /// when the rule does not follow the origin.
    pub fn other_room_origin(&mut self, t: u64, answer: OriginAnswer) {
        if let Some(governor) = &mut self.origin {
            governor.observe(t, answer, false);
        }
    }

    /// The ceiling of the origin rule, when the rule follows the origin.
    pub fn origin_ceiling(&self) -> Option<f64> {
        self.origin.as_ref().map(|g| g.options().ceiling)
    }

    /// Holds `share` (0 to 1) of the load the origin takes at its aim: rooms
    /// behind one origin share it in proportion to their ceilings.
    pub fn share_origin(&mut self, share: f64) {
        if let Some(governor) = &mut self.origin {
            governor.set_share(share);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::series::Series;

    #[test]
    fn counts_the_live_sessions_their_mean_over_the_window_and_those_leaving() {
        // One new session a second for 1,000 s, then none for 200 s; sessions
        // of 600 s, a window of 60 s.
        let mut series = Series::new(3600);
        for t in 0..1000 {
            series.at_mut(t).unwrap().admissions = 1;
        }
        series.at_mut(1199);
        let steady = live_sessions(&series, 999, (600, 60), 0);
        assert_eq!(steady.live, 600);
        assert_eq!(steady.over_window, 600.0);
        assert!((steady.leaving - 60.0).abs() < 1e-9, "{steady:?}");
        // 200 s on: the sessions of 600..1000 live; over the window, 200 to
        // 259 of them (the newest 59 seconds' sessions still live then).
        let after = live_sessions(&series, 1199, (600, 60), 0);
        assert_eq!(after.live, 400);
        assert!((after.over_window - 429.5).abs() < 1e-9, "{after:?}");
        // Ending within two minutes around 15 s on: all of them, one a second.
        assert!((after.leaving - 60.0).abs() < 1e-9, "{after:?}");
        // 400 s on, a write landing 30 s later: the two minutes centred on
        // 1,644 reach back to the sessions that ended from 1,585 on (let in
        // over 985..1,000): 15 in two minutes, 7.5 a minute.
        let late = live_sessions(&series, 1599, (600, 60), 30);
        assert_eq!(late.live, 0);
        assert!((late.leaving - 7.5).abs() < 1e-9, "{late:?}");
    }
}
