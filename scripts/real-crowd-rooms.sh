#!/usr/bin/env bash
# Two rooms on one service, each with its own browser-like crowd and its own
# controller, over real HTTP: the demo origin, the room in Viceroy on 127.0.0.1:7676
# with the service room on /checkout and the named room `drops` on /drops/, and one
# log stream read by two `wrctl control` processes through `tee` (the service room's
# holding SERVICE_TARGET new sessions a minute, dashboard on 127.0.0.1:7678; drops'
# holding DROPS_TARGET, dashboard on 127.0.0.1:7679). Then two runs of
# scripts/real-crowd.py at once, on separate addresses. Prints each crowd's
# minute-by-minute table and each controller's last status, and stops every process
# it started (its process group, by id), on failure too.
#
#   scripts/real-crowd-rooms.sh [--people N] [--tabs N] [--duration SECONDS]
#
# Defaults: 300 people a room, 3 tabs, 360 s; SERVICE_TARGET 30, DROPS_TARGET 60;
# DEMO_HOST (127.0.0.1) is the loopback address everything listens on, as for
# scripts/demo.sh.
# Everything goes to target/real-crowd-rooms/. Bounded: the build, then the crowds'
# --duration, then 30 s.
set -euo pipefail
cd "$(dirname "$0")/.."
SETUP_BROWSER=0 source scripts/setup.sh

people=300 tabs=3 duration=360
while [ $# -gt 0 ]; do
  case "$1" in
    --people) people=$2; shift 2 ;;
    --tabs) tabs=$2; shift 2 ;;
    --duration) duration=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done

host="${DEMO_HOST:-127.0.0.1}"
out=target/real-crowd-rooms
rm -rf "$out"
mkdir -p "$out"
cargo build --release --target wasm32-wasip1 --bin edge-waiting-room
cargo build --release -p demo-origin -p wrctl

# The config: the demo's, the service room on /checkout at a safe start, and drops.
python3 - "$out/config.json" <<'EOF'
import json, sys
config = json.load(open("local/config.json"))
config.update({
    "settings": json.dumps({"protected_paths": "/checkout"}),
    "allow_percentage": "1",
    "rooms": json.dumps({"drops": {"paths": ["/drops/"]}}),
    "room.drops": json.dumps({"enabled": True, "allow_percentage": 1, "wait_period_duration": 10}),
})
json.dump(config, open(sys.argv[1], "w"), indent=1)
EOF
sed -e "s#file = \"local/config.json\"#file = \"$out/config.json\"#" \
  -e "s#url = \"http://127.0.0.1:8080/\"#url = \"http://$host:8080/\"#" fastly.toml >"$out/fastly.toml"
grep -q "$out/config.json" "$out/fastly.toml"
grep -q "http://$host:8080/" "$out/fastly.toml"

wrctl=./target/release/wrctl
common=(--wait-period 10 --max 50 --start 1 --tick 5 --config-file "$out/config.json")
setsid bash -c "
  ./target/release/demo-origin $host:8080 &
  viceroy serve -C '$out/fastly.toml' --addr $host:7676 target/wasm32-wasip1/release/edge-waiting-room.wasm 2>'$out/viceroy.err' |
    tee '$out/log.txt' |
    tee >($wrctl control --room drops --target-per-minute ${DROPS_TARGET:-60} ${common[*]} \
            --listen $host:7679 --room-dashboard service=http://$host:7678/ 2>'$out/drops.err') |
    $wrctl control --target-per-minute ${SERVICE_TARGET:-30} ${common[*]} \
      --listen $host:7678 --room-dashboard drops=http://$host:7679/ 2>'$out/service.err'
" >"$out/demo.log" 2>&1 &
group=$!
trap 'kill -- -"$group" 2>/dev/null || true; wait "$group" 2>/dev/null || true' EXIT

answers() { curl -fs -o /dev/null --max-time 2 "$1"; }
for _ in $(seq 60); do
  if answers "http://$host:7676/" && answers "http://$host:7678/status.json" &&
    answers "http://$host:7679/status.json"; then break; fi
  sleep 1
done
answers "http://$host:7679/status.json" || { cat "$out"/*.err >&2; echo "the rooms did not start" >&2; exit 1; }

crowd=(--room "http://$host:7676" --people "$people" --tabs "$tabs" --duration "$duration" --arrive-over 10)
python3 scripts/real-crowd.py "${crowd[@]}" --path /checkout --seed 1 \
  --json "$out/service.json" >"$out/service.txt" &
service=$!
python3 scripts/real-crowd.py "${crowd[@]}" --path /drops/sneaker --cookie waiting_room_drops \
  --first-person "$people" --seed 2 --json "$out/drops.json" >"$out/drops.txt" &
drops=$!
wait "$service" "$drops"

echo "== the service room, on /checkout (target ${SERVICE_TARGET:-30} a minute):"
cat "$out/service.txt"
echo "== room drops, on /drops/ (target ${DROPS_TARGET:-60} a minute):"
cat "$out/drops.txt"
curl -fs "http://$host:7678/status.json" >"$out/service-status.json"
curl -fs "http://$host:7679/status.json" >"$out/drops-status.json"
python3 - "$out" <<'EOF'
import json, sys
for room in ("service", "drops"):
    s = json.load(open(f"{sys.argv[1]}/{room}-status.json"))
    print(f"{room} controller: room {s['room']}, target {s['target_per_minute']}/min, "
          f"{s['lines_total']} lines counted, allow_percentage {s['allow_percentage']}")
EOF
