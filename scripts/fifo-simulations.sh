#!/usr/bin/env bash
# FIFO mode in the simulator: the room with queueing_method = fifo and the FIFO
# rule (waiting_room::control::fifo) moving fifo_cutoff in the loop, log lines 5 s
# late, a tick of 10 s, at propagation delays of 0 and 30 s. Two crowds of plain
# visitors, target 2,000 new sessions a minute, two hours simulated:
#   flash   200,000 people in 10 s
#   steady  200,000 people over 50 minutes (4,000/min arriving)
# and the flash crowd again with 30 % of people giving up within 20 minutes.
# Writes report.json and waits-fifo.svg per run under docs/sim/fifo/ and prints
# each run's figures (Kendall's tau, minutes against the target, waits by
# arrival decile). About 2 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."

cargo build --release -p simulate
simulate=target/release/simulate
out=docs/sim/fifo
mkdir -p "$out"
common=(--queueing fifo --target-per-minute 2000 --duration 7200 --quiet)
flash=(--visitors 200000 --arrivals flash:10)
steady=(--visitors 200000 --arrivals steady:3000)

run() { # name delay args...
  local name=$1 delay=$2
  shift 2
  echo "== $name, propagation delay $delay s"
  "$simulate" run "${common[@]}" --propagation-delay "$delay" --out "$out/$name-delay-$delay" "$@"
}

for delay in 0 30; do
  run flash "$delay" "${flash[@]}"
  run steady "$delay" "${steady[@]}"
done
run flash-abandon-30pct 30 "${flash[@]}" --abandon 0.3:1200
