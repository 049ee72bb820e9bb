//! The POP's ceiling on new sessions (`pop_new_sessions_per_minute`): a guard
//! under the controller, for what its percentage cannot see coming.
//!
//! The controller's percentage reaches the edge a propagation delay after it
//! saw the log. A wave that arrives meanwhile draws at the old percentage, and
//! where writes take a minute to land, its first minute admits up to twice the
//! target or more; so does the crowd's last minute, once the controller has
//! opened the room to 100 %. With a ceiling set, each POP counts the new sessions
//! it started in the last minute (Fastly's edge rate counters, shared by the
//! POP's nodes), and a request that would start one while the count is at the
//! ceiling is held: the visitor waits on with a new wait token, as after a
//! lost draw (`transition=ceiling-reached` in the log). A new session counts
//! once per token (the address and the wait token's end, or the second, for a
//! visitor without one): tabs and devices that present one token count once,
//! through the POP's penalty box. Sessions kept or renewed are neither counted
//! nor held, and FIFO mode has its own order: the ceiling is random mode's.
//!
//! The counts are the POP's, so the ceiling is per POP: set it to what the
//! busiest POP may admit, less the counters' documented under-count (they read
//! up to 10 % low: [`DocumentedCounts`] models them so). Where the edge cannot count (edge rate limiting not
//! enabled on the account; local runs, where the counters read zero), the
//! ceiling holds nobody: the room is what it is without it.

/// What the POP counted: the edge's rate counter and penalty box, the model of
/// them the simulator runs by default ([`DocumentedCounts`]), or exact counts
/// ([`ExactCounts`]: the tests', and the simulator's on request).
pub trait PopCounts: std::fmt::Debug {
    /// New sessions this POP counted in the last minute (`None`: unknown, and
    /// the ceiling holds nobody).
    fn last_minute(&self, now: u64) -> Option<u32>;
    /// Whether the new session of `token` (its [`draw_key`]) was counted already.
    fn counted(&self, token: &str) -> bool;
}

/// What the ceiling says of a new session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ceiling {
    /// Admit it; count it under this key when `Some` (the edge's business, after
    /// the response is planned).
    Admit(Option<String>),
    /// Hold it: the POP started its ceiling's worth in the last minute.
    Hold,
}

/// What identifies a new session to count: the address, and the end of the
/// wait token it presented (or the second, without one).
pub fn draw_key(uid: &str, exp: u64) -> String {
    format!("{uid} {exp}")
}

/// The ceiling's word on a new session for `uid` at `now`, whose wait token
/// ends at `exp` (`now` without one), with `per_minute` the setting and
/// `counts` the POP's.
pub fn judge(
    per_minute: Option<u32>,
    counts: Option<&dyn PopCounts>,
    now: u64,
    uid: &str,
    exp: u64,
) -> Ceiling {
    let (Some(per_minute), Some(counts)) = (per_minute, counts) else {
        return Ceiling::Admit(None);
    };
    let key = draw_key(uid, exp);
    if counts.counted(&key) {
        return Ceiling::Admit(None);
    }
    match counts.last_minute(now) {
        Some(seen) if seen >= per_minute => Ceiling::Hold,
        _ => Ceiling::Admit(Some(key)),
    }
}

/// Exact counts for one POP, at a virtual clock: the simulator's and the
/// tests'. New sessions by ten-second bucket (the edge's counters keep ten-second
/// buckets too) and the tokens counted in the last minute.
#[derive(Debug, Clone, Default)]
pub struct ExactCounts {
    buckets: std::collections::VecDeque<(u64, u32)>,
    counted: std::collections::HashMap<String, u64>,
    /// When the counted tokens were last pruned.
    pruned_at: u64,
}

/// Seconds a counted token stays counted (the edge's penalty box keeps an
/// entry a minute at least).
const COUNTED_FOR: u64 = 60;

