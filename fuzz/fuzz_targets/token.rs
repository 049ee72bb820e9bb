//! `waiting_room::credentials::token::decode` on any cookie value, and the round trip
//! `decode(mint(claims))`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| waiting_room_fuzz::invariants::token(data));
