#!/usr/bin/env bash
# How long the bot toll takes in headless Chromium: renders the keep-waiting page
# with a toll at 8 to 20 bits, each with challenges of its own (examples/toll_pages.rs),
# and times the page's own script solving them (tests/browser/toll_speed.mjs) on this
# machine ("desktop") and under CDP CPU throttling 4x ("phone", the slowdown
# Lighthouse applies for its mobile runs) and 6x ("low-end phone", DevTools' other
# preset). Prints a markdown table. Pages are local files: no network, no server.
#
#   scripts/bench-toll-browser.sh [--out FILE]
#
# Bounded: about 10 minutes (TOLL_BUDGET_SECS, default 540, for the browser part;
# every step has a timeout). --out FILE (or TOLL_BENCH_OUT) gets the markdown section,
# rewritten after each difficulty and rate, so a stopped run leaves its rows.
# TOLL_RATES (default 1,4,6), TOLL_CELL_SECS (default 45: the most time one difficulty
# at one rate takes samples, past its first 3), TOLL_QUIET_SECS (default 0: wait up to
# this long for an idle machine first) tune it. CHROMIUM overrides the browser.
set -euo pipefail
cd "$(dirname "$0")/.."

out="${TOLL_BENCH_OUT:-}"
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out="${2:?--out needs a file}"; shift 2 ;;
    -h | --help) sed -n "2,16p" "$0"; exit 0 ;;
    *) echo "unknown argument $1 (usage: $0 [--out FILE])" >&2; exit 2 ;;
  esac
done
budget="${TOLL_BUDGET_SECS:-540}"
rates="${TOLL_RATES:-1,4,6}"
cell="${TOLL_CELL_SECS:-45}"
quiet="${TOLL_QUIET_SECS:-0}"

# Chromium, Node.js and playwright-core as the browser tests find them; when one is
# missing, scripts/setup.sh installs it (and whatever else the project needs, Viceroy
# too, which takes long once).
if [ ! -x "${CHROMIUM:-/usr/bin/chromium}" ] || ! command -v node >/dev/null 2>&1 ||
  [ ! -d tests/browser/node_modules/playwright-core ]; then
  # shellcheck source=setup.sh
  source scripts/setup.sh
fi
export PATH="$HOME/.cargo/bin:$PATH"

# A native build (the root crate builds for the host unless told --target wasm32-wasip1).
timeout 900 cargo build --quiet --example toll_pages
pages="$(mktemp -d /tmp/toll-pages.XXXXXX)"
trap 'rm -rf "$pages"' EXIT
render=(target/debug/examples/toll_pages "$pages")
# Solve time is geometric (its spread is as large as its mean): many challenges where
# they are cheap, fewer where one solve takes seconds. A difficulty whose mean solve is
# predicted past 45 s (20 s when throttled) is left out, and the table says so.
"${render[@]}" --count 20 --bits 8,10,12,14 >/dev/null
"${render[@]}" --count 12 --bits 16 >/dev/null
"${render[@]}" --count 8 --bits 18 >/dev/null
"${render[@]}" --count 5 --bits 20 >/dev/null

# Optionally wait for a quiet machine: two cores, so others' work slows the pages.
if [ "$quiet" -gt 0 ]; then
  deadline=$((SECONDS + quiet))
  while [ "$SECONDS" -lt "$deadline" ]; do
    read -r _ u1 n1 s1 i1 _ < /proc/stat
    sleep 3
    read -r _ u2 n2 s2 i2 _ < /proc/stat
    busy=$(((u2 + n2 + s2) - (u1 + n1 + s1)))
    idle=$((i2 - i1))
    # Less than a quarter of the machine busy over the 3 s.
    if [ $((busy * 4)) -lt $((busy + idle)) ]; then break; fi
  done
fi

command="scripts/bench-toll-browser.sh${out:+ --out $out}"
args=(--dir "$pages" --rates "$rates" --budget-secs "$budget" --cell-secs "$cell"
  --drop-secs 45 --drop-secs-throttled 20 --timeout-secs 150 --command "$command")
[ -n "$out" ] && args+=(--out "$(realpath -m "$out")")
# The budget stops new solves; the margin lets the last one finish, then it is killed.
(cd tests/browser && timeout --kill-after=10 $((budget + 200)) node toll_speed.mjs "${args[@]}")
