//! One write of a rule to the config store, as a loop carries it: its items,
//! its heartbeat, the setting it moves, and how it lands on the edge's
//! settings. Two rules implement it: the percentage
//! ([`PercentageWrite`](crate::percentage_rule::PercentageWrite)) and the FIFO
//! cutoff ([`CutoffWrite`](crate::fifo_rule::CutoffWrite)); `wrctl control` sends
//! it to the store and the simulator's closed loop lands it on the simulated edge.

use waiting_room::settings::config::Settings;

/// One write of a rule to the config store.
pub trait StoreWrite {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::Options;
    use crate::percentage_rule::{Controller, PercentageWrite};
    use waiting_room::settings::config::{Heartbeat, QueueingMethod};

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
        assert_eq!(Controller::QUEUEING, QueueingMethod::Random);
        assert!(c.fifo_status(60).is_none());
    }
}
