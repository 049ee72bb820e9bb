//! The solver finds exactly the nonces the room accepts: `waiting_room::bots::toll::solve`'s
//! first nonce, searched whole and in slices as the page does, for many challenges.

use toll_solver::{PREFIX_LEN, first_paying};
use waiting_room::bots::toll;

/// Signatures unlike each other (not cryptographic: any 32 bytes are a challenge).
fn signature(i: u32) -> [u8; 32] {
    let mut sig = [0u8; 32];
    let mut x = u64::from(i).wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    for byte in &mut sig {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        *byte = x as u8;
    }
    sig
}

fn prefix(sig: &[u8; 32]) -> Vec<u8> {
    let text = format!("{}{}:", toll::DOMAIN, toll::challenge(sig));
    assert_eq!(text.len(), PREFIX_LEN);
    text.into_bytes()
}

#[test]
fn the_first_paying_nonce_is_the_rooms() {
    for i in 0..200 {
        let sig = signature(i);
        let bits = 1 + (i % 12) as u8;
        let expected = toll::solve(&sig, bits);
        let found = first_paying(&prefix(&sig), 0, u32::MAX, u32::from(bits));
        assert_eq!(found, Some(expected), "signature {i}, {bits} bits");
    }
}

#[test]
fn slices_find_the_same_nonce_as_one_search() {
    for i in 0..40 {
        let sig = signature(1000 + i);
        let bits = 10;
        let expected = toll::solve(&sig, bits);
        let slice = 97; // odd, so slices straddle digit-count changes (99 → 100)
        let mut start = 0;
        let found = loop {
            if let Some(nonce) = first_paying(&prefix(&sig), start, slice, 10) {
                break nonce;
            }
            start += u64::from(slice);
        };
        assert_eq!(found, expected, "signature {i}");
        assert!(toll::solves(&sig, found, bits));
    }
}

#[test]
fn every_nonce_it_passes_over_does_not_pay() {
    let sig = signature(7);
    let p = prefix(&sig);
    // From a start far from 0, with more digits: each answer pays and none before it.
    let mut start = 9_999_990_000;
    for _ in 0..20 {
        let nonce = first_paying(&p, start, u32::MAX, 8).expect("8 bits are found");
        assert!(toll::solves(&sig, nonce, 8), "{nonce}");
        assert!(
            (start..nonce).all(|n| !toll::solves(&sig, n, 8)),
            "{start}..{nonce}"
        );
        start = nonce + 1;
    }
}

#[test]
fn zero_bits_pay_at_the_start_and_32_bits_are_accepted() {
    let p = prefix(&signature(3));
    assert_eq!(first_paying(&p, 42, 1, 0), Some(42));
    assert_eq!(first_paying(&p, 0, 1000, 32), None);
}
