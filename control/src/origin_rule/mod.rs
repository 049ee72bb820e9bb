//! The origin rule, which sets the target the other rules hold from the
//! origin's health: the [`Governor`] holds the origin's answers over the last
//! window (`origin_ms=`, `origin_status=`, `origin_error=` of the room's lines),
//! its readings, its base (its own time unloaded) and the live-session limit; it
//! reads them and the sessions let in every half window; it writes the new target
//! (rising while the origin is healthy and does not queue, the live sessions
//! that hold its p95 at the aim while it queues, the floor while it is unhealthy),
//! between the operator's floor and ceiling. The derivation and why each
//! constant is what it is: `docs/research/controller-rules.md`, the origin rule.

mod window;

use std::fmt;
use std::str::FromStr;

use window::Z95;
pub use window::{OriginAnswer, Reading, Window, p95};

use crate::options::{BadOptions, WINDOW};

/// Fewer answers than this in the window are no reading of the origin: the target is held.
pub const MIN_ANSWERS: u64 = 30;
/// The p95 the target aims at, as a share of the bound.
pub const AIM: f64 = 0.8;
/// Weight of a new deviation in [`Governor`]'s spread of the p95 (RFC 6298's β).
pub const SPREAD_WEIGHT: f64 = 0.25;
/// Spreads of the p95 the aim keeps under the bound: the aim is at most `bound × e^(−2 ×
/// spread)`.
pub const SPREAD_MARGIN: f64 = 2.0;
/// The most one deviation counts for in the spread: ln 2.
pub const SPREAD_STEP_MOST: f64 = std::f64::consts::LN_2;
/// A p95 this many times the base, the low end of its interval too, is queueing; a reading as
/// much faster than one at no higher load is a changed origin.
pub const QUEUEING: f64 = 1.1;
/// The most the target rises in one half window: twice a minute, as the
/// room's percentage may rise at most twice a draw period.
pub const STEP_UP: f64 = std::f64::consts::SQRT_2;
/// Share of the live sessions that overloaded the origin that the live limit stays under after.
pub const AFTER_OVERLOAD: f64 = 1.0 - LEAST_CHANGE;
/// Weight of a new estimate of the load at the aim against the last: two
/// windows' worth, so that one noisy p95 moves the target half as much.
pub const SMOOTHING: f64 = 0.5;
/// Healthy readings of the last session length the trend of the p95 against the load is read
/// from, at least.
pub const TREND_READINGS: usize = 3;
/// The span of loads (highest over lowest) over which a flat trend says the base as well as a
/// falling one.
pub const FLAT_SPAN: f64 = 2.0;
/// Answers a reading needs to count in the trend: the fewest whose p95's 95 % interval is
/// bounded above.
pub const TREND_ANSWERS: u64 = 73;
/// The least relative change of the target made, but a cut: below it, the
/// estimate's noise from one reading to the next would dither the target.
pub const LEAST_CHANGE: f64 = 0.05;
/// Seconds over which the free places under the live-session limit are filled (the gap shrinks
/// by e in that time).
pub const FILL_SECONDS: f64 = 240.0;
/// Seconds over which the sessions that end are counted, centred on the span a write governs.
pub const LEAVING_SPAN: u64 = 120;
/// Session lengths at the floor, still unhealthy, before the origin is called slow.
pub const SLOW_AFTER_SESSIONS: u64 = 2;

/// What healthy means for one origin: its p95 within a bound and its errors
/// within a share, over a window. Written `p95<800ms,errors<1%` (the window
/// 60 s unless `window=30s` says otherwise): the terms of a service-level
/// objective, one flag, the same text on the dashboard.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Healthy {
    /// The p95 of the time to the response's headers, milliseconds.
    pub p95_ms: u64,
    /// The most errors, as a share of the answers (0 to 1).
    pub error_share: f64,
    /// Seconds of answers read at once.
    pub window: u64,
}

/// Default of [`Healthy::error_share`]: 1 %.
pub const DEFAULT_ERROR_SHARE: f64 = 0.01;
/// Default of [`Healthy::window`], seconds.
pub const DEFAULT_WINDOW: u64 = 60;

impl FromStr for Healthy {
    type Err = BadOptions;