impl ExactCounts {
    /// Counts the new session `key` at `now`.
    pub fn count(&mut self, now: u64, key: String) {
        let bucket = now / 10;
        match self.buckets.back_mut() {
            Some((b, n)) if *b == bucket => *n += 1,
            _ => self.buckets.push_back((bucket, 1)),
        }
        while self.buckets.front().is_some_and(|&(b, _)| b + 6 <= bucket) {
            self.buckets.pop_front();
        }
        self.counted.insert(key, now);
        // Once a minute: a token stays counted one to two minutes, as in the
        // edge's penalty box, and pruning costs nothing per count.
        if now >= self.pruned_at + COUNTED_FOR {
            self.counted.retain(|_, at| *at + COUNTED_FOR > now);
            self.pruned_at = now;
        }
    }
}

impl PopCounts for ExactCounts {
    fn last_minute(&self, now: u64) -> Option<u32> {
        let bucket = now / 10;
        Some(
            self.buckets
                .iter()
                .filter(|&&(b, _)| b + 6 > bucket && b <= bucket)
                .map(|&(_, n)| n)
                .sum(),
        )
    }

    fn counted(&self, token: &str) -> bool {
        self.counted.contains_key(token)
    }
}

/// The documented under-count of Fastly's edge rate counters, per cent: they
/// "may under count by up to 10%".
pub const UNDER_COUNT_PERCENT: u64 = 10;

/// Nodes a modelled POP spreads its requests over unless told otherwise. Fastly
/// states no figure; a POP runs tens of nodes. The count matters only where
/// nodes start: each reads zero at its first use, and sees only what the POP
/// counted from then on.
pub const DEFAULT_NODES: u32 = 16;

/// The edge's counts as Fastly documents them, at a virtual clock: the
/// simulator's model of the POP's rate counter. The rule:
///
/// - the POP's new sessions are counted exactly ([`ExactCounts`]): a node's count
///   joins the POP's at once, and every node that has started sees it (Fastly's
///   counters are the POP's, shared by its nodes);
/// - each read is served by one of the POP's nodes, drawn uniformly from a
///   SplitMix64 stream of the model's seed;
/// - a node's first read of the counter is its first use: it reads zero, and from
///   then on it sees the new sessions the POP counted after that first read
///   (its view starts empty, and never learns the minute before it);
/// - every read is low by the documented worst, [`UNDER_COUNT_PERCENT`]: 90 % of
///   the node's view of the last minute, rounded down. Fastly documents the bound,
///   not how often it is reached: a guard is sized for its worst, so the model
///   reads at the bound every time, and a ceiling of `C` holds a minute of
///   `C / 0.9` new sessions, not `C`.
///
/// The penalty box of counted tokens stays exact and shared ([`PopCounts::counted`]).
/// Reads mutate the model (a node's first use, the draw of a node) through cells,
/// as the edge's reads are side effects of the request.
#[derive(Debug, Clone)]
pub struct DocumentedCounts {
    pop: ExactCounts,
    /// New sessions the POP counted since the model began.
    total: u64,
    /// For each node, `total` at its first read (`None`: not used yet).
    nodes: Vec<std::cell::Cell<Option<u64>>>,
    /// The SplitMix64 state that spreads reads over the nodes.
    rng: std::cell::Cell<u64>,
}

impl DocumentedCounts {
    /// A POP of `nodes` nodes (at least 1), none of which has used the counter,
    /// spreading reads with a stream of `seed`.
    pub fn new(nodes: u32, seed: u64) -> DocumentedCounts {
        DocumentedCounts {
            pop: ExactCounts::default(),
            total: 0,
            nodes: vec![std::cell::Cell::new(None); nodes.max(1) as usize],
            rng: std::cell::Cell::new(seed),
        }
    }

    /// Counts the new session `key` at `now`: the POP's count and penalty box.
    pub fn count(&mut self, now: u64, key: String) {
        self.pop.count(now, key);
        self.total += 1;
    }

