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

use crate::percentage::Percentage;

/// Whether the token with lottery seed `seed` wins at `percentage`.
pub fn wins(seed: u32, percentage: Percentage) -> bool {
    let x = u64::from(first_output(u64::from(seed)));
    // x < 2^32 and p_micro ≤ 10^6 < 2^20: both sides stay below 2^52.
    x * 1_000_000 < u64::from(percentage.micros()) << 32
}

/// `ChaCha20Rng::seed_from_u64(seed).next_u32()` (steps 2 and 3 above), computed
/// directly: the PCG32 expansion of `seed` into the 256-bit key, then the first
/// word of ChaCha20 block 0 (counter 0, stream 0). One block, where rand_chacha
/// computes four at a time to buffer them; the tests compare the two.
fn first_output(mut seed: u64) -> u32 {
    const SIGMA: [u32; 4] = [0x6170_7865, 0x3320_646e, 0x7962_2d32, 0x6b20_6574];
    let mut input = [0u32; 16];
    input[..4].copy_from_slice(&SIGMA);
    for word in &mut input[4..12] {
        *word = pcg32(&mut seed);
    }
    let mut x = input;
    for _ in 0..10 {
        quarter_round(&mut x, 0, 4, 8, 12);
        quarter_round(&mut x, 1, 5, 9, 13);
        quarter_round(&mut x, 2, 6, 10, 14);
        quarter_round(&mut x, 3, 7, 11, 15);
        quarter_round(&mut x, 0, 5, 10, 15);
        quarter_round(&mut x, 1, 6, 11, 12);
        quarter_round(&mut x, 2, 7, 8, 13);
        quarter_round(&mut x, 3, 4, 9, 14);
    }
    x[0].wrapping_add(input[0])
}

/// rand_core's `seed_from_u64` step: advance a PCG32 state, output one word (the
/// key's little-endian bytes, read back as the same word).
fn pcg32(state: &mut u64) -> u32 {
    const MUL: u64 = 6_364_136_223_846_793_005;
    const INC: u64 = 11_634_580_027_462_260_723;
    *state = state.wrapping_mul(MUL).wrapping_add(INC);
    let s = *state;
    let xorshifted = (((s >> 18) ^ s) >> 27) as u32;
    xorshifted.rotate_right((s >> 59) as u32)
}

fn quarter_round(x: &mut [u32; 16], a: usize, b: usize, c: usize, d: usize) {
    x[a] = x[a].wrapping_add(x[b]);
    x[d] = (x[d] ^ x[a]).rotate_left(16);
    x[c] = x[c].wrapping_add(x[d]);
    x[b] = (x[b] ^ x[c]).rotate_left(12);
    x[a] = x[a].wrapping_add(x[b]);
    x[d] = (x[d] ^ x[a]).rotate_left(8);
    x[c] = x[c].wrapping_add(x[d]);
    x[b] = (x[b] ^ x[c]).rotate_left(7);
}

#[cfg(test)]
mod tests {
    use rand_chacha::ChaCha20Rng;
    use rand_chacha::rand_core::{Rng, SeedableRng};

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

    /// Every whole percentage draws exactly as the integer rule `x * 100 < p * 2^32`
    /// of earlier versions (and of every token minted by them).
    #[test]
    fn whole_percentages_draw_exactly_as_the_integer_rule() {
        for seed in (0..0x00FF_FFFF).step_by(7_919) {
            let x = u64::from(ChaCha20Rng::seed_from_u64(u64::from(seed)).next_u32());
            for whole in 0..=100u8 {
                let integer_rule = x * 100 < u64::from(whole) << 32;
                assert_eq!(wins(seed, Percentage::whole(whole)), integer_rule);
            }
        }
    }

    /// The one-block computation is rand_chacha's first output, seed for seed
    /// (every seed a token can carry is below 2^24; the larger ones check the
    /// whole PCG32 expansion).
    #[test]
    fn first_output_is_rand_chachas_first_output() {
        let seeds = (0..0x00FF_FFFF_u64).step_by(997).chain([
            0x00FF_FFFF,
            1 << 24,
            u64::from(u32::MAX),
            u64::MAX,
        ]);
        for seed in seeds {
            assert_eq!(
                first_output(seed),
                ChaCha20Rng::seed_from_u64(seed).next_u32(),
                "seed {seed}"
            );
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
