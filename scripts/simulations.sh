#!/usr/bin/env bash
# Regenerates the simulations behind BENCHMARKS.md: the JSON reports and SVG plots
# under docs/sim/ (each crowd on the address grid and on the VCL's global grid, in
# both refresh modes), their tables (docs/sim/table.md), then the cost sweep and
# the planning example on standard output. About 15 minutes on 2 cores shared
# with other work; the simulator prints progress on long runs.
set -euo pipefail
cd "$(dirname "$0")/.."

cargo build --release -p simulate
simulate=target/release/simulate

# 10^6 visitors arriving steadily over 50 minutes, an hour of virtual time.
"$simulate" run --mix devices --visitors 1000000 --arrivals steady:3000 --duration 3600 --draw-grid both --out docs/sim/steady
# A flash crowd: 200,000 people in the same ten seconds.
"$simulate" run --mix devices --visitors 200000 --arrivals flash:10 --duration 3600 --draw-grid both --out docs/sim/flash
# Three waves of 100,000 people, each within a minute, 20 minutes apart.
"$simulate" run --mix devices --visitors 300000 --arrivals waves:3:1200:60 --duration 3600 --draw-grid both --out docs/sim/waves
python3 scripts/sim-table.py docs/sim/{steady,flash,waves}/report.json | tee docs/sim/table.md

# Cost per decision as the crowd grows, 10^3 to 10^6 visitors.
"$simulate" cost --visitors 1000,10000,100000,1000000
# Planning: what 200,000 people in one minute would do under candidate settings.
"$simulate" plan --visitors 200000 --arrivals flash:60 --duration 3600 \
  --allow-percentage 5,10,20 --wait-period 30,60 --allow-timeout 900,3600 --sample 20000
