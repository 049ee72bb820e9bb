//! The bot toll's search (`waiting_room::bots::toll`) for browsers: the same rule, with the
//! `sha2` crate, built by `scripts/build-toll-solver.sh` into a WebAssembly module that
//! imports nothing, inlined in the waiting pages (`static/toll-solver.wasm.b64`) and
//! run by `static/toll.script.html`. WebCrypto costs a promise per hash; this does not.
//!
//! The module exports `memory`, `prefix()` (where the page writes the 83 bytes
//! `waiting-room-toll:<challenge>:`) and `search(start, count, bits)`.

#![cfg_attr(target_arch = "wasm32", no_std)]

use sha2::{Digest, Sha256};

/// Length of the hashed text before the nonce: `waiting-room-toll:` (18), the
/// challenge's 64 hex digits and `:`.
pub const PREFIX_LEN: usize = 83;

/// The first nonce in `[start, start + count)` whose
/// `SHA-256(prefix + decimal nonce)` starts with `bits` zero bits (big-endian), or
/// `None` (also when the range passes `u64::MAX`).
pub fn first_paying(prefix: &[u8], start: u64, count: u32, bits: u32) -> Option<u64> {
    // The prefix's whole 64-byte blocks are compressed once, here: each nonce then
    // costs one block (19 bytes of prefix left, at most 20 digits, 9 of padding).
    let base = Sha256::new().chain_update(prefix);
    let mut text = Decimal::new(start);
    let mut nonce = start;
    for _ in 0..count {
        let digest = base.clone().chain_update(text.digits()).finalize();
        if leading_zero_bits(&digest) >= bits {
            return Some(nonce);
        }
        nonce = nonce.checked_add(1)?;
        text.increment();
    }
    None
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

/// A nonce's decimal text, counted up in place: no division per nonce.
struct Decimal {
    /// The digits, right-aligned; `u64::MAX` has 20.
    buf: [u8; 20],
    /// Where the first digit is.
    first: usize,
}

impl Decimal {
    fn new(mut n: u64) -> Self {
        let mut buf = [b'0'; 20];
        let mut first = buf.len() - 1;
        loop {
            buf[first] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                return Decimal { buf, first };
            }
            first -= 1;
        }
    }

    fn digits(&self) -> &[u8] {
        &self.buf[self.first..]
    }

    /// Adds one; the caller stops before `u64::MAX` would overflow.
    fn increment(&mut self) {
        for i in (self.first..self.buf.len()).rev() {
            if self.buf[i] != b'9' {
                self.buf[i] += 1;
                return;
            }
            self.buf[i] = b'0';
        }
        // All nines: one digit more.
        self.first -= 1;
        self.buf[self.first] = b'1';
    }
}

/// The module's exports: a thin layer over [`first_paying`].
#[cfg(target_arch = "wasm32")]
mod module {
    use core::cell::UnsafeCell;

    use super::{PREFIX_LEN, first_paying};

    /// The prefix, written by the page through [`prefix`].
    struct Prefix(UnsafeCell<[u8; PREFIX_LEN]>);

    // SAFETY: the module has one thread; the page writes only between calls.
    unsafe impl Sync for Prefix {}

    static PREFIX: Prefix = Prefix(UnsafeCell::new([0; PREFIX_LEN]));

    /// The largest integer a JS number holds exactly, 2^53 − 1.
    const MAX_SAFE: f64 = 9_007_199_254_740_991.0;

    /// Where the page writes the prefix, [`PREFIX_LEN`] bytes, before searching.
    #[unsafe(no_mangle)]
    pub extern "C" fn prefix() -> *mut u8 {
        PREFIX.0.get().cast()
    }

    /// The first nonce in `[start, start + count)` that pays `bits`, or −1 when none
    /// does, or −2 for arguments out of range. Nonces are JS numbers (f64, exact
    /// below 2^53, far past 2^32 hashes), so the page needs no BigInt.
    #[unsafe(no_mangle)]
    pub extern "C" fn search(start: f64, count: u32, bits: u32) -> f64 {
        let whole = start >= 0.0 && start + f64::from(count) <= MAX_SAFE;
        if !whole || start != (start as u64) as f64 || bits > 32 {
            return -2.0;
        }
        // SAFETY: one thread, and the page writes the prefix only between calls.
        let prefix = unsafe { &*PREFIX.0.get() };
        match first_paying(prefix, start as u64, count, bits) {
            Some(nonce) => nonce as f64,
            None => -1.0,
        }
    }

    /// Nothing here panics on the page's input; were it to, the call traps (the page
    /// then falls back to WebCrypto) instead of importing a way to print.
    #[panic_handler]
    fn panic(_: &core::panic::PanicInfo) -> ! {
        core::arch::wasm32::unreachable()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_decimal_counter_writes_what_to_string_writes() {
        let starts = [
            0,
            1,
            8,
            9,
            10,
            98,
            99,
            999,
            1_000,
            4_095,
            9_999_999,
            10u64.pow(19) - 3,
        ];
        for start in starts {
            let mut text = Decimal::new(start);
            for n in start..start + 25 {
                assert_eq!(text.digits(), n.to_string().as_bytes(), "{n}");
                text.increment();
            }
        }
        let mut text = Decimal::new(u64::MAX - 2);
        text.increment();
        text.increment();
        assert_eq!(text.digits(), u64::MAX.to_string().as_bytes());
    }

    #[test]
    fn leading_zeros_count_across_bytes() {
        assert_eq!(leading_zero_bits(&[0, 0, 0b0001_0000, 0xff]), 19);
        assert_eq!(leading_zero_bits(&[0x80]), 0);
        assert_eq!(leading_zero_bits(&[0; 4]), 32);
    }

    #[test]
    fn a_range_past_the_largest_nonce_ends_there() {
        let prefix = [b'x'; PREFIX_LEN];
        assert_eq!(first_paying(&prefix, u64::MAX, 5, 0), Some(u64::MAX));
        assert_eq!(first_paying(&prefix, u64::MAX - 1, 5, 32), None);
        assert_eq!(first_paying(&prefix, 7, 0, 0), None, "an empty range");
    }
}
