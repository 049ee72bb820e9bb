//! Who holds a place, as the log shows it: one expiry per address, for waiting
//! visitors and for admitted ones. Bounded: past `capacity` addresses new ones are
//! counted as overflow instead of stored. The places are also counted by the
//! second they end: a calendar of the wait tokens, and so of the draws to come.

use std::collections::{BTreeMap, HashMap};

/// Addresses with a live token of one kind, and when each token ends.
#[derive(Debug, Clone)]
pub struct Crowd {
    expiries: HashMap<String, u64>,
    /// How many places end at each second (a calendar of the tokens' ends).
    ends: BTreeMap<u64, u64>,
    capacity: usize,
    /// Addresses not stored because the crowd was full.
    pub overflow: u64,
}

impl Crowd {
    /// An empty crowd holding at most `capacity` addresses.
    pub fn new(capacity: usize) -> Crowd {
        Crowd {
            expiries: HashMap::new(),
            ends: BTreeMap::new(),
            capacity,
            overflow: 0,
        }
    }

    /// `uid` holds a token ending at `until`.
    pub fn hold(&mut self, uid: &str, until: u64) {
        if let Some(exp) = self.expiries.get_mut(uid) {
            let old = std::mem::replace(exp, until);
            uncount(&mut self.ends, old);
        } else if self.expiries.len() < self.capacity {
            self.expiries.insert(uid.to_string(), until);
        } else {
            self.overflow += 1;
            return;
        }
        *self.ends.entry(until).or_default() += 1;
    }

    /// `uid` no longer holds a place.
    pub fn leave(&mut self, uid: &str) {
        if let Some(old) = self.expiries.remove(uid) {
            uncount(&mut self.ends, old);
        }
    }

    /// When `uid`'s place ends, if it holds one.
    pub fn until(&self, uid: &str) -> Option<u64> {
        self.expiries.get(uid).copied()
    }

    /// The places that end before `now`, counted by the second they end.
    pub fn ends_before(&self, now: u64) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.ends.range(..now).map(|(&until, &n)| (until, n))
    }

    /// Forgets every place that ended before `now`; returns how many.
    pub fn expire(&mut self, now: u64) -> u64 {
        let ended: u64 = self.ends.range(..now).map(|(_, n)| n).sum();
        if ended > 0 {
            self.expiries.retain(|_, exp| *exp >= now);
            self.ends = self.ends.split_off(&now);
        }
        ended
    }

    /// Addresses whose place ends in the seconds `from..to`.
    pub fn ending_within(&self, from: u64, to: u64) -> u64 {
        if from >= to {
            return 0;
        }
        self.ends.range(from..to).map(|(_, n)| n).sum()
    }

    /// Addresses holding a place.
    pub fn len(&self) -> u64 {
        self.expiries.len() as u64
    }

    /// Whether nobody holds a place.
    pub fn is_empty(&self) -> bool {
        self.expiries.is_empty()
    }
}

fn uncount(ends: &mut BTreeMap<u64, u64>, until: u64) {
    if let Some(n) = ends.get_mut(&until) {
        *n -= 1;
        if *n == 0 {
            ends.remove(&until);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_place_per_address_until_it_ends_or_leaves() {
        let mut c = Crowd::new(10);
        c.hold("a", 100);
        c.hold("a", 160);
        c.hold("b", 90);
        assert_eq!(c.len(), 2);
        assert_eq!(
            (
                c.ending_within(90, 91),
                c.ending_within(0, 200),
                c.until("a")
            ),
            (1, 2, Some(160))
        );
        assert_eq!(c.ends_before(95).collect::<Vec<_>>(), [(90, 1)]);
        assert_eq!(c.expire(95), 1);
        assert_eq!(c.expire(160), 0);
        c.leave("a");
        assert!(c.is_empty());
        assert_eq!(c.ending_within(0, 200), 0);
    }

    #[test]
    fn a_full_crowd_counts_overflow_instead_of_growing() {
        let mut c = Crowd::new(2);
        for uid in ["a", "b", "c", "d"] {
            c.hold(uid, 10);
        }
        c.hold("a", 20);
        assert_eq!((c.len(), c.overflow), (2, 2));
    }
}
