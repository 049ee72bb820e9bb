//! The controller's decisions: from the room's log records to the
//! `allow_percentage` that holds a target of new sessions a minute.
//!
//! A pure state machine with the clock passed in, so the live controller
//! (`wrctl control`), the simulator and the tests run the very same code; reading
//! logs and writing stores are the callers' business.
//!
//! # How it holds the target
//!
//! Every waiting visitor draws once per draw period (`2d`, `d` =
//! `wait_period_duration`), and each draw admits with probability `p`. So if `E`
//! draws are expected in the next period and the target allows `A` new sessions in
//! a period, the percentage is `p = A / E`. `E` is the addresses due to draw in the
//! period times the draws each address made over the last period (`r`: below 1
//! when visitors give up, above when several devices share an address), measured
//! against the addresses waiting at its start on the global grid, and against the
//! tokens that ended in it on the address grid (where a wave's first draws come
//! within the period it arrived in, and are its own, not more draws per address). When the room is open (100 %),
//! nobody waits, and `E` is the new sessions of the last period instead.
//!
//! The addresses due to draw come from a calendar of the wait tokens' ends (their
//! `exp`): the addresses drawing in a slot (`d` seconds) are those whose tokens end
//! in it, and those tokens were handed out two slots before (to the losers of that
//! slot's draws) and to arrivals. On the VCL's global grid every token ends on a
//! slot boundary (a multiple of `d`) and an arrival's first token ends at the
//! boundary after next. On the address grid (the room's default, [`crate::grid`])
//! tokens end on any second, each address at its own points `2d` apart, so each
//! waiting address draws exactly once in any `2d`; an arrival's first token ends
//! anywhere from `d` to `3d` ahead. The controller tells the grids apart by the
//! tokens themselves: a token ending off the slot boundaries in the last two draw
//! periods means the address grid. A write lands
//! after the log's lag, the propagation delay (measured: from a write to the first
//! log line showing it in effect) and half a tick, in a draw period of two slots;
//! each slot counts the addresses holding tokens that end at its start plus those
//! that already drew with one (a slot's winners drew in it too), and tokens still
//! to be handed out are predicted (the draws still due, losing at the percentage
//! in effect, and arrivals at their recent pace). Counting the crowd as a whole
//! instead missed both ways: a crowd draining at the target while a write takes a
//! minute to reach the edge fell to half the target in its last minutes, and a
//! percentage that rose as a slot's winners left over-admitted the rest; a wave
//! arriving lowered the percentage for draws its visitors were not yet part of.
//!
//! This is a feed-forward rule on the crowd, not feedback on the admissions, so a
//! percentage that takes tens of seconds to reach the edge cannot make it
//! oscillate: each write is computed from the crowd alone.
//!
//! Before two draw periods of log, a provisional percentage assumes every address
//! seen waiting draws once a period, and is written only when it is lower than the
//! one in effect (a controller that starts while a crowd waits may have seen only
//! part of it): it lets a flash crowd meet the target from its first draw, a wait
//! period after it arrives. (Letting it raise the percentage too, when the
//! controller had seen the whole crowd arrive, fixed the steady crowd's third minute
//! at 30 s of propagation but sent 1.6 and 2.3 times the target in its first two
//! minutes at 0 s, and lowered its third minute to 0.72 times with `--start 25` at
//! 60 s: it was taken out.)
//!
//! Until a write of its own shows in the log, the controller takes the propagation
//! delay to be [`Options::expected_propagation`] (30 s unless told): assuming none
//! aimed the first computed write at a period that had already begun by the time it
//! landed.
//!
//! With `max_active`, `A` is also capped at the free places (`max_active` minus the
//! addresses holding a live allow token).

pub mod crowd;
pub mod fifo;
mod intake;
mod schedule;
pub mod series;

use std::collections::BTreeMap;
use std::fmt;

use crate::decision::{Decision, Transition};
use crate::log::Record;
use crate::percentage::Percentage;
use crowd::Crowd;
use intake::{Intake, Sizes};
use schedule::{Schedule, Timing};
use series::Second;

