//! The bot toll: bits and nonces parse only from canonical text, and a wait token
//! that owes is drawn only with a nonce that pays.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    waiting_room_fuzz::invariants::toll(data);
});
