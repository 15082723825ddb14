#!/usr/bin/python3
"""Prints the published C6 runs that learned the task (SPEC section 8: full-cache accuracy at L >=
0.9), one name a line, by the verdict's own rule (paper_figures/passkey_verdict.py) applied to the
C6 study's summary (results/passkey/summary.csv). lm/passkey/sweep.sh's natural-filler sweep
evaluates these.

    lm/passkey/learned_runs.py [summary.csv]"""
import csv
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "..", "paper_figures"))
import passkey_verdict  # noqa: E402

path = sys.argv[1] if len(sys.argv) > 1 else "results/passkey/summary.csv"
with open(path, newline="") as f:
    runs = passkey_verdict.per_run(list(csv.DictReader(f)))
for name in sorted(r["run"] for r in runs.values() if r["learned"]):
    print(name)
