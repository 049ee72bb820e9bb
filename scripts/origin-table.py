#!/usr/bin/env python3
"""The summary of scripts/origin-simulations.sh's runs, from their report.json files.

For each run: the minutes judged (from the fifth, while people wait) and those whose
p95 was over the bound; new sessions against the admissions that hold p95 at the
bound (mean and lowest of the minutes judged) and the first minute they reached
85 % of it; the times the target turned. For the origins that change: when the new
sessions fell after the change, when p95 came back under the bound (the first of five
minutes in a row under it; any minute over after that is listed), and when new sessions
reached 85 % of the level after a recovery; for the slow origin,
the minute the alert (state origin-slow) first showed.
"""
import json
import pathlib
import sys

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "docs/research/figures/origin")
REACHED = 0.85


def fmt(v, digits=2):
    return "-" if v is None else f"{v:.{digits}f}"


def first(minutes, test, start=0):
    return next((m["minute"] for m in minutes if m["minute"] > start and test(m)), None)


def course(o, change_minute, recover_minute):
    """Minutes after the change for: the cut, p95 back under the bound for good, and
    (after a recovery) 85 % of the new level."""
    ms, bound = o["minutes"], o["bound_ms"]
    before = [m["new_sessions"] for m in ms if change_minute - 4 <= m["minute"] < change_minute]
    level = sum(before) / max(1, len(before))
    cut = first(ms, lambda m: m["new_sessions"] < 0.5 * level, change_minute - 1)
    end = recover_minute or len(ms) + 1
    over = [m["minute"] for m in ms if change_minute <= m["minute"] < end and m["p95_ms"] > bound]
    # Back under: the first minute after which five in a row are under the bound;
    # minutes over after it are listed apart.
    back = next((m for m in range(change_minute, end) if not any(m <= o < m + 5 for o in over)), end)
    later = [o for o in over if o > back]
    regained = None
    if recover_minute:
        regained = first(ms, lambda m: m["at_bound"] > 0 and m["new_sessions"] >= REACHED * m["at_bound"], recover_minute - 1)
    rel = lambda m: "-" if m is None else m - change_minute
    return rel(cut), back - change_minute, "-" if regained is None else regained - recover_minute, later


rows = []
for report in sorted(root.glob("*/report.json")):
    run = json.loads(report.read_text())["runs"][0]
    o = run["closed_loop"]["origin"]
    name = report.parent.name
    ms = o["minutes"]
    reach = first(ms, lambda m: m["at_bound"] > 0 and m["new_sessions"] >= REACHED * m["at_bound"])
    slow = first(ms, lambda m: m["state"] == "origin-slow")
    extra = "-"
    if name.startswith("halved"):
        cut, back, _, later = course(o, 20, None)
        extra = f"cut after {cut} min; p95 back under the bound after {back} min" + (
            f" (over again in minute {', '.join(map(str, later))})" if later else "")
    elif name.startswith("recovers"):
        cut, back, regained, later = course(o, 20, 40)
        extra = f"cut after {cut} min; p95 back under after {back} min" + (
            f" (over again in minute {', '.join(map(str, later))})" if later else "") + (
            f"; 85 % of the new level {regained} min after recovery")
    elif name.startswith("slow"):
        extra = f"alert (origin-slow) from minute {slow}" if slow else "no alert"
    rows.append(
        f"| {name} | {o['minutes_judged']} | {o['minutes_over_bound']} | "
        f"{fmt(o['mean_share_of_bound_admissions'])} | {fmt(o['lowest_share_of_bound_admissions'])} | "
        f"{reach if reach is not None else '-'} | {o['direction_changes']} | {extra} |"
    )

print("| run | minutes judged | over the bound | new sessions / at the bound, mean | lowest | first minute at 85 % | target turns | course |")
print("|---|---:|---:|---:|---:|---:|---:|---|")
print("\n".join(rows))
