"""Attention kernels: time and peak extra memory against sequence length, per variant,
implementation and (for FPA's backward pass) gradient mode. Reads results/bench/attention.csv
(SPEC section 7 columns; optional fpa_backward and matmul_gflops columns); the GPU benchmark's
CSVs, where there are any, through kernels_gpu.py."""
import os

import common
import kernels_gpu
import style
from common import Section, Table, num

COLUMNS = ["variant", "impl", "n", "head_dim", "heads", "batch", "pass", "median_ms", "peak_extra_bytes", "gflops"]
IMPL_STYLE = {"reference": "--", "fused": "-", "cuda": ":"}
IMPL_MARKER = {"reference": "s", "fused": "o", "cuda": "^"}


def grad_of(r):
    """FPA's backward mode for a fwd_bwd row ('' otherwise: the forward pass has none)."""
    g = r.get("fpa_backward", "")
    return g if r["variant"] == "fpa" and r["pass"] == "fwd_bwd" and g not in ("", "-", "n/a") else ""


def series_label(variant, grad, impl):
    return f"{style.label(variant)}{' (' + grad + ')' if grad else ''}, {impl}"


def build(results, out):
    sec = Section("bench", "Attention kernels")
    path = os.path.join(results, "bench", "attention.csv")
    rows = common.read_csv(path)
    if not common.has_columns(rows, COLUMNS, path):
        sec.tables.append(common.not_run_table("kernels_time", "Attention kernels: time and memory",
                                               ["variant", "impl", "n", "median ms"]))
        kernels_gpu.build(results, out, sec)
        return sec
    sec.status = "run"
    sec.sources.append("bench/attention.csv")
    # The most frequent (head_dim, heads, batch) configuration is the one shown.
    counts = {}
    for r in rows:
        k = (r["head_dim"], r["heads"], r["batch"])
        counts[k] = counts.get(k, 0) + 1
    cfg = max(sorted(counts), key=lambda k: counts[k])
    rows = [r for r in rows if (r["head_dim"], r["heads"], r["batch"]) == cfg]
    shape = f"head dim {cfg[0]}, {cfg[1]} heads, batch {cfg[2]}"
    rows.sort(key=lambda r: (style.variant_sort_key(r["variant"]), r["impl"], r["pass"], grad_of(r), int(num(r["n"], 0))))
    table = Table("kernels_time", f"Attention kernels ({shape}): median time, peak extra memory, GFLOP/s",
                  ["variant", "FPA backward", "impl", "pass", "n", "median ms", "peak extra MiB", "GFLOP/s",
                   "matmul GFLOP/s"],
                  timing=["median ms", "GFLOP/s", "matmul GFLOP/s"],
                  note="Median wall time over repeats after warm-up; peak extra memory: bytes allocated beyond "
                       "inputs and outputs; matmul GFLOP/s: LibTorch's matrix multiply measured in the same run.")
    for r in rows:
        table.add(style.label(r["variant"]), grad_of(r) or "-", r["impl"], r["pass"], r["n"], num(r["median_ms"]),
                  num(r["peak_extra_bytes"]) / 2 ** 20, num(r["gflops"]), num(r.get("matmul_gflops", "")))
    sec.tables.append(table)
    sec.tables.append(ratio_table(rows, shape))
    sec.figures.append(figure(rows, shape, out))
    kernels_gpu.build(results, out, sec)  # the GPU's rows, where a GPU benchmark ran
    return sec


def lookup(rows, variant, impl, pss, n, grad=""):
    for r in rows:
        if r["variant"] == variant and r["impl"] == impl and r["pass"] == pss and r["n"] == n and grad_of(r) == grad:
            return num(r["median_ms"])
    return float("nan")


def ratio_table(rows, shape):
    ns = sorted({r["n"] for r in rows}, key=lambda x: int(num(x, 0)))
    grads = sorted({grad_of(r) for r in rows if grad_of(r)}) or [""]
    cols = ["pass", "n"]
    cols += [f"FPA{' ' + g if g else ''} / FoX (fused)" for g in grads]
    cols += [f"reference / fused (FPA{' ' + g if g else ''})" for g in grads] + ["reference / fused (FoX)"]
    t = Table("kernels_ratios", f"Attention kernels ({shape}): time ratios measured in the same run",
              cols, timing=cols[2:], note="FPA's backward mode matters only for fwd_bwd; the forward rows "
                                          "repeat the same forward time under each mode's column.")

    def show(x):
        return f"{x:.2f}" if x == x else "-"
    for pss in sorted({r["pass"] for r in rows}):
        for n in ns:
            gs = [g if pss == "fwd_bwd" else "" for g in grads]
            cells = [show(lookup(rows, "fpa", "fused", pss, n, g) / lookup(rows, "fox", "fused", pss, n)) for g in gs]
            cells += [show(lookup(rows, "fpa", "reference", pss, n, g) / lookup(rows, "fpa", "fused", pss, n, g)) for g in gs]
            cells.append(show(lookup(rows, "fox", "reference", pss, n) / lookup(rows, "fox", "fused", pss, n)))
            t.add(pss, n, *cells)
    return t


def figure(rows, shape, out):
    import matplotlib.pyplot as plt
    passes = sorted({r["pass"] for r in rows})
    fig, axes = plt.subplots(1, len(passes) + 1, figsize=(4.4 * (len(passes) + 1), 4.0), squeeze=False)
    series = sorted({(r["variant"], grad_of(r), r["impl"]) for r in rows},
                    key=lambda s: (style.variant_sort_key(s[0]), s[1], s[2]))

    def draw(ax, pss, value):
        for v, g, impl in series:
            pts = sorted((int(num(r["n"], 0)), value(r)) for r in rows
                         if r["variant"] == v and grad_of(r) == g and r["impl"] == impl and r["pass"] == pss)
            pts = [p for p in pts if p[1] == p[1] and p[1] > 0]
            if pts:
                hollow = g == "straight-through"
                ax.plot([p[0] for p in pts], [p[1] for p in pts], color=style.colour(v),
                        linestyle=IMPL_STYLE.get(impl, "-."), marker=IMPL_MARKER.get(impl, "v"), ms=5,
                        markerfacecolor="white" if hollow else style.colour(v), label=series_label(v, g, impl))
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("sequence length n (tokens)")

    for ax, pss in zip(axes[0], passes):
        draw(ax, pss, lambda r: num(r["median_ms"]))
        ax.set_ylabel("median time (ms)")
        ax.set_title(f"time, {pss.replace('_', '+')}")
    ax = axes[0][-1]
    mem_pass = "fwd_bwd" if "fwd_bwd" in passes else passes[0]
    draw(ax, mem_pass, lambda r: num(r["peak_extra_bytes"]) / 2 ** 20)
    ax.set_ylabel("peak extra memory (MiB)")
    ax.set_title(f"memory, {mem_pass.replace('_', '+')}")
    handles, labels = axes[0][-1].get_legend_handles_labels()  # fwd_bwd has every series
    fig.suptitle(f"Attention kernels, {shape}", fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 0.86))
    fig.legend(handles, labels, loc="upper center", ncol=4, bbox_to_anchor=(0.5, 0.94), frameon=False)
    return style.save(fig, out, "kernels_time_memory"), (f"Kernel time and peak extra memory against sequence "
                                                         f"length ({shape}; log-log; hollow markers: FPA with "
                                                         f"the straight-through backward).")
