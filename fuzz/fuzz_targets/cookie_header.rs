//! `waiting_room::credentials::cookie::find` and `without_room_cookie` on any `Cookie` header.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| waiting_room_fuzz::invariants::cookie_header(data));
