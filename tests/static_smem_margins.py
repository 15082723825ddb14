#!/usr/bin/env python3
"""The launchers' margins for a kernel's static shared memory (kWmmaStaticSmem, kMmaStaticSmem:
what they add to the dynamic shared memory before asking whether a block fits the device) must
cover what ptxas gives the kernels, as results/bench/cuda_kernel_resources.csv records it
(kernels/cuda/resource_report.py). A kernel that grows past its margin would be launched where it
does not fit instead of falling back.

  tests/static_smem_margins.py REPO [--margin-bytes N]   (N replaces both margins: a test of the test)

Exit 0 when every WMMA and register kernel fits its margin, 1 with one line naming the first that
does not, 2 when a file or a constant is missing."""
import argparse
import csv
import os
import re
import sys

MARGINS = {  # constant -> (header, what the kernel's name contains)
    "kWmmaStaticSmem": ("kernels/cuda/tiled_forward_wmma.cuh", "_wmma_kernel"),
    "kMmaStaticSmem": ("kernels/cuda/tiled_forward_mma.cuh", "_mma_kernel<"),
}


def margin_of(repo, constant, header):
    text = open(os.path.join(repo, header), encoding="utf-8").read()
    m = re.search(r"constexpr size_t %s = (\d+) \* 1024;" % constant, text)
    if not m:
        raise ValueError(f"{header}: no 'constexpr size_t {constant} = N * 1024;'")
    return int(m.group(1)) * 1024


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("repo")
    ap.add_argument("--margin-bytes", type=int)
    a = ap.parse_args()
    table = os.path.join(a.repo, "results/bench/cuda_kernel_resources.csv")
    try:
        margins = {c: (a.margin_bytes or margin_of(a.repo, c, h), part)
                   for c, (h, part) in MARGINS.items()}
        rows = list(csv.DictReader(open(table, encoding="utf-8")))
    except (OSError, ValueError) as e:
        print(f"static_smem_margins: {e}", file=sys.stderr)
        return 2
    checked = 0
    for constant, (margin, part) in margins.items():
        for r in rows:
            if part not in r["kernel"]:
                continue
            checked += 1
            if int(r["smem_static_bytes"]) > margin:
                print(f"static_smem_margins: {r['arch']} {r['kernel']} {r['dtype']} has "
                      f"{r['smem_static_bytes']} bytes of static shared memory, over {constant} "
                      f"({margin})", file=sys.stderr)
                return 1
    if checked == 0:
        print(f"static_smem_margins: no WMMA or register kernel in {table}", file=sys.stderr)
        return 2
    print(f"static_smem_margins: {checked} kernels within their margins")
    return 0


if __name__ == "__main__":
    sys.exit(main())
