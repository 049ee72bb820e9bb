//! The invariants the fuzz targets check, shared with the native test run
//! (`tests/fuzz_invariants.rs`): the very files of `tests/support`, included by path.

#[path = "../../tests/support/fuzz_input.rs"]
pub mod fuzz_input;
#[path = "../../tests/support/invariants.rs"]
pub mod invariants;
#[path = "../../tests/support/mint.rs"]
pub mod mint;
