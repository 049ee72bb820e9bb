#!/usr/bin/env bash
# Builds the bot toll's solver for the waiting pages: toll-solver/ (the sha2 crate's
# SHA-256 and the toll's search) for wasm32-wasip1 with the profile `toll-solver` of
# Cargo.toml, into a module that imports nothing, written as one line of base64 to
# static/toll-solver.wasm.b64, which src/pages/page.rs inlines in the built-in waiting
# pages. Run it after changing toll-solver/ or its dependencies, and commit the file.
# The committed module was built with rustc 1.95.0; another rustc may build other bytes.
#
#   scripts/build-toll-solver.sh [--check]
#
# --check builds and compares instead of writing: it fails when the committed file is
# not what the sources build now (scripts/test.sh runs it).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"

check=0
case "${1:-}" in
  "") ;;
  --check) check=1 ;;
  -h | --help) sed -n '2,12p' "$0"; exit 0 ;;
  *) echo "unknown argument $1 (usage: $0 [--check])" >&2; exit 2 ;;
esac

out=static/toll-solver.wasm.b64
# A target directory of its own: its flags differ from the room's builds, which would
# otherwise rebuild their dependencies after it. simd128 selects sha2's WebAssembly
# SIMD backend (Chrome 91, Firefox 89, Safari 16.4; older browsers cannot compile the
# module and the page falls back to WebCrypto). The remaps keep this machine's paths
# (in panic locations) out of the module, so that any checkout builds the same bytes.
target_dir="${CARGO_TARGET_DIR:-target}/toll-solver"
cargo_home="${CARGO_HOME:-$HOME/.cargo}"
RUSTFLAGS="-C target-feature=+simd128 --remap-path-prefix=$cargo_home=/cargo --remap-path-prefix=$PWD=/src" \
  cargo build --quiet --profile toll-solver --target wasm32-wasip1 -p toll-solver --lib \
  --target-dir "$target_dir"
wasm="$target_dir/wasm32-wasip1/toll-solver/toll_solver.wasm"
built="$(base64 -w0 "$wasm")"

if [ "$check" = 1 ]; then
  if [ "$built" != "$(tr -d '\n' < "$out")" ]; then
    echo "$out is not what toll-solver/ builds now ($(rustc --version)): run $0" >&2
    exit 1
  fi
  echo "$out: up to date ($(wc -c < "$wasm") bytes of wasm)"
else
  printf '%s\n' "$built" > "$out"
  echo "$out: $(wc -c < "$wasm") bytes of wasm, $(wc -c < "$out") of base64"
fi
