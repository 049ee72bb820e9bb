#!/usr/bin/env bash
# Whole-program CPU per request through Viceroy (docs/viceroy-cost.md): builds the
# room, the forward-only and forward + 2 HMAC-SHA256 Compute programs, the demo
# origin and the driver, then runs tools/viceroy-cost: one demo origin, one Viceroy
# per case, requests in turn, each Viceroy's CPU time read from /proc. Arguments go
# to the driver (default: --runs 3 --rounds 3000 --warmup 300). Linux only.
set -euo pipefail
cd "$(dirname "$0")/.."
SETUP_BROWSER=0 source scripts/setup.sh

cargo build --release --target wasm32-wasip1 -p edge-waiting-room -p forward-only -p forward-hmac --bins
cargo build --release -p demo-origin -p viceroy-cost
target="${CARGO_TARGET_DIR:-target}"
"$target/release/viceroy-cost" \
  --origin "$target/release/demo-origin" \
  --room "$target/wasm32-wasip1/release/edge-waiting-room.wasm" \
  --forward-only "$target/wasm32-wasip1/release/forward-only.wasm" \
  --forward-hmac "$target/wasm32-wasip1/release/forward-hmac.wasm" \
  "$@"
