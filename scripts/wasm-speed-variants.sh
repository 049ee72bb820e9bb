#!/usr/bin/env bash
# What each opt-level costs in time: builds tools/path-bench for wasm32-wasip1 at
# opt-level s, z and 3 (fat LTO, 1 codegen unit, stripped, as the release profile)
# and runs it under Viceroy, one table per opt-level (BENCHMARKS.md, "Wasm size").
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh

for opt in s z 3; do
  dir="target/size-variants/speed-o$opt"
  CARGO_PROFILE_RELEASE_OPT_LEVEL="$opt" CARGO_PROFILE_RELEASE_LTO=fat \
    CARGO_PROFILE_RELEASE_CODEGEN_UNITS=1 CARGO_PROFILE_RELEASE_STRIP=symbols \
    cargo build --quiet --release --target wasm32-wasip1 --target-dir "$dir" -p path-bench
  echo "opt-level $opt:"
  viceroy run "$dir/wasm32-wasip1/release/path-bench.wasm" -- --rounds 51
done
