"""Claim C6's occupancy floor against heads and depth (issue 30): per learned FPA run, the heads
whose field never dips below a key (fpa-certified keeps every entry: keep-everything heads), their
share of all heads, and the certified occupancy at 8L; the best policy of the compression sweep
at 25% kept beside FPA's own. The C6 study's runs (8 heads x 2 layers, results/passkey/c6/), the
scale runs (16 heads x 2 layers, 8 heads x 4 layers, results/passkey/scale/) when present, and the
4-head recipe's runs (results/passkey/diagnostics/c6-4heads/), which count as trained but learned
on no seed. A figure, a table and C6's 'trend with size' line."""
import math
import os

import common
import passkey_sweep
import style
from common import num
from constants import KEPT, OCCUPANCY_MAX
from passkey_common import keys_at_8l, keys_text
from passkey_verdict import count_text, per_run, shape

KEEP_ALL = 0.99  # mean fraction of entries fpa-certified keeps from which a head keeps everything
BUDGET = f"budget {KEPT:.0%}"  # the budget policy's label at the kept fraction (passkey_common.policy_name)
# Folders of passkey runs with a shape (heads x layers) to place, and the sweep folder of each.
FOLDERS = {"c6": "sweep", "scale": "sweep-scale", os.path.join("diagnostics", "c6-4heads"): None}


def trained_shapes(folder):
    """{run: (heads, layers)} of the FPA runs trained in a folder, from the config in the sidecar
    of each training log (train-<run>.csv)."""
    out = {}
    for path in common.csv_files(folder, "train-*.csv"):
        config = common.read_sidecar(path).get("config", {})
        if str(config.get("variant", "")) != "fpa":
            continue
        name = os.path.basename(path)[len("train-"):-len(".csv")]
        out[name] = (int(num(config.get("heads"), 0)), int(num(config.get("layers"), 0)))
    return out


def sweep_at_kept(sweep):
    """{run: (best online policy, its accuracy, snapkv's accuracy)} at about KEPT kept and 8L, from
    a compression sweep's summary (passkey_sweep.at_kept: the compression table's cell)."""
    if not sweep:
        return {}
    cells = passkey_sweep.cells_8l(sweep)
    out = {}
    for run in {r for r, _ in cells}:
        def accuracy_at_kept(m):
            pts = [acc for b, occ, acc, _ in cells.get((run, m), []) if passkey_sweep.at_kept(b, occ)]
            return pts[0] if pts else None
        online = {m: accuracy_at_kept(m) for _, m in [k for k in cells if k[0] == run]
                  if m != "full" and m not in passkey_sweep.QUERY_AWARE}
        online = {m: a for m, a in online.items() if a is not None}
        best = max(online, key=online.get, default=None)
        snap = accuracy_at_kept("snapkv")
        out[run] = (best, online.get(best, math.nan), math.nan if snap is None else snap)
    return out


def folder_runs(folder, load_rows):
    """Learned FPA runs of a results folder: {run: {heads, layers, keep_all, fraction, occupancy,
    accuracy_certified, accuracy}}, and {run: learned} of every FPA run it evaluated."""
    rows = []
    for path in common.csv_files(folder, "*.summary.csv"):
        more = common.read_csv(path)
        if more and "policy" in more[0]:
            rows += more
    runs = per_run(rows) if rows else {}
    learned = {name: r["learned"] for name, r in runs.items() if r["variant"].startswith("fpa")}
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
               for label in ("full", BUDGET, BUDGET + " per head")}
        out[name] = {"heads": heads, "layers": layers, "keep_all": keep_all,
                     "fraction": keep_all / (heads * layers),
                     "occupancy": cert["occupancy"] if cert else math.nan,
                     "accuracy_certified": cert["accuracy"] if cert else math.nan, "accuracy": acc}
    return out, learned


def load(results):
    """{"runs": learned FPA runs by name (folder_runs, plus the sweep's best policy and snapkv at
    KEPT kept), "counts": {(heads, layers): (learned, trained)}, "sweep_keys": n_keys of the swept
    cells at 8L}, or None without any learned run."""
    runs, counts, keys = {}, {}, set()
    for sub, sweep_sub in FOLDERS.items():
        folder = os.path.join(results, "passkey", sub)
        if not os.path.isdir(folder):
            continue
        found, learned = folder_runs(folder, common.read_csv)
        sweep = common.load_summary(results, "passkey", sweep_sub, "summary.csv") if sweep_sub else None
        swept = sweep_at_kept(sweep)
        keys |= keys_at_8l(sweep["rows"]) if sweep else set()
        for name, r in found.items():
            r["sweep"] = swept.get(name, (None, math.nan, math.nan))
        runs.update(found)
        for name, s in trained_shapes(folder).items():
            n_learned, n = counts.get(s, (0, 0))
            counts[s] = (n_learned + bool(learned.get(name)), n + 1)
    return {"runs": runs, "counts": counts, "sweep_keys": keys} if runs else None


