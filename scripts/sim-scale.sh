# Sourced by the simulation scripts: SIM_SCALE=N (a whole number, at least 1; default
# 1) divides their crowds, targets and samples by N, `n VALUE` gives VALUE at that
# scale (at least 1), and SIM_DIR (default docs/research/figures) is `$sim`, where
# their reports and tables go.
scale=${SIM_SCALE:-1}
[[ $scale =~ ^[1-9][0-9]*$ ]] || { echo "SIM_SCALE must be a whole number from 1" >&2; exit 2; }
sim=${SIM_DIR:-docs/research/figures}
n() { local v=$(($1 / scale)); echo $((v > 0 ? v : 1)); } # n 2000: 2000 at this scale
