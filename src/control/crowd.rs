//! Who holds a place, as the log shows it: one expiry per address, for waiting
//! visitors and for admitted ones. Bounded: past `capacity` addresses new ones are
//! counted as overflow instead of stored.

use std::collections::HashMap;

/// Addresses with a live token of one kind, and when each token ends.
#[derive(Debug, Clone)]
pub struct Crowd {
    expiries: HashMap<String, u64>,
    capacity: usize,
    /// Addresses not stored because the crowd was full.
    pub overflow: u64,
}

impl Crowd {
    /// An empty crowd holding at most `capacity` addresses.
    pub fn new(capacity: usize) -> Crowd {
        Crowd {
            expiries: HashMap::new(),
            capacity,
            overflow: 0,
        }
    }

    /// `uid` holds a token ending at `until`.
    pub fn hold(&mut self, uid: &str, until: u64) {
        if let Some(exp) = self.expiries.get_mut(uid) {
            *exp = until;
        } else if self.expiries.len() < self.capacity {
            self.expiries.insert(uid.to_string(), until);
        } else {
            self.overflow += 1;
        }
    }

    /// `uid` no longer holds a place.
    pub fn leave(&mut self, uid: &str) {
        self.expiries.remove(uid);
    }

    /// Forgets every place that ended before `now`; returns how many.
    pub fn expire(&mut self, now: u64) -> u64 {
        let before = self.expiries.len();
        self.expiries.retain(|_, exp| *exp >= now);
        (before - self.expiries.len()) as u64
    }

    /// Addresses whose place ends at or before `until`.
    pub fn ending_by(&self, until: u64) -> u64 {
        self.expiries.values().filter(|&&exp| exp <= until).count() as u64
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
        assert_eq!((c.ending_by(90), c.ending_by(160)), (1, 2));
        assert_eq!(c.expire(95), 1);
        assert_eq!(c.expire(160), 0);
        c.leave("a");
        assert!(c.is_empty());
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
