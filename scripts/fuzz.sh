#!/usr/bin/env bash
# Fuzzes the room's parsers, the bot toll and the whole plan with cargo-fuzz (targets
# in fuzz/fuzz_targets/, invariants in test-support/src/invariants.rs): builds every
# target, then runs them one after the other (one core), for FUZZ_SECONDS_PER_TARGET
# seconds each (default 60), and prints each target's executions, time and corpus
# size. FUZZ_TARGETS (names separated by spaces) runs only those; by default, every
# file of fuzz/fuzz_targets/. scripts/test.sh runs it for 2 seconds a target.
#
# Runs on the stable toolchain: RUSTC_BOOTSTRAP=1 lets it accept the unstable
# flags cargo-fuzz passes. Overflow checks and debug assertions are on (-a); no
# sanitizer (the code under test is safe Rust, so a memory sanitizer adds little
# but halves the speed). A failing input is saved under fuzz/artifacts/<target>/
# and the script stops with the command that reproduces it.
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
export PATH="$HOME/.cargo/bin:$PATH"

command -v cargo-fuzz >/dev/null || cargo install --locked cargo-fuzz
export RUSTC_BOOTSTRAP=1
seconds="${FUZZ_SECONDS_PER_TARGET:-60}"
if [ -n "${FUZZ_TARGETS:-}" ]; then
  read -r -a targets <<<"$FUZZ_TARGETS"
else
  targets=()
  for file in fuzz_targets/*.rs; do targets+=("$(basename "$file" .rs)"); done
fi
[ "${#targets[@]}" -gt 0 ] || { echo "fuzz.sh: no targets" >&2; exit 1; }
flags=(--debug-assertions --sanitizer none)

cargo fuzz build "${flags[@]}"
total=0
for target in "${targets[@]}"; do
  mkdir -p "corpus/$target"
  log="$(mktemp)"
  if ! cargo fuzz run "${flags[@]}" "$target" -- \
      -max_total_time="$seconds" -print_final_stats=1 >"$log" 2>&1; then
    tail -n 40 "$log"
    exit 1
  fi
  runs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")"
  took="$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$log")"
  files="$(find "corpus/$target" -type f | wc -l)"
  bytes="$(du -sb "corpus/$target" | cut -f1)"
  printf '%-14s %12s executions in %5s s, 0 failures, corpus %6s inputs (%s bytes)\n' \
    "$target" "$runs" "$took" "$files" "$bytes"
  total=$((total + runs))
  rm -f "$log"
done
printf '%-14s %12s executions, 0 failures\n' total "$total"