/// Config-store key the controller writes its percentage to.
pub const PERCENTAGE_KEY: &str = crate::config::ALLOW_PERCENTAGE;
/// Config-store key the controller writes its heartbeat to.
pub const HEARTBEAT_KEY: &str = crate::config::CONTROLLER_HEARTBEAT;
/// Seconds of log time the controller keeps per-second counts for.
pub const WINDOW: u64 = 3600;
/// Records stamped further than this ahead of the controller's clock are refused
/// (a wrong clock or a forged line must not move the window).
pub const MAX_CLOCK_SKEW: u64 = 300;
/// Longest wait between two attempts after failed writes, seconds.
pub const MAX_BACKOFF: u64 = 300;
/// Default of [`Options::log_silence`], seconds.
pub const DEFAULT_LOG_SILENCE: u64 = 300;
/// Default of [`Options::expected_propagation`], seconds: the middle of the 0-60 s
/// a config-store write takes to reach the edge in the closed-loop runs, so that the
/// first write aims at most 30 s off either way.
pub const DEFAULT_EXPECTED_PROPAGATION: u64 = 30;

/// What the operator asks of the controller.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// New sessions a minute to hold.
    pub target_per_minute: f64,
    /// At most this many live sessions (addresses with a live allow token).
    pub max_active: Option<u64>,
    /// Lowest percentage ever written.
    pub min: Percentage,
    /// Highest percentage ever written.
    pub max: Percentage,
    /// Seconds between two ticks (one write at most each).
    pub tick: u64,
    /// Seconds after which the heartbeat is written even if nothing changed.
    pub heartbeat_every: u64,
    /// The room's `wait_period_duration`, seconds.
    pub wait_period: u64,
    /// The room's redeem window, seconds (`None`: one wait period, as the room's default).
    pub redeem_window: Option<u64>,
    /// Written at the first tick, before the controller has seen a draw period.
    pub start: Option<Percentage>,
    /// Most addresses tracked per kind (waiting, admitted).
    pub capacity: usize,
    /// Seconds without a single log record after which the controller stops
    /// writing, heartbeat included, so the edge's heartbeat rule takes over (its
    /// fallback percentage and `ALERT=controller-stale`) instead of a percentage
    /// held up by a controller gone blind. `None`: never.
    pub log_silence: Option<u64>,
    /// Seconds from a write to the edge using it, taken until the controller has
    /// measured it (a write of its own showing in the log). `None`: none.
    pub expected_propagation: Option<u64>,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            target_per_minute: 60.0,
            max_active: None,
            min: Percentage::STEP,
            max: Percentage::HUNDRED,
            tick: 10,
            heartbeat_every: 30,
            wait_period: crate::config::DEFAULT_WAIT_PERIOD_DURATION,
            redeem_window: None,
            start: None,
            capacity: 10_000_000,
            log_silence: Some(DEFAULT_LOG_SILENCE),
            expected_propagation: Some(DEFAULT_EXPECTED_PROPAGATION),
        }
    }
}

/// Why options cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadOptions(pub String);

impl fmt::Display for BadOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BadOptions {}

impl Options {
    /// Checks the options make sense together.
    pub fn check(&self) -> Result<(), BadOptions> {
        let bad = |why: &str| Err(BadOptions(why.to_string()));
        if !(self.target_per_minute.is_finite() && self.target_per_minute > 0.0) {
            return bad("the target must be a positive number of new sessions a minute");
        }
        if self.min > self.max {
            return bad("--min is above --max");
        }
        if self.min.is_zero() {
            // 0 closes the room and deletes every waiting visitor's cookie: never
            // the controller's call.
            return bad("--min must be above 0 (0 closes the room: do that by hand)");
        }
        if self.log_silence == Some(0) {
            return bad("the log silence must be at least 1 s");
        }
        if self.tick == 0 || self.heartbeat_every == 0 {
            return bad("the tick and the heartbeat interval must be at least 1 s");
        }
        if !(1..=crate::config::MAX_DURATION).contains(&self.wait_period) {
            return bad("the wait period must be 1 s to a year");
        }
        if self.start.is_some_and(|p| p < self.min || p > self.max) {
            return bad("the start percentage is outside --min..--max");
        }
        Ok(())
    }

    /// The draw period: `2d`, within the window the controller keeps.
    pub fn draw_period(&self) -> u64 {
        self.wait_period.saturating_mul(2).clamp(2, WINDOW / 2)
    }

    fn redeem_window(&self) -> u64 {
        self.redeem_window.unwrap_or(self.wait_period)
    }

    fn timing(&self) -> Timing {
        Timing {
            tick: self.tick,
            heartbeat_every: self.heartbeat_every,
            log_silence: self.log_silence,
            expected_propagation: self.expected_propagation,
        }
    }
}

