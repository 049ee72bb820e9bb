//! The one interface both rules run behind: the percentage
//! [`Controller`](crate::percentage::Controller) and the FIFO
//! [`FifoController`](crate::fifo::FifoController) differ in what they decide and
//! write, not in how a loop drives them. `wrctl control` and the simulator's
//! closed loop are generic over [`Rule`]: they feed it records and bad lines,
//! tick it, carry its [`Write`]s to the store (or the simulated edge) and report
//! the outcome, and show its state; which rule runs is chosen once, when the
//! loop is built. The frame ([`crate::frame`]) implements it, once for both.

use waiting_room::settings::config::{QueueingMethod, Settings};

use crate::origin::OriginAnswer;
use crate::record::Record;
use crate::snapshot::{FifoStatus, Snapshot};

/// One write of a rule to the config store.
pub trait Write {
    /// The config-store items to write, key and value, in the order written.
    fn items(&self) -> Vec<(&'static str, String)>;
    /// `controller_heartbeat`: Unix seconds of this write.
    fn heartbeat(&self) -> u64;
    /// The setting it moves, if it moves it (the percentage in millionths, or
    /// the FIFO cutoff): what the simulator traces.
    fn moved(&self) -> Option<u64>;
    /// The write reaching the edge: the items it sets, in `settings`.
    fn land(&self, settings: &mut Settings);
}

/// A controller's rule, as a loop drives it: what it reads, when it writes,
/// what it shows.
pub trait Rule {
    /// One write to the config store.
    type Write: Write;
    /// The queueing method of the room it holds (the lines it expects).
    const QUEUEING: QueueingMethod;
    /// A log record reaches the rule at clock time `now` (Unix seconds).
    fn observe(&mut self, record: &Record, now: u64);
    /// A log line that did not parse.
    fn bad_line(&mut self);
    /// The rule's tick at clock time `now`: a write, if one is due (one a call
    /// at most; none while backing off after failed writes, none at all after
    /// `log_silence` without a record). Report the outcome with
    /// [`Rule::written`] or [`Rule::failed`].
    fn tick(&mut self, now: u64) -> Option<Self::Write>;
    /// The config store took `write` at clock time `now`.
    fn written(&mut self, write: &Self::Write, now: u64);
    /// The write failed at clock time `now`: the next attempt waits one tick,
    /// doubling with each failure in a row up to [`crate::schedule::MAX_BACKOFF`] seconds.
    fn failed(&mut self, now: u64);
    /// Whether it has stopped writing for want of log records.
    fn deaf(&self, now: u64) -> bool;
    /// Seconds between two ticks.
    fn tick_seconds(&self) -> u64;
    /// Seconds without a record after which it stops writing (`None`: never).
    fn log_silence(&self) -> Option<u64>;
    /// What the dashboard and the metrics show, with `seconds` of series.
    fn snapshot(&self, seconds: u64) -> Snapshot;
    /// The FIFO rule's own figures (`None` for the percentage).
    fn fifo_status(&self, seconds: u64) -> Option<FifoStatus>;
    /// What `write` sets, for a person: the value written or the one kept.
    fn describe(&self, write: &Self::Write) -> String;
    /// Holds `per_minute` new sessions a minute from now on (a scheduled event's
    /// target); a value that is not a positive number is ignored.
    fn set_target(&mut self, per_minute: f64);
    /// The origin's answer to another room's request, logged at Unix second `t`:
    /// rooms behind one origin share its health ([`crate::origin`]). Nothing
    /// when the rule does not follow the origin.
    fn other_room_origin(&mut self, t: u64, answer: OriginAnswer);
    /// The ceiling of the origin rule, when the rule follows the origin.
    fn origin_ceiling(&self) -> Option<f64>;
    /// Holds `share` (0 to 1) of the load the origin takes at its aim: rooms
    /// behind one origin share it in proportion to their ceilings.
    fn share_origin(&mut self, share: f64);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::Options;
    use crate::percentage::{Controller, Write as PercentageWrite};
    use waiting_room::settings::config::Heartbeat;

    #[test]
    fn a_percentage_write_lands_what_it_carries_and_the_heartbeat() {
        let mut settings = Settings::default();
        let kept = settings.allow_percentage;
        let beat = PercentageWrite {
            allow_percentage: None,
            heartbeat: 10,
        };
        beat.land(&mut settings);
        assert_eq!(beat.moved(), None);
        assert_eq!(settings.allow_percentage, kept);
        assert_eq!(settings.controller_heartbeat, Heartbeat::At(10));

        let p = "12.5".parse().unwrap();
        let write = PercentageWrite {
            allow_percentage: Some(p),
            heartbeat: 20,
        };
        write.land(&mut settings);
        assert_eq!(write.moved(), Some(125_000));
        assert_eq!(settings.allow_percentage, p);
    }

    #[test]
    fn the_percentage_rule_describes_a_heartbeat_alone_by_what_it_keeps() {
        let c = Controller::new(Options::default()).unwrap();
        let beat = PercentageWrite {
            allow_percentage: None,
            heartbeat: 10,
        };
        assert_eq!(c.describe(&beat), "allow_percentage unchanged (none)");
        assert_eq!(<Controller as Rule>::QUEUEING, QueueingMethod::Random);
        assert!(Rule::fifo_status(&c, 60).is_none());
    }
}
