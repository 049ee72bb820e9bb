#!/usr/bin/env bash
# Serves the waiting room locally: builds the wasm, starts the bundled demo origin
# on 127.0.0.1:8080, Viceroy on 127.0.0.1:7676, and the controller (`wrctl control`)
# reading Viceroy's log lines, holding a small target, with its dashboard on
# 127.0.0.1:7677. Ctrl-C stops everything.
#
# The controller writes the room's settings to target/demo/config.json, a fresh copy
# of local/config.json made at each start. DEMO_CONTROLLER=0 runs the room alone on
# local/config.json, tuned by hand (edit allow_percentage while it runs).
# DEMO_TARGET sets the controller's new sessions a minute (30); DEMO_START the
# percentage the room starts at (1), the safe start for a flash crowd;
# DEMO_TOLL_BITS the bot toll's difficulty (none: off). DEMO_ORIGIN_CAPACITY=N gives
# the demo origin a capacity (N requests at once, 100 ms each; change it while it
# runs: docs/operate/operations.md#a-demo-origin-with-a-capacity), and
# DEMO_ORIGIN_HEALTHY='p95<600ms' has the controller follow the origin's health
# (floor 10, ceiling 600, sessions of two minutes: docs/operate/origin-health.md)
# from DEMO_TARGET. DEMO_HOST (127.0.0.1) is the
# loopback address all three listen on, so a second demo can run beside the first
# (scripts/smoke.sh draws one of 127.76.X.Y).
set -euo pipefail
cd "$(dirname "$0")/.."
SETUP_BROWSER=0 source scripts/setup.sh # the demo needs no browser of its own

host="${DEMO_HOST:-127.0.0.1}"
cargo build --release --target wasm32-wasip1 --bin edge-waiting-room
cargo build --release -p demo-origin -p wrctl

origin_flags=()
[ -n "${DEMO_ORIGIN_CAPACITY:-}" ] && origin_flags=(--capacity "$DEMO_ORIGIN_CAPACITY" --service-ms 100)
./target/release/demo-origin "${origin_flags[@]}" "$host:8080" &
origin_pid=$!
trap 'kill "$origin_pid" 2>/dev/null || true' EXIT
wasm=target/wasm32-wasip1/release/edge-waiting-room.wasm
# The manifest with the origin on $host.
mkdir -p target/demo
sed "s#url = \"http://127.0.0.1:8080/\"#url = \"http://$host:8080/\"#" fastly.toml >target/demo/origin.toml
grep -q "http://$host:8080/" target/demo/origin.toml

echo
echo "Waiting room on http://$host:7676/events (protected) and http://$host:7676/ (not)."
echo "Log lines appear below as 'waitingroom_log :: waitingroom t=...'."

if [ "${DEMO_CONTROLLER:-1}" = 0 ]; then
  echo "No controller: edit local/config.json to tune the room live."
  echo
  exec viceroy serve -C target/demo/origin.toml --addr "$host:7676" "$wasm"
fi

# The same manifest, with the settings store moved to a copy the controller owns.
cp local/config.json target/demo/config.json
# The safe start for a flash crowd: the room holds a low percentage until the
# controller's writes reach it (they rise at most twofold a draw period from there).
sed -i 's/"allow_percentage": "[^"]*"/"allow_percentage": "'"${DEMO_START:-1}"'"/' target/demo/config.json
grep -q '"allow_percentage": "'"${DEMO_START:-1}"'"' target/demo/config.json
if [ -n "${DEMO_TOLL_BITS:-}" ]; then
  # A member of the `settings` object, as every setting without a key of its own.
  python3 - "$DEMO_TOLL_BITS" <<'EOF'
import json, sys
path = "target/demo/config.json"
config = json.load(open(path))
settings = json.loads(config.get("settings", "{}"))
settings["bot_toll_bits"] = sys.argv[1]
config["settings"] = json.dumps(settings)
json.dump(config, open(path, "w"), indent=2)
EOF
fi
sed 's#file = "local/config.json"#file = "target/demo/config.json"#' target/demo/origin.toml >target/demo/fastly.toml
grep -q 'target/demo/config.json' target/demo/fastly.toml

echo "Controller dashboard on http://$host:7677/ (metrics: /metrics), holding"
echo "${DEMO_TARGET:-30} new sessions a minute by writing target/demo/config.json."
health_flags=()
if [ -n "${DEMO_ORIGIN_HEALTHY:-}" ]; then
  health_flags=(--origin-healthy "$DEMO_ORIGIN_HEALTHY" --origin-floor 10 --origin-ceiling 600
    --session-length 120)
  echo "From there the target follows the origin's health: $DEMO_ORIGIN_HEALTHY."
fi
echo
viceroy serve -C target/demo/fastly.toml --addr "$host:7676" "$wasm" |
  tee /dev/stderr |
  ./target/release/wrctl control \
    --target-per-minute "${DEMO_TARGET:-30}" \
    --wait-period 10 --max 50 --start "${DEMO_START:-1}" "${health_flags[@]}" \
    --config-file target/demo/config.json \
    --listen "$host:7677"