/// Lines read, and what became of them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counters {
    /// Records counted.
    pub lines: u64,
    /// Lines that were not room log lines, or not readable (the reader counts these).
    pub bad_lines: u64,
    /// Records older than the window.
    pub late_lines: u64,
    /// Records stamped too far in the future.
    pub future_lines: u64,
    /// Writes confirmed.
    pub writes: u64,
    /// Writes that failed.
    pub write_failures: u64,
}

/// One write to the config store: the heartbeat, and the percentage when it changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Write {
    /// The new `allow_percentage`, when it changed.
    pub allow_percentage: Option<Percentage>,
    /// `controller_heartbeat`: Unix seconds of this write.
    pub heartbeat: u64,
}

impl Write {
    /// The config-store items to write, key and value.
    pub fn items(&self) -> Vec<(&'static str, String)> {
        let mut items = Vec::with_capacity(2);
        if let Some(p) = self.allow_percentage {
            items.push((PERCENTAGE_KEY, p.to_string()));
        }
        items.push((HEARTBEAT_KEY, self.heartbeat.to_string()));
        items
    }
}

/// The controller: state in, decision out.
#[derive(Debug, Clone)]
pub struct Controller {
    options: Options,
    /// The per-second counts, the first record and the lines' counters.
    intake: Intake,
    waiting: Crowd,
    active: Crowd,
    /// The percentage the last decision asked for.
    wanted: Option<Percentage>,
    /// When to write, the percentage last written, and the propagation delay.
    schedule: Schedule<Percentage>,
    /// The clock at the last tick.
    clock: Option<u64>,
    /// Wait tokens that were drawn or replaced, by the second they end (so that a
    /// slot's addresses count after they drew in it).
    moved: BTreeMap<u64, u64>,
    /// Log time of the newest wait token seen ending off the slot boundaries (not
    /// a multiple of `d`): the room runs the address draw grid.
    off_slot: Option<u64>,
    /// Addresses that started waiting (a first wait token, none held), by second.
    newcomers: BTreeMap<u64, u64>,
    /// Wait tokens that ended without being drawn (their holders gave up), by the
    /// second they stopped counting (as [`Controller::moved`]).
    expired: BTreeMap<u64, u64>,
}

impl Controller {
    /// A controller with checked options.
    pub fn new(options: Options) -> Result<Controller, BadOptions> {
        options.check()?;
        Ok(Controller {
            intake: Intake::new(true),
            waiting: Crowd::new(options.capacity),
            active: Crowd::new(options.capacity),
            schedule: Schedule::new(options.timing()),
            options,
            wanted: None,
            clock: None,
            moved: BTreeMap::new(),
            off_slot: None,
            newcomers: BTreeMap::new(),
            expired: BTreeMap::new(),
        })
    }

    /// The options it runs with.
    pub fn options(&self) -> &Options {
        &self.options
    }

    /// Counts one line that was not a readable room log line.
    pub fn bad_line(&mut self) {
        self.intake.bad_line();
    }

    /// Lines read, and what became of them.
    pub fn counters(&self) -> Counters {
        self.intake.counters
    }

    /// Takes in one log record; `now` is the controller's clock (Unix seconds).
    pub fn observe(&mut self, record: &Record, now: u64) {
        self.schedule.heard(now);
        if !self.intake.take(record, now, self.sizes()) {
            return;
        }
        self.measure_propagation(record);

        let uid = record.uid.as_str();
        let redeem = self.options.redeem_window();
        let held = self.waiting.until(uid);
        match record.decision {
            Some(Decision::Anon | Decision::Wait | Decision::ReWait) => {
                if record.transition == Some(Transition::SessionExpired) {
                    self.active.leave(uid);
                }
                match record.exp {
                    Some(exp) => {
                        if !exp.is_multiple_of(self.options.wait_period.max(1)) {
                            self.off_slot = Some(record.t);
                        }
                        if held.is_none() && record.is_arrival() {
                            *self.newcomers.entry(record.t).or_default() += 1;
                        }
                        self.waiting.hold(uid, exp.saturating_add(redeem));
                    }
                    None => self.waiting.leave(uid),
                }
            }
            Some(Decision::Allow) => {
                self.waiting.leave(uid);
                match record.exp {
                    _ if record.released => self.active.leave(uid),
                    Some(exp) => self.active.hold(uid, exp),
                    None => {}
                }
            }
            Some(Decision::Deny) => {
                self.waiting.leave(uid);
                self.active.leave(uid);
            }
            None => {}
        }
        if let Some(held) = held
            && self.waiting.until(uid) != Some(held)
        {
            *self.moved.entry(held).or_default() += 1;
        }
    }

