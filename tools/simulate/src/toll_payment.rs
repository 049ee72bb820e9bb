//! Paying the room's bot toll ([`waiting_room::bots::toll`]) in the simulator: who
//! pays, the nonce a payer presents, and the hashes it cost.
//!
//! A device that is shown a toll (`Verdict::toll`) pays it before its next
//! request: every person's browser does (its page pays while it waits; how fast
//! a browser hashes is not modelled), and so does a paying bot; a skipping bot
//! never does. Paying finds the nonce the room's own search ([`toll::solve`])
//! finds, the first: it is real, put in the device's toll cookie and checked by
//! the room's own `decide`, and it costs what that search costs, `nonce +
//! 1` hashes. (A large toll is searched on every core, each nonce checked by
//! the room's own [`toll::solves`], to save wall time; the hashes counted are
//! still those of the search on one core.)

use std::sync::atomic::{AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use serde::Serialize;
use waiting_room::admission::decision::TollDue;
use waiting_room::bots::toll;

use crate::bots::Bot;
use crate::population::Kind;

/// Whether a visitor of `kind` pays a toll it is shown: all but a skipping bot.
pub fn pays(kind: Kind) -> bool {
    kind != Kind::Bot(Bot::Skipping)
}

/// Tolls of fewer bits are searched on one thread.
const PARALLEL_FROM_BITS: u8 = 12;

/// The nonce that pays `due` (the first, as the room's own search finds it)
/// and the hashes that search takes.
pub fn solve(due: &TollDue) -> (u64, u64) {
    let threads = thread::available_parallelism().map_or(1, |n| n.get() as u64);
    let nonce = if due.bits < PARALLEL_FROM_BITS || threads == 1 {
        toll::solve(&due.signature, due.bits)
    } else {
        first_nonce(due, threads)
    };
    (nonce, nonce + 1)
}

/// Nonces a thread checks in a row before it skips to its next block.
const BLOCK: u64 = 1024;

/// The first nonce that pays `due`, searched by `threads` threads, each
/// checking its own blocks of nonces in turn (block `i` is thread `i %
/// threads`'s) with the room's own [`toll::solves`]. A thread stops at its
/// first solution, or at a block past the smallest solution yet found: none of
/// its own below that is left unchecked, so the smallest found is the first.
fn first_nonce(due: &TollDue, threads: u64) -> u64 {
    let found = AtomicU64::new(u64::MAX);
    thread::scope(|scope| {
        for first in 0..threads {
            let found = &found;
            scope.spawn(move || {
                let mut start = first * BLOCK;
                while start < found.load(Ordering::Relaxed) {
                    let solution = (start..start + BLOCK)
                        .find(|&nonce| toll::solves(&due.signature, nonce, due.bits));
                    if let Some(nonce) = solution {
                        found.fetch_min(nonce, Ordering::Relaxed);
                        return;
                    }
                    start += threads * BLOCK;
                }
            });
        }
    });
    found.into_inner()
}

/// One kind of visitor's tolls.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Payments {
    /// Tolls paid.
    pub solves: u64,
    /// Hashes those cost (the sum of `nonce + 1`).
    pub hashes: u64,
    /// Draws (or FIFO admissions) held for want of payment (`toll-unpaid`).
    pub held: u64,
}

/// The tolls of a run, by kind of visitor.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct TollTally {
    /// People (every kind but bots).
    pub people: Payments,
    /// Skipping bots.
    pub skipping_bots: Payments,
    /// Paying bots.
    pub paying_bots: Payments,
}

impl TollTally {
    /// The payments of visitors of `kind`.
    pub fn of(&self, kind: Kind) -> &Payments {
        match kind {
            Kind::Bot(Bot::Skipping) => &self.skipping_bots,
            Kind::Bot(Bot::Paying) => &self.paying_bots,
            _ => &self.people,
        }
    }