    fn from_str(text: &str) -> Result<Healthy, BadOptions> {
        let bad = |why: String| BadOptions(format!("origin health {text:?}: {why}"));
        let mut p95_ms = None;
        let mut error_share = DEFAULT_ERROR_SHARE;
        let mut window = DEFAULT_WINDOW;
        for term in text.split(',').map(str::trim) {
            if let Some(bound) = term.strip_prefix("p95<") {
                p95_ms =
                    Some(duration_ms(bound).ok_or_else(|| {
                        bad(format!("{bound:?} is not a time such as 800ms or 2s"))
                    })?);
            } else if let Some(share) = term.strip_prefix("errors<") {
                error_share = share
                    .strip_suffix('%')
                    .and_then(|n| n.parse::<f64>().ok())
                    .filter(|n| (0.0..=100.0).contains(n))
                    .map(|n| n / 100.0)
                    .ok_or_else(|| bad(format!("{share:?} is not a share such as 1%")))?;
            } else if let Some(seconds) = term.strip_prefix("window=") {
                window = duration_ms(seconds)
                    .filter(|ms| ms % 1000 == 0)
                    .map(|ms| ms / 1000)
                    .ok_or_else(|| bad(format!("{seconds:?} is not whole seconds such as 60s")))?;
            } else {
                return Err(bad(format!(
                    "{term:?} is not p95<TIME, errors<SHARE% or window=SECONDSs"
                )));
            }
        }
        let healthy = Healthy {
            p95_ms: p95_ms.ok_or_else(|| bad("it needs p95<TIME".into()))?,
            error_share,
            window,
        };
        if healthy.p95_ms == 0 {
            return Err(bad("the p95 bound must be above 0".into()));
        }
        if !(10..=600).contains(&healthy.window) {
            return Err(bad("the window must be 10 s to 600 s".into()));
        }
        Ok(healthy)
    }
}

impl fmt::Display for Healthy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "p95<{}ms,errors<{}%,window={}s",
            self.p95_ms,
            self.error_share * 100.0,
            self.window
        )
    }
}

/// `800ms` or `2s` (`1.5s` too) in milliseconds.
fn duration_ms(text: &str) -> Option<u64> {
    let (number, scale) = match text.strip_suffix("ms") {
        Some(number) => (number, 1.0),
        None => (text.strip_suffix('s')?, 1000.0),
    };
    let value = number.parse::<f64>().ok()? * scale;
    ((0.0..=3_600_000.0).contains(&value) && value.fract() == 0.0).then_some(value as u64)
}

/// What the operator asks of the origin rule.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OriginOptions {
    /// What healthy means.
    pub healthy: Healthy,
    /// New sessions a minute never cut below: the queue keeps moving.
    pub floor: f64,
    /// New sessions a minute never exceeded, whatever the origin's health.
    pub ceiling: f64,
    /// Seconds a session keeps making requests, about: the sessions let in over
    /// this span are the ones that load the origin, and at the floor an origin
    /// still unhealthy after it is slow for other reasons.
    pub session: u64,
}

impl OriginOptions {
    /// Refuses options the rule cannot hold.
    pub fn check(&self) -> Result<(), BadOptions> {
        let bad = |why: &str| Err(BadOptions(why.to_string()));
        if !(self.floor.is_finite() && self.floor > 0.0) {
            return bad("the origin floor must be a positive number of new sessions a minute");
        }
        if !(self.ceiling.is_finite() && self.ceiling >= self.floor) {
            return bad("the origin ceiling must be a number at or above the floor");
        }
        if !(60..=WINDOW).contains(&self.session) {
            return bad("the session length must be 60 s to 3600 s");
        }
        Ok(())
    }
}

/// What holds the target, as the dashboard and `/metrics` show it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// Too few answers in the window to read the origin: the target is held.
    NoOriginData,
    /// Healthy and no queueing: the target rises.
    Rising,
    /// The origin's health sets the target: at the load its p95 holds at the
    /// aim, or at the floor while it is unhealthy.
    OriginLimited,
    /// The origin could take more; the ceiling holds the target.
    CeilingLimited,
    /// Unhealthy at the floor for a whole session length: the origin is slow
    /// for reasons admissions do not cause. An alert.
    OriginSlow,
}

