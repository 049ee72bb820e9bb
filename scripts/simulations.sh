#!/usr/bin/env bash
# Regenerates the simulations behind BENCHMARKS.md: the JSON reports and SVG plots
# under docs/research/figures/ (each crowd on the address grid and on the VCL's global grid, in
# both refresh modes), their tables (docs/research/figures/table.md), then the cost sweep and
# the planning example on standard output. About 15 minutes on 2 cores shared
# with other work; the simulator prints progress on long runs.
set -euo pipefail
cd "$(dirname "$0")/.."
# SIM_SCALE=N divides every crowd, target and sample below by N (whole numbers, at
# least 1): the same runs at a small size (scripts/smoke.sh uses 1000). SIM_DIR (default
# docs/research/figures) is where the reports and tables go.
source scripts/sim-scale.sh

cargo build --release -p simulate
simulate=target/release/simulate

# 10^6 visitors arriving steadily over 50 minutes, an hour of virtual time.
"$simulate" run --mix devices --visitors "$(n 1000000)" --arrivals steady:3000 --duration 3600 --draw-grid both --out "$sim/steady"
# A flash crowd: 200,000 people in the same ten seconds.
"$simulate" run --mix devices --visitors "$(n 200000)" --arrivals flash:10 --duration 3600 --draw-grid both --out "$sim/flash"
# Three waves of 100,000 people, each within a minute, 20 minutes apart.
"$simulate" run --mix devices --visitors "$(n 300000)" --arrivals waves:3:1200:60 --duration 3600 --draw-grid both --out "$sim/waves"
python3 scripts/sim-table.py "$sim"/{steady,flash,waves}/report.json | tee "$sim/table.md"

# Cost per decision as the crowd grows, 10^3 to 10^6 visitors.
"$simulate" cost --visitors "$(n 1000)","$(n 10000)","$(n 100000)","$(n 1000000)"
# Planning: what 200,000 people in one minute would do under candidate settings.
"$simulate" plan --visitors "$(n 200000)" --arrivals flash:60 --duration 3600 \
  --allow-percentage 5,10,20 --wait-period-duration 30,60 --allow-period-timeout 900,3600 --sample "$(n 20000)"
