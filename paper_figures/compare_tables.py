#!/usr/bin/python3
"""Compares the tables two make_all.py runs wrote (DIR_A/figures vs DIR_B/figures), ignoring the
columns tables.json marks as timing (measured with a clock). Exit 0 when identical, 1 otherwise.

Usage: compare_tables.py FIGURES_DIR_A FIGURES_DIR_B"""
import json
import os
import sys


def table_rows(path):
    rows = []
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("|") and not line.startswith("|---"):
                rows.append([c.strip() for c in line.strip("|").split(" | ")])
    return rows


def without_timing(rows, timing):
    if not rows:
        return rows
    keep = [i for i, c in enumerate(rows[0]) if c not in timing]
    return [[r[i] if i < len(r) else "" for i in keep] for r in rows]


def main(a, b):
    try:
        with open(os.path.join(a, "tables.json")) as f:
            manifest = json.load(f)["tables"]
        with open(os.path.join(b, "tables.json")) as f:
            manifest_b = json.load(f)["tables"]
    except (OSError, ValueError, KeyError) as e:
        print(f"error: no tables.json: {e}", file=sys.stderr)
        return 1
    if sorted(manifest) != sorted(manifest_b):
        print(f"DIFFER: table sets {sorted(manifest)} vs {sorted(manifest_b)}")
        return 1
    status = 0
    for name, info in sorted(manifest.items()):
        ra = without_timing(table_rows(os.path.join(a, name + ".md")), set(info["timing_columns"]))
        rb = without_timing(table_rows(os.path.join(b, name + ".md")), set(info["timing_columns"]))
        if not ra:
            print(f"DIFFER: {name}: empty table")
            status = 1
        elif ra != rb:
            status = 1
            for x, y in zip(ra, rb):
                if x != y:
                    print(f"DIFFER: {name}:\n  {x}\n  {y}")
                    break
            else:
                print(f"DIFFER: {name}: {len(ra)} vs {len(rb)} rows")
        else:
            print(f"same:   {name} ({len(ra) - 1} rows; ignoring {info['timing_columns'] or 'no columns'})")
    return status


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1], sys.argv[2]))
