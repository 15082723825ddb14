#!/usr/bin/env python3
"""Which C6 numbers moved when runs were retrained: for each named run, the accuracy and
occupancy at L and 8L of the full cache, fpa-certified and the shared 25% budget, in
results/passkey/summary.csv at a base commit against the working tree. For the retraining notes
(docs/notes/retraining-2026-12-02.md), so that a number there comes from a command.

    scripts/moved_cells.py <base commit> <run>[,<run>...]"""
import csv
import io
import subprocess
import sys

PATH = "results/passkey/summary.csv"


def cells(rows, run):
    out = {}
    for r in rows:
        if r.get("run") != run:
            continue
        L, n = int(r["train_len"]), int(r["eval_len"])
        if n in (L, 8 * L):
            out[(n // L, r["policy"], r["budget"], r.get("per_head", "0"))] = (float(r["accuracy"]), float(r["occupancy"]))
    return out


def main(base, runs):
    old = list(csv.DictReader(io.StringIO(subprocess.check_output(["git", "show", f"{base}:{PATH}"], text=True))))
    new = list(csv.DictReader(open(PATH)))
    for run in runs.split(","):
        o, n = cells(old, run), cells(new, run)
        for k in sorted(n):
            wanted = k[1] in ("full", "fpa-certified") or (k[1] == "budget" and k[2] == "0.25" and k[3] == "0")
            if k in o and wanted:
                print(f"{run} {k[0]}L {k[1]} {k[2]}: accuracy {o[k][0]:.2f} -> {n[k][0]:.2f}, "
                      f"occupancy {o[k][1]:.3f} -> {n[k][1]:.3f}")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(*sys.argv[1:])