    /// Decides at clock time `now` whether to write, and what. At most one write
    /// per call; none when the percentage has not changed and the heartbeat is
    /// not yet due, none while backing off after failed writes, and none at all
    /// after [`Options::log_silence`] seconds without a log record. Report the
    /// outcome with [`Controller::written`] or [`Controller::failed`].
    pub fn tick(&mut self, now: u64) -> Option<Write> {
        self.clock = Some(now);
        self.close_second();
        self.wanted = self.percentage().or(self.options.start).or(self.wanted);
        if !self.schedule.may_write(now) {
            return None;
        }
        let changed = self.schedule.changed(self.wanted);
        (changed.is_some() || self.schedule.heartbeat_due(now)).then_some(Write {
            allow_percentage: changed,
            heartbeat: now,
        })
    }

    /// Whether the controller has stopped writing because no log record has come
    /// for longer than [`Options::log_silence`] (at clock time `now`).
    pub fn deaf(&self, now: u64) -> bool {
        self.schedule.deaf(now)
    }

    /// The write was carried out.
    pub fn written(&mut self, write: &Write, now: u64) {
        self.schedule.succeeded(write.allow_percentage, now);
        self.intake.counters.writes += 1;
    }

    /// The write failed: the next attempt waits one tick, doubling with each
    /// failure in a row up to [`MAX_BACKOFF`] seconds.
    pub fn failed(&mut self, now: u64) {
        self.schedule.failed(now);
        self.intake.counters.write_failures += 1;
    }

    /// The percentage that holds the target, from what the log has shown.
    ///
    /// After two draw periods of log (one to see every waiting address, one to
    /// see how often they draw), the full estimate. Before that, a provisional
    /// one that assumes every address seen waiting draws once a period, and that
    /// only ever lowers the percentage in effect (as the newest lines log it):
    /// the addresses seen so far may be only part of the crowd (a controller that
    /// starts, or restarts, while a crowd waits), so the provisional estimate is
    /// too high rather than too low, and only a lower one is safe to write. It is
    /// what lets a flash crowd meet the target before its first draw. `None`
    /// when neither applies.
    pub fn percentage(&self) -> Option<Percentage> {
        let newest = self.intake.newest()?;
        let period = self.options.draw_period();
        if newest + 1 < self.intake.first_record()?.saturating_add(2 * period) {
            return self.provisional();
        }
        let since = newest + 1 - period;
        let draws = self.intake.series().sum(since, newest + 1, |s| s.draws) as f64;
        // Draws per waiting address over the last period: the addresses waiting
        // at its start have all had their turn since (the bounds keep one odd
        // period from swinging the estimate).
        // (Crowd sizes are noted as each second with records closes.)
        let look_back = since.saturating_sub(self.options.draw_period());
        let waiting_then = self
            .intake
            .series()
            .range(look_back, since - 1)
            .rev()
            .find_map(|(_, s)| s.waiting);
        let per_address = if self.address_grid(newest) {
            // Each address draws at its token's end: the draws the period owed
            // are the tokens that ended in it, drawn or not (a wave's first
            // draws, a wait period after it arrives, are its own).
            let redeem = self.options.redeem_window();
            let (from, to) = (since + redeem, newest + 1 + redeem);
            let due = self.waiting.ending_within(from, to)
                + [&self.moved, &self.expired]
                    .iter()
                    .map(|ended| ended.range(from..to).map(|(_, n)| n).sum::<u64>())
                    .sum::<u64>();
            match due {
                0 => 1.0,
                due => (draws / due as f64).clamp(0.1, 2.0),
            }
        } else {
            match waiting_then {
                Some(w) if w > 0 => (draws / w as f64).clamp(0.1, 2.0),
                _ => 1.0,
            }
        };
        let landing = self.landing(newest, per_address);
        let mut expected = (landing.addresses[0] + landing.addresses[1]) * per_address;
        let open = self
            .intake
            .series()
            .range(since, newest)
            .filter(|(_, s)| s.percentage_micros == Some(Percentage::HUNDRED.micros()))
            .count() as u64
            * 2
            > period;
        if open {
            let admissions = self
                .intake
                .series()
                .sum(since, newest + 1, |s| s.admissions) as f64;
            expected = expected.max(admissions);
        }
        let p = self.bounded(self.allowed(), expected);
        if open {
            return Some(p);
        }
        Some(match self.left_in_period(newest, per_address, &landing) {
            Some(left) => p.min(left),
            None => p,
        })
    }

