"""Claim C6's occupancy floor against heads and depth (issue 30): per learned FPA run, the heads
whose field never dips below a key (fpa-certified keeps every entry: keep-everything heads), their
share of all heads, and the certified occupancy at 8L. The C6 study's runs (8 heads x 2 layers,
results/passkey/c6/) and the scale runs (16 heads x 2 layers, 8 heads x 4 layers,
results/passkey/scale/) when present. A figure and C6's 'trend with size' line."""
import math
import os

import common
import style
from common import num

KEEP_ALL = 0.99  # mean fraction of entries fpa-certified keeps from which a head keeps everything


def folder_runs(folder, per_run, load_rows):
    """Learned FPA runs of a results folder: {run: {heads, layers, keep_all, fraction, occupancy}}."""
    rows = []
    for path in common.csv_files(folder, "*.summary.csv"):
        more = common.read_csv(path)
        if more and "policy" in more[0]:
            rows += more
    runs = per_run(rows) if rows else {}
    out = {}
    for path in common.csv_files(folder, "probe-*.csv"):
        name = os.path.basename(path)[len("probe-"):-len(".csv")]
        run = runs.get(name)
        if not run or not run["learned"] or not run["variant"].startswith("fpa"):
            continue
        probe = load_rows(path)
        if not probe:
            continue
        longest = max(int(num(r["eval_len"], 0)) for r in probe)
        kept = {}
        for r in probe:
            if int(num(r["eval_len"], 0)) == longest:
                kept.setdefault((int(num(r["layer"])), int(num(r["head"]))), []).append(num(r["kept_certified"]))
        layers = 1 + max(l for l, _ in kept)
        heads = 1 + max(h for _, h in kept)
        keep_all = sum(1 for v in kept.values() if common.mean(v) >= KEEP_ALL)
        cert = next((c for (e, p), c in run["cells"].items()
                     if e == 8 * run["L"] and p.startswith("fpa-certified")), None)
        out[name] = {"heads": heads, "layers": layers, "keep_all": keep_all,
                     "fraction": keep_all / (heads * layers),
                     "occupancy": cert["occupancy"] if cert else math.nan}
    return out


def load(results, per_run):
    found = {}
    for sub in ("c6", "scale"):
        folder = os.path.join(results, "passkey", sub)
        if os.path.isdir(folder):
            found.update(folder_runs(folder, per_run, common.read_csv))
    return found


def shape(r):
    return (r["heads"], r["layers"])


def figure(runs, out):
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 2, figsize=(8.4, 3.4), sharey=True)
    for ax, (what, label) in zip(axes, [("occupancy", "certified occupancy at 8L"),
                                        ("fraction", "share of keep-everything heads")]):
        shapes = sorted({shape(r) for r in runs.values()})
        for i, s in enumerate(shapes):
            ys = [r[what] for r in runs.values() if shape(r) == s]
            ax.plot([i] * len(ys), ys, "o", color=style.colour("fpa"), alpha=0.5)
            ax.plot([i], [common.mean(ys)], "s", color="black")
        ax.set_xticks(range(len(shapes)))
        ax.set_xticklabels([f"{h} heads x {l} layers\n({sum(1 for r in runs.values() if shape(r) == (h, l))} runs)"
                            for h, l in shapes], fontsize=8)
        ax.axhline(0.25, color="grey", linestyle=":", linewidth=1)
        ax.set_ylim(0, 1.02)
        ax.set_title(label, fontsize=9)
    fig.tight_layout()
    return style.save(fig, out, "passkey_occupancy_floor"), (
        "C6's occupancy floor against heads and depth, learned FPA runs: certified occupancy at 8L and the share "
        "of heads that keep every key (fpa-certified keeps >= 99% of entries); dots are runs, squares means, "
        "dotted: 25%.")


def trend_line(runs):
    by = {}
    for r in runs.values():
        by.setdefault(shape(r), []).append(r)
    parts = [f"{h} heads x {l} layers: certified occupancy {common.mean([r['occupancy'] for r in rs]):.3f}, "
             f"keep-everything share {common.mean([r['fraction'] for r in rs]):.3f} ({len(rs)} learned run(s))"
             for (h, l), rs in sorted(by.items())]
    text = "trend with size (learned FPA runs, means): " + "; ".join(parts)
    if len(by) < 2:
        text += (". One shape run so far (the 16-head and 4-layer runs of make reproduce PROFILE=passkey-scale "
                 "are not in results yet): no trend.")
    return text
