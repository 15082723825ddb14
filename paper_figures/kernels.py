"""Attention kernels: time and peak extra memory against sequence length, per variant and
implementation. Reads results/bench/attention.csv (SPEC section 7 columns)."""
import os

import common
import style
from common import Section, Table, num

COLUMNS = ["variant", "impl", "n", "head_dim", "heads", "batch", "pass", "median_ms", "peak_extra_bytes", "gflops"]
IMPL_STYLE = {"reference": "--", "fused": "-", "cuda": ":"}
IMPL_MARKER = {"reference": "s", "fused": "o", "cuda": "^"}


def build(results, out):
    sec = Section("bench", "Attention kernels")
    path = os.path.join(results, "bench", "attention.csv")
    rows = common.read_csv(path)
    if not common.has_columns(rows, COLUMNS, path):
        sec.tables.append(Table("kernels_time", "Attention kernels: time and memory",
                                ["variant", "impl", "n", "median ms"], [[common.NOT_RUN, "-", "-", "-"]]))
        return sec
    sec.status = "run"
    sec.sources.append("bench/attention.csv")
    # The most frequent (head_dim, heads, batch) configuration is the one plotted.
    counts = {}
    for r in rows:
        k = (r["head_dim"], r["heads"], r["batch"])
        counts[k] = counts.get(k, 0) + 1
    cfg = max(sorted(counts), key=lambda k: counts[k])
    rows = [r for r in rows if (r["head_dim"], r["heads"], r["batch"]) == cfg]
    shape = f"head dim {cfg[0]}, {cfg[1]} heads, batch {cfg[2]}"
    rows.sort(key=lambda r: (style.variant_sort_key(r["variant"]), r["impl"], r["pass"], int(num(r["n"], 0))))
    table = Table("kernels_time", f"Attention kernels ({shape}): median time, peak extra memory, GFLOP/s",
                  ["variant", "impl", "pass", "n", "median ms", "peak extra MiB", "GFLOP/s"],
                  timing=["median ms", "GFLOP/s"],
                  note="Median over repeats after warm-up; peak extra memory: bytes allocated beyond inputs and outputs.")
    for r in rows:
        table.add(style.label(r["variant"]), r["impl"], r["pass"], r["n"], num(r["median_ms"]),
                  num(r["peak_extra_bytes"]) / 2 ** 20, num(r["gflops"]))
    sec.tables.append(table)
    sec.tables.append(ratio_table(rows, shape))
    sec.figures.append(figure(rows, shape, out))
    return sec


def lookup(rows, variant, impl, pss, n):
    for r in rows:
        if r["variant"] == variant and r["impl"] == impl and r["pass"] == pss and r["n"] == n:
            return num(r["median_ms"])
    return float("nan")


def ratio_table(rows, shape):
    ns = sorted({r["n"] for r in rows}, key=lambda x: int(num(x, 0)))
    t = Table("kernels_ratios", f"Attention kernels ({shape}): time ratios measured in the same run",
              ["pass", "n", "FPA / FoX (fused)", "reference / fused (FPA)", "reference / fused (FoX)"],
              timing=["FPA / FoX (fused)", "reference / fused (FPA)", "reference / fused (FoX)"])
    for pss in sorted({r["pass"] for r in rows}):
        for n in ns:
            a = lookup(rows, "fpa", "fused", pss, n) / lookup(rows, "fox", "fused", pss, n)
            b = lookup(rows, "fpa", "reference", pss, n) / lookup(rows, "fpa", "fused", pss, n)
            c = lookup(rows, "fox", "reference", pss, n) / lookup(rows, "fox", "fused", pss, n)
            t.add(pss, n, f"{a:.2f}" if a == a else "-", f"{b:.2f}" if b == b else "-", f"{c:.2f}" if c == c else "-")
    return t


def figure(rows, shape, out):
    import matplotlib.pyplot as plt
    passes = sorted({r["pass"] for r in rows})
    fig, axes = plt.subplots(1, len(passes) + 1, figsize=(4.2 * (len(passes) + 1), 3.8), squeeze=False)
    series = sorted({(r["variant"], r["impl"]) for r in rows}, key=lambda s: (style.variant_sort_key(s[0]), s[1]))
    for ax, pss in zip(axes[0], passes):
        for v, impl in series:
            pts = sorted((int(num(r["n"], 0)), num(r["median_ms"])) for r in rows
                         if r["variant"] == v and r["impl"] == impl and r["pass"] == pss)
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], color=style.colour(v),
                        linestyle=IMPL_STYLE.get(impl, "-."), marker=IMPL_MARKER.get(impl, "v"), ms=4,
                        label=f"{style.label(v)}, {impl}")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("sequence length n (tokens)")
        ax.set_ylabel("median time (ms)")
        ax.set_title(f"time, {pss.replace('_', '+')}")
    ax = axes[0][-1]
    mem_pass = "fwd_bwd" if "fwd_bwd" in passes else passes[0]
    for v, impl in series:
        pts = sorted((int(num(r["n"], 0)), num(r["peak_extra_bytes"]) / 2 ** 20) for r in rows
                     if r["variant"] == v and r["impl"] == impl and r["pass"] == mem_pass)
        pts = [p for p in pts if p[1] > 0]
        if pts:
            ax.plot([p[0] for p in pts], [p[1] for p in pts], color=style.colour(v),
                    linestyle=IMPL_STYLE.get(impl, "-."), marker=IMPL_MARKER.get(impl, "v"), ms=4,
                    label=f"{style.label(v)}, {impl}")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("sequence length n (tokens)")
    ax.set_ylabel("peak extra memory (MiB)")
    ax.set_title(f"memory, {mem_pass.replace('_', '+')}")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.suptitle(f"Attention kernels, {shape}", fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 0.87))
    fig.legend(handles, labels, loc="upper center", ncol=min(len(labels), 6), bbox_to_anchor=(0.5, 0.95), frameon=False)
    return style.save(fig, out, "kernels_time_memory"), (f"Kernel time and peak extra memory against sequence "
                                                         f"length ({shape}; log-log).")