    /// What node `node` reads of the last minute at `now` (its first read is its
    /// first use, and reads zero).
    pub fn read_at(&self, node: usize, now: u64) -> u32 {
        let node = &self.nodes[node];
        let Some(seen_from) = node.get() else {
            node.set(Some(self.total));
            return 0;
        };
        let minute = self.pop.last_minute(now).unwrap_or(0);
        // Both are the latest of the POP's counts (counts come in time order):
        // the node sees the fewer.
        let since_first_use = u32::try_from(self.total - seen_from).unwrap_or(u32::MAX);
        let view = u64::from(minute.min(since_first_use));
        (view * (100 - UNDER_COUNT_PERCENT) / 100) as u32
    }

    /// The node the next read goes to.
    fn next_node(&self) -> usize {
        // SplitMix64, as the simulator's own stream.
        let state = self.rng.get().wrapping_add(0x9e37_79b9_7f4a_7c15);
        self.rng.set(state);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        ((u128::from(z) * self.nodes.len() as u128) >> 64) as usize
    }
}

impl PopCounts for DocumentedCounts {
    fn last_minute(&self, now: u64) -> Option<u32> {
        Some(self.read_at(self.next_node(), now))
    }

    fn counted(&self, token: &str) -> bool {
        self.pop.counted(token)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_a_setting_or_counts_every_win_is_admitted_uncounted() {
        let counts = ExactCounts::default();
        assert_eq!(
            judge(None, Some(&counts), 100, "10.0.0.1", 90),
            Ceiling::Admit(None)
        );
        assert_eq!(
            judge(Some(5), None, 100, "10.0.0.1", 90),
            Ceiling::Admit(None)
        );
    }

    #[test]
    fn wins_are_held_once_the_minute_holds_the_ceiling_and_admitted_as_it_passes() {
        let mut counts = ExactCounts::default();
        for i in 0..3u64 {
            match judge(Some(3), Some(&counts), 100 + i, "10.0.0.1", 90 + i) {
                Ceiling::Admit(Some(key)) => counts.count(100 + i, key),
                other => panic!("win {i}: {other:?}"),
            }
        }
        assert_eq!(counts.last_minute(102), Some(3));
        assert_eq!(
            judge(Some(3), Some(&counts), 130, "10.0.0.2", 120),
            Ceiling::Hold
        );
        // A token counted already (another tab) is admitted, and not counted again.
        assert_eq!(
            judge(Some(3), Some(&counts), 130, "10.0.0.1", 91),
            Ceiling::Admit(None)
        );
        // The bucket of 100-109 leaves the minute at 160.
        assert_eq!(counts.last_minute(159), Some(3));
        assert_eq!(counts.last_minute(160), Some(0));
        assert_eq!(
            judge(Some(3), Some(&counts), 160, "10.0.0.2", 150),
            Ceiling::Admit(Some(draw_key("10.0.0.2", 150)))
        );
    }

    #[test]
    fn an_unknown_count_holds_nobody() {
        #[derive(Debug)]
        struct Blind;
        impl PopCounts for Blind {
            fn last_minute(&self, _: u64) -> Option<u32> {
                None
            }
            fn counted(&self, _: &str) -> bool {
                false
            }
        }
        assert_eq!(
            judge(Some(1), Some(&Blind), 100, "10.0.0.1", 90),
            Ceiling::Admit(Some(draw_key("10.0.0.1", 90)))
        );
    }

    /// Counts `n` new sessions at `now`, keyed from `first`.
    fn count_many(counts: &mut DocumentedCounts, now: u64, first: u32, n: u32) {
        for i in first..first + n {
            counts.count(now, draw_key(&format!("10.0.{}.{}", i / 256, i % 256), now));
        }
    }

    #[test]
    fn the_exact_counts_read_every_session_of_the_minute() {
        let mut counts = ExactCounts::default();
        let mut at = Vec::new();
        for now in 500..640u64 {
            for i in 0..now % 5 {
                counts.count(now, format!("{now} {i}"));
                at.push(now);
            }
            // The current ten-second bucket and the five before it.
            let since = (now / 10).saturating_sub(5) * 10;
            let expected = at.iter().filter(|&&t| t >= since).count() as u32;
            assert_eq!(counts.last_minute(now), Some(expected), "{now}");
        }
    }

    #[test]
    fn a_documented_read_is_at_most_ten_per_cent_low_and_never_high() {
        let mut exact = ExactCounts::default();
        let mut modelled = DocumentedCounts::new(1, 7);
        assert_eq!(modelled.last_minute(1000), Some(0), "the first use");
        for (i, now) in (1000..1200u64).step_by(3).enumerate() {
            let key = draw_key("10.0.0.1", now);
            exact.count(now, key.clone());
            modelled.count(now, key);
            for _ in 0..=(i % 4) {
                exact.count(now, format!("{now} {i} extra"));
                modelled.count(now, format!("{now} {i} extra"));
            }
            let truth = exact.last_minute(now).unwrap();
            let read = modelled.last_minute(now).unwrap();
            assert!(read <= truth, "{now}: {read} > {truth}");
            // The documented worst, every time: 90 %, rounded down.
            assert_eq!(read, truth * 9 / 10, "{now}: {read} of {truth}");
            assert!(f64::from(read) > 0.9 * f64::from(truth) - 1.0);
        }
    }

    #[test]
    fn a_fresh_node_reads_zero_then_only_what_came_after() {
        let mut counts = DocumentedCounts::new(2, 1);
        count_many(&mut counts, 100, 0, 50);
        assert_eq!(counts.read_at(0, 101), 0, "node 0's first use");
        assert_eq!(counts.read_at(0, 101), 0, "nothing counted since");
        count_many(&mut counts, 102, 50, 20);
        assert_eq!(counts.read_at(0, 103), 18, "90 % of the 20 it saw");
        // Node 1 has never read: its first use reads zero, whatever the POP counted.
        assert_eq!(counts.read_at(1, 103), 0);
        count_many(&mut counts, 104, 70, 10);
        assert_eq!(counts.read_at(1, 105), 9);
        assert_eq!(counts.read_at(0, 105), 27);
        // A minute on, the sessions of second 100 have left node 0's minute too:
        // its view is the POP's minute from then.
        count_many(&mut counts, 150, 80, 10);
        assert_eq!(counts.read_at(0, 150), 36);
        assert_eq!(
            counts.read_at(0, 165),
            9,
            "the bucket of 100-109 has left the minute"
        );
    }

    #[test]
    fn reads_spread_over_the_nodes_by_the_seed() {
        let reads = |seed: u64| {
            let mut counts = DocumentedCounts::new(4, seed);
            (0..64u32)
                .map(|i| {
                    count_many(&mut counts, 200, i * 10, 10);
                    counts.last_minute(200).unwrap()
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(reads(5), reads(5));
        assert_ne!(reads(5), reads(6));
        // Four first uses, each reading zero, and no more.
        let mut counts = DocumentedCounts::new(4, 5);
        let zeros = (0..64u32)
            .filter(|&i| {
                count_many(&mut counts, 200, i * 10, 10);
                counts.last_minute(200) == Some(0)
            })
            .count();
        assert_eq!(zeros, 4);
    }

    #[test]
    fn under_the_documented_counts_a_ceiling_admits_up_to_a_ninth_more() {
        // Ceiling 20: the 23rd session is drawn while the node reads 90 % of 22 = 19.
        let (mut exact, mut modelled) = (ExactCounts::default(), DocumentedCounts::new(1, 3));
        let (mut by_exact, mut by_model) = (0, 0);
        for i in 0..40u64 {
            let uid = format!("10.0.1.{i}");
            if let Ceiling::Admit(Some(key)) = judge(Some(20), Some(&exact), 300, &uid, 290) {
                exact.count(300, key);
                by_exact += 1;
            }
            if let Ceiling::Admit(Some(key)) = judge(Some(20), Some(&modelled), 300, &uid, 290) {
                modelled.count(300, key);
                by_model += 1;
            }
        }
        assert_eq!((by_exact, by_model), (20, 23));
    }
}
