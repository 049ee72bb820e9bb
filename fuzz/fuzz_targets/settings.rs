//! `Settings::from_lookup` and `RequestContext::for_request` (its two tiers) with any value, or none, for every key.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| waiting_room_fuzz::invariants::settings(data));
