#!/usr/bin/env bash
# A browser-like crowd against the demo, over real HTTP: starts scripts/demo.sh (the
# demo origin, the room in Viceroy on 127.0.0.1:7676, `wrctl control` holding
# DEMO_TARGET new sessions a minute from the safe start, its dashboard on
# 127.0.0.1:7677), then scripts/real-crowd.py against it: people on their own
# loopback addresses, several tabs each sharing one cookie jar and following the
# waiting page's Refresh. Prints the crowd's minute-by-minute table (new sessions as
# distinct allow tokens, people admitted, tokens per person), its judgement against
# DEMO_TARGET (the minutes after the second: their mean within ±10 %, each within the
# target ± 3·sqrt(target), a minute's Poisson noise), and every percentage the controller wrote,
# saves a screenshot of the dashboard at phone and desktop widths (headless Chromium,
# checked with axe-core), and stops every process it started (the demo's process
# group, by its id), on failure too.
#
#   scripts/real-crowd.sh [real-crowd.py options]     # default: --people 600 --tabs 3 --duration 480
#   DEMO_TARGET=120 scripts/real-crowd.sh --people 700 --tabs 3 --devices 3 --tab-spread 2 \
#     --refresh-jitter 4 --duration 300      # three devices a person, a cookie jar each
#
# With DEMO_ORIGIN_CAPACITY and DEMO_ORIGIN_HEALTHY (as for scripts/demo.sh) the
# controller follows the origin's health, and ORIGIN_LOSS_AT=SECONDS halves the
# origin's capacity that long after the crowd starts; the controller's lines then
# also give its target, the origin rule's state and the origin's p95:
#   DEMO_ORIGIN_CAPACITY=6 DEMO_ORIGIN_HEALTHY='p95<600ms' DEMO_TARGET=60 ORIGIN_LOSS_AT=240 \
#     scripts/real-crowd.sh --people 3000 --tabs 1 --browse 20 --browse-every 6 --duration 480
#
# DEMO_TARGET (30), DEMO_START (1) and DEMO_HOST (127.0.0.1) as for scripts/demo.sh;
# WAITING_ROOM_SKIP_BROWSER=1 leaves out the screenshot. Everything goes to
# target/real-crowd/ (demo.log, crowd.json, the screenshots). Bounded: the demo must
# answer within 15 minutes of its start (it builds first); the crowd stops by itself
# at --duration; the screenshot gets 2 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."

out=target/real-crowd
rm -rf "$out"
mkdir -p "$out"
args=("$@")
host="${DEMO_HOST:-127.0.0.1}"
[ ${#args[@]} -gt 0 ] || args=(--people 600 --tabs 3 --duration 480)

setsid scripts/demo.sh >"$out/demo.log" 2>&1 &
demo=$!
trap 'kill -- -"$demo" 2>/dev/null || true; wait "$demo" 2>/dev/null || true' EXIT

answers() { curl -fs -o /dev/null --max-time 2 "$1"; }
for _ in $(seq 900); do
  if answers "http://$host:7676/" && answers "http://$host:7677/status.json"; then break; fi
  kill -0 "$demo" 2>/dev/null || { tail -20 "$out/demo.log"; echo "the demo stopped" >&2; exit 1; }
  sleep 1
done
answers "http://$host:7677/status.json" || { echo "the demo did not answer in 15 minutes" >&2; exit 1; }

echo "the demo is up (target ${DEMO_TARGET:-30}/min, start ${DEMO_START:-1} %); the crowd: ${args[*]}"
if [ -n "${ORIGIN_LOSS_AT:-}" ]; then
  places=$((${DEMO_ORIGIN_CAPACITY:?ORIGIN_LOSS_AT needs DEMO_ORIGIN_CAPACITY} / 2))
  (sleep "$ORIGIN_LOSS_AT" &&
    curl -fs -X POST "http://$host:8080/__origin/capacity?n=$((places > 0 ? places : 1))&service_ms=100" &&
    echo "the origin lost half its capacity") &
fi
target=("--target" "${DEMO_TARGET:-30}")
# The target moves with the origin's health: no judgement against a fixed one.
[ -n "${DEMO_ORIGIN_HEALTHY:-}" ] && target=()
python3 scripts/real-crowd.py --room "http://$host:7676" --json "$out/crowd.json" \
  "${target[@]}" "${args[@]}"

echo
echo "the controller's writes (clock time, allow_percentage):"
grep -o '^[0-9TZ:-]* wrote allow_percentage=[0-9.]*' "$out/demo.log" || echo "(none)"
if [ -n "${DEMO_ORIGIN_HEALTHY:-}" ]; then
  echo
  echo "the origin rule at each write (clock time, target, state, p95):"
  sed -n 's/^\([0-9TZ:-]*\) wrote .* \/ target \([0-9.]*\) | origin \([a-z-]*\) p95 \([0-9-]*\) ms.*/\1 target \2 \3 p95 \4 ms/p' \
    "$out/demo.log"
fi

echo
if [ "${WAITING_ROOM_SKIP_BROWSER:-0}" = 1 ]; then
  echo "screenshots: SKIPPED on request (WAITING_ROOM_SKIP_BROWSER=1); the room's and the controller's output: $out/demo.log"
  exit 0
fi
timeout 120 node tests/browser/dashboard.mjs --url "http://$host:7677/" --out "$out"
echo "screenshots: $out/dashboard-phone.png, $out/dashboard-desktop.png; the room's and the controller's output: $out/demo.log"