impl State {
    /// The state's name, as shown and exported.
    pub fn as_str(self) -> &'static str {
        match self {
            State::NoOriginData => "no-origin-data",
            State::Rising => "rising",
            State::OriginLimited => "origin-limited",
            State::CeilingLimited => "ceiling-limited",
            State::OriginSlow => "origin-slow",
        }
    }

    /// Every state, in the order of [`State::as_str`]'s list.
    pub const ALL: [State; 5] = [
        State::NoOriginData,
        State::Rising,
        State::OriginLimited,
        State::CeilingLimited,
        State::OriginSlow,
    ];
}

impl fmt::Display for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The origin rule as the dashboard and `/metrics` show it.
#[derive(Debug, Clone, PartialEq)]
pub struct OriginStatus {
    /// What holds the target.
    pub state: State,
    /// What healthy means.
    pub healthy: Healthy,
    /// The last reading of the window.
    pub reading: Reading,
    /// The origin's own time, unloaded, milliseconds: read off the trend of
    /// the p95 against the load (`trend_line`), the last so read, or the lowest p95.
    pub base_ms: Option<u64>,
    /// The p95 it aims at, milliseconds: [`AIM`] of the bound, lower where
    /// the p95 is noisy ([`Governor::aim_ms`]).
    pub aim_ms: u64,
    /// The target it holds, new sessions a minute.
    pub target: f64,
    /// Sessions let in over the last session length.
    pub live: u64,
    /// The live sessions the origin holds at the aim, when a reading has said
    /// (queueing; 0 while unhealthy: none let in but the floor's).
    pub live_limit: Option<u64>,
    /// Times the target turned from rising to falling or back.
    pub direction_changes: u64,
    /// The readings of the last seconds asked for, oldest first: the log
    /// second each was taken at, and the reading.
    pub readings: Vec<(u64, Reading)>,
}

/// The sessions that load the origin, as the frame counts them at a reading:
/// the sessions let in over the last session length.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Sessions {
    /// Let in over the last session length, up to the newest second.
    pub live: u64,
    /// The same, averaged over the seconds of the window: the sessions whose
    /// requests the reading's answers are.
    pub over_window: f64,
    /// The rate, a minute, at which sessions end around the time a write made
    /// now governs (from when it lands until the next reading's lands; over
    /// [`LEAVING_SPAN`] centred on it): the places they free.
    pub leaving: f64,
}

impl Sessions {
    /// `live` sessions, as many over the window, leaving evenly over a session
    /// length of `session` seconds (a steady state).
    pub fn steady(live: u64, session: u64) -> Sessions {
        Sessions {
            live,
            over_window: live as f64,
            leaving: live as f64 * 60.0 / session.max(1) as f64,
        }
    }
}

/// Readings kept: an hour of them at the shortest window (10 s, a reading every 5 s).
const READINGS_KEPT: usize = 720;

/// Which way the target last moved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Direction {
    Up,
    Down,
}

/// The origin rule: the answers taken in, and the target it sets.
#[derive(Debug, Clone)]
pub struct Governor {
    options: OriginOptions,
    window: Window,
    /// The lowest p95 of a healthy reading of [`TREND_ANSWERS`] or more.
    lowest_ms: Option<u64>,
    /// The origin's own time, unloaded, milliseconds: read off the trend of
    /// the p95 against the load (`trend_line`), the last so read, or the lowest.
    base_ms: Option<u64>,
    /// The load (answers a second) that holds the p95 at the aim, smoothed.
    aim_load: Option<f64>,
    /// The live sessions that bring the room's share of that load.
    live_limit: Option<f64>,
    /// The most live sessions while the origin is as when it last overloaded:
    /// [`AFTER_OVERLOAD`] of those then (`None`: no overload since it changed).
    overload_limit: Option<f64>,
    /// Log time of the next reading (`None`: at the first tick).
    next_reading: Option<u64>,
    /// Since when the origin has been unhealthy with the target at the floor.
    slow_since: Option<u64>,
    /// The log second from which readings count towards the trend: since the
    /// origin last changed (`read_afresh`).
    trend_since: u64,
    /// The trend is read afresh since `trend_since`: its base is taken only
    /// once its line falls beyond its noise.
    afresh: bool,
    state: State,
    /// The target held, new sessions a minute.
    target: f64,
    live: u64,
    last_move: Option<Direction>,
    direction_changes: u64,
    /// The room's share of the load at the aim (1: the origin is the room's alone).
    share: f64,
    /// The readings taken, oldest first, at most [`READINGS_KEPT`].
    readings: std::collections::VecDeque<(u64, Reading)>,
    /// The mean deviation of the log of the p95 between readings a window
    /// apart, both showing the origin's limit, weighed by [`SPREAD_WEIGHT`].
    spread: Option<f64>,
    /// The p95 of the readings of the last window that showed the origin's
    /// limit (queueing or unhealthy), with the log second each was taken at.
    limited: std::collections::VecDeque<(u64, u64)>,
}

