#!/usr/bin/env python3
"""Compares regenerated CSVs with the published ones, cell by cell, ignoring timings.

    compare_cells.py [--rounding REL] PUBLISHED REGENERATED [PUBLISHED REGENERATED ...]

Every row and every column other than the timing columns below must be equal as text (the
tools print floats with full precision, so the same computation on the same kind of CPU gives the
same text). With --rounding, two numbers that differ by at most REL x max(1, |a|, |b|) count as
equal to rounding instead: another kind of CPU (LibTorch and OpenBLAS choose their kernels by the
CPU) rounds float32 differently. Two whole numbers (counts, flags, lengths, offsets) must still be
equal. Prints one line per pair, saying how many cells were equal as text and how
many to rounding only (with the largest such difference), and exits 1 when any cell differs
beyond that, naming the first few."""
import argparse, csv, sys

TIMING = {"decode_ms_per_token", "decode_cpu_ms_per_token", "prefill_ms", "tokens_per_s",
          "wall_s", "elapsed_s", "ms_per_token"}


def rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def number(text):
    """The cell as a finite float, else None."""
    try:
        x = float(text)
    except (TypeError, ValueError):
        return None
    return x if x == x and abs(x) != float("inf") else None


def rounding_gap(a, b):
    """|a - b| / max(1, |a|, |b|) when both cells are finite numbers and not both whole, else
    None (they must be equal as text)."""
    x, y = number(a), number(b)
    if x is None or y is None or (x.is_integer() and y.is_integer()):
        return None
    return abs(x - y) / max(1.0, abs(x), abs(y))


def compare(published, regenerated, rounding=None):
    """(cells compared, problems, [(gap, column)] of the cells equal to rounding only)."""
    a, b = rows(published), rows(regenerated)
    problems, rounded = [], []
    if len(a) != len(b):
        problems.append("{} rows published, {} regenerated".format(len(a), len(b)))
    cols = [c for c in (a[0].keys() if a else []) if c not in TIMING]
    cells = 0
    for i, (ra, rb) in enumerate(zip(a, b)):
        for c in cols:
            cells += 1
            if ra.get(c) == rb.get(c):
                continue
            gap = rounding_gap(ra.get(c), rb.get(c)) if rounding is not None else None
            if gap is not None and gap <= rounding:
                rounded.append((gap, c))
            else:
                problems.append("row {} column {}: published {!r}, regenerated {!r}".format(
                    i + 1, c, ra.get(c), rb.get(c)))
    return cells, problems, rounded


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounding", type=float, default=None, metavar="REL")
    parser.add_argument("files", nargs="*")
    args = parser.parse_args(argv)
    if len(args.files) < 2 or len(args.files) % 2:
        sys.exit("usage: compare_cells.py [--rounding REL] PUBLISHED REGENERATED [PUBLISHED REGENERATED ...]")
    if args.rounding is not None and not 0 <= args.rounding < 1:
        sys.exit("compare_cells.py: --rounding must be in [0, 1), got {}".format(args.rounding))
    bad = 0
    for published, regenerated in zip(args.files[::2], args.files[1::2]):
        try:
            cells, problems, rounded = compare(published, regenerated, args.rounding)
        except OSError as e:
            print("compare: {}: {}".format(published, e))
            bad += 1
            continue
        if problems:
            bad += 1
            print("compare: {} DIFFERS from {} ({} problems): {}".format(
                regenerated, published, len(problems), "; ".join(problems[:3])))
        elif rounded:
            gap, column = max(rounded)
            print("compare: {}: {} cells equal, {} of them to rounding only (largest relative "
                  "difference {:.2g}, column {}; timings not compared)".format(
                      published, cells, len(rounded), gap, column))
        else:
            print("compare: {}: {} cells equal (timings not compared)".format(published, cells))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
