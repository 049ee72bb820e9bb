//! Per-request cost of the waiting room against its floor.
//!
//! Every decision path costs at least the HMAC-SHA256 work it cannot avoid:
//! verifying the token it was shown and signing the token it hands out. [`cases`]
//! builds one request per path with real tokens, and derives that floor from the
//! request itself; [`timing`] times the path and its floor in the same run, so the
//! ratio between them is the figure that matters (it holds across machines better
//! than nanoseconds do). The same code runs natively (`cargo run --release -p
//! path-bench` in bench/, and the `divan` benches) and in wasm under Viceroy.

pub mod cases;
pub mod timing;