/// A line of 1 / p95 (per millisecond) against the load (answers a second).
#[derive(Debug, Clone, Copy)]
struct Line {
    /// 1 / p95 at no load: one over the base.
    at_no_load: f64,
    /// Whether it falls beyond its noise (else it is taken flat).
    falls: bool,
    /// Whether its readings' loads span [`FLAT_SPAN`] or more.
    spans: bool,
}

impl Line {
    /// The base, milliseconds.
    fn base_ms(&self) -> u64 {
        (1.0 / self.at_no_load).round() as u64
    }
}

impl Governor {
    /// A rule with checked `options`.
    pub fn new(options: OriginOptions) -> Result<Governor, BadOptions> {
        options.check()?;
        Ok(Governor {
            options,
            window: Window::new(options.healthy.window),
            lowest_ms: None,
            base_ms: None,
            aim_load: None,
            live_limit: None,
            overload_limit: None,
            next_reading: None,
            slow_since: None,
            trend_since: 0,
            afresh: false,
            state: State::NoOriginData,
            target: options.floor,
            live: 0,
            last_move: None,
            direction_changes: 0,
            share: 1.0,
            readings: std::collections::VecDeque::new(),
            spread: None,
            limited: std::collections::VecDeque::new(),
        })
    }

    /// The options it runs with.
    pub fn options(&self) -> &OriginOptions {
        &self.options
    }

    /// Holds `target`, within the floor and the ceiling: what it holds.
    pub fn hold(&mut self, target: f64) -> f64 {
        self.target = target.clamp(self.options.floor, self.options.ceiling);
        self.target
    }

    /// Holds at most `per_minute` from now on (a scheduled event's target): the
    /// target it then holds.
    pub fn set_ceiling(&mut self, per_minute: f64) -> f64 {
        self.options.ceiling = per_minute.max(self.options.floor);
        self.hold(self.target)
    }

    /// The answer to a request logged at Unix second `t` (`own`: a request of
    /// the room's own; otherwise another room's, behind the same origin).
    pub fn observe(&mut self, t: u64, answer: OriginAnswer, own: bool) {
        self.window.add(t, answer, own);
    }

    /// The newest second of an answer taken.
    pub fn newest(&self) -> Option<u64> {
        self.window.newest()
    }

    /// Holds `share` (0 to 1) of the load the origin takes at the aim: rooms
    /// behind one origin share it in proportion to their ceilings.
    pub fn set_share(&mut self, share: f64) {
        if share.is_finite() && share > 0.0 {
            self.share = share.min(1.0);
        }
    }

    /// At the log's newest second `newest`, with the `sessions` let in over the
    /// last session length, `waiting` people waiting and `target` held: the new
    /// target, when a reading is due and says one.
    pub fn tick(
        &mut self,
        newest: u64,
        sessions: Sessions,
        waiting: u64,
        target: f64,
    ) -> Option<f64> {
        let half = (self.options.healthy.window / 2).max(1);
        if self.next_reading.is_some_and(|due| newest < due) {
            return None;
        }
        self.next_reading = Some(newest + half);
        self.live = sessions.live;
        let reading = self.window.read(newest);
        if self.readings.len() == READINGS_KEPT {
            self.readings.pop_front();
        }
        self.readings.push_back((newest, reading));
        let next = self.decide(reading, newest, sessions, waiting, target)?;
        let next = self.hold(next);
        let direction = match next.partial_cmp(&target) {
            Some(std::cmp::Ordering::Greater) => Some(Direction::Up),
            Some(std::cmp::Ordering::Less) => Some(Direction::Down),
            _ => None,
        };
        if let Some(direction) = direction {
            if self.last_move.is_some_and(|last| last != direction) {
                self.direction_changes += 1;
            }
            self.last_move = Some(direction);
        }
        Some(next)
    }

