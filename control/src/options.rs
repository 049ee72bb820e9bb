//! What the operator asks of a controller, either rule's, and the limits every
//! controller keeps.

use std::fmt;

use crate::schedule::Timing;
use waiting_room::settings::percentage::Percentage;

/// Config-store key the controller writes its percentage to.
pub const PERCENTAGE_KEY: &str = waiting_room::settings::config::ALLOW_PERCENTAGE;
/// Config-store key the controller writes its heartbeat to.
pub const HEARTBEAT_KEY: &str = waiting_room::settings::config::CONTROLLER_HEARTBEAT;
/// Seconds of log time the controller keeps per-second counts for.
pub const WINDOW: u64 = 3600;
/// Records stamped further than this ahead of the controller's clock are refused
/// (a wrong clock or a forged line must not move the window).
pub const MAX_CLOCK_SKEW: u64 = 300;
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
            wait_period: waiting_room::settings::config::Settings::default().wait_period_duration,
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
        if !(1..=waiting_room::settings::config::MAX_DURATION).contains(&self.wait_period) {
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

    pub(crate) fn redeem_window(&self) -> u64 {
        self.redeem_window.unwrap_or(self.wait_period)
    }

    pub(crate) fn timing(&self) -> Timing {
        Timing {
            tick: self.tick,
            heartbeat_every: self.heartbeat_every,
            log_silence: self.log_silence,
            expected_propagation: self.expected_propagation,
        }
    }
}
