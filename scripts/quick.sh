#!/usr/bin/env bash
# The quick loop for a change to the room's core (docs/development.md#the-quick-loop):
# the core's unit tests and every test file tests/*.rs, which need neither Viceroy, nor
# Chromium, nor a wasm build, nor nginx (the decision tables, the VCL vectors, the
# invariants on fixed seeds, the lookup budget, the docs' checks), and the controller's
# unit tests. A file joins by itself, unless it starts a room, a browser or nginx: those
# are modules of the binaries tests/blackbox/ and tests/browser/. scripts/test.sh runs
# it first, then every other test.
#
#   scripts/quick.sh [nextest options...]    # e.g. scripts/quick.sh decision
#   scripts/quick.sh --print-filter          # its tests as a nextest filter expression
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"

args=(-p edge-waiting-room --lib -p control)
binaries=("binary_id(edge-waiting-room)" "binary_id(control)")
for file in tests/*.rs; do
  grep -Eq 'support::(room|browser)|Room::(start|launch)|browser::|nginx|wasm_path' "$file" && continue
  name="$(basename "$file" .rs)"
  args+=(--test "$name")
  binaries+=("binary_id(edge-waiting-room::$name)")
done
if [ "${1:-}" = --print-filter ]; then
  (IFS='|'; echo "${binaries[*]}")
  exit 0
fi
if cargo nextest --version >/dev/null 2>&1; then
  exec cargo nextest run "${args[@]}" "$@"
fi
exec cargo test "${args[@]}" "$@"