    fn of_mut(&mut self, kind: Kind) -> &mut Payments {
        match kind {
            Kind::Bot(Bot::Skipping) => &mut self.skipping_bots,
            Kind::Bot(Bot::Paying) => &mut self.paying_bots,
            _ => &mut self.people,
        }
    }

    /// A visitor of `kind` paid a toll with `hashes` hashes.
    pub fn paid(&mut self, kind: Kind, hashes: u64) {
        let payments = self.of_mut(kind);
        payments.solves += 1;
        payments.hashes += hashes;
    }

    /// A visitor of `kind` was held for want of payment.
    pub fn held(&mut self, kind: Kind) {
        self.of_mut(kind).held += 1;
    }
}

/// Hashes a second of CPU on one core of this machine by the room's own search
/// on one thread ([`toll::solve`]: native Rust SHA-256, the `sha2` crate, not a
/// browser),
/// solving challenges of 12 bits for `at_least` of the thread's CPU time (of
/// wall-clock time where the system does not say), so that other work on a
/// shared machine counts little.
pub fn hash_rate(at_least: Duration) -> f64 {
    let cpu_start = thread_cpu();
    let wall_start = Instant::now();
    let spent = || match (cpu_start, thread_cpu()) {
        (Some(start), Some(now)) => now.saturating_sub(start),
        _ => wall_start.elapsed(),
    };
    let mut hashes = 0u64;
    for round in 0u32.. {
        let mut signature = [0x5a; 32];
        signature[..4].copy_from_slice(&round.to_be_bytes());
        hashes += toll::solve(&signature, 12) + 1;
        if spent() >= at_least {
            break;
        }
    }
    hashes as f64 / spent().as_secs_f64()
}

/// The CPU time this thread has run, by Linux's `/proc/thread-self/schedstat`.
fn thread_cpu() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let nanos = stat.split_whitespace().next()?.parse().ok()?;
    Some(Duration::from_nanos(nanos))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_but_skipping_bots_pay_and_each_pays_real_work() {
        assert!(pays(Kind::Single) && pays(Kind::Attacker) && pays(Kind::Bot(Bot::Paying)));
        assert!(!pays(Kind::Bot(Bot::Skipping)));
        let due = TollDue {
            signature: [9; 32],
            bits: 6,
        };
        let (nonce, hashes) = solve(&due);
        assert!(toll::solves(&due.signature, nonce, 6));
        assert_eq!(hashes, nonce + 1);
        let mut tally = TollTally::default();
        tally.paid(Kind::Nat, hashes);
        tally.paid(Kind::Bot(Bot::Paying), 10);
        tally.held(Kind::Bot(Bot::Skipping));
        assert_eq!(tally.of(Kind::Single).hashes, hashes);
        assert_eq!(tally.paying_bots.solves, 1);
        assert_eq!(
            tally.skipping_bots,
            Payments {
                held: 1,
                ..Payments::default()
            }
        );
    }

    #[test]
    fn every_core_finds_the_first_nonce_the_rooms_search_finds() {
        for (i, bits) in [(0u8, 12u8), (1, 13), (2, 1), (3, 0)] {
            let due = TollDue {
                signature: [i; 32],
                bits,
            };
            let nonce = toll::solve(&due.signature, bits);
            for threads in [1, 2, 3] {
                assert_eq!(first_nonce(&due, threads), nonce, "{bits} bits, {threads}");
            }
            assert_eq!(solve(&due), (nonce, nonce + 1));
        }
    }

    #[test]
    fn the_hash_rate_is_measured() {
        assert!(hash_rate(Duration::from_millis(20)) > 1_000.0);
        if let Some(before) = thread_cpu() {
            solve(&TollDue {
                signature: [1; 32],
                bits: 10,
            });
            // The kernel brings a thread's run time up to date when it is switched
            // out: a short sleep makes sure the solve's work is counted.
            std::thread::sleep(Duration::from_millis(2));
            assert!(thread_cpu().unwrap() > before, "the thread's CPU time runs");
        }
    }
}
