"""Before/after table of the passkey decode-time runs in this folder (see README.md).

measure.sh writes <before|after>-<run>-<k>.summary.csv for repeats k = 1, 2, ...; this prints,
per checkpoint and cell, accuracy and occupancy (equal before and after, and across repeats, or
it fails) and the median over repeats of decode CPU ms per token before and after, their ratio,
and after / after's full cache at the same length.
"""
import csv
import pathlib
import re
import statistics
import sys

HERE = pathlib.Path(__file__).parent
CELL = ("eval_len", "policy", "per_head")
SAME = ("accuracy", "occupancy")


def rows(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def repeats(which):
    """{run: [rows of repeat 1, rows of repeat 2, ...]} for `which` (before or after)."""
    out = {}
    for path in sorted(HERE.glob(f"{which}-*-[0-9]*.summary.csv")):
        run = re.fullmatch(rf"{which}-(.+)-\d+\.summary\.csv", path.name).group(1)
        out.setdefault(run, []).append(rows(path))
    return out


def medians(reps):
    """Per cell (in file order): the cell's fields and the median decode CPU ms per token; None
    when accuracy or occupancy differ between repeats."""
    cells = []
    for i, first in enumerate(reps[0]):
        same = [r[i] for r in reps]
        if any(tuple(r[c] for c in CELL + SAME) != tuple(first[c] for c in CELL + SAME) for r in same):
            return None
        cells.append((first, statistics.median(float(r["decode_cpu_ms_per_token"]) for r in same)))
    return cells


def main():
    ok = True
    before, after = repeats("before"), repeats("after")
    print("run,eval_len,policy,per_head,accuracy,occupancy,repeats,cpu_ms_before,cpu_ms_after,"
          "speedup,after_over_after_full")
    for run in sorted(before):
        b, a = medians(before[run]), medians(after.get(run, [[]]) or [[]])
        if b is None or a is None or len(a) != len(b):
            print(f"MISMATCH: {run}: cells differ between repeats or before/after", file=sys.stderr)
            ok = False
            continue
        full = {cell["eval_len"]: t for cell, t in a if cell["policy"] == "full"}
        for (cb, tb), (ca, ta) in zip(b, a):
            if tuple(cb[c] for c in CELL + SAME) != tuple(ca[c] for c in CELL + SAME):
                print(f"MISMATCH: {run} {ca['eval_len']} {ca['policy']}: accuracy or occupancy "
                      "differ before and after", file=sys.stderr)
                ok = False
            print(f"{run},{ca['eval_len']},{ca['policy']},{ca['per_head']},{ca['accuracy']},"
                  f"{float(ca['occupancy']):.4f},{len(after[run])},{tb:.3f},{ta:.3f},{tb / ta:.2f},"
                  f"{ta / full[ca['eval_len']]:.3f}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
