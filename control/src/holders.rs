//! Who holds a token of one kind, in bounded memory: it holds one token end per
//! address (a 32-bit key of the address, 32-bit Unix seconds), and the count of
//! places ending at each second; it reads holds and leaves; it tells how many hold
//! a token ending within a span. Past its capacity, new addresses count as
//! overflow. Its cost and its error: `docs/research/controller-rules.md`, counting
//! tokens.

use std::collections::{BTreeMap, HashMap};
use std::hash::{DefaultHasher, Hash, Hasher};

/// Addresses with a token of one kind, and when each token ends.
#[derive(Debug, Clone)]
pub struct Holders {
    ends_at: HashMap<u32, u32>,
    /// How many places end at each second, from the oldest not yet expired.
    ends: BTreeMap<u32, u64>,
    /// Places ending at or after `expired_before`.
    live: u64,
    /// Places before this second no longer count.
    expired_before: u32,
    capacity: usize,
    /// Addresses not stored because the crowd was full.
    pub overflow: u64,
}

/// The key an address is kept under.
pub fn key(uid: &str) -> u32 {
    let mut hasher = DefaultHasher::new();
    uid.hash(&mut hasher);
    let h = hasher.finish();
    (h ^ (h >> 32)) as u32
}

/// Unix seconds as stored (saturating at the year 2106).
fn second(t: u64) -> u32 {
    u32::try_from(t).unwrap_or(u32::MAX)
}

impl Holders {
    /// An empty crowd holding at most `capacity` addresses.
    pub fn new(capacity: usize) -> Holders {
        Holders {
            ends_at: HashMap::new(),
            ends: BTreeMap::new(),
            live: 0,
            expired_before: 0,
            capacity,
            overflow: 0,
        }
    }

    /// `uid` holds a token ending at `until`; returns when its previous live
    /// token ended, if it held one.
    pub fn hold(&mut self, uid: &str, until: u64) -> Option<u64> {
        let until = second(until);
        let key = key(uid);
        let previous = if let Some(end) = self.ends_at.get_mut(&key) {
            Some(std::mem::replace(end, until))
        } else {
            let stale = self.ends_at.len() as u64 - self.live;
            if self.ends_at.len() >= self.capacity && stale > self.capacity as u64 / 8 {
                self.prune();
            }
            if self.ends_at.len() >= self.capacity {
                self.overflow += 1;
                return None;
            }
            self.ends_at.insert(key, until);
            None
        };
        let previous = previous.filter(|&end| self.uncount(end));
        self.count(until);
        previous.map(u64::from)
    }

    /// `uid` no longer holds a place; returns when its live token ended.
    pub fn leave(&mut self, uid: &str) -> Option<u64> {
        let end = self.ends_at.remove(&key(uid))?;
        self.uncount(end).then_some(u64::from(end))
    }

    /// When `uid`'s live token ends, if it holds one.
    pub fn until(&self, uid: &str) -> Option<u64> {
        self.ends_at
            .get(&key(uid))
            .filter(|&&end| end >= self.expired_before)
            .map(|&end| u64::from(end))
    }

    /// Places whose token ended before `now` stop counting; returns how many,
    /// by the second they ended.
    pub fn expire(&mut self, now: u64) -> Vec<(u64, u64)> {
        let now = second(now);
        if now <= self.expired_before {
            return Vec::new();
        }
        self.expired_before = now;
        let kept = self.ends.split_off(&now);
        let ended = std::mem::replace(&mut self.ends, kept);
        self.live -= ended.values().sum::<u64>();
        if self.ends_at.len() as u64 > 2 * self.live + 1024 {
            self.prune();
        }
        ended
            .into_iter()
            .map(|(end, n)| (u64::from(end), n))
            .collect()
    }

    /// Addresses whose live token ends in the seconds `from..to`.
    pub fn ending_within(&self, from: u64, to: u64) -> u64 {
        let (from, to) = (second(from), second(to));
        if from >= to {
            return 0;
        }
        self.ends.range(from..to).map(|(_, n)| n).sum()
    }

    /// Addresses holding a live token.
    pub fn len(&self) -> u64 {
        self.live
    }

    /// Whether nobody holds a live token.
    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    fn count(&mut self, end: u32) {
        if end >= self.expired_before {
            *self.ends.entry(end).or_default() += 1;
            self.live += 1;
        }
    }

    /// Takes a place ending at `end` off the calendar; whether it was live.
    fn uncount(&mut self, end: u32) -> bool {
        if end < self.expired_before {
            return false;
        }
        if let Some(n) = self.ends.get_mut(&end) {
            *n -= 1;
            if *n == 0 {
                self.ends.remove(&end);
            }
        }
        self.live -= 1;
        true
    }

    /// Forgets the places that no longer count.
    fn prune(&mut self) {
        let from = self.expired_before;
        self.ends_at.retain(|_, end| *end >= from);
        self.ends_at.shrink_to_fit();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_place_per_address_until_it_ends_or_leaves() {
        let mut c = Holders::new(10);
        assert_eq!(c.hold("a", 100), None);
        assert_eq!(c.hold("a", 160), Some(100));
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
        assert_eq!(c.expire(95), [(90, 1)]);
        assert_eq!((c.len(), c.until("b")), (1, None));
        assert!(c.expire(160).is_empty());
        assert_eq!(c.leave("a"), Some(160));
        assert!(c.is_empty());
        assert_eq!(c.ending_within(0, 200), 0);
        // An ended place is no previous live token.
        assert_eq!(c.hold("b", 300), None);
        assert_eq!(c.len(), 1);
    }

    #[test]
    fn a_full_crowd_counts_overflow_instead_of_growing_and_makes_room_from_ended_places() {
        let mut c = Holders::new(2);
        for uid in ["a", "b", "c", "d"] {
            c.hold(uid, 10);
        }
        c.hold("a", 20);
        assert_eq!((c.len(), c.overflow), (2, 2));
        c.expire(15);
        c.hold("c", 30);
        assert_eq!((c.len(), c.overflow, c.until("c")), (2, 2, Some(30)));
    }

    #[test]
    fn ended_places_are_pruned_once_they_outnumber_the_live_ones() {
        let mut c = Holders::new(1_000_000);
        for i in 0..10_000 {
            c.hold(&format!("10.0.{}.{}", i / 256, i % 256), 100);
        }
        c.hold("live", 500);
        c.expire(200);
        assert_eq!(c.len(), 1);
        assert_eq!(c.ends_at.len(), 1);
    }
}
