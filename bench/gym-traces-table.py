#!/usr/bin/env python3
"""The markdown table of bench/gym-traces.sh's runs: per example, trace and scale, the worst path's
share within its SLO (the lowest over the seeds) and the mean cost of the optimizer, of its
papers' baseline and of the cheapest tuned baseline that kept the attainment asked on seed 42,
and the optimizer's goodput per dollar against that baseline's (means over the seeds).
  bench/gym-traces-table.py OUT_DIR
"""
import collections
import glob
import json
import os
import statistics
import sys


def worst(policy):
    return min(p["sloAttainment"] for p in policy["paths"].values())


def summary(runs, name):
    found = [next(p for p in run["policies"] if p["policy"] == name) for run in runs]
    return {"worst": min(worst(p) for p in found),
            "cost": statistics.mean(p["totalCost"] for p in found),
            "gpd": statistics.mean(p["goodputPerDollar"] for p in found)}


def row(tag, runs):
    first = next(run for run in runs if run["seed"] == 42)
    optimizer, papers = first["policies"][0]["policy"], first["policies"][1]["policy"]
    ours, theirs = summary(runs, optimizer), summary(runs, papers)
    kept = [t["best"]["policy"] for t in first["tuned"] if t["best"]]
    tuned = sorted((summary(runs, name) | {"name": name} for name in kept),
                   key=lambda s: s["cost"])
    if tuned:
        best = tuned[0]
        against = f"{best['name']}: {best['worst']:.1%}, ${best['cost']:.3f}"
    else:
        closest = [summary(runs, t["closest"]["policy"]) | {"name": t["closest"]["policy"]}
                   for t in first["tuned"]]
        best = max(closest, key=lambda s: s["gpd"])
        against = (f"none keeps {first['tuned'][0]['attainment']:.0%}; best per $: "
                   f"{best['name']}: {best['worst']:.1%}, ${best['cost']:.3f}")
    name, trace, scale = tag.split(".")
    sent = sum(p["sent"] for p in first["policies"][0]["paths"].values())
    return (f"| {name} | {trace} {scale} ({sent / first['seconds']:.0f}/s) | "
            f"{optimizer}: {ours['worst']:.1%}, ${ours['cost']:.3f} | "
            f"{papers}: {theirs['worst']:.1%}, ${theirs['cost']:.3f} | {against} | "
            f"{ours['gpd'] / best['gpd']:.2f}x |")


def main(out):
    runs = collections.defaultdict(list)
    for path in sorted(glob.glob(os.path.join(out, "*.json"))):
        tag = os.path.basename(path).rsplit(".", 2)[0]
        try:
            with open(path) as f:
                runs[tag].append(json.load(f))
        except json.JSONDecodeError:
            print(f"skipped {path}: not (yet) a whole report", file=sys.stderr)
    print("| example | trace, scale (requests/s) | optimizer: worst path, cost | "
          "papers' baseline | cheapest tuned baseline at the attainment (seed 42) | "
          "optimizer goodput/$ vs it |")
    print("|---|---|---|---|---|---:|")
    for tag in sorted(runs):
        if any(run["seed"] == 42 for run in runs[tag]):
            print(row(tag, runs[tag]))


if __name__ == "__main__":
    main(sys.argv[1])
