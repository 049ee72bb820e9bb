#!/usr/bin/env python3
"""A Markdown table of the FIFO runs under docs/research/figures/fifo (written by
scripts/fifo-simulations.sh): one row per run, minutes checked in new sessions
(distinct allow tokens), people admitted and who gave up beside them."""
import json
import pathlib
import sys

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "docs/research/figures/fifo")


def ratio(r):
    return "-" if r is None else f"{r:.3f}"


print(
    "| run | propagation | Kendall tau-b | minutes within ±10 % | lowest, highest, mean (× target) "
    "| first two minutes (new sessions) | everyone in, min (target implies) | people admitted | gave up |"
)
print("|---|---:|---:|---|---|---|---:|---:|---:|")
for report in sorted(root.glob("*/report.json")):
    f = json.loads(report.read_text())["fifo"]
    first = ", ".join(f"{n:,}" for n in f["new_sessions_per_minute"][:2])
    everyone = f["minutes_to_admit_everyone"]
    tau = f["kendall_tau"]
    print(
        f"| {report.parent.name} | {f['propagation_delay']} s | {'-' if tau is None else f'{tau:.3f}'} "
        f"| {f['minutes_within_10_percent']}/{f['minutes_checked']} "
        f"| {ratio(f['lowest_ratio'])}, {ratio(f['highest_ratio'])}, {ratio(f['mean_ratio'])} "
        f"| {first} | {'-' if everyone is None else f'{everyone:.1f}'} ({f['implied_minutes']:.1f}) "
        f"| {f['admitted']:,} | {f['abandoned']:,} |"
    )
