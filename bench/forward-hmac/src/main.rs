//! Forwards every request to backend `origin` unchanged, after two HMAC-SHA256 over
//! a token-sized text, each with its key set up afresh: the work a renewing request
//! cannot avoid (verify the presented token, sign the new one), and nothing else.
//! `bench/viceroy-cost` sets the room's renewing path against it (docs/research/viceroy-cost.md).

use std::hint::black_box;

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

/// A signing key as long as the room's test keys.
const KEY: &[u8] = b"test-key-one-0123456789abcdef0123456789";
/// A token-sized text (120 bytes).
const TEXT: &[u8; 120] = b"dec=allow&exp=1767225600&uid=203.0.113.195&kid=key1&adm=1767222000\
&pad=0123456789abcdef0123456789abcdef0123456789abcdef0";

/// Two HMAC-SHA256 over [`TEXT`], each with the key set up afresh; `black_box` keeps
/// the compiler from folding or dropping any of it.
fn two_macs() -> [u8; 32] {
    let mut last = [0u8; 32];
    for _ in 0..2 {
        let mut mac =
            Hmac::<Sha256>::new_from_slice(black_box(KEY)).expect("HMAC takes keys of any length");
        mac.update(black_box(&TEXT[..]));
        last = mac.finalize().into_bytes().into();
        black_box(&last);
    }
    last
}

#[cfg(target_arch = "wasm32")]
#[fastly::main]
fn main(req: fastly::Request) -> Result<fastly::Response, fastly::Error> {
    black_box(two_macs());
    Ok(req.send("origin")?)
}

#[cfg(not(target_arch = "wasm32"))]
fn main() {
    // Natively the MACs still compile and run, so the native build checks them.
    black_box(two_macs());
    eprintln!(
        "forward-hmac runs inside Fastly Compute: \
         `cargo build --release --target wasm32-wasip1 -p forward-hmac` in bench/"
    );
    std::process::exit(2);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_text_is_token_sized_and_the_macs_are_the_keyed_digest() {
        assert_eq!(TEXT.len(), 120);
        let mut mac = Hmac::<Sha256>::new_from_slice(KEY).unwrap();
        mac.update(TEXT);
        let want: [u8; 32] = mac.finalize().into_bytes().into();
        assert_eq!(two_macs(), want);
    }
}
