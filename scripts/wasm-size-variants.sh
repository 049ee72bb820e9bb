#!/usr/bin/env bash
# Builds the room and the hello-world Compute program (tools/hello-compute) for
# wasm32-wasip1 under each release-profile variant, and prints their sizes as a
# Markdown table (BENCHMARKS.md, "Wasm size"). Every variant spells out every
# setting, so the table does not depend on what Cargo.toml holds today. Each
# variant builds in its own target directory under target/size-variants, from
# scratch the first time (a few minutes each on 2 cores).
set -euo pipefail
cd "$(dirname "$0")/.."

# name | opt-level | lto | codegen-units | strip | panic ("" = the target's default)
variants=(
  "Cargo's release defaults|3|false|16|none|"
  "opt-level 3, fat LTO, 1 CGU, strip|3|fat|1|symbols|"
  "opt-level 2, fat LTO, 1 CGU, strip|2|fat|1|symbols|"
  "opt-level s, fat LTO, 1 CGU, strip|s|fat|1|symbols|"
  "opt-level z, fat LTO, 1 CGU, strip|z|fat|1|symbols|"
  "opt-level s, thin LTO, 1 CGU, strip|s|thin|1|symbols|"
  "opt-level s, no LTO, 1 CGU, strip|s|false|1|symbols|"
  "opt-level s, fat LTO, 16 CGU, strip|s|fat|16|symbols|"
  "opt-level s, fat LTO, 1 CGU, no strip|s|fat|1|none|"
  "opt-level s, fat LTO, 1 CGU, strip, panic=abort|s|fat|1|symbols|abort"
)

echo "| variant | opt-level | lto | codegen-units | strip | panic | room bytes | hello bytes | room − hello |"
echo "|---|---|---|---:|---|---|---:|---:|---:|"
for variant in "${variants[@]}"; do
  IFS='|' read -r name opt lto cgu strip panic <<<"$variant"
  slug="o${opt}-lto${lto}-cgu${cgu}-strip${strip}-panic${panic:-default}"
  dir="target/size-variants/$slug"
  settings=(
    CARGO_PROFILE_RELEASE_OPT_LEVEL="$opt"
    CARGO_PROFILE_RELEASE_LTO="$lto"
    CARGO_PROFILE_RELEASE_CODEGEN_UNITS="$cgu"
    CARGO_PROFILE_RELEASE_STRIP="$strip"
    CARGO_PROFILE_RELEASE_DEBUG=false
  )
  if [[ -n "$panic" ]]; then
    settings+=(CARGO_PROFILE_RELEASE_PANIC="$panic")
  fi
  env "${settings[@]}" cargo build --quiet --release --target wasm32-wasip1 \
    --target-dir "$dir" -p edge-waiting-room -p hello-compute --bins >&2
  room=$(stat -c %s "$dir/wasm32-wasip1/release/edge-waiting-room.wasm")
  hello=$(stat -c %s "$dir/wasm32-wasip1/release/hello-compute.wasm")
  echo "| $name | $opt | $lto | $cgu | $strip | ${panic:-default} | $room | $hello | $((room - hello)) |"
done
