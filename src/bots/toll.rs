//! The bot toll: a proof of work a wait token's holder pays before their first
//! draw (random mode) or admission (FIFO), checked with one SHA-256 and no state.
//!
//! While a room asks `bot_toll_bits = N` (1–32), each wait token it issues owes
//! N bits (`toll=N` in the token). The challenge is the token's own signature, so
//! a solution is bound to everything the signature covers: the address, the
//! period (its expiry), the key and the room (each room signs with a key of its
//! own). The visitor pays by finding a nonce whose
//! `SHA-256("waiting-room-toll:" + challenge + ":" + nonce)` starts with N zero
//! bits, and sends it in the room's toll cookie
//! ([`crate::credentials::cookie_names::toll`]). A token whose draw comes
//! unpaid is held (`toll-unpaid`): it waits on with a new token that owes again.
//! Once paid, the tokens that follow carry `toll=0`: one payment per place.
//!
//! A token owes the smaller of what it says and what the room asks now, so a
//! rise during an event strands nobody who already paid or is paying, and a
//! token from before the toll (no field) is drawn once as it stands.

use sha2::{Digest, Sha256};

/// The most bits a room may ask: about 4·10⁹ hashes, far past any visitor.
pub const MAX_BITS: u8 = 32;

/// The text every hashed input starts with.
pub const DOMAIN: &str = "waiting-room-toll:";

/// Hashes a second the built-in page's solver computes on a phone: headless
/// Chromium slowed fourfold (BENCHMARKS.md, "Bot toll: solve time").
/// `wrctl config check` warns when a difficulty costs a phone more than
/// [`PHONE_SECONDS_WARNED`].
pub const PHONE_HASHES_PER_SECOND: u32 = 400_000;

/// Seconds of a phone's work above which a difficulty is warned about.
pub const PHONE_SECONDS_WARNED: f64 = 5.0;

/// Expected seconds a phone's browser spends on `bits` (2^bits hashes).
pub fn phone_seconds(bits: u8) -> f64 {
    2f64.powi(i32::from(bits)) / f64::from(PHONE_HASHES_PER_SECOND)
}

/// The waiting pages' solver: the WebAssembly module of `toll-solver/` (this search,
/// with the `sha2` crate's SHA-256), base64, built by `scripts/build-toll-solver.sh`.
/// Pages get it as `{{toll_solver}}`.
pub const SOLVER_WASM_BASE64: &str =
    include_str!("../../static/toll-solver.wasm.b64").trim_ascii_end();

/// Longest nonce accepted: `u64::MAX` has 20 digits.
const MAX_NONCE_DIGITS: usize = 20;

/// Parses a number of bits: a canonical decimal from 0 to [`MAX_BITS`].
pub fn parse_bits(raw: &str) -> Option<u8> {
    let bits = parse_canonical(raw, 2)?;
    u8::try_from(bits).ok().filter(|b| *b <= MAX_BITS)
}

/// Parses a nonce: a canonical decimal `u64` (no sign, no leading zero).
pub fn parse_nonce(raw: &str) -> Option<u64> {
    parse_canonical(raw, MAX_NONCE_DIGITS)
}

fn parse_canonical(raw: &str, max_digits: usize) -> Option<u64> {
    let canonical = !raw.is_empty()
        && raw.len() <= max_digits
        && raw.bytes().all(|b| b.is_ascii_digit())
        && (raw == "0" || !raw.starts_with('0'));
    canonical.then(|| raw.parse().ok()).flatten()
}

/// The challenge of a token whose signature is `signature`: its lowercase hex.
pub fn challenge(signature: &[u8; 32]) -> String {
    hex::encode(signature)
}

/// Whether `nonce` pays `bits` for the token whose signature is `signature`.
pub fn solves(signature: &[u8; 32], nonce: u64, bits: u8) -> bool {
    let mut hash = Sha256::new();
    hash.update(DOMAIN);
    hash.update(challenge(signature));
    hash.update(":");
    hash.update(nonce.to_string());
    leading_zero_bits(&hash.finalize()) >= u32::from(bits)
}

/// The number of zero bits `digest` starts with, big-endian.
fn leading_zero_bits(digest: &[u8]) -> u32 {
    let mut zeros = 0;
    for byte in digest {
        zeros += byte.leading_zeros();
        if *byte != 0 {
            break;
        }
    }
    zeros
}

/// The first nonce that pays `bits` for `signature` (for tests, the simulator's
/// bots and `wrctl`; a browser runs the same search in the page's script).
pub fn solve(signature: &[u8; 32], bits: u8) -> u64 {
    (0..)
        .find(|nonce| solves(signature, *nonce, bits))
        .expect("a nonce below 2^64 pays at most 32 bits")
}

/// What a wait token's holder owes now: the smaller of the token's `toll` and
/// the room's `bits`; a token without the field owes nothing.
pub fn owed(token_toll: Option<u8>, room_bits: u8) -> u8 {
    token_toll.unwrap_or(0).min(room_bits)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SIG: [u8; 32] = [7; 32];

    #[test]
    fn bits_and_nonces_are_canonical_decimals() {
        assert_eq!(parse_bits("0"), Some(0));
        assert_eq!(parse_bits("32"), Some(32));
        for bad in ["33", "99", "-1", "+1", "01", "", " 1", "1 ", "100", "0x1"] {
            assert_eq!(parse_bits(bad), None, "{bad:?}");
        }
        assert_eq!(parse_nonce("0"), Some(0));
        assert_eq!(parse_nonce("18446744073709551615"), Some(u64::MAX));
        for bad in ["18446744073709551616", "007", "", "1e3", "-0", "12a", "٣"] {
            assert_eq!(parse_nonce(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn a_solution_pays_its_own_challenge_and_no_other() {
        let nonce = solve(&SIG, 12);
        assert!(solves(&SIG, nonce, 12));
        assert!(solves(&SIG, nonce, 1), "more work pays less");
        let mut other = SIG;
        other[31] ^= 1;
        // One chance in 4096 that a nonce also pays another challenge: this one does not.
        assert!(!solves(&other, nonce, 12));
        assert!((0..nonce).all(|n| !solves(&SIG, n, 12)), "the first one");
    }

    #[test]
    fn the_hashed_input_is_the_documented_text() {
        let nonce = solve(&SIG, 8);
        let text = format!("waiting-room-toll:{}:{nonce}", "07".repeat(32));
        let digest = Sha256::digest(text.as_bytes());
        assert_eq!(digest[0], 0);
        assert!(solves(&SIG, nonce, 8));
    }

    #[test]
    fn zero_bits_cost_nothing_and_leading_zeros_count_across_bytes() {
        assert!(solves(&SIG, 0, 0));
        assert_eq!(leading_zero_bits(&[0, 0, 0b0001_0000, 0xff]), 19);
        assert_eq!(leading_zero_bits(&[0x80]), 0);
        assert_eq!(leading_zero_bits(&[0; 4]), 32);
    }

    #[test]
    fn a_token_owes_the_lesser_of_its_toll_and_the_rooms() {
        assert_eq!(owed(None, 20), 0, "issued before the toll");
        assert_eq!(owed(Some(0), 20), 0, "paid");
        assert_eq!(owed(Some(16), 20), 16, "a rise strands nobody");
        assert_eq!(owed(Some(16), 10), 10, "a fall applies at once");
        assert_eq!(owed(Some(16), 0), 0, "off");
    }
}
