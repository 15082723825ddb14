#!/usr/bin/env python3
"""Merges the per-run <run>.summary.csv files of a folder into <folder>/summary.csv (one row
per run and cell) with a sidecar naming the sources and their code versions. Only reads CSVs;
writes atomically. A pattern other than *.summary.csv (relative to the folder) names other
per-run files (lm/compress/reproduce.sh: runs/*.csv).

    merge_summaries.py <folder> [<pattern>]"""
import csv, glob, json, os, sys, tempfile, time


def write_atomic(path, text):
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path) or ".", prefix=".tmp.")
    with os.fdopen(fd, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def main(folder, pattern="*.summary.csv"):
    files = sorted(f for f in glob.glob(os.path.join(folder, pattern)))
    header, rows, versions = None, [], set()
    for f in files:
        with open(f, newline="") as fh:
            reader = csv.reader(fh)
            h = next(reader, None)
            if h is None:
                continue
            if header is None:
                header = h
            elif h != header:
                sys.exit("error: {} has other columns than {}".format(f, files[0]))
            rows += list(reader)
        try:
            with open(f + ".json") as fh:
                versions.add(json.load(fh).get("code_version", "?"))
        except (OSError, ValueError):
            versions.add("?")
    if not rows:
        sys.exit("error: no rows in {}/{}".format(folder, pattern))
    out = os.path.join(folder, "summary.csv")
    write_atomic(out, "\n".join(",".join(r) for r in [header] + rows) + "\n")
    write_atomic(out + ".json", json.dumps(
        {"program": "lm/passkey/merge_summaries.py", "sources": [os.path.relpath(f, folder) for f in files],
         "source_code_versions": sorted(versions),
         "written_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}, indent=1) + "\n")
    print("merge: {} rows from {} files -> {}".format(len(rows), len(files), out))


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    main(*sys.argv[1:])
