#!/usr/bin/env bash
# Serves the waiting room locally: builds the wasm, starts the bundled demo
# origin on 127.0.0.1:8080 and Viceroy on 127.0.0.1:7676. Ctrl-C stops both.
# Settings are live: edit local/config.json (e.g. allow_percentage) while it runs.
set -euo pipefail
cd "$(dirname "$0")/.."
SETUP_BROWSER=0 source scripts/setup.sh # the demo needs no browser of its own

cargo build --release --target wasm32-wasip1 --bin edge-waiting-room
cargo build --release -p demo-origin

./target/release/demo-origin 127.0.0.1:8080 &
origin_pid=$!
trap 'kill "$origin_pid" 2>/dev/null || true' EXIT

echo
echo "Waiting room on http://127.0.0.1:7676/events (protected) and http://127.0.0.1:7676/ (not)."
echo "Log lines appear below as 'waitingroom_log :: ...'."
echo
viceroy serve -C fastly.toml --addr 127.0.0.1:7676 \
  target/wasm32-wasip1/release/edge-waiting-room.wasm
