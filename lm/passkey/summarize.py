#!/usr/bin/env python3
"""Merges the per-run results/passkey/<profile>/<run>.summary.csv files of one profile into
results/passkey/summary.csv (SPEC section 7 columns first; summary.csv.json names the run folder) and writes the C6 table (results/passkey/c6_table.md): accuracy and occupancy at
the longest evaluated length, mean over the runs (seeds) of each variant, per policy and budget,
and the decode-time ratio budget/full measured in the same runs. Only reads CSVs; writes
atomically."""
import csv, glob, json, os, sys, tempfile, time
from collections import defaultdict

def write_atomic(path, text):
    d = os.path.dirname(path) or "."
    fd, tmp = tempfile.mkstemp(dir=d, prefix=".tmp.")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, path)

def source_version(path):
    """Code version recorded in a source CSV's provenance sidecar ("?" if it has none)."""
    try:
        with open(path + ".json") as f:
            return json.load(f).get("code_version", "?")
    except (OSError, ValueError):
        return "?"


def main(results, runs_dir):
    files = sorted(f for f in glob.glob(os.path.join(runs_dir, "*.summary.csv")))
    rows, header = [], None
    for f in files:
        with open(f) as fh:
            r = list(csv.DictReader(fh))
            if r and header is None:
                header = list(r[0].keys())
            rows += r
    if not rows:
        print("summarize: no *.summary.csv under", runs_dir)
        return 1
    out = [",".join(header)] + [",".join(r[c] for c in header) for r in rows]
    write_atomic(os.path.join(results, "summary.csv"), "\n".join(out) + "\n")
    write_atomic(os.path.join(results, "summary.csv.json"), json.dumps(
        {"program": "lm/passkey/summarize.py", "runs_dir": os.path.relpath(runs_dir, results),
         "sources": [os.path.basename(f) for f in files],
         "source_code_versions": sorted({source_version(f) for f in files}),
         "written_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}, indent=1) + "\n")

    # C6 table: every (variant, eval_len, policy, budget), mean over runs.
    cell = defaultdict(list)
    for r in rows:
        cell[(r["variant"], int(r["eval_len"]), r["policy"], r["budget"], r["per_head"])].append(r)
    lines = ["# Passkey retrieval (C6): mean over runs (seeds)", "",
             "| variant | eval_len | policy | budget | per_head | runs | accuracy (per run) | occupancy | decode ms/token |",
             "|---|---|---|---|---|---|---|---|---|"]
    for key in sorted(cell, key=lambda k: (k[0], k[1], k[2], k[3], k[4])):
        rs = cell[key]
        acc = [float(r["accuracy"]) for r in rs]
        occ = sum(float(r["occupancy"]) for r in rs) / len(rs)
        ms = sum(float(r["decode_ms_per_token"]) for r in rs) / len(rs)
        lines.append("| {} | {} | {} | {} | {} | {} | {:.2f} ({}) | {:.3f} | {:.3f} |".format(
            key[0], key[1], key[2], key[3] or "-", key[4], len(rs), sum(acc) / len(acc),
            " ".join("{:.2f}".format(a) for a in acc), occ, ms))
    # Decode-time ratio at the longest length: each non-full policy over full, same run.
    lines += ["", "## Decode time per token relative to the full cache (same run, longest length)", "",
              "| run | variant | eval_len | policy | budget | occupancy | ms/token | full ms/token | ratio | CPU ms/token | full CPU ms/token | CPU ratio |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    by_run = defaultdict(list)
    for r in rows:
        by_run[(r["run"], r["variant"])].append(r)
    for (run, variant), rs in sorted(by_run.items()):
        n = max(int(r["eval_len"]) for r in rs)
        full = [r for r in rs if int(r["eval_len"]) == n and r["policy"] == "full"]
        if not full:
            continue
        f = float(full[0]["decode_ms_per_token"])
        fc = float(full[0].get("decode_cpu_ms_per_token") or "nan")
        for r in rs:
            if int(r["eval_len"]) == n and r["policy"] != "full":
                t = float(r["decode_ms_per_token"])
                tc = float(r.get("decode_cpu_ms_per_token") or "nan")
                policy = r["policy"] + (" per head" if r.get("per_head") == "1" else "")
                lines.append("| {} | {} | {} | {} | {} | {:.3f} | {:.3f} | {:.3f} | {:.2f} | {:.3f} | {:.3f} | {:.2f} |".format(
                    run, variant, n, policy, r["budget"] or "-", float(r["occupancy"]), t, f, t / f,
                    tc, fc, tc / fc))
    write_atomic(os.path.join(results, "c6_table.md"), "\n".join(lines) + "\n")
    print("summarize: {} rows from {} files -> {}/summary.csv, c6_table.md".format(len(rows), len(files), results))
    return 0

if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: summarize.py <results/passkey> <folder of per-run summaries>")
    sys.exit(main(sys.argv[1], sys.argv[2]))
