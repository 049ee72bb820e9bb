//! The lottery that decides, once and for all, whether an expired wait token wins.
//!
//! The VCL calls `randombool_seeded(percentage, 100, seed)` with
//! `seed = std.strtol(substr(sig, 0, 8), 16)`. Fastly's generator behind it is not
//! public, so this program draws with ChaCha20 instead. To reproduce a draw:
//!
//! 1. `seed` = the first six hex digits of the token's signature, as an integer
//!    (the VCL seed, 0..=0xFFFFFF);
//! 2. `rng = rand_chacha::ChaCha20Rng::seed_from_u64(seed)` (rand_core 0.10's
//!    documented PCG32 expansion of the `u64` into the 32-byte key);
//! 3. `x = rng.next_u32()`, the first 32-bit output;
//! 4. the token wins iff `x * 100 < percentage * 2^32` (as 64-bit integers),
//!    so it wins with probability `ceil(percentage * 2^32 / 100) / 2^32`,
//!    within 2^-32 of `percentage / 100`.
//!
//! The seed depends only on the signature, so presenting the same token again can
//! never re-roll it, and the draw is the same on every platform.

use rand_chacha::ChaCha20Rng;
use rand_chacha::rand_core::{Rng, SeedableRng};

/// Whether the token with lottery seed `seed` wins at `percentage` (0..=100;
/// larger values count as 100).
pub fn wins(seed: u32, percentage: u8) -> bool {
    let mut rng = ChaCha20Rng::seed_from_u64(u64::from(seed));
    let x = u64::from(rng.next_u32());
    x * 100 < u64::from(percentage.min(100)) << 32
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Known answers from `scripts/lottery_reference.py`, an independent Python
    /// implementation of the algorithm above. If these change, deployed tokens
    /// change their outcome: the algorithm is a compatibility promise.
    #[test]
    fn known_answers_match_the_independent_reference() {
        // python3 scripts/lottery_reference.py 50 $(seq 0 15)
        let winners_at_50: Vec<u32> = (0..16).filter(|&s| wins(s, 50)).collect();
        assert_eq!(winners_at_50, [1, 2, 6, 7, 8, 9, 10, 11, 12]);
        // python3 scripts/lottery_reference.py 10 1703433 4186227 $(seq 100 140)
        let seeds = [1_703_433, 4_186_227].into_iter().chain(100..=140);
        let winners_at_10: Vec<u32> = seeds.filter(|&s| wins(s, 10)).collect();
        assert_eq!(winners_at_10, [1_703_433, 101, 124, 138]);
    }

    #[test]
    fn zero_never_wins_and_hundred_always_wins() {
        for seed in (0..0x00FF_FFFF).step_by(9_973) {
            assert!(!wins(seed, 0));
            assert!(wins(seed, 100));
            assert!(wins(seed, 200));
        }
    }

    #[test]
    fn a_seed_always_draws_the_same() {
        for seed in [0, 1, 1_703_433, 4_186_227, 0x00FF_FFFF] {
            let first = wins(seed, 37);
            assert!((0..5).all(|_| wins(seed, 37) == first));
        }
    }

    #[test]
    fn winners_at_p_also_win_at_every_higher_p() {
        for seed in (0..0x00FF_FFFF).step_by(104_729) {
            let mut won = false;
            for p in 0..=100 {
                let now = wins(seed, p);
                assert!(!won || now, "seed {seed} won at a lower p but lost at {p}");
                won = now;
            }
        }
    }

    /// Admission rate over 20,000 consecutive seeds stays inside a 4.5-sigma
    /// binomial band (false alarm odds below 1 in 100,000 per percentage).
    #[test]
    fn admission_rate_matches_the_percentage() {
        const N: u32 = 20_000;
        for p in [1u8, 5, 10, 25, 50, 75, 90, 99] {
            let admitted = (0..N).filter(|&s| wins(s * 613 + 7, p)).count() as f64;
            let mean = f64::from(N) * f64::from(p) / 100.0;
            let sigma = (mean * (1.0 - f64::from(p) / 100.0)).sqrt();
            assert!(
                (admitted - mean).abs() <= 4.5 * sigma,
                "p={p}: admitted {admitted}, expected {mean} ± {}",
                4.5 * sigma
            );
        }
    }
}