    /// The law (`docs/research/controller-rules.md`, the origin rule), on
    /// `reading`, just taken: the base read, then the target as the reading
    /// says (rising, held, shed to the floor, or at the live limit).
    fn decide(
        &mut self,
        reading: Reading,
        newest: u64,
        sessions: Sessions,
        waiting: u64,
        target: f64,
    ) -> Option<f64> {
        let healthy = self.is_healthy(&reading);
        self.read_base(&reading, newest, healthy);
        // Until a reading has shown the base, answers none an error and their
        // p95 in time are a light load, not a sign of one: the room starts at
        // the floor and would otherwise wait minutes for readings enough.
        let light = reading.answers > 0 && healthy && reading.error_share == 0.0;
        if light && waiting > 0 && self.base_ms.is_none() {
            self.state = State::Rising;
            return Some(target * STEP_UP);
        }
        if reading.answers < MIN_ANSWERS {
            self.state = State::NoOriginData;
            return None;
        }
        if !healthy {
            return Some(self.shed(&reading, newest, sessions, target));
        }
        self.slow_since = None;
        self.hold_healthy(reading, newest, sessions, waiting, target)
    }

    /// The origin's own time, unloaded, after `reading` (`healthy` or not),
    /// taken at `newest`: read off the trend, the last so read, or the lowest
    /// p95; the trend read afresh when the origin has changed.
    fn read_base(&mut self, reading: &Reading, newest: u64, healthy: bool) {
        // The origin's own time, unloaded: read off the trend, the last so read, or the lowest.
        if let Some(p95) = reading.p95_ms
            && self.shows_the_base(reading)
        {
            self.lowest_ms = Some(self.lowest_ms.map_or(p95, |b| b.min(p95)));
        }
        // Unhealthy at the floor for a window or more is a changed origin (a
        // loss of capacity), not one noisy window: the readings before are of
        // another origin, whose line would meet no load far from this one's.
        let lasting = self
            .slow_since
            .is_some_and(|since| newest >= since + self.options.healthy.window);
        if !healthy && reading.answers >= MIN_ANSWERS && lasting {
            self.read_afresh(newest + 1);
        }
        // Faster than a reading at a lower load, beyond both's noise and the
        // queueing margin, is a changed origin too (it recovered, or warmed
        // up); this reading's window holds both origins' answers.
        if self.beats_the_past(reading, newest) {
            self.read_afresh(newest + 1);
            self.overload_limit = None;
        }
        // Read afresh, a flat line is of readings at one load, loaded: held;
        // flat over a wide span of loads, it is an origin at rest.
        let trend = match self.trend_line(newest) {
            Some(line) if line.falls || line.spans || !self.afresh => {
                self.afresh = false;
                Some(line.base_ms())
            }
            _ => None,
        };
        // While the trend has too few readings, the base is the last one.
        self.base_ms = trend.or(self.base_ms).or(self.lowest_ms);
    }

    /// An unhealthy `reading`, taken at `newest` with `target` held: the
    /// floor, and the live limit 0, until a reading is healthy.
    fn shed(&mut self, reading: &Reading, newest: u64, sessions: Sessions, target: f64) -> f64 {
        if let Some(p95) = reading.p95_ms {
            self.weigh_spread(newest, p95);
        }
        // Only time sheds the load of the sessions let in: nobody more than
        // the floor until a reading is healthy, not even in the places of
        // the sessions that end (each refilled keeps its load on the origin).
        self.aim_load = None;
        // The load of the sessions of the reading that turned unhealthy
        // is past the origin's limit (a live limit of 0: the reading
        // before was unhealthy too, and these sessions are fewer).
        if self.live_limit != Some(0.0) {
            self.overload_limit = Some(AFTER_OVERLOAD * sessions.over_window);
        }
        self.live_limit = Some(0.0);
        let at_floor = target <= self.options.floor;
        let since = if at_floor {
            *self.slow_since.get_or_insert(newest)
        } else {
            self.slow_since = None;
            newest
        };
        self.state = if newest - since >= SLOW_AFTER_SESSIONS * self.options.session {
            State::OriginSlow
        } else {
            State::OriginLimited
        };
        self.options.floor
    }

