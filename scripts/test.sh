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

# beside NAME FUNCTION: runs FUNCTION (below, under `set -e`) in the background, in a
# process group of its own, stopped if this script stops first, its output in
# $logs/NAME.log. joined NAME: waits for it; if it failed, prints the log's last lines
# and stops. Cargo locks each profile's directory (target/debug, target/release, ...),
# so a release build beside a debug one waits for nothing and fills the cores the other
# leaves idle (a crate's codegen, a link, a wait on a process).
logs="${CARGO_TARGET_DIR:-target}/test-sh"
mkdir -p "$logs"
declare -A pids began
beside() {
  setsid bash -c "set -euo pipefail; $(declare -p bench); $(declare -f "$2"); $2" \
    >"$logs/$1.log" 2>&1 &
  pids[$1]=$!
  began[$1]=$SECONDS
}
joined() {
  if ! wait "${pids[$1]}"; then
    tail -n 40 "$logs/$1.log"
    echo "test.sh: $1 failed ($logs/$1.log)" >&2
    exit 1
  fi
  unset "pids[$1]"
  echo "test.sh: $1 done in $((SECONDS - began[$1])) s ($logs/$1.log)"
}
trap 'for pid in "${pids[@]}"; do kill -- -"$pid" 2>/dev/null || true; done' EXIT

# The room (its size is checked against wasm-size-budget by tests/blackbox/wasm_size.rs),
# and the wasm programs that measure it, so they cannot rot; forward-only and forward-hmac
# by the command scripts/viceroy-cost.sh builds them with, so that its build finds them
# built (beside path-bench and its clap, their dependencies' features differ).
wasm_builds() {
  cargo build --release --target wasm32-wasip1 -p edge-waiting-room --bins
  cargo build "${bench[@]}" --release --target wasm32-wasip1 -p forward-only -p forward-hmac --bins
  cargo build "${bench[@]}" --release --target wasm32-wasip1 -p hello-compute -p path-bench --bins
}
# The tests of both workspaces, built (debug) beside the smoke runs, whose builds are
# release ones and the fuzz targets' (fuzz/target/).
tests_builds() {
  cargo test "${bench[@]}" --workspace --no-run
  cargo test --workspace --no-run
}

cargo fmt --all -- --check
# (cargo fmt finds a virtual workspace's members only when run in its directory.)
(cd bench && cargo fmt -- --check)
# The fuzz crate is outside the workspace (it needs cargo-fuzz to build).
rustfmt --check --edition 2024 fuzz/src/lib.rs fuzz/fuzz_targets/*.rs
beside wasm-builds wasm_builds
cargo clippy --workspace --all-targets -- -D warnings
cargo clippy "${bench[@]}" --workspace --all-targets -- -D warnings
cargo clippy --target wasm32-wasip1 --bin edge-waiting-room -- -D warnings
cargo clippy --target wasm32-wasip1 -p toll-solver --lib -- -D warnings
# The bot toll's solver the waiting pages inline: the committed module is what
# toll-solver/ builds.
scripts/build-toll-solver.sh --check
joined wasm-builds

beside tests-builds tests_builds
# Every long script the docs name (fuzzing, simulations, benchmarks, real crowds), each
# at its smallest size, its tables checked: scripts/smoke.sh.
scripts/smoke.sh
joined tests-builds

# The benchmarks' own tests, then doc tests, so the run closes on the main suite's summary.
cargo test "${bench[@]}" --workspace
cargo test --workspace --doc
# The quick loop first (scripts/quick.sh: what needs no Viceroy, Chromium or wasm),
# then every other test.
scripts/quick.sh --no-fail-fast
if cargo nextest --version >/dev/null 2>&1; then
  # One test thread more than cores: tests/blackbox/real_crowd.rs, started first
  # (.config/nextest.toml), takes seven minutes and half a core.
  cargo nextest run --workspace --no-fail-fast --test-threads "$(($(nproc) + 1))" \
    -E "not ($(scripts/quick.sh --print-filter))"
else
  cargo test --workspace --no-fail-fast
fi
