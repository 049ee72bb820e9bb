#!/usr/bin/env bash
# FIFO mode in the simulator: the room with queueing_method = fifo and the FIFO
# rule (control::fifo_rule) moving fifo_cutoff in the loop, log lines 5 s
# late, a tick of 10 s, at propagation delays of 0, 30 and 60 s. Two crowds,
# target 2,000 new sessions a minute, two hours simulated:
#   flash   200,000 people in 10 s
#   steady  200,000 people over 50 minutes (4,000/min arriving)
# each with plain visitors, the simulator's default mix of people and its heavy
# mix (several devices, shared addresses, replayers, tabs sharing a cookie jar,
# apps polling on their own interval, early reloaders, people who give up); and
# the flash crowd of plain visitors with 30 % giving up within 20 minutes.
# Writes report.json per run under docs/research/figures/fifo/ and prints each run's figures
# (Kendall's tau, minutes against the target in new sessions, waits by arrival
# decile). Two runs at a time: about 10 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
# SIM_SCALE=N divides every crowd, target and sample below by N (whole numbers, at
# least 1): the same runs at a small size (scripts/smoke.sh uses 1000). SIM_DIR (default
# docs/research/figures) is where the reports and tables go.
source scripts/sim-scale.sh

cargo build --release -p simulate
simulate=target/release/simulate
out=$sim/fifo
mkdir -p "$out"
common=(--queueing fifo --target-per-minute "$(n 2000)" --duration 7200 --no-plots --quiet)
flash=(--visitors "$(n 200000)" --arrivals flash:10)
steady=(--visitors "$(n 200000)" --arrivals steady:3000)

run() { # name delay args...
  local name=$1 delay=$2
  shift 2
  echo "== $name, propagation delay $delay s"
  "$simulate" run "${common[@]}" --propagation-delay "$delay" --out "$out/$name-delay-$delay" "$@"
}

for delay in 0 30 60; do
  for mix in plain default heavy; do
    run "$mix-flash" "$delay" --mix "$mix" "${flash[@]}" > "$out/$mix-flash-$delay.txt" &
    first=$!
    run "$mix-steady" "$delay" --mix "$mix" "${steady[@]}" > "$out/$mix-steady-$delay.txt"
    wait "$first"
    cat "$out/$mix-flash-$delay.txt" "$out/$mix-steady-$delay.txt"
    rm "$out/$mix-flash-$delay.txt" "$out/$mix-steady-$delay.txt"
  done
done
run plain-flash-abandon-30pct 30 --mix plain "${flash[@]}" --abandon 0.3:1200
python3 scripts/fifo-table.py "$out" | tee "$out/table.md"
