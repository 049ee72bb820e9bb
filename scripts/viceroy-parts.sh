#!/usr/bin/env bash
# Where the room's whole-program cost through Viceroy goes (BENCHMARKS.md, section 1):
# builds tools/forward-parts four ways (reading the room's settings keys; writing
# its log line; reading the request's parts and rewriting its cookie header; all of
# them plus opening its signing keys) and runs tools/viceroy-cost with
# each variant in the place of the forward + 2 HMAC program. Each variant's extra
# CPU per request over forward-only is its part of the room's extra cost. Arguments
# go to the driver (default here: --runs 2 --rounds 1500 --warmup 150). Linux only.
set -euo pipefail
cd "$(dirname "$0")/.."
SETUP_BROWSER=0 source scripts/setup.sh

target="${CARGO_TARGET_DIR:-target}"
out="$target/viceroy-parts"
mkdir -p "$out"
cargo build --release --target wasm32-wasip1 -p edge-waiting-room -p forward-only --bins
cargo build --release -p demo-origin -p viceroy-cost
for features in config log request config,keys,log,request; do
  cargo build --release --target wasm32-wasip1 -p forward-parts --bins --features "$features"
  cp "$target/wasm32-wasip1/release/forward-parts.wasm" "$out/forward-parts-${features//,/-}.wasm"
done

args=("$@")
[ ${#args[@]} -gt 0 ] || args=(--runs 2 --rounds 1500 --warmup 150)
for features in config log request config,keys,log,request; do
  echo "== forward-parts --features $features (in the column 'forward + 2 HMAC')"
  "$target/release/viceroy-cost" \
    --origin "$target/release/demo-origin" \
    --room "$target/wasm32-wasip1/release/edge-waiting-room.wasm" \
    --forward-only "$target/wasm32-wasip1/release/forward-only.wasm" \
    --forward-hmac "$out/forward-parts-${features//,/-}.wasm" \
    "${args[@]}" |
    awk -F'|' -v parts="$features" '
      /^\| [0-9]+ \|/ {
        printf "run %s: room young %.1f µs, forward-only %.1f µs, forward + %s %.1f µs: room +%.1f µs, %s +%.1f µs over forward-only\n",
          $2+0, $3, $4, parts, $6, $3-$4, parts, $6-$4
      }'
done