    /// A healthy `reading` of enough answers, taken at `newest`: the target
    /// at the live limit when the origin queues (or an overload left one),
    /// rising otherwise, paced as the room's percentage is.
    fn hold_healthy(
        &mut self,
        reading: Reading,
        newest: u64,
        sessions: Sessions,
        waiting: u64,
        target: f64,
    ) -> Option<f64> {
        let (Some(p95), Some(base)) = (reading.p95_ms, self.base_ms) else {
            return None;
        };
        let step_up = target * STEP_UP;
        let limit = self.live_limit_of(reading, newest, (p95, base), sessions, step_up);
        let wanted = match limit {
            Some(limit) => {
                self.state = State::OriginLimited;
                self.live_limit = Some(limit);
                self.filling(limit, sessions)
            }
            None => {
                // Nothing says where the limit is, and an estimate of an
                // earlier queueing is of another load: not averaged in again.
                self.state = State::Rising;
                self.live_limit = None;
                self.aim_load = None;
                step_up
            }
        };
        // The live sessions grow no faster than the room's pace; the places
        // of the sessions that end are filled as they free.
        let mut next = wanted.min(step_up.max(sessions.leaving));
        if waiting == 0 {
            // Nobody waits: a rise would test nothing.
            next = next.min(target);
        }
        if next > self.options.ceiling {
            self.state = State::CeilingLimited;
        }
        if (next - target).abs() < LEAST_CHANGE * target {
            // The estimate's noise: held, so that the target does not dither.
            return Some(target);
        }
        Some(next)
    }

    /// The live limit a healthy `reading` taken at `newest` sets, its p95
    /// and the base being `p95` and `base`: the live sessions at the aim when
    /// the origin queues, within what an overload left; `None` when nothing
    /// says where the origin's limit is (the target then rises by `step_up`).
    fn live_limit_of(
        &mut self,
        reading: Reading,
        newest: u64,
        (p95, base): (u64, u64),
        sessions: Sessions,
        step_up: f64,
    ) -> Option<f64> {
        // Queueing only when the p95 is over the base by more than its own
        // uncertainty: of a few dozen answers, by chance alone it is often.
        let low = reading.p95_low_ms.unwrap_or(p95);
        let queueing = low as f64 >= QUEUEING * base as f64;
        let limit = if queueing {
            self.weigh_spread(newest, p95);
            self.aim_limit(reading, sessions)
        } else {
            None
        };
        // A load that shows no queueing at the limit an overload left is no
        // longer past the origin's: the origin has changed.
        if !queueing
            && self
                .overload_limit
                .is_some_and(|most| sessions.live as f64 >= (1.0 - LEAST_CHANGE) * most)
        {
            self.overload_limit = None;
        }
        match (limit, self.overload_limit) {
            (Some(limit), Some(most)) => Some(limit.min(most)),
            (None, Some(most)) if self.filling(most, sessions) < step_up => Some(most),
            (limit, _) => limit,
        }
    }

