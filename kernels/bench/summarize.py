#!/usr/bin/env python3
"""Ratios the issue asks for, from results/bench/attention.csv (stdlib only).

  python3 kernels/bench/summarize.py [results/bench/attention.csv]

Per n: fused FPA / fused FoX (fwd_bwd, exact and straight-through), reference / fused for each
variant and pass, peak extra memory of both, and the fused kernels' GFLOP/s next to the LibTorch
matmul rate measured in the same run. Wall-clock and CPU-time versions are both printed: on a
shared machine the wall clock includes waiting for a core.
"""
import csv
import sys


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "results/bench/attention.csv"
    rows = list(csv.DictReader(open(path)))
    # fpa_backward was min_grad in CSVs written before issue 19.
    key = lambda r: (r["variant"], r["impl"], int(r["n"]), r["pass"],
                     r.get("fpa_backward", r.get("min_grad", "-")))
    table = {key(r): r for r in rows}
    ns = sorted({int(r["n"]) for r in rows})

    def get(variant, impl, n, pass_, fpa_backward="-", col="median_ms"):
        mg = fpa_backward if variant == "fpa" else "-"
        r = table.get((variant, impl, n, pass_, mg))
        return float(r[col]) if r and r.get(col) not in (None, "") else None

    def ratio(a, b):
        return f"{a / b:.2f}" if a and b else "n/a"

    mm = rows[0].get("matmul_gflops"), rows[0].get("matmul_cpu_gflops")
    print(f"LibTorch matmul 1024^3: {mm[0]} GFLOP/s wall, {mm[1]} GFLOP/s by CPU time; "
          f"threads {rows[0].get('threads')}")
    print("\nfused FPA / fused FoX, fwd_bwd (target <= 1.25)")
    for n in ns:
        for mg in ("exact", "straight-through"):
            for col in ("median_ms", "median_cpu_ms"):
                a = get("fpa", "fused", n, "fwd_bwd", mg, col)
                b = get("fox", "fused", n, "fwd_bwd", "-", col)
                if a and b:
                    print(f"  n={n:5d} {mg:16s} {col:13s} {ratio(a, b)}")
    print("\nreference / fused time (target >= 3 at n=4096) and peak extra bytes")
    for n in ns:
        for v in ("softmax", "fox", "fpa"):
            for p in ("fwd", "fwd_bwd"):
                for mg in (("exact", "straight-through") if v == "fpa" and p == "fwd_bwd"
                           else ("exact" if v == "fpa" else "-",)):
                    rf = get(v, "reference", n, p, mg)
                    fu = get(v, "fused", n, p, mg)
                    if not fu:
                        continue
                    rc = get(v, "reference", n, p, mg, "median_cpu_ms")
                    fc = get(v, "fused", n, p, mg, "median_cpu_ms")
                    mr = get(v, "reference", n, p, mg, "peak_extra_bytes")
                    mf = get(v, "fused", n, p, mg, "peak_extra_bytes")
                    gf = get(v, "fused", n, p, mg, "gflops")
                    gc = get(v, "fused", n, p, mg, "cpu_gflops")
                    mem_r = f"{mr / 2**20:9.1f}" if mr is not None else "      n/a"
                    print(f"  n={n:5d} {v:7s} {p:7s} {mg:16s} wall {ratio(rf, fu):>5s} "
                          f"cpu {ratio(rc, fc):>5s}  mem MiB ref {mem_r} fused "
                          f"{mf / 2**20:7.1f}  fused GFLOP/s {gf or 0:6.1f} wall {gc or 0:6.1f} cpu")


if __name__ == "__main__":
    main()
