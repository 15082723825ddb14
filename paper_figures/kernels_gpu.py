"""Attention kernels on a GPU (issue 48, item 9), beside the CPU's rows of kernels.py: per GPU
benchmark CSV (results/bench/attention_gpu_<gpu>.csv from kernels/bench/attention_gpu_bench.py,
the GPU named in its sidecar) a table of TFLOP/s and milliseconds in bf16, this project's kernels
beside SDPA flash, FlexAttention and a materialised bias; the issue's target ratios from its
<stem>_ratios.csv; and a figure. A CSV whose sidecar says it ran on the CPU (the benchmark's
--smoke mode) is not a GPU result and is left out. Without a GPU CSV the section says which
command writes one."""
import os

import common
import style
from common import Table, num

# What the table and the figure show, in order: (impl, variant, FPA backward of fwd_bwd rows, label).
SERIES = [
    ("fpa_ops", "fpa", "exact", "FPA exact (ours)"),
    ("fpa_ops", "fpa", "straight-through", "FPA straight-through (ours)"),
    ("fpa_ops", "fox", "-", "FoX (ours)"),
    ("fpa_ops", "softmax", "-", "softmax (ours)"),
    ("sdpa_flash", "softmax", "-", "SDPA flash"),
    ("flex", "fox", "-", "FoX, FlexAttention"),
    ("flex", "fpa", "exact", "FPA, FlexAttention"),
    ("sdpa_bias", "fpa", "exact", "FPA, materialised bias + SDPA"),
]
DTYPE = "bfloat16"  # the targets' dtype; the CSV's float32 rows stay in the CSV
HOW_TO_RUN = ("kernels/cuda/device-check.sh on a machine with an NVIDIA GPU writes one "
              "(kernels/README.md, \"GPU benchmark\"); commit it as results/bench/attention_gpu_<gpu>.csv "
              "with its sidecar and _ratios.csv")


def shape_of(r):
    return (int(num(r["batch"], 0)), int(num(r["heads"], 0)), int(num(r["n"], 0)), int(num(r["head_dim"], 0)))


def cell(rows, impl, variant, mode, shape, pss):
    """The row of one cell (None when absent); forward rows have FPA backward '-'."""
    want_mode = mode if pss == "fwd_bwd" else "-"
    for r in rows:
        if (r["impl"], r["variant"], r["fpa_backward"], r["dtype"], r["pass"]) == (
                impl, variant, want_mode, DTYPE, pss) and shape_of(r) == shape:
            return r
    return None


def shown_series(pss):
    # The forward is the same for both FPA modes: one column.
    return [s for s in SERIES if pss == "fwd_bwd" or s[2] != "straight-through"]


def measured_on_gpu(side):
    """The benchmark's sidecar of a run on a GPU (its --smoke mode records device cpu)."""
    return common.sidecar_part(side, "environment").get("device") == "cuda"


def build(results, out, sec):
    """Adds the GPU tables and figures to the kernels' section `sec` (or a note when none ran)."""
    found = 0
    for path, slug, side in common.gpu_runs(os.path.join(results, "bench"), "attention_gpu"):
        if not measured_on_gpu(side):
            continue  # the --smoke mode's CPU run: checks the harness, measures no GPU
        env = common.sidecar_part(side, "environment")
        rows = common.read_csv(path)
        if not common.has_columns(rows, ["impl", "variant", "fpa_backward", "dtype", "batch", "heads", "n",
                                         "head_dim", "pass", "median_ms", "tflops"], path):
            continue
        found += 1
        gpu = env.get("gpu") or slug
        sec.sources.append(common.rel(path, results))
        shapes = sorted({shape_of(r) for r in rows if r["dtype"] == DTYPE}, key=lambda s: (s[3], s[2], s))
        sec.tables.append(tflops_table(rows, shapes, slug, gpu, env, side))
        ratios = os.path.join(results, "bench", os.path.basename(path)[:-4] + "_ratios.csv")
        if os.path.exists(ratios):
            sec.sources.append(common.rel(ratios, results))
            sec.tables.append(targets_table(common.read_csv(ratios), slug, gpu))
        sec.figures.append(figure(rows, shapes, slug, gpu, out))
    if not found:
        sec.notes.append("no GPU benchmark yet (results/bench/attention_gpu_<gpu>.csv): " + HOW_TO_RUN + ".")


