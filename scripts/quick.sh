#!/usr/bin/env bash
# The quick loop for a change to the room's core (docs/development.md#the-quick-loop):
# what needs neither Viceroy, nor Chromium, nor a wasm build, nor nginx. Its test
# binaries are declared below, by nextest's binary id: the core's unit tests, the native
# tests (tests/native/, a module per area: the decision tables, the VCL vectors, the
# invariants on fixed seeds, the lookup budget, the docs' and the code's checks) and the
# controller's unit tests. A test that starts a room, a browser or nginx belongs in
# tests/blackbox/ or tests/browser/. scripts/test.sh runs it first, then every other test.
#
#   scripts/quick.sh [nextest options...]    # e.g. scripts/quick.sh decision
#   scripts/quick.sh --print-filter          # its tests as a nextest filter expression
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"

# PACKAGE (its library's unit tests) or PACKAGE::TEST (its test target TEST).
binaries=(
  edge-waiting-room
  edge-waiting-room::native
  control
)

# cargo's --lib and --test apply to every package named (no package here has a test
# target another's entry names), and each may be given once.
packages=()
targets=()
filter=()
for id in "${binaries[@]}"; do
  package="${id%%::*}"
  [[ " ${packages[*]} " == *" -p $package "* ]] || packages+=(-p "$package")
  case "$id" in
    *::*) targets+=(--test "${id#*::}") ;;
    *) [[ " ${targets[*]} " == *" --lib "* ]] || targets+=(--lib) ;;
  esac
  filter+=("binary_id($id)")
done
args=("${packages[@]}" "${targets[@]}")
if [ "${1:-}" = --print-filter ]; then
  (IFS='|'; echo "${filter[*]}")
  exit 0
fi
if cargo nextest --version >/dev/null 2>&1; then
  exec cargo nextest run "${args[@]}" "$@"
fi
exec cargo test "${args[@]}" "$@"
