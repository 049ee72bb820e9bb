//! `waiting_room::credentials::login::verify` on minted, mutated and random login tokens.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    waiting_room_fuzz::invariants::login(data);
});