def tflops_table(rows, shapes, slug, gpu, env, side):
    cols = ["B, H, n, d", "pass"] + [s[3] for s in SERIES]
    versions = ", ".join(f"{k} {env[k]}" for k in ("driver", "cuda", "torch") if env.get(k))
    t = Table(f"kernels_gpu_{slug}", f"Attention kernels on {gpu} (bf16, causal): TFLOP/s (median ms)", cols,
              timing=cols[2:],
              note=f"{versions}; code version {side.get('code_version', '?')}. TFLOP/s as SPEC section 9 counts "
                   "them (4 B H n^2 d / 2 for fwd, 3.5 times that for fwd_bwd, the same for every column); "
                   "'-': not measured (the CSV's skip_reason says why). FPA's forward is the same in both "
                   "backward modes (one value).")
    for shape in shapes:
        for pss in ("fwd", "fwd_bwd"):
            cells = []
            for impl, variant, mode, _ in SERIES:
                if pss == "fwd" and mode == "straight-through":
                    cells.append("")
                    continue
                r = cell(rows, impl, variant, mode, shape, pss)
                tf, ms = (num(r["tflops"]), num(r["median_ms"])) if r else (float("nan"),) * 2
                cells.append(f"{tf:.1f} ({ms:.3g} ms)" if tf == tf else "-")
            t.add("{}, {}, {}, {}".format(*shape), pss, *cells)
    return t


def targets_table(rows, slug, gpu):
    t = Table(f"kernels_gpu_targets_{slug}", f"Issue 48's speed targets on {gpu} (bf16): ratios of TFLOP/s "
              "measured in the same run", ["ratio", "B, H, n, d", "pass", "FPA backward", "value", "target",
                                           "meets"], timing=["value", "meets"],
              note="Targets apply at n >= 4096 and d 64 or 128 (the rows shown); value: numerator TFLOP/s over "
                   "denominator TFLOP/s (docs/results-schema.md, attention_gpu_bench.py's ratios).")
    for r in rows:
        if str(r.get("target_applies", "")) != "1":
            continue
        meets = {"1": "yes", "0": "no"}.get(str(r.get("meets", "")), "-")
        t.add(r["ratio"], "{}, {}, {}, {}".format(*shape_of(r)), r["pass"], r["fpa_backward"],
              r["value"] or "-", r["target"], meets)
    return t


def figure(rows, shapes, slug, gpu, out):
    import matplotlib.pyplot as plt
    passes = ("fwd", "fwd_bwd")
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), squeeze=False)
    colours = [style.colour("fpa"), style.colour("fpa"), style.colour("fox"), style.colour("softmax"),
               style.OTHER_COLOURS[3], style.colour("fox"), style.colour("fpa"), style.OTHER_COLOURS[4]]
    hatches = ["", "//", "", "", "", "..", "..", "xx"]
    for ax, pss in zip(axes[0], passes):
        series = [(i, s) for i, s in enumerate(SERIES) if s in shown_series(pss)]
        width = 0.8 / len(series)
        for k, (i, (impl, variant, mode, label)) in enumerate(series):
            xs, ys = [], []
            for x, shape in enumerate(shapes):
                r = cell(rows, impl, variant, mode, shape, pss)
                if r and num(r["tflops"]) == num(r["tflops"]):
                    xs.append(x + (k - (len(series) - 1) / 2) * width)
                    ys.append(num(r["tflops"]))
            ax.bar(xs, ys, width, color=colours[i], hatch=hatches[i], edgecolor="black", linewidth=0.4,
                   label=label)
        ax.set_xticks(range(len(shapes)))
        ax.set_xticklabels(["{},{},{},{}".format(*s) for s in shapes], fontsize=8)
        ax.set_xlabel("B, H, n, d")
        ax.set_ylabel("TFLOP/s (SPEC section 9's count)")
        ax.set_title(pss.replace("_", "+"))
    handles, labels = axes[0][1].get_legend_handles_labels()  # fwd_bwd has every series
    fig.suptitle(f"Attention kernels on {gpu}, bf16, causal", fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 0.82))
    fig.legend(handles, labels, loc="upper center", ncol=4, bbox_to_anchor=(0.5, 0.93), frameon=False, fontsize=8)
    return style.save(fig, out, f"kernels_gpu_{slug}"), (
        f"TFLOP/s of the attention kernels on {gpu} (bf16, causal), forward and forward + backward, this "
        "project's (plain; FPA's straight-through backward hatched) beside SDPA flash (black), FlexAttention "
        "(dotted) and a materialised bias (crossed); "
        "a missing bar was not measured (skip_reason in the CSV).")
