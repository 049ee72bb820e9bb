#!/usr/bin/env bash
# What extra devices buy, and how evenly admissions come: the three crowds of
# scripts/simulations.sh (default mix: 10 % of people on 3 devices behind their
# one address) with the devices joining over 10, 40 and 120 s, on the address
# grid and on the VCL's global grid, in this program's refresh mode. Writes one
# report.json per crowd and spread under docs/research/figures/devices/ (no plots) and prints
# them as Markdown tables (table.md beside them). About 12 minutes on 2 cores
# shared with other work.
set -euo pipefail
cd "$(dirname "$0")/.."
# SIM_SCALE=N divides every crowd, target and sample below by N (whole numbers, at
# least 1): the same runs at a small size (scripts/smoke.sh uses 1000). SIM_DIR (default
# docs/research/figures) is where the reports and tables go.
source scripts/sim-scale.sh

cargo build --release -p simulate
simulate=target/release/simulate
out=$sim/devices
mkdir -p "$out"

for spread in 10 40 120; do
  common=(--mix devices --device-spread "$spread" --draw-grid both --refresh eligible --no-plots --quiet)
  echo "== device spread $spread s"
  "$simulate" run "${common[@]}" --visitors "$(n 200000)" --arrivals flash:10 --duration 3600 \
    --out "$out/flash-spread-$spread" | cut -c1-160
  "$simulate" run "${common[@]}" --visitors "$(n 1000000)" --arrivals steady:3000 --duration 3600 \
    --out "$out/steady-spread-$spread" | cut -c1-160
  "$simulate" run "${common[@]}" --visitors "$(n 300000)" --arrivals waves:3:1200:60 --duration 3600 \
    --out "$out/waves-spread-$spread" | cut -c1-160
done

reports=()
for crowd in flash steady waves; do
  for spread in 10 40 120; do reports+=("$out/$crowd-spread-$spread/report.json"); done
done
python3 scripts/sim-table.py "${reports[@]}" | tee "$out/table.md"
