//! One whole request through `waiting_room::plan`: fuzzed cookie header, path,
//! uid, clock and settings (read whole, and as the edge reads them), against a fixed key store.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    waiting_room_fuzz::invariants::plan(data);
});
