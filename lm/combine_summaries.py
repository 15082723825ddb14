#!/usr/bin/python3
"""results/lm/summary.csv (one row per run, SPEC section 7) and fpa_backward.csv (FPA's two backward
modes, tiny, seed 0) from every results/lm/summary-<name>.csv that lm-eval wrote, each written
atomically with a sidecar naming its sources. Files of older lm-evals lack the seed column: it
is taken from their sidecar (those lm-evals ran on seed-0 runs with the default --seed 0).
Usage: lm/combine_summaries.py <results/lm>"""
import csv
import glob
import json
import os
import sys

out = sys.argv[1]
COLUMNS = ["preset", "variant", "seed", "params", "train_tokens", "tokens_per_s", "val_ppl", "test_ppl",
           "test_bpb", "val_bpb", "steps", "impl", "fpa_backward", "gate_params", "config"]


def rows_of(path):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    try:
        with open(path + ".json") as f:
            side = json.load(f)
    except (OSError, ValueError):
        side = {}
    for r in rows:
        if "min_grad" in r:  # the column's name in lm-evals before the flag vocabulary (issue 19)
            r["fpa_backward"] = r.pop("min_grad")
        if not r.get("seed"):
            r["seed"] = str(side.get("config", {}).get("train-seed") or side.get("seed", ""))
        r["source"] = os.path.basename(path)
    return rows


def write(name, rows):
    path = os.path.join(out, name)
    tmp = path + ".tmp"
    with open(tmp, "w", newline="") as f:
        w = csv.DictWriter(f, COLUMNS, extrasaction="ignore", lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    side = {"program": "lm/combine_summaries.py", "sources": [r["source"] for r in rows]}
    with open(path + ".json.tmp", "w") as f:
        json.dump(side, f, indent=2)
        f.write("\n")
    os.replace(path + ".json.tmp", path + ".json")  # sidecar first, as CsvWriter does
    os.replace(tmp, path)
    print(f"lm: wrote {path} ({len(rows)} rows)")


rows = [r for f in sorted(glob.glob(os.path.join(out, "summary-*.csv"))) for r in rows_of(f)]
# The exact backward is an ablation: it must not pool with FPA's default (straight-through) runs.
write("summary.csv", [r for r in rows if r.get("fpa_backward") != "exact"])
write("fpa_backward.csv", [r for r in rows if r["variant"] == "fpa" and r["preset"] == "tiny" and r["seed"] == "0"])
