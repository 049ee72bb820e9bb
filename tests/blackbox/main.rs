//! The black-box tests, one binary, a module per area: the built wasm in Viceroy in
//! front of a real demo origin (every module but `hostile_paths`, which holds the
//! room's reading of a path to real nginx's, and `wasm_size`, which weighs the wasm).
//! A missing Viceroy or wasm fails the first test that needs it in one line naming
//! how to get it (test-support's `room::missing`). One area:
//! `cargo nextest run --test blackbox rooms::`.

// `support::` in every module, as in the native tests' `use test_support as support`.
extern crate test_support as support;

mod basics;
mod capacity;
mod challenge;
mod controller;
mod fifo;
mod hardening;
mod hostile_paths;
mod load;
mod origin_live;
mod real_crowd;
mod rooms;
mod toll;
mod wasm_size;
