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
        at8 = {p: c for (e, p), c in run["cells"].items() if e == 8 * run["L"]}
        acc = {label: at8[label]["accuracy"] if label in at8 else math.nan
               for label in ("full", "budget 25%", "budget 25% per head")}
        out[name] = {"heads": heads, "layers": layers, "keep_all": keep_all,
                     "fraction": keep_all / (heads * layers),
                     "occupancy": cert["occupancy"] if cert else math.nan,
                     "accuracy_certified": cert["accuracy"] if cert else math.nan, "accuracy": acc}
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


def table(runs):
    t = common.Table("passkey_occupancy_floor", "C6's occupancy floor per learned FPA run, by shape (8L)",
                     ["run", "heads x layers", "keep-everything heads", "share", "certified occupancy",
                      "full cache", "fpa-certified", "budget 25%", "budget 25% per head"],
                     note=f"A keep-everything head: fpa-certified keeps >= {KEEP_ALL:.0%} of its entries at the "
                          "longest evaluated length (passkey-probe). Accuracies at 8L (passkey-eval). "
                          "8 heads x 2 layers is the C6 study (results/passkey/c6/), the other shapes "
                          "make reproduce PROFILE=passkey-scale (results/passkey/scale/).")
    for name, r in sorted(runs.items(), key=lambda kv: (shape(kv[1]), kv[0])):
        t.add(name, f"{r['heads']} x {r['layers']}", str(r["keep_all"]), r["fraction"], r["occupancy"],
              r["accuracy"]["full"], r["accuracy_certified"], r["accuracy"]["budget 25%"],
              r["accuracy"]["budget 25% per head"])
    return t


def trend_line(runs):
    by = {}
    for r in runs.values():
        by.setdefault(shape(r), []).append(r)
    def mean(rs, what):
        return common.mean([r[what] for r in rs])

    def spread(rs, what):  # mean, then the runs' range when there are several
        v = [r[what] for r in rs]
        return f"{mean(rs, what):.3f}" + (f" (runs {min(v):.3f}-{max(v):.3f})" if len(v) > 1 else "")
    parts = [f"{h} heads x {l} layers: certified occupancy {spread(rs, 'occupancy')}, "
             f"keep-everything share {spread(rs, 'fraction')}, {len(rs)} learned run(s)"
             for (h, l), rs in sorted(by.items())]
    text = "trend with size (learned FPA runs, means): " + "; ".join(parts)
    if len(by) < 2:
        text += (". One shape run so far (the 16-head and 4-layer runs of make reproduce PROFILE=passkey-scale "
                 "are not in results yet): no trend.")
        return text
    # How each other shape moved from C6's own (8 heads x 2 layers; else the smallest run).
    base = (8, 2) if (8, 2) in by else min(by)
    moves = []
    for s, rs in sorted(by.items()):
        if s == base:
            continue
        d_occ = mean(rs, "occupancy") - mean(by[base], "occupancy")
        d_frac = mean(rs, "fraction") - mean(by[base], "fraction")
        few = len(rs) < 3 or len(by[base]) < 3
        moves.append(f"to {s[0]} heads x {s[1]} layers the certified occupancy moved by {d_occ:+.3f} and the "
                     f"keep-everything share by {d_frac:+.3f}"
                     + (" (fewer than 3 learned runs on a side: too few to tell the move from seed noise)" if few else ""))
    return text + f". From {base[0]} heads x {base[1]} layers " + "; ".join(moves) + \
        "; nothing is extrapolated past the shapes run."
