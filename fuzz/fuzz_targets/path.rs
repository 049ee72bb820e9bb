//! Request paths built from pieces origins read in different ways: the room never
//! bypasses or places a path where an origin model reads it otherwise.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    waiting_room_fuzz::invariants::path(data);
});
