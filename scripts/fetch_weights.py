#!/usr/bin/python3
"""Fills results/weights/ with the published weights from the repository's history.

The published weights (results/weights/README.md) are kept in the repository but out of main's
working tree, so that a checkout stays small enough to copy to a GPU machine (issue 48, item 10).
SHA256SUMS, which main tracks, is the list of published files and their checksums; each file's
content is its blob in the newest commit of HEAD's history that holds it with that checksum. This
script writes every listed file that is missing (atomically) and checks every file's SHA-256.
A file that is present and differs is never overwritten: it is an error. Exits 0 when every
listed file is in place and matches, 1 otherwise, with one line per problem.

    scripts/fetch_weights.py            fill and check (make weights)
    scripts/fetch_weights.py --check    write nothing: check that every listed file is in HEAD's
                                        history with its checksum, whatever the working tree
                                        holds (a CI test: no published file can be lost)
    --root DIR                          another weights folder inside a git checkout (tests)
"""
import argparse
import hashlib
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "experiments"))
from script_io import atomic_write  # noqa: E402

SUM_LINE = re.compile(r"^([0-9a-f]{64})  (\S.*)$")


class WeightsError(Exception):
    pass


def read_sums(path):
    """[(sha256, relative path)] from a `sha256sum` list; a malformed line is an error."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError as e:
        raise WeightsError(f"{path}: cannot read the list of published weights ({e.strerror})")
    sums = []
    for number, line in enumerate(lines, 1):
        m = SUM_LINE.match(line)
        if not m or m.group(2).startswith("/") or ".." in m.group(2).split("/"):
            raise WeightsError(f"{path}:{number}: not a '<sha256>  <relative path>' line: {line!r}")
        sums.append((m.group(1), m.group(2)))
    return sums


def git(root, *args, binary=False):
    """git's standard output (bytes when binary); a failure is a WeightsError with its message."""
    done = subprocess.run(["git", "-C", root, *args], capture_output=True)
    if done.returncode != 0:
        raise WeightsError(f"git {' '.join(args[:2])}: {done.stderr.decode(errors='replace').strip()}")
    return done.stdout if binary else done.stdout.decode()


def history_of(root):
    """(top of the checkout, root's path in it, the commits that touched root, newest first):
    HEAD and every commit of its history with a change under root, merges included (some
    weights came in through a merge of their own)."""
    top = git(root, "rev-parse", "--show-toplevel").strip()
    prefix = os.path.relpath(os.path.abspath(root), top).replace(os.sep, "/")
    log = git(top, "log", "--full-history", "--format=%H", "HEAD", "--", prefix).split()
    return top, prefix, ["HEAD"] + log


def blob_matching(top, path, commits, want):
    """The content of `path` in the newest of `commits` where its blob has SHA-256 `want`."""
    query = "".join(f"{c}:{path}\n" for c in commits)
    found = subprocess.run(["git", "-C", top, "cat-file", "--batch-check=%(objectname) %(objecttype)"],
                           input=query, capture_output=True, text=True, check=True).stdout.split("\n")
    seen = set()
    for line in found:
        blob, _, kind = line.partition(" ")
        if kind != "blob" or blob in seen:
            continue
        seen.add(blob)
        data = git(top, "cat-file", "blob", blob, binary=True)
        if hashlib.sha256(data).hexdigest() == want:
            return data
    return None


def sha256_of(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                                  "results", "weights"))
    p.add_argument("--check", action="store_true", help="write nothing; check reachability")
    o = p.parse_args()
    root = os.path.normpath(o.root)
    try:
        sums = read_sums(os.path.join(root, "SHA256SUMS"))
        history = None
        problems, filled, present = [], 0, 0
        for want, rel in sums:
            path = os.path.join(root, rel)
            if not o.check and os.path.exists(path):
                if sha256_of(path) != want:
                    problems.append(f"{path}: present but does not match its SHA-256 in SHA256SUMS "
                                    "(move it aside to have it filled from history)")
                else:
                    present += 1
                continue
            if history is None:
                history = history_of(root)
            top, prefix, commits = history
            data = blob_matching(top, f"{prefix}/{rel}", commits, want)
            if data is None:
                shallow = git(top, "rev-parse", "--is-shallow-repository").strip() == "true"
                problems.append(f"{path}: no commit in this clone's history holds it with its SHA-256"
                                + (" (a shallow clone: run `git fetch --unshallow`)" if shallow else ""))
                continue
            if not o.check:
                atomic_write(path, data)
            filled += 1
        for line in problems:
            print(f"error: {line}", file=sys.stderr)
        if problems:
            return 1
        if o.check:
            print(f"weights: all {len(sums)} files are in this clone's history with their SHA-256")
        else:
            print(f"weights: {len(sums)} files match their SHA-256 ({present} present, "
                  f"{filled} filled from history)")
        return 0
    except WeightsError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
