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
//! 4. with the percentage in millionths, `p_micro` = 0..=1,000,000 (`12.5` % is
//!    125,000), the token wins iff `x * 1_000_000 < p_micro * 2^32` (as 64-bit
//!    integers), so it wins with probability `ceil(p_micro * 2^32 / 10^6) / 2^32`,
//!    within 2^-32 of `p_micro / 10^6`. For a whole percentage `p` this is exactly
//!    the integer rule `x * 100 < p * 2^32` that earlier versions used, so every
//!    token draws the same as before.
//!
//! The seed depends only on the signature, so presenting the same token again can
//! never re-roll it, and the draw is the same on every platform.

use rand_chacha::ChaCha20Rng;
use rand_chacha::rand_core::{Rng, SeedableRng};

use crate::settings::percentage::Percentage;

/// Whether the token with lottery seed `seed` wins at `percentage`.
pub fn wins(seed: u32, percentage: Percentage) -> bool {
    let x = u64::from(draw(seed));
    // x < 2^32 and p_micro ≤ 10^6 < 2^20: both sides stay below 2^52.
    x * 1_000_000 < u64::from(percentage.micros()) << 32
}

/// `x` of steps 2 and 3 above: the first 32-bit output of ChaCha20 seeded from `seed`.
fn draw(seed: u32) -> u32 {
    ChaCha20Rng::seed_from_u64(u64::from(seed)).next_u32()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Known answers from `scripts/lottery_reference.py`, an independent Python
    /// implementation of the algorithm above. If these change, deployed tokens
    /// change their outcome: the algorithm is a compatibility promise.
    fn p(text: &str) -> Percentage {
        text.parse().unwrap()
    }

    #[test]
    fn known_answers_match_the_independent_reference() {
        // python3 scripts/lottery_reference.py 50 $(seq 0 15)
        let winners_at_50: Vec<u32> = (0..16).filter(|&s| wins(s, p("50"))).collect();
        assert_eq!(winners_at_50, [1, 2, 6, 7, 8, 9, 10, 11, 12]);
        // python3 scripts/lottery_reference.py 10 1703433 4186227 $(seq 100 140)
        let seeds = [1_703_433, 4_186_227].into_iter().chain(100..=140);
        let winners_at_10: Vec<u32> = seeds.filter(|&s| wins(s, p("10"))).collect();
        assert_eq!(winners_at_10, [1_703_433, 101, 124, 138]);
    }

    #[test]
    fn fractional_known_answers_match_the_independent_reference() {
        // python3 scripts/lottery_reference.py 12.5 $(seq 0 60)
        let at_12_5: Vec<u32> = (0..=60).filter(|&s| wins(s, p("12.5"))).collect();
        assert_eq!(at_12_5, [6, 10, 18, 20, 23, 33, 35, 41]);
        // python3 scripts/lottery_reference.py 0.5 $(seq 0 2000)
        let at_0_5: Vec<u32> = (0..=2000).filter(|&s| wins(s, p("0.5"))).collect();
        assert_eq!(at_0_5, [227, 297, 399, 535, 675, 863, 1026, 1711]);
    }

    /// The drawn word itself, from the same reference (its `chacha20_first_word` of
    /// `pcg32_seed(seed)`): a change to the draw fails here even where no outcome
    /// above would flip.
    #[test]
    fn first_words_match_the_independent_reference() {
        let known = [
            (0, 2_180_380_594),
            (1, 1_346_647_962),
            (2, 1_404_504_974),
            (3, 2_671_719_423),
            (1_703_433, 169_675_493),
            (4_186_227, 1_085_039_704),
            (0x00FF_FFFF, 3_647_383_944),
            (u32::MAX, 105_087_891),
        ];
        for (seed, word) in known {
            assert_eq!(draw(seed), word, "seed {seed}");
        }
        // Every 997th seed a token can carry (below 2^24), then 0xFFFFFF and
        // u32::MAX, folded as `h = h * 31 + word` (mod 2^64) by the reference.
        let seeds = (0..0x00FF_FFFF).step_by(997).chain([0x00FF_FFFF, u32::MAX]);
        let (count, folded) = seeds.fold((0, 0u64), |(count, h), seed| {
            (
                count + 1,
                h.wrapping_mul(31).wrapping_add(u64::from(draw(seed))),
            )
        });
        assert_eq!((count, folded), (16_830, 17_371_282_090_292_437_305));
    }

    /// Every whole percentage draws exactly as the integer rule `x * 100 < p * 2^32`
    /// of earlier versions (and of every token minted by them).
    #[test]
    fn whole_percentages_draw_exactly_as_the_integer_rule() {
        for seed in (0..0x00FF_FFFF).step_by(7_919) {
            let x = u64::from(draw(seed));
            for whole in 0..=100u8 {
                let integer_rule = x * 100 < u64::from(whole) << 32;
                assert_eq!(wins(seed, Percentage::whole(whole)), integer_rule);
            }
        }
    }

    #[test]
    fn zero_never_wins_and_hundred_always_wins() {
        for seed in (0..0x00FF_FFFF).step_by(9_973) {
            assert!(!wins(seed, Percentage::ZERO));
            assert!(wins(seed, Percentage::HUNDRED));
            assert!(wins(seed, p("200")));
        }
    }

    #[test]
    fn a_seed_always_draws_the_same() {
        for seed in [0, 1, 1_703_433, 4_186_227, 0x00FF_FFFF] {
            let first = wins(seed, p("37.25"));
            assert!((0..5).all(|_| wins(seed, p("37.25")) == first));
        }
    }

    #[test]
    fn winners_at_p_also_win_at_every_higher_p() {
        for seed in (0..0x00FF_FFFF).step_by(104_729) {
            let mut won = false;
            for micros in (0..=1_000_000).step_by(2_500) {
                let now = wins(seed, Percentage::from_micros(micros));
                assert!(!won || now, "seed {seed} won lower but lost at {micros} µ");
                won = now;
            }
        }
    }

    /// Admission rate over 20,000 consecutive seeds stays inside a 4.5-sigma
    /// binomial band (false alarm odds below 1 in 100,000 per percentage).
    #[test]
    fn admission_rate_matches_the_percentage() {
        const N: u32 = 20_000;
        for text in [
            "1", "5", "10", "25", "50", "75", "90", "99", "0.5", "2.75", "33.3333",
        ] {
            let share = p(text).fraction();
            let admitted = (0..N).filter(|&s| wins(s * 613 + 7, p(text))).count() as f64;
            let mean = f64::from(N) * share;
            let sigma = (mean * (1.0 - share)).sqrt();
            assert!(
                (admitted - mean).abs() <= 4.5 * sigma,
                "p={text}: admitted {admitted}, expected {mean} ± {}",
                4.5 * sigma
            );
        }
    }
}
