#!/usr/bin/python3
"""Keeps main's tracked tree small enough to copy to a GPU machine (issue 48, item 10).

Sums the sizes of the blobs in the git index of REPO (what a commit of it would track, so a
file added with `git add -f` counts before it is committed) and exits 1 with one line naming
the total, the limit and the largest folders when the total is over --limit-mib (default 64:
the device tool's copy limit). Exit 77 outside a git checkout (nothing to measure).
Published weights belong in history, not here: results/weights/README.md.
"""
import argparse
import collections
import subprocess
import sys

MIB = 1 << 20


def index_blob_sizes(repo):
    """(path, size in bytes) for every blob in the index; gitlinks (submodules) are skipped."""
    listing = subprocess.run(["git", "-C", repo, "ls-files", "--stage", "-z"], check=True,
                             capture_output=True).stdout.split(b"\0")
    paths, objects = [], []
    for entry in filter(None, listing):
        meta, path = entry.split(b"\t", 1)
        mode, obj, _stage = meta.split()
        if mode != b"160000":
            paths.append(path.decode(errors="replace"))
            objects.append(obj)
    sizes = subprocess.run(["git", "-C", repo, "cat-file", "--batch-check=%(objectsize)"],
                           input=b"\n".join(objects) + b"\n", check=True,
                           capture_output=True).stdout.split()
    if len(sizes) != len(paths):
        raise RuntimeError(f"git cat-file answered {len(sizes)} sizes for {len(paths)} blobs")
    return list(zip(paths, map(int, sizes)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repo")
    parser.add_argument("--limit-mib", type=float, default=64.0)
    args = parser.parse_args()
    if subprocess.run(["git", "-C", args.repo, "rev-parse", "--git-dir"],
                      capture_output=True).returncode != 0:
        print(f"skipped: {args.repo} is not a git checkout")
        return 77
    blobs = index_blob_sizes(args.repo)
    total = sum(size for _, size in blobs)
    if not blobs or total == 0:
        print(f"error: no tracked files measured in {args.repo}", file=sys.stderr)
        return 1
    if total > args.limit_mib * MIB:
        by_folder = collections.Counter()
        for path, size in blobs:
            by_folder["/".join(path.split("/")[:2])] += size
        largest = ", ".join(f"{folder} {size / MIB:.1f}"
                            for folder, size in by_folder.most_common(3))
        print(f"error: the tracked tree is {total / MIB:.1f} MiB, over the "
              f"{args.limit_mib:g} MiB limit (largest, MiB: {largest}); published weights "
              f"belong in history (results/weights/README.md)", file=sys.stderr)
        return 1
    print(f"tracked tree: {total / MIB:.1f} MiB in {len(blobs)} files "
          f"(limit {args.limit_mib:g} MiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
