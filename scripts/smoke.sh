#!/usr/bin/env bash
# Smoke runs of the long scripts the docs name (docs/development.md#smoke-runs): each
# script itself, on its own code path, at the smallest size that still exercises it
# (the simulations at SIM_SCALE=1000, a few hundred people a crowd; a real crowd of
# 12 people for a minute; one short round of each benchmark; 2 s a fuzz target), with
# its output checked for its tables (their headers and the rows each must have), not
# only its exit code. scripts/test.sh runs every step.
#
#   scripts/smoke.sh [STEP...]    # default: every step, in this order:
#
# simulations device-spread fifo-simulations closed-loop origin-simulations simulate-toll viceroy-cost
# path-bench bench-toll-browser lottery-reference, and beside them, in the background:
# fuzz (its targets build in fuzz/target/, a directory of their own, mostly on one core,
# so they never wait for the other steps' builds nor these for them), real-crowd and
# real-crowd-rooms (a crowd mostly waits: it needs little CPU), each crowd on a loopback
# address of its own (DEMO_HOST: 127.76.X.Y, drawn at random and unused), so that they
# never meet each other, a demo on 127.0.0.1, or another checkout's smoke run on the
# same machine.
#
# Each step's output goes to target/smoke/STEP.log (the simulations' reports under
# target/smoke/sim/, never docs/research/figures/); a failing step prints its last lines and the
# script fails once every step has run. WAITING_ROOM_SKIP_BROWSER=1 skips
# bench-toll-browser and the crowd's dashboard screenshot, and says so; otherwise they
# need scripts/setup.sh's Chromium and npm packages, and fail without them.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
unset FUZZ_TARGETS SIM_SCALE SIM_DIR TOLL_BENCH_OUT DEMO_TARGET DEMO_TOLL_BITS DEMO_CONTROLLER \
  DEMO_START SERVICE_TARGET DROPS_TARGET
out=target/smoke
mkdir -p "$out"

foreground=(simulations device-spread fifo-simulations closed-loop origin-simulations simulate-toll viceroy-cost
  path-bench bench-toll-browser lottery-reference)
background=(fuzz real-crowd real-crowd-rooms)
skip_browser=0
[ "${WAITING_ROOM_SKIP_BROWSER:-0}" = 1 ] && skip_browser=1

# --- checks on a step's log ($log) ----------------------------------------------------

problems=()
problem() { problems+=("$*"); }

# expect REGEX [WHAT]: some line of the log matches the extended regular expression.
expect() {
  grep -Eq -- "$1" "$log" || problem "no line matching /$1/${2:+ ($2)}"
}

# rows HEADER: the rows of every table of the log whose header line starts with HEADER
# (the lines starting with "|" after its "|---" line, up to the first that does not, or
# to the next table's header: the line before another "|---" line).
rows() {
  awk -v head="$1" '
    index($0, head) == 1 { inside = 1; ruled = 0; next }
    inside && /^[-|: ]+$/ { if (ruled) { n--; inside = 0 } else ruled = 1; next }
    inside && /^\|/ { n++; next }
    { inside = 0 }
    END { print n + 0 }' "$log"
}

# expect_rows HEADER N: the tables under HEADER have N rows in all ("+N": at least N).
expect_rows() {
  local got
  got="$(rows "$1")"
  case $2 in
    +*) [ "$got" -ge "${2#+}" ] || problem "$got rows under \"$1\", expected at least ${2#+}" ;;
    *) [ "$got" -eq "$2" ] || problem "$got rows under \"$1\", expected $2" ;;
  esac
}

# --- the steps: run_STEP runs the script, check_STEP checks its log -------------------
# (run_STEP runs where `set -e` does not apply: several commands go with &&.)

sim_dir() { # STEP: a fresh directory for the step's reports
  rm -rf "$out/sim/$1"
  mkdir -p "$out/sim/$1"
  echo "$out/sim/$1"
}