    /// What is left of the period's allowance for the draws after the write
    /// lands: the allowance, less the new sessions the log shows in the period so
    /// far and those expected of its draws before the write lands (at the
    /// percentages written to land by then, or the one in effect), over the draws
    /// after (spread evenly over each slot's seconds, as the visitors' phases
    /// spread them on the global grid and the addresses' offsets on the address
    /// grid). A write that lands in the middle of a period cannot undo
    /// what the draws before it admitted: a wave that drew at the percentage
    /// left by a draining crowd, before the write that saw it landed, used part
    /// of the period's allowance. `None` when the write lands at the period's
    /// start. Only ever lowers the percentage (the caller takes the lower).
    fn left_in_period(
        &self,
        newest: u64,
        per_address: f64,
        landing: &Landing,
    ) -> Option<Percentage> {
        let d = self.options.wait_period.max(1);
        let starts = landing.lands.saturating_sub(self.options.tick / 2);
        if starts <= landing.first {
            return None;
        }
        let in_effect = self.in_effect(newest);
        // The percentage in effect at `t`: the newest write landed by then.
        let at = |t: u64| {
            self.schedule
                .landed_by(t)
                .map_or(in_effect, |p| p.fraction())
        };
        let (mut before, mut after) = (0.0, 0.0);
        // On the address grid a token ending at `e` draws at `e + 1`: a slot's
        // draws spread over its `d` seconds after its start. On the global grid
        // they spread over the visitors' phases, `d - 1` seconds.
        let window = if self.address_grid(newest) {
            d
        } else {
            d.saturating_sub(1).max(1)
        };
        for (k, addresses) in landing.addresses.iter().enumerate() {
            let x = landing.first + k as u64 * d;
            let per_second = addresses * per_address / window as f64;
            for t in x + 1..=x + window {
                if t >= starts {
                    after += per_second;
                } else if t > newest {
                    before += per_second * at(t);
                }
            }
        }
        let spent = self
            .intake
            .series()
            .sum(landing.first, newest + 1, |s| s.admissions) as f64;
        let left = (self.allowed() - spent - before).max(0.0);
        (after >= 1.0).then(|| self.bounded(left, after))
    }

    /// The percentage the newest lines show in effect, as a fraction (0 when none do).
    fn in_effect(&self, newest: u64) -> f64 {
        self.intake
            .series()
            .range(newest.saturating_sub(self.options.draw_period()), newest)
            .rev()
            .find_map(|(_, s)| s.percentage_micros)
            .map_or(0.0, |p| Percentage::from_micros(p).fraction())
    }

    /// The draw period a write made now lands in, and the addresses expected to
    /// draw in each of its slots.
    ///
    /// The addresses drawing in a slot are those whose tokens end in it (on the
    /// global grid at its start), and those tokens were handed out two slots
    /// before, to the losers of that slot's draws, and to arrivals (on the global
    /// grid those of the slot two before; on the address grid those of the `3d`
    /// before it). The tokens' `exp` is thus a calendar of the draws to come. The
    /// write lands after the log's lag (the clock against the newest line), the
    /// propagation delay (as last measured) and half a tick (a write holds until
    /// the next one lands), in a draw period of two slots (periods start on
    /// multiples of `2d`). Each of its slots counts the addresses holding tokens
    /// that end in it, and those that drew with one already (a slot's
    /// winners drew in it too: a percentage that rose as they left would admit
    /// the rest at a higher rate). Tokens still to be handed out are predicted:
    /// the slot's draws still to come, losing at the percentage in effect (and
    /// showing up at the rate measured), and arrivals (addresses that start
    /// waiting) at the last tick's pace.
    fn landing(&self, newest: u64, per_address: f64) -> Landing {
        let d = self.options.wait_period.max(1);
        let lag = self.clock.map_or(0, |c| c.saturating_sub(newest));
        let lands = newest + lag + self.schedule.propagation_delay() + self.options.tick / 2;
        let slot = lands / d;
        let first = (slot - slot % 2) * d;
        let in_effect = self.in_effect(newest);
        let tick = self.options.tick.clamp(1, self.options.draw_period());
        // Addresses that started waiting (a device joining an address that
        // already waits adds no draw).
        let arrivals: u64 = self
            .newcomers
            .range(newest + 1 - tick.min(newest + 1)..=newest)
            .map(|(_, n)| n)
            .sum();
        let ahead = Ahead {
            newest,
            d,
            stay: per_address.min(1.0) * (1.0 - in_effect),
            pace: arrivals as f64 / tick as f64,
            address_grid: self.address_grid(newest),
        };
        Landing {
            first,
            lands,
            addresses: [
                self.tokens_ending_at(first, &ahead, 4),
                self.tokens_ending_at(first + d, &ahead, 4),
            ],
        }
    }

