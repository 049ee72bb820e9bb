#!/usr/bin/env python3
"""Markdown tables of simulator reports (report.json files written by `simulate
run`): the multi-device advantage by crowd, device spread and draw grid, and the
smoothness of admissions (index of dispersion) with the per-slot fairness check.
Used by scripts/device-spread.sh and scripts/simulations.sh."""
import json
import sys


def crowd(scenario):
    a = scenario["arrivals"]
    n = f"{scenario['visitors']:,}"
    if a["profile"] == "flash":
        return f"flash: {n} in {a['seconds']} s"
    if a["profile"] == "steady":
        return f"steady: {n} over {a['seconds'] // 60} min"
    return f"waves: {n} in {a['count']} waves of {a['width']} s"


def pm(r):
    return f"{r['value']:.3f} ± {r['interval']:.3f}"


reports = [(path, json.load(open(path))) for path in sys.argv[1:]]

print(
    "| crowd | device spread | grid | refresh | multi-device people | within 1 / 2 / 4 / 8 draw periods "
    "(multi ÷ single) | **advantage** (mean wait single ÷ multi) | sooner than their first device alone "
    "| NAT ÷ single |"
)
print("|---|---:|---|---|---:|---|---:|---:|---:|")
for path, data in reports:
    s = data["scenario"]
    for run in data["runs"]:
        g = run["groups"]
        within = " / ".join(f"{w['value']:.3f}" for w in g["multi_device_within"])
        alone = g["multi_device_alone"]
        alone = "-" if alone is None else f"{alone['sooner']:,} ({alone['advantage']:.4f})"
        print(
            f"| {crowd(s)} | {s['mix']['device_spread']} s | {run['draw_grid']} | {run['refresh_mode']} "
            f"| {g['multi_device']['people']:,} | {within} | **{pm(g['multi_device_advantage'])}** "
            f"| {alone} | {pm(g['nat_ratio'])} |"
        )

print()
print(
    "| crowd | device spread | grid | refresh | dispersion index | seconds counted | mean admissions/s "
    "| peak second | slots in the 99 % band |"
)
print("|---|---:|---|---|---:|---:|---:|---:|---|")
for path, data in reports:
    s = data["scenario"]
    for run in data["runs"]:
        a = run["admissions"]
        d = a["dispersion"]
        f = run["fairness"]
        print(
            f"| {crowd(s)} | {s['mix']['device_spread']} s | {run['draw_grid']} | {run['refresh_mode']} "
            f"| **{d['index']:.2f}** | {d['seconds']} | {d['mean']:.1f} | {a['per_second']['peak']} "
            f"| {f['slots_inside_band']} / {f['slots_checked']} ({100 * f['share_inside_band']:.1f} %) |"
        )
