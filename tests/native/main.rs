//! The native tests, one binary, a module per area: the room's core with a fixed clock
//! and no Viceroy, Chromium, wasm build or nginx (the decision tables, the VCL
//! vectors, the invariants on fixed seeds, the lookup budget, the docs' and the
//! code's checks). The quick loop's (scripts/quick.sh). One area:
//! `cargo nextest run --test native decision_table::`.

mod challenge_table;
mod decision_table;
mod docs;
mod estimate_simulation;
mod fifo_table;
mod function_length;
mod fuzz_invariants;
mod layering;
mod login;
mod lookup_budget;
mod one_win;
mod plan;
mod tamper_matrix;
mod toll_table;
mod vcl_vectors;