run_fuzz() { FUZZ_SECONDS_PER_TARGET=2 scripts/fuzz.sh; }
check_fuzz() {
  local file target
  for file in fuzz/fuzz_targets/*.rs; do
    target="$(basename "$file" .rs)"
    expect "^$target +[1-9][0-9]* executions in +[0-9]+ s, 0 failures, corpus" "target $target"
  done
  expect "^total +[1-9][0-9]* executions, 0 failures"
}

# Crowds of 200 to 1,000 people, targets of 2 or 3 a minute: the same runs, a
# thousandth of their size.
run_simulations() { SIM_SCALE=1000 SIM_DIR="$(sim_dir simulations)" scripts/simulations.sh; }
check_simulations() {
  # Three crowds, each on two grids in two refresh modes.
  expect_rows "| crowd | device spread | grid | refresh | multi-device people |" 12
  expect_rows "| crowd | device spread | grid | refresh | dispersion index |" 12
  expect_rows "| visitors | most waiting at once |" 4
  # 3 percentages x 2 wait periods x 2 allow timeouts.
  expect_rows "| allow_percentage | wait_period_duration | allow_period_timeout |" 12
}

run_device-spread() { SIM_SCALE=1000 SIM_DIR="$(sim_dir device-spread)" scripts/device-spread.sh; }
check_device-spread() {
  # Three crowds at three spreads, on two grids.
  expect_rows "| crowd | device spread | grid | refresh | multi-device people |" 18
  expect_rows "| crowd | device spread | grid | refresh | dispersion index |" 18
}

run_fifo-simulations() { SIM_SCALE=1000 SIM_DIR="$(sim_dir fifo-simulations)" scripts/fifo-simulations.sh; }
check_fifo-simulations() {
  # Two crowds, three mixes, three delays, and the crowd that gives up.
  expect_rows "| run | propagation | Kendall tau-b |" 19
  expect_rows "| arrival decile |" 190
}

run_origin-simulations() { SIM_SCALE=10 SIM_DIR="$(sim_dir origin-simulations)" scripts/origin-simulations.sh; }
check_origin-simulations() {
  # Three capacities, two crowds and two delays, four courses at two delays, two
  # pools of servers with two crowds at two delays, and fifteen runs of a target held
  # fixed; each run's minute table with its sixty minutes.
  expect_rows "| run | minutes judged | over the bound |" 43
  expect "^minute  new  live  limit   p95ms" "a run's minute table"
  expect "origin: from minute 5, [0-9]+ minutes judged" "a run's figures"
}

run_closed-loop() { SIM_SCALE=1000 SIM_DIR="$(sim_dir closed-loop)" scripts/closed-loop.sh; }
check_closed-loop() {
  # Three mixes, three crowds and three delays, the safe start at each delay, and the
  # same with the POP's ceiling; then five fixed percentages for each crowd.
  expect_rows "| run | delay | target/min |" 57
  expect_rows "| allow_percentage | minutes to admit 90 % |" 15
}

# The two small runs docs/research/simulate-toll.md shows, as it shows them.
run_simulate-toll() {
  cargo run --release -p simulate -- toll --visitors 400 --bots 200:200 --bot-toll-bits 0,8
}
check_simulate-toll() {
  expect_rows "| bot_toll_bits | places (new sessions) |" 2
  expect "^\| 8 \| [0-9]+ \| [0-9]+ \| 0\.0 % \(0\) \|" "no skipping bot in with the toll below 100 %"
}

run_viceroy-cost() { scripts/viceroy-cost.sh --runs 1 --rounds 10 --warmup 2; }
check_viceroy-cost() {
  expect_rows "| case | requests |" +2
  [ "$(grep -Ec '^\| [^|]+ \| 10 \| [0-9.]+ \|' "$log")" -eq "$(rows "| case | requests |")" ] ||
    problem "a case without its 10 requests"
  expect_rows "| ratio | request threads | all threads |" +1
  expect_rows "| run | room young" 1
}

# docs/research/viceroy-cost.md's path benchmark in wasm, one round (scripts/test.sh builds it).
run_path-bench() {
  (cd bench && cargo build --release --target wasm32-wasip1 -p path-bench) &&
    viceroy run target/wasm32-wasip1/release/path-bench.wasm -- --rounds 1
}
check_path-bench() {
  expect_rows "| path | HMACs | plan() ns |" +7
}

run_bench-toll-browser() {
  TOLL_RATES=1 TOLL_BUDGET_SECS=10 TOLL_CELL_SECS=1 scripts/bench-toll-browser.sh
}
check_bench-toll-browser() {
  # A row for every difficulty the script renders, and the easiest solved.
  expect_rows "| bits | expected hashes 2^bits | desktop n |" 7
  expect "^\| 8 \| 256 \| [1-9][0-9]* \| [0-9.]+ \|" "8 bits solved"
}

# The lottery's independent reference, as src/admission/lottery.rs's first known answer runs it.
run_lottery-reference() { python3 scripts/lottery_reference.py 50 $(seq 0 15); }
check_lottery-reference() {
  expect "^\[1, 2, 6, 7, 8, 9, 10, 11, 12\]$" "src/admission/lottery.rs's known answer at 50 %"
}

# A loopback address 127.76.X.Y drawn at random, where nothing answers on the demo's
# ports.
free_host() {
  local host port taken
  for _ in $(seq 50); do
    host="127.76.$((RANDOM % 250 + 1)).$((RANDOM % 250 + 1))"
    taken=0
    for port in 7676 7677 7678 7679 8080; do
      if (exec 3<>"/dev/tcp/$host/$port") 2>/dev/null; then taken=1; fi
    done
    [ "$taken" = 1 ] || { echo "$host"; return 0; }
  done
  echo "no free loopback address" >&2
  return 1
}

# A dozen people, two tabs each, for one minute: the table has its one minute. The
# room starts at 50 % (the demo's highest), so some are admitted.
run_real-crowd() {
  local host
  host="$(free_host)" &&
    DEMO_HOST="$host" DEMO_START=50 scripts/real-crowd.sh --people 12 --tabs 2 --duration 60
}
check_real-crowd() {
  expect "^minute  new sessions \(tokens\)  people admitted  tokens per person"
  expect "^ +0 +[0-9]+ +[0-9]+ +([0-9.]+|-)( |$)" "minute 0"
  expect "^requests [1-9][0-9]*, errors 0; new sessions \(distinct allow tokens\) [1-9][0-9]*, people admitted [1-9]"
  expect "^target 30/min: " "the judgement against the target"
  if [ "$skip_browser" = 1 ]; then
    expect "^screenshots: SKIPPED on request"
  else
    expect "^screenshots: target/real-crowd/dashboard-phone.png"
    [ -s target/real-crowd/dashboard-phone.png ] || problem "no dashboard-phone.png"
  fi
}

run_real-crowd-rooms() {
  local host
  host="$(free_host)" &&
    DEMO_HOST="$host" scripts/real-crowd-rooms.sh --people 12 --tabs 2 --duration 60
}
# Two rooms at the controllers' start (1 %), a dozen people each for a minute: a room
# may admit nobody yet, so the check asks no admission (minute 0's row may read 0 and
# "-"), only the tables, no error, and both controllers counting lines.
check_real-crowd-rooms() {
  [ "$(grep -Ec '^minute  new sessions \(tokens\)  people admitted  tokens per person' "$log")" -eq 2 ] ||
    problem "not two crowds' tables"
  [ "$(grep -Ec '^ +0 +[0-9]+ +[0-9]+ +([0-9.]+|-)( |$)' "$log")" -eq 2 ] || problem "not two crowds' minute 0"
  [ "$(grep -Ec '^requests [1-9][0-9]*, errors 0;' "$log")" -eq 2 ] || problem "not two crowds without errors"
  expect "^service controller: room None, target 30/min, [1-9][0-9]* lines counted"
  expect "^drops controller: room drops, target 60/min, [1-9][0-9]* lines counted"
}

# --- running them ----------------------------------------------------------------------

failed=()
step() { # NAME: runs and checks one step, prints one line
  local name=$1 start=$SECONDS seconds
  log="$out/$name.log"
  problems=()
  if [ "$skip_browser" = 1 ] && [ "$name" = bench-toll-browser ]; then
    echo "smoke: $name SKIPPED on request (WAITING_ROOM_SKIP_BROWSER=1)"
    return
  fi
  if ! "run_$name" >"$log" 2>&1; then
    problem "exit status non-zero"
  else
    "check_$name"
  fi
  seconds=$((SECONDS - start))
  if [ ${#problems[@]} -eq 0 ]; then
    echo "smoke: $name ok in $seconds s ($log)"
  else
    echo "smoke: $name FAILED in $seconds s ($log):"
    printf '  - %s\n' "${problems[@]}"
    echo "  its last lines:"
    tail -n 30 "$log" | sed 's/^/    /'
    failed+=("$name")
  fi
}

if [ $# -gt 0 ]; then
  for name in "$@"; do
    declare -F "run_$name" >/dev/null || { echo "smoke.sh: no step $name" >&2; exit 2; }
    step "$name"
  done
  [ ${#failed[@]} -eq 0 ] || exit 1
  exit 0
fi

began=$SECONDS
# The background steps, each in a process group of its own, stopped if this script
# stops first.
groups=()
for name in "${background[@]}"; do
  setsid "$0" "$name" >"$out/$name.line" 2>&1 &
  groups+=("$!")
done
trap 'for group in "${groups[@]}"; do kill -- -"$group" 2>/dev/null || true; done' EXIT
for name in "${foreground[@]}"; do step "$name"; done
for i in "${!background[@]}"; do
  wait "${groups[$i]}" || failed+=("${background[$i]}")
  cat "$out/${background[$i]}.line"
done
echo "smoke: every step in $((SECONDS - began)) s"
if [ ${#failed[@]} -gt 0 ]; then
  echo "smoke: FAILED: ${failed[*]}" >&2
  exit 1
fi
