#!/usr/bin/env bash
# Runs every check and test: formatting, lints (native and wasm), the release
# wasm build, the toll solver's committed module, the benchmarks' workspace (bench/:
# lints, tests, wasm build), smoke runs of the long scripts the docs name (the fuzz
# targets among them), native unit tests, known-answer tests, the wasm size budget,
# small simulator scenarios, and the black-box tests of the built wasm in Viceroy
# against a real local origin.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh

# The benchmarks and measurement programs are a workspace of their own (bench/),
# built into the same target directory.
bench=(--manifest-path bench/Cargo.toml --target-dir "${CARGO_TARGET_DIR:-target}")

cargo fmt --all -- --check
# (cargo fmt finds a virtual workspace's members only when run in its directory.)
(cd bench && cargo fmt -- --check)
# The fuzz crate is outside the workspace (it needs cargo-fuzz to build).
rustfmt --check --edition 2024 fuzz/src/lib.rs fuzz/fuzz_targets/*.rs
cargo clippy --workspace --all-targets -- -D warnings
cargo clippy "${bench[@]}" --workspace --all-targets -- -D warnings
cargo clippy --target wasm32-wasip1 --bin edge-waiting-room -- -D warnings
cargo clippy --target wasm32-wasip1 -p toll-solver --lib -- -D warnings
# The room (its size is checked against wasm-size-budget by tests/wasm_size.rs),
# and the wasm programs that measure it, so they cannot rot.
cargo build --release --target wasm32-wasip1 -p edge-waiting-room --bins
# The bot toll's solver the waiting pages inline: the committed module is what
# toll-solver/ builds.
scripts/build-toll-solver.sh --check
cargo build "${bench[@]}" --release --target wasm32-wasip1 -p hello-compute -p path-bench \
  -p forward-only -p forward-hmac --bins
# Every long script the docs name (fuzzing, simulations, benchmarks, real crowds), each
# at its smallest size, its tables checked: scripts/smoke.sh.
scripts/smoke.sh

# The benchmarks' own tests, then doc tests, so the run closes on the main suite's summary.
cargo test "${bench[@]}" --workspace
cargo test --workspace --doc
if cargo nextest --version >/dev/null 2>&1; then
  # One test thread more than cores: tests/real_crowd.rs, started first
  # (.config/nextest.toml), takes seven minutes and half a core.
  cargo nextest run --workspace --no-fail-fast --test-threads "$(($(nproc) + 1))"
else
  cargo test --workspace --no-fail-fast
fi
