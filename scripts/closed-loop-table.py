#!/usr/bin/env python3
"""Markdown tables of the closed-loop runs under docs/research/figures/closed-loop (written by
scripts/closed-loop.sh): one row per run, and the fixed percentages of the
planning mode beside them."""
import json
import pathlib
import sys

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "docs/research/figures/closed-loop")


def ratio(r):
    return "-" if r is None else f"{r:.3f}"


print(
    "| run | delay | target/min | minutes 3.. in ±10 % | lowest | highest | above 1.15× "
    "| first two minutes (× target) | everyone admitted, min | target implies, min | ratio "
    "| writes/h (of which percentage) | turns per draw period | largest rise | wall s |"
)
print("|---|---:|---:|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|")
for report in sorted(root.glob("*/report.json")):
    data = json.loads(report.read_text())
    control = data["scenario"]["control"]
    for run in data["runs"]:
        c = run["closed_loop"]
        first = "; ".join(
            f"m{f['minute'] + 1}–{f['minute'] + 2}: {f['new_sessions'][0]}, {f['new_sessions'][1]}"
            f" ({f['ratio'][0]:.2f}, {f['ratio'][1]:.2f})"
            for f in c["first_minutes"]
        )
        ok = "yes" if c["all_within_10_percent"] else "no"
        admitted = c["minutes_to_admit_everyone"]
        hours = data["scenario"]["duration"] / 3600
        print(
            f"| {report.parent.name} | {control['propagation_delay']} s | {c['target_per_minute']:.0f} "
            f"| {ok} ({c['minutes_within_10_percent']}/{c['minutes_checked']}) "
            f"| {ratio(c['lowest_ratio'])} | {ratio(c['highest_ratio'])} | {c['minutes_above_115_percent']} "
            f"| {first} | {'-' if admitted is None else f'{admitted:.1f}'} | {c['implied_minutes']:.1f} "
            f"| {ratio(c['admit_time_ratio'])} "
            f"| {c['writes_per_hour']:.0f} ({c['percentage_writes'] / hours:.0f}) "
            f"| {c['direction_changes_per_draw_period']:.2f} | {ratio(c['largest_rise_per_draw_period'])} "
            f"| {run['cost']['wall_seconds']:.0f} |"
        )

for plan in sorted(root.glob("*-fixed.json")):
    print(f"\n{plan.stem}: fixed percentages (planning mode, 20,000 sampled and scaled)\n")
    print("| allow_percentage | minutes to admit 90 % | new sessions/min, mean | peak minute | admitted in the run |")
    print("|---:|---:|---:|---:|---:|")
    for a in json.loads(plan.read_text()):
        to90 = a["minutes_to_admit_90_percent"]
        mean = a["new_sessions_per_minute_mean"]
        print(
            f"| {a['room']['allow_percentage']} | {'beyond the run' if to90 is None else to90} "
            f"| {'-' if mean is None else f'{mean:.0f}'} | {a['new_sessions_per_minute_peak']:.0f} "
            f"| {100 * a['admitted_share']:.1f} % |"
        )