    /// The origin's own time read off the trend of its p95 against its load
    /// over the healthy readings of the last session length (since the origin
    /// last changed, `trend_since`): under
    /// `base / (1 − load / capacity)`, 1 / p95 falls in a straight line with
    /// the load, and where it meets no load is the base. Each reading weighs
    /// by its certainty (one over the variance of its 1 / p95, read off its
    /// confidence interval). A line that rises, or falls by less than 1.96
    /// of its standard errors, is the noise of a flat one: loads close together,
    /// read from a few hundred answers each, would otherwise draw a line
    /// through their noise to a base far under the origin's. `None` with
    /// fewer than [`TREND_READINGS`].
    fn trend_line(&self, newest: u64) -> Option<Line> {
        let since = self.trend_start(newest);
        // (load, 1 / p95, weight) of each reading: the weight is one over the
        // variance of its 1 / p95, read off its confidence interval.
        let points: Vec<(f64, f64, f64)> = self
            .readings
            .iter()
            .filter(|(t, r)| *t >= since && self.shows_the_base(r))
            .filter_map(|(_, r)| {
                // The low end is at most the p95: both are then over 0.
                let low = r.p95_low_ms.filter(|p| *p > 0)? as f64;
                let p95 = r.p95_ms? as f64;
                let high = r.p95_high_ms? as f64;
                // Times are whole milliseconds: at least half of one.
                let deviation = ((1.0 / low - 1.0 / high) / (2.0 * Z95)).max(0.5 / p95 / p95);
                Some((r.per_second, 1.0 / p95, deviation.powi(-2)))
            })
            .collect();
        if points.len() < TREND_READINGS {
            return None;
        }
        let weight: f64 = points.iter().map(|&(_, _, w)| w).sum();
        let mean_load = points.iter().map(|&(x, _, w)| w * x).sum::<f64>() / weight;
        let mean_inverse = points.iter().map(|&(_, y, w)| w * y).sum::<f64>() / weight;
        let sxx: f64 = points
            .iter()
            .map(|&(x, _, w)| w * (x - mean_load).powi(2))
            .sum();
        let sxy: f64 = points
            .iter()
            .map(|&(x, y, w)| w * (x - mean_load) * (y - mean_inverse))
            .sum();
        // The slope's standard error is 1 / √sxx; within 1.96 of them of
        // flat (or rising), the line is flat.
        let slope = sxy / sxx;
        let falling = sxx > 0.0 && slope < -Z95 / sxx.sqrt();
        let slope = if falling { slope } else { 0.0 };
        let intercept = mean_inverse - slope * mean_load;
        let lowest = points.iter().map(|p| p.0).fold(f64::INFINITY, f64::min);
        let highest = points.iter().map(|p| p.0).fold(0.0, f64::max);
        (intercept.is_finite() && intercept > 0.0).then_some(Line {
            at_no_load: intercept,
            falls: falling,
            spans: highest >= FLAT_SPAN * lowest,
        })
    }

    /// The first log second of the trend at `newest`: a session length back,
    /// or since the origin last changed.
    fn trend_start(&self, newest: u64) -> u64 {
        newest
            .saturating_sub(self.options.session)
            .max(self.trend_since)
    }

    /// Reads the trend afresh from log second `since`: the readings before
    /// are of another origin. Its base is taken once its line falls beyond
    /// its noise.
    fn read_afresh(&mut self, since: u64) {
        self.trend_since = since;
        self.afresh = true;
    }

    /// Whether `reading`, taken at `newest`, is faster than a reading of the
    /// trend's at a load no higher (of the last session length, since the
    /// origin last changed) by more than [`QUEUEING`], at the ends of their
    /// p95's intervals that bring them closest. Whatever its shape, an
    /// origin is no faster for more load: one that is has changed.
    fn beats_the_past(&self, reading: &Reading, newest: u64) -> bool {
        let Some(high) = reading.p95_high_ms.filter(|_| self.shows_the_base(reading)) else {
            return false;
        };
        let since = self.trend_start(newest);
        self.readings.iter().any(|(t, earlier)| {
            (since..newest).contains(t)
                && self.shows_the_base(earlier)
                && !self.drains_an_overload(*t)
                && earlier.per_second <= reading.per_second
                && earlier
                    .p95_low_ms
                    .is_some_and(|low| low as f64 > QUEUEING * high as f64)
        })
    }

    /// Whether a reading taken at log second `t` came within a window after
    /// an unhealthy one: the answers of its window waited behind an
    /// overload's backlog, slow for the load before, not for its own.
    fn drains_an_overload(&self, t: u64) -> bool {
        let window = self.options.healthy.window;
        self.readings.iter().any(|(before, reading)| {
            (t.saturating_sub(window)..t).contains(before)
                && reading.answers >= MIN_ANSWERS
                && !self.is_healthy(reading)
        })
    }

    /// Whether `reading` counts towards the base: healthy, and of enough
    /// answers to bound its p95 ([`TREND_ANSWERS`]).
    fn shows_the_base(&self, reading: &Reading) -> bool {
        reading.answers >= TREND_ANSWERS && self.is_healthy(reading)
    }

