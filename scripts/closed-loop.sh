#!/usr/bin/env bash
# The closed loop: the room's own controller holding a target of new sessions a
# minute, in the simulator, at propagation delays of 0, 30 and 60 s (log lines
# reach the controller 5 s late, it ticks every 10 s). Three crowds:
#   flash   200,000 people in 10 s, target 2,000/min (100 minutes of admissions)
#   steady  200,000 people over 50 minutes (4,000/min arriving), target 2,000/min
#   waves   300,000 people in 3 waves of a minute, 20 minutes apart, target 3,000/min
# Each with plain visitors (one device and tab, own address, following Refresh),
# the simulator's default mix of people and its heavy mix (several devices, shared
# addresses, replayers, tabs sharing a cookie jar, apps polling on their own
# interval, early reloaders, people who give up); and the flash crowd from the
# safe start (the room at 1 % until the controller's writes land); and the fixed
# percentages of the planning table for comparison.
# On the room's default address draw grid; `scripts/closed-loop.sh global` runs
# the same on the VCL's global grid (under docs/research/figures/closed-loop-global/).
# Pages come back when the visitor's draw is due (`refresh_mode = eligible`, the
# room's default); SIM_REFRESH=fixed runs them on the VCL's fixed beat instead
# (under closed-loop-fixed/, or closed-loop-global-fixed/).
# Writes report.json and closed-loop-eligible.svg per run under
# docs/research/figures/closed-loop/, prints each run's figures, and writes them all as a
# Markdown table (table.md). Two runs at a time: about 40 minutes on 2 idle cores.
# Then every crowd and mix again with the POP's ceiling under the controller
# (pop_new_sessions_per_minute at 0.95 times the target, counted as Fastly documents
# its edge rate counters: 10 % low; runs named *-ceiling): about 35 minutes more.
# `scripts/closed-loop.sh address ceiling` runs only those, `... address loop` all
# but those.
set -euo pipefail
cd "$(dirname "$0")/.."
# SIM_SCALE=N divides every crowd, target and sample below by N (whole numbers, at
# least 1): the same runs at a small size (scripts/smoke.sh uses 1000). SIM_DIR (default
# docs/research/figures) is where the reports and tables go. SIM_CEILING is the ceiling in thousandths
# of the target (default 950) and SIM_POP_COUNTS how the POP counts (edge, the default,
# or exact): SIM_CEILING=1050 SIM_POP_COUNTS=exact runs the ceiling as it was run before
# the simulator modelled the edge's counters. SIM_DELAYS (default "0 30 60") lists the
# propagation delays to run.
source scripts/sim-scale.sh
ceiling=${SIM_CEILING:-950}
[[ $ceiling =~ ^[1-9][0-9]*$ ]] || { echo "SIM_CEILING must be a whole number of thousandths" >&2; exit 2; }
counts=${SIM_POP_COUNTS:-edge}
[[ $counts =~ ^(edge|exact)$ ]] || { echo "SIM_POP_COUNTS must be edge or exact" >&2; exit 2; }
pop() { n $(($1 * ceiling / 1000)); }                       # pop 2000: the ceiling for a target of 2000
delays=${SIM_DELAYS:-0 30 60}
[[ $delays =~ ^[0-9]+( [0-9]+)*$ ]] || { echo "SIM_DELAYS must be seconds, separated by spaces" >&2; exit 2; }

grid=${1:-address}
only=${2:-all}
[[ $only =~ ^(all|loop|ceiling)$ ]] || { echo "usage: $0 [address|global] [all|loop|ceiling]" >&2; exit 2; }
refresh=${SIM_REFRESH:-eligible}
[[ $refresh =~ ^(eligible|fixed)$ ]] || { echo "SIM_REFRESH must be eligible or fixed" >&2; exit 2; }
suffix=; [ "$refresh" = fixed ] && suffix=-fixed
cargo build --release -p simulate
simulate=target/release/simulate
case $grid in
  address) out=$sim/closed-loop$suffix ;;
  global) out=$sim/closed-loop-global$suffix ;;
  *) echo "usage: $0 [address|global] [all|loop|ceiling]" >&2; exit 2 ;;