    /// Whether the room runs the address draw grid: a wait token ending off the
    /// slot boundaries showed in the last two draw periods of log (on the global
    /// grid every token ends on one; on the address grid all but one in `d`).
    fn address_grid(&self, newest: u64) -> bool {
        self.off_slot
            .is_some_and(|t| t.saturating_add(2 * self.options.draw_period()) >= newest)
    }

    /// Addresses holding (or having drawn with) a wait token ending in the slot
    /// starting at `x` (within its `d` seconds: on the global grid at its start,
    /// on the address grid on any of them), predicted while such tokens are still
    /// being handed out: to the losers of the draws of the slot two before
    /// (until `x - d`), and to arrivals (see [`Ahead::arrival_share`]).
    fn tokens_ending_at(&self, x: u64, ahead: &Ahead, depth: u32) -> f64 {
        let (redeem, d) = (self.options.redeem_window(), ahead.d);
        let live = |x: u64| self.waiting.ending_within(x + redeem, x + d + redeem) as f64;
        let moved: u64 = self
            .moved
            .range(x + redeem..x + d + redeem)
            .map(|(_, n)| n)
            .sum();
        let known = live(x) + moved as f64;
        let newest = ahead.newest;
        if depth == 0 {
            return known;
        }
        // Losers of the slot two before: tokens ending at `x` go to those who
        // drew in the slot starting at `x - 2d`.
        let source = x.saturating_sub(2 * d);
        let losers = if newest + 1 >= x.saturating_sub(d) {
            0.0
        } else if newest >= source {
            live(source) * ahead.stay
        } else {
            self.tokens_ending_at(source, ahead, depth - 1) * ahead.stay
        };
        known + losers + ahead.pace * ahead.arrival_share(newest + 1, x)
    }

    /// A line showing a percentage written earlier measures the propagation
    /// delay: from the newest write of that percentage made at or before the
    /// line's time (older writes are dropped with it).
    fn measure_propagation(&mut self, record: &Record) {
        if let Some(p) = record.percentage {
            self.schedule
                .measure_propagation(record.t, |written| written == p);
        }
    }

    /// Before two draw periods: the target over the addresses seen waiting (on
    /// the address grid, less those the percentage in effect is expected to admit
    /// before the write lands), when that is below the percentage the newest
    /// lines show in effect and the one last written (an operator's `start`
    /// stands until then).
    fn provisional(&self) -> Option<Percentage> {
        let newest = self.intake.newest()?;
        let in_effect = self
            .intake
            .series()
            .range(newest.saturating_sub(self.options.draw_period()), newest)
            .rev()
            .find_map(|(_, s)| s.percentage_micros)
            .map(Percentage::from_micros)?;
        if self.waiting.is_empty() {
            return None;
        }
        let mut crowd = self.waiting.len() as f64;
        if self.address_grid(newest) {
            // A first token ends from `d` after its arrival: the tokens ending
            // before the write lands draw at the percentage in effect, and those
            // they admit are not there when it lands (on the global grid a crowd's
            // first tokens end together, two slots on, and draw over the slot
            // after).
            let lag = self.clock.map_or(0, |c| c.saturating_sub(newest));
            let lands = newest + lag + self.schedule.propagation_delay() + self.options.tick / 2;
            let redeem = self.options.redeem_window();
            let drawing = self.waiting.ending_within(0, lands.saturating_add(redeem)) as f64;
            crowd -= drawing * in_effect.fraction();
        }
        let p = self.bounded(self.allowed(), crowd);
        let lowest = self
            .schedule
            .written()
            .map_or(in_effect, |w| w.min(in_effect));
        (p < lowest).then_some(p)
    }