def figure(floor, out):
    import matplotlib.pyplot as plt
    runs, counts = floor["runs"], floor["counts"]
    shapes = sorted(set(counts) | {shape(r) for r in runs.values()})
    fig, axes = plt.subplots(1, 2, figsize=(9.6, 3.5), sharey=True)
    for ax, (what, label) in zip(axes, [("occupancy", "certified occupancy at 8L"),
                                        ("fraction", "share of keep-everything heads")]):
        for i, s in enumerate(shapes):
            ys = [r[what] for r in runs.values() if shape(r) == s]
            if not ys:
                ax.text(i, 0.5, "no learned run", ha="center", va="center", fontsize=7.5, color="grey")
                continue
            ax.plot([i] * len(ys), ys, "o", color=style.colour("fpa"), alpha=0.5)
            ax.plot([i], [common.mean(ys)], "s", color="black")
        ax.set_xticks(range(len(shapes)))
        ax.set_xlim(-0.6, len(shapes) - 0.4)
        ax.set_xticklabels([f"{h} heads x {l} layers\n({count_text(counts, (h, l))})" for h, l in shapes], fontsize=7.5)
        ax.axhline(KEPT, color="grey", linestyle=":", linewidth=1)
        ax.set_ylim(0, 1.02)
        ax.set_title(label, fontsize=9)
    fig.tight_layout()
    return style.save(fig, out, "passkey_occupancy_floor"), (
        "C6's occupancy floor against heads and depth, FPA runs of the C6 recipe: certified occupancy at 8L and the "
        f"share of heads that keep every key (fpa-certified keeps >= {KEEP_ALL:.0%} of entries) per learned run; "
        f"dots are runs, squares means, dotted: {KEPT:.0%}; under each shape, how many of its trained seeds learned (4 heads: the "
        "4-head recipe, results/passkey/diagnostics/c6-4heads/).")


def table(floor):
    runs, counts = floor["runs"], floor["counts"]
    t = common.Table("passkey_occupancy_floor", "C6's occupancy floor per learned FPA run, by shape (8L)",
                     ["run", "heads x layers", "seeds learned", "keep-everything heads", "share", "certified occupancy",
                      "full cache", "fpa-certified", BUDGET, BUDGET + " per head",
                      f"best online policy at {KEPT:.0%} (sweep)", f"snapkv at {KEPT:.0%} (query-aware)"],
                     note=f"A keep-everything head: fpa-certified keeps >= {KEEP_ALL:.0%} of its entries at the "
                          "longest evaluated length (passkey-probe). Accuracies at 8L (passkey-eval). "
                          "8 heads x 2 layers is the C6 study (results/passkey/c6/), the other shapes "
                          "make reproduce PROFILE=passkey-scale (results/passkey/scale/). The last two columns "
                          "come from the compression sweep (make reproduce PROFILE=passkey-sweep: "
                          f"results/passkey/sweep/ and sweep-scale/, {keys_text(floor.get('sweep_keys', ()))} keys at 8L, "
                          f"every policy at kept fraction {KEPT:g}, or a certified policy at its own occupancy when "
                          f"that is <= {OCCUPANCY_MAX:.2f}, as the compression table); "
                          "- where a run is not swept. Shapes with no learned run: "
                          + (", ".join(f"{h} heads x {l} layers ({count_text(counts, (h, l))})"
                                       for (h, l) in sorted(counts) if not counts[(h, l)][0]) or "none") + ".")
    for name, r in sorted(runs.items(), key=lambda kv: (shape(kv[1]), kv[0])):
        best, acc, snap = r["sweep"]
        t.add(name, f"{r['heads']} x {r['layers']}", count_text(counts, shape(r)), str(r["keep_all"]), r["fraction"],
              r["occupancy"], r["accuracy"]["full"], r["accuracy_certified"], r["accuracy"][BUDGET],
              r["accuracy"][BUDGET + " per head"], f"{best} {acc:.3f}" if best else "-",
              "-" if math.isnan(snap) else snap)
    return t
