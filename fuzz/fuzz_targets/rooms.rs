//! The rooms' parsers on any text: the `rooms` index, a room's value, the `events`
//! schedule, an address block, a signed pass and a pass link.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| waiting_room_fuzz::invariants::rooms(data));
