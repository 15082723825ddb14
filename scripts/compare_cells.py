#!/usr/bin/env python3
"""Compares regenerated CSVs with the published ones, cell by cell, ignoring timings.

    compare_cells.py PUBLISHED REGENERATED [PUBLISHED REGENERATED ...]

Every row and every column other than the timing columns below must be equal as text (the
tools print floats with full precision, so the same computation gives the same text). Prints one
line per pair and exits 1 when any pair differs, naming the first few differing cells."""
import csv, sys

TIMING = {"decode_ms_per_token", "decode_cpu_ms_per_token", "prefill_ms", "tokens_per_s",
          "wall_s", "elapsed_s", "ms_per_token"}


def rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def compare(published, regenerated):
    a, b = rows(published), rows(regenerated)
    problems = []
    if len(a) != len(b):
        problems.append("{} rows published, {} regenerated".format(len(a), len(b)))
    cols = [c for c in (a[0].keys() if a else []) if c not in TIMING]
    cells = 0
    for i, (ra, rb) in enumerate(zip(a, b)):
        for c in cols:
            cells += 1
            if ra.get(c) != rb.get(c):
                problems.append("row {} column {}: published {!r}, regenerated {!r}".format(
                    i + 1, c, ra.get(c), rb.get(c)))
    return cells, problems


def main(args):
    if len(args) < 2 or len(args) % 2:
        sys.exit("usage: compare_cells.py PUBLISHED REGENERATED [PUBLISHED REGENERATED ...]")
    bad = 0
    for published, regenerated in zip(args[::2], args[1::2]):
        try:
            cells, problems = compare(published, regenerated)
        except OSError as e:
            print("compare: {}: {}".format(published, e))
            bad += 1
            continue
        if problems:
            bad += 1
            print("compare: {} DIFFERS from {} ({} problems): {}".format(
                regenerated, published, len(problems), "; ".join(problems[:3])))
        else:
            print("compare: {}: {} cells equal (timings not compared)".format(published, cells))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
