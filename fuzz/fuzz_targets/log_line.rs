//! `control::record::Record` and `waiting_room::settings::percentage::Percentage` parsing
//! any text: no panic, and percentages exactly as documented.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| waiting_room_fuzz::invariants::log_line(data));
