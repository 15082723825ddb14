#!/usr/bin/env python3
"""Merges the per-run <run>.summary.csv files of a folder into <folder>/summary.csv (one row
per run and cell) with a sidecar naming the sources and their code versions. Only reads CSVs;
writes atomically. A pattern other than *.summary.csv (relative to the folder) names other
per-run files (lm/compress/reproduce.sh: runs/*.csv).

An amendment <run>@<policies>.summary.csv (lm/passkey/sweep.sh with SWEEP_POLICIES) holds newer
cells of some policies of <run>.summary.csv: the merge takes those policies' rows from it and the
rest from the base, and the sidecar names which rows came from where.

    merge_summaries.py <folder> [<pattern>]"""
import csv, glob, json, os, sys, tempfile, time


def write_atomic(path, text):
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path) or ".", prefix=".tmp.")
    with os.fdopen(fd, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def base_of(path):
    """The file an amendment amends (run@policies.x -> run.x), None for a base file."""
    d, name = os.path.split(path)
    if "@" not in name:
        return None
    run, rest = name.split("@", 1)
    return os.path.join(d, run + rest[rest.index("."):])


def read_csv(path):
    with open(path, newline="") as fh:
        reader = csv.reader(fh)
        return next(reader, None), list(reader)


def code_version(path):
    try:
        with open(path + ".json") as fh:
            return json.load(fh).get("code_version", "?")
    except (OSError, ValueError):
        return "?"


def zip_names(header, cols, values):
    return ["{}={}".format(header[c], v) for c, v in zip(cols, values)]


def main(folder, pattern="*.summary.csv"):
    files = sorted(f for f in glob.glob(os.path.join(folder, pattern)))
    amendments = {}  # base -> [amendment files], applied in name order
    for f in files:
        b = base_of(f)
        if b is not None:
            if b not in files:
                sys.exit("error: amendment {} has no base {}".format(f, b))
            amendments.setdefault(b, []).append(f)
    header, rows, versions, amended = None, [], set(), {}
    for f in files:
        if base_of(f) is not None:
            continue
        h, body = read_csv(f)
        if h is None:
            continue
        if header is None:
            header = h
        elif h != header:
            sys.exit("error: {} has other columns than {}".format(f, files[0]))
        for a in amendments.get(f, []):
            ah, arows = read_csv(a)
            if ah != header:
                sys.exit("error: {} has other columns than {}".format(a, files[0]))
            # A method is its policy name and, for "budget", whether it is per head.
            cols = [header.index(c) for c in ("policy", "per_head") if c in header]
            method = lambda r: tuple(r[c] for c in cols)
            methods = {method(r) for r in arows}
            body = [r for r in body if method(r) not in methods] + arows
            amended[os.path.relpath(a, folder)] = "replaces {} of {}".format(
                "; ".join(" ".join(zip_names(header, cols, m)) for m in sorted(methods)),
                os.path.relpath(f, folder))
            versions.add(code_version(a))
        rows += body
        versions.add(code_version(f))
    if not rows:
        sys.exit("error: no rows in {}/{}".format(folder, pattern))
    out = os.path.join(folder, "summary.csv")
    write_atomic(out, "\n".join(",".join(r) for r in [header] + rows) + "\n")
    write_atomic(out + ".json", json.dumps(
        {"program": "lm/passkey/merge_summaries.py", "sources": [os.path.relpath(f, folder) for f in files],
         "source_code_versions": sorted(versions), "amendments": amended,
         "written_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}, indent=1) + "\n")
    print("merge: {} rows from {} files -> {}".format(len(rows), len(files), out))


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    main(*sys.argv[1:])