    /// New sessions the target allows in one draw period (capped at the free
    /// places under `max_active`).
    fn allowed(&self) -> f64 {
        let mut allowed = self.options.target_per_minute * self.options.draw_period() as f64 / 60.0;
        if let Some(max_active) = self.options.max_active {
            allowed = allowed.min(max_active.saturating_sub(self.active.len()) as f64);
        }
        allowed
    }

    /// `allowed / expected` within the options' bounds (the maximum when no draw
    /// is expected).
    fn bounded(&self, allowed: f64, expected: f64) -> Percentage {
        let p = if expected < 1.0 {
            self.options.max
        } else {
            Percentage::from_fraction(allowed / expected)
        };
        p.clamp(self.options.min, self.options.max)
    }

    /// Expires places that ended and notes the crowd in the newest second.
    fn close_second(&mut self) {
        let Some(newest) = self.intake.newest() else {
            return;
        };
        for (until, n) in self.waiting.ends_before(newest) {
            *self.expired.entry(until).or_default() += n;
        }
        self.waiting.expire(newest);
        self.active.expire(newest);
        let keep_from = newest.saturating_sub(2 * self.options.draw_period());
        self.moved = self.moved.split_off(&keep_from);
        self.newcomers = self.newcomers.split_off(&keep_from);
        self.expired = self.expired.split_off(&keep_from);
        self.note_crowd();
    }

    /// Notes the crowd's current sizes in the newest second.
    fn note_crowd(&mut self) {
        let sizes = self.sizes();
        self.intake.note_crowd(sizes);
    }

    /// The crowd's current sizes.
    fn sizes(&self) -> Sizes {
        Sizes {
            waiting: self.waiting.len(),
            active: self.active.len(),
        }
    }

    /// What the dashboard and the metrics show.
    pub fn snapshot(&self, seconds: u64) -> Snapshot {
        Snapshot {
            now: self.intake.newest(),
            written: self.schedule.written(),
            wanted: self.wanted,
            last_write: self.schedule.last_write(),
            waiting: self.waiting.len(),
            active: self.active.len(),
            overflow: self.waiting.overflow + self.active.overflow,
            counters: self.intake.counters,
            series: self.intake.recent(seconds),
        }
    }
}

/// Where a write made now lands, and who draws around it.
struct Landing {
    /// Start of the draw period it lands in.
    first: u64,
    /// When it lands (the middle of the tick it holds for).
    lands: u64,
    /// Addresses drawing in each of the period's two slots.
    addresses: [f64; 2],
}

/// What the prediction of the draws to come works from.
struct Ahead {
    /// The newest second of log.
    newest: u64,
    /// The wait period.
    d: u64,
    /// Share of a slot's addresses that draw and lose, and so hold the next token.
    stay: f64,
    /// Arrivals per second.
    pace: f64,
    /// Whether new tokens end on each address's own grid (else on the slot
    /// boundaries).
    address_grid: bool,
}

impl Ahead {
    /// How many of the visitors arriving each second from `from` on get a first
    /// wait token ending in the slot starting at `x`. On the global grid: those
    /// arriving in the slot starting at `x - 2d`. On the address grid an arrival
    /// at `a` gets a token ending anywhere in `a + d .. a + 3d` (its address's
    /// first point at least `d` ahead, the offsets spread evenly), so arrivals
    /// from `x - 3d` until `x` feed the slot: a share `u / 2d` of those arriving
    /// `u` seconds before `x` for `u` up to `d`, half of them from `d` to `2d`,
    /// then `(3d - u) / 2d` (together `d` seconds' worth, as on the global grid).
    fn arrival_share(&self, from: u64, x: u64) -> f64 {
        let d = self.d as f64;
        if !self.address_grid {
            let (start, end) = (x.saturating_sub(2 * self.d), x.saturating_sub(self.d));
            return end.saturating_sub(from.max(start)) as f64;
        }
        // The share of arrivals within `u` seconds before `x`, integrated.
        let within = |u: f64| {
            if u <= d {
                u * u / (4.0 * d)
            } else if u <= 2.0 * d {
                d / 4.0 + (u - d) / 2.0
            } else if u <= 3.0 * d {
                d - (3.0 * d - u).powi(2) / (4.0 * d)
            } else {
                d
            }
        };
        within(x.saturating_sub(from) as f64)
    }
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
}

#[cfg(test)]
mod tests;