esac
mkdir -p "$out"
plain=(--mix plain)
common=(--refresh "$refresh" --draw-grid "$grid" --quiet)
flash=(--visitors "$(n 200000)" --arrivals flash:10 --duration 7200)
steady=(--visitors "$(n 200000)" --arrivals steady:3000 --duration 7200)
waves=(--visitors "$(n 300000)" --arrivals waves:3:1200:60 --duration 7200)

run() { # name delay args...
  local name=$1 delay=$2
  shift 2
  "$simulate" run "${common[@]}" --propagation-delay "$delay" --out "$out/$name-delay-$delay" "$@" |
    sed -n '2p' | sed "s/^/$name, propagation delay $delay s: /"
}

# The simulator's --mix for a run's mix name.
mix_of() { case $1 in mix) echo default ;; *) echo "$1" ;; esac; }

# Each crowd with each mix; two runs at a time, one a core.
for delay in $delays; do
  [ "$only" = ceiling ] && break
  for mix in plain mix heavy; do
    people=(--mix "$(mix_of "$mix")")
    run "$mix-flash" "$delay" "${people[@]}" "${flash[@]}" --target-per-minute "$(n 2000)" &
    first=$!
    run "$mix-steady" "$delay" "${people[@]}" "${steady[@]}" --target-per-minute "$(n 2000)"
    wait "$first"
    run "$mix-waves" "$delay" "${people[@]}" "${waves[@]}" --target-per-minute "$(n 3000)" &
    first=$!
    if [ "$mix" = mix ]; then
      # The safe start: the room at 1 % until the controller's writes land.
      run mix-flash-start-1 "$delay" "${flash[@]}" --target-per-minute "$(n 2000)" --allow-percentage 1 --start 1
    fi
    wait "$first"
  done
done

# The POP's ceiling (0.95 times the target unless SIM_CEILING says otherwise): the room
# holds a won draw once the POP's counter shows that many in the minute, whatever the
# percentage in effect. The edge's counter reads up to 10 % low, so a minute may run to
# the ceiling / 0.9: 1.056 times the target.
for delay in $delays; do
  [ "$only" = loop ] && break
  for mix in plain mix heavy; do
    people=(--mix "$(mix_of "$mix")" --pop-counts "$counts")
    run "$mix-flash-ceiling" "$delay" "${people[@]}" "${flash[@]}" --target-per-minute "$(n 2000)" \
      --pop-new-sessions-per-minute "$(pop 2000)" &
    first=$!
    run "$mix-steady-ceiling" "$delay" "${people[@]}" "${steady[@]}" --target-per-minute "$(n 2000)" \
      --pop-new-sessions-per-minute "$(pop 2000)"
    wait "$first"
    run "$mix-waves-ceiling" "$delay" "${people[@]}" "${waves[@]}" --target-per-minute "$(n 3000)" \
      --pop-new-sessions-per-minute "$(pop 3000)"
  done
done
[ "$only" = ceiling ] && { python3 scripts/closed-loop-table.py "$out" | tee "$out/table.md"; exit 0; }

# Fixed percentages, as the planning mode tabulates them (a sample of 20,000 scaled up).
plan() { # name args...
  local name=$1
  shift
  echo "== $name, fixed percentages"
  "$simulate" plan --sample "$(n 20000)" --draw-grid "$grid" "${plain[@]}" --out "$out/$name-fixed.json" "$@" | tee "$out/$name-fixed.md"
}
plan flash "${flash[@]}" --allow-percentage 0.5,1,1.15,2,5
plan steady "${steady[@]}" --allow-percentage 1,2,3,5,10
plan waves "${waves[@]}" --allow-percentage 1,2,3,5,10

# Every run's figures in one Markdown table.
python3 scripts/closed-loop-table.py "$out" | tee "$out/table.md"
