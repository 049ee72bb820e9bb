//! The invariants the fuzz targets check, shared with the native test run
//! (`tests/native/fuzz_invariants.rs`): the `test-support` crate's.

pub use test_support::{fuzz_input, invariants, mint};