    /// Whether `reading` is healthy: its p95 within the bound and its errors
    /// within their share.
    fn is_healthy(&self, reading: &Reading) -> bool {
        reading
            .p95_ms
            .is_some_and(|p| p <= self.options.healthy.p95_ms)
            && reading.error_share <= self.options.healthy.error_share
    }

    /// The live sessions that bring the room's share of the load that holds
    /// the p95 at the aim, read from `reading` (its estimate averaged with the
    /// last reading's, when that one queued too); `None` before a healthy
    /// reading has shown the base, or without a session or an answer of the
    /// room's own.
    fn aim_limit(&mut self, reading: Reading, sessions: Sessions) -> Option<f64> {
        let p95 = reading.p95_ms? as f64;
        let base = self.base_ms? as f64;
        let aim = self.aim_ms();
        // What one live session asks of the origin, answers a second.
        let per_live = reading.own_per_second / sessions.over_window;
        if !(per_live > 0.0 && per_live.is_finite()) {
            return None;
        }
        let estimate = if base < aim && base < p95 {
            let capacity = reading.per_second / (1.0 - base / p95);
            capacity * (1.0 - base / aim)
        } else {
            // Unloaded, the origin is already at the aim: hold its load.
            reading.per_second
        };
        let aim_load = match self.aim_load {
            Some(last) => last + SMOOTHING * (estimate - last),
            None => estimate,
        };
        self.aim_load = Some(aim_load);
        Some(aim_load * self.share / per_live)
    }

    /// The p95 the rule aims at, milliseconds: [`AIM`] of the bound, or lower
    /// by the p95's spread where it is noisy (a small origin, whose busiest
    /// seconds move its p95 by a fifth from one window to the next).
    pub fn aim_ms(&self) -> f64 {
        let margin = (-SPREAD_MARGIN * self.spread.unwrap_or(0.0)).exp();
        AIM.min(margin) * self.options.healthy.p95_ms as f64
    }

    /// Weighs in the deviation of `p95`, of a reading taken at `newest` that
    /// showed the origin's limit, from the p95 of the one a window before.
    /// Readings of an origin far from its limit are left out: their p95 is
    /// the base's, and its rise as the limit nears is a trend, not noise.
    fn weigh_spread(&mut self, newest: u64, p95: u64) {
        let window = self.options.healthy.window;
        while self
            .limited
            .front()
            .is_some_and(|(t, _)| t + window + window / 2 < newest)
        {
            self.limited.pop_front();
        }
        let then = self
            .limited
            .iter()
            .rev()
            .find(|(t, _)| t + window <= newest)
            .map(|(_, p)| *p);
        self.limited.push_back((newest, p95));
        let Some(then) = then else { return };
        let deviation = (p95.max(1) as f64 / then.max(1) as f64)
            .ln()
            .abs()
            .min(SPREAD_STEP_MOST);
        self.spread = Some(match self.spread {
            Some(spread) => spread + SPREAD_WEIGHT * (deviation - spread),
            None => deviation,
        });
    }

    /// New sessions a minute that fill the places free under `limit` over
    /// [`FILL_SECONDS`] (negative while more are live), and those of the
    /// sessions that end.
    fn filling(&self, limit: f64, sessions: Sessions) -> f64 {
        (limit - sessions.live as f64) * 60.0 / FILL_SECONDS + sessions.leaving
    }

    /// What it shows, with the readings of the last `seconds` of log time.
    pub fn status(&self, seconds: u64) -> OriginStatus {
        let newest = self.readings.back().map_or(0, |r| r.0);
        OriginStatus {
            state: self.state,
            healthy: self.options.healthy,
            reading: self.readings.back().map_or_else(Reading::default, |r| r.1),
            base_ms: self.base_ms,
            aim_ms: self.aim_ms().round() as u64,
            target: self.target,
            live: self.live,
            live_limit: self.live_limit.map(|n| n.round() as u64),
            direction_changes: self.direction_changes,
            readings: self
                .readings
                .iter()
                .filter(|(t, _)| t + seconds > newest)
                .copied()
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests;
