#!/usr/bin/env bash
# Whole-program CPU per request through Viceroy (docs/research/viceroy-cost.md): builds the
# room, the forward-only and forward + 2 HMAC-SHA256 Compute programs, the demo
# origin and the driver, then runs bench/viceroy-cost: one demo origin, one Viceroy
# per case, requests in turn, each Viceroy's CPU time read from /proc. Linux only.
#
#   scripts/viceroy-cost.sh [--baseline REV] [driver options]
#
# --baseline REV also builds the room at git revision REV (in a temporary git
# worktree under /tmp, removed afterwards) and measures it in the same rounds
# (--baseline-room). Its build has a target directory of its own,
# target/viceroy-cost-baseline, kept between runs: in the shared one its wasm would
# take the place of this build's (both are edge-waiting-room.wasm), and a lasting
# one compiles the dependencies once. Every other argument goes to the driver
# (default: --runs 3 --rounds 3000 --warmup 300; `--help` lists them).
set -euo pipefail
cd "$(dirname "$0")/.."
SETUP_BROWSER=0 source scripts/setup.sh

baseline=""
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --baseline)
      [ $# -ge 2 ] || { echo "viceroy-cost.sh: --baseline needs a git revision" >&2; exit 2; }
      baseline="$2"
      shift 2
      ;;
    *)
      args+=("$1")
      shift
      ;;
  esac
done

[ -z "$baseline" ] || rev="$(git rev-parse --verify --short "$baseline^{commit}")"
target="${CARGO_TARGET_DIR:-target}"
# The room and the demo origin from the root workspace; the programs set against
# the room and the driver from bench/'s, with the same release profile, into the
# same target directory.
bench=(--manifest-path bench/Cargo.toml --target-dir "$target")
cargo build --release --target wasm32-wasip1 -p edge-waiting-room --bins
cargo build "${bench[@]}" --release --target wasm32-wasip1 -p forward-only -p forward-hmac --bins
cargo build --release -p demo-origin
cargo build "${bench[@]}" --release -p viceroy-cost

if [ -n "$baseline" ]; then
  worktree="$(mktemp -d /tmp/viceroy-cost-baseline.XXXXXX)"
  remove_worktree() { git worktree remove --force "$worktree" 2>/dev/null || true; rm -rf "$worktree"; }
  trap remove_worktree EXIT
  git worktree add --detach "$worktree" "$rev" >/dev/null
  baseline_target="$(realpath "$target")/viceroy-cost-baseline"
  (cd "$worktree" && CARGO_TARGET_DIR="$baseline_target" \
    cargo build --release --target wasm32-wasip1 -p edge-waiting-room --bin edge-waiting-room)
  remove_worktree
  echo "baseline room: $rev ($(git log -1 --format=%s "$rev"))"
  args=(--baseline-room "$baseline_target/wasm32-wasip1/release/edge-waiting-room.wasm" "${args[@]}")
fi

"$target/release/viceroy-cost" \
  --origin "$target/release/demo-origin" \
  --room "$target/wasm32-wasip1/release/edge-waiting-room.wasm" \
  --forward-only "$target/wasm32-wasip1/release/forward-only.wasm" \
  --forward-hmac "$target/wasm32-wasip1/release/forward-hmac.wasm" \
  "${args[@]}"
