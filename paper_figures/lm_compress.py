"""Language-model compression (lm/compress): perplexity of claim C5's models decoded with a
compressed KV cache against the achieved kept fraction. A figure (a panel per variant, a line per
policy through its kept fractions, the mean over seeds, each seed's points faded) and a table
(per variant and policy: achieved kept fraction and perplexity increase at each kept fraction,
means over seeds). Reads results/lm/compress/summary.csv."""
import math
import os

import common
import style
from common import Table, num
from constants import POLICY_ORDER

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


method = common.policy_method


def load(results):
    """{rel, rows} of results/lm/compress/summary.csv with what the captions state about the runs:
    their presets and context lengths (from each run's sidecar, the training config it names), the
    split, windows per run, evictions and kept fractions (from the rows). None when not run."""
    data = common.load_summary(results, "lm", "compress", "summary.csv")
    if not data:
        return None
    rows = data["rows"]
    presets, contexts = set(), set()
    for run in sorted({r["run"] for r in rows}):
        config = common.read_sidecar(os.path.join(results, "lm", "compress", "runs", run + ".csv")).get("config", {})
        trained = common.read_conf(os.path.join(REPO, config.get("train-config", ""))) if config.get("train-config") else {}
        presets.add(trained.get("preset", "?"))
        contexts.add(trained.get("length", "?"))
    data.update(presets="/".join(sorted(presets)), contexts="/".join(sorted(contexts, key=lambda c: (len(c), c))),
                split="/".join(sorted({r["split"] for r in rows})), windows="/".join(sorted({r["windows"] for r in rows})),
                evict_every="/".join(sorted({r["evict_every"] for r in rows})),
                budgets=sorted({num(r["budget"]) for r in rows if r["policy"] != "full" and num(r["budget"]) > 0}))
    return data


def context_text(data):
    """'context 128' and the bytes of a window (one more: the last position's target)."""
    c = data["contexts"]
    return f"context {c}", f"{int(c) + 1} bytes" if c.isdigit() else "context + 1 bytes"


def evictions_text(data):
    e = data["evict_every"]
    return "one eviction after every token" if e == "1" else f"one eviction every {e} tokens"


def cells(data):
    """(variant, method) -> {budget or nan: [(run, occupancy, ppl_increase)]}."""
    out = {}
    for r in data["rows"]:
        key = (r["variant"], method(r))
        b = num(r["budget"])
        out.setdefault(key, {}).setdefault(b if key[1] != "full" else 1.0, []).append(
            (r["run"], num(r["occupancy"]), num(r["ppl_increase"])))
    return out


def methods_of(c):
    found = {m for _, m in c}
    return [m for m in POLICY_ORDER if m in found] + sorted(found - set(POLICY_ORDER))


def budget_of(b, budgets):
    return next((x for x in budgets if not math.isnan(b) and abs(b - x) < 1e-9), None)


def figure(data, out):
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    c = cells(data)
    variants = sorted({v for v, _ in c}, key=style.variant_sort_key)
    methods = [m for m in methods_of(c) if m != "full"]
    colours = ["#D55E00", "#E69F00", "#0072B2", "#56B4E9", "#009E73", "#CC79A7", "#b15928",
               "#6a3d9a", "#999999", "#F0E442", "#888888"]
    markers = ["o", "s", "^", "D", "v", "P", "X", "*", "h", "<", ">"]
    fig, axes = plt.subplots(1, len(variants), figsize=(3.6 * len(variants) + 0.4, 3.9), squeeze=False,
                             sharey=True)
    for ax, v in zip(axes[0], variants):
        for mi, m in enumerate(methods):
            col, mk = colours[mi % len(colours)], markers[mi % len(markers)]
            pts = []
            for b, runs in sorted(c.get((v, m), {}).items(), key=lambda kv: -1 if math.isnan(kv[0]) else kv[0]):
                for _, occ, inc in runs:
                    ax.plot(occ, 100 * inc, marker=mk, color=col, alpha=0.25, markersize=3.5, linestyle="none")
                pts.append((common.mean([o for _, o, _ in runs]), 100 * common.mean([i for _, _, i in runs])))
            if pts:
                xs, ys = zip(*sorted(pts))
                ax.plot(xs, ys, marker=mk, color=col, linewidth=1.1, markersize=4.5)
        seeds = len({r for runs in c.get((v, "full"), {}).values() for r, _, _ in runs})
        ax.axhline(0, color="grey", linewidth=0.8)
        ax.set_yscale("symlog", linthresh=1.0)
        ax.set_xlim(0, 1.02)
        ax.set_xlabel("achieved kept fraction (mean over queries)")
        ax.set_title(f"{style.short_label(v)}: {seeds} seed(s)", color=style.colour(v))
    axes[0][0].set_ylabel("test perplexity increase over the full cache (%)")
    handles = [Line2D([], [], color=colours[i % len(colours)], marker=markers[i % len(markers)], label=m)
               for i, m in enumerate(methods)]
    fig.tight_layout(rect=(0, 0, 1, 0.82))
    fig.legend(handles=handles, loc="upper center", ncol=min(6, len(handles)), bbox_to_anchor=(0.5, 1.0),
               frameon=False, fontsize=7.5)
    return style.save(fig, out, "lm_compression"), (
        f"Language models decoded with a compressed KV cache ({data['presets']} preset, {context_text(data)[0]}, "
        f"{data['split']} windows): perplexity increase over the full cache against the achieved kept fraction; "
        f"a line per policy through its kept fractions {', '.join(f'{b:g}' for b in data['budgets'])} (the mean "
        "over seeds), each seed's points faded; certified policies are single points.")


def table(data):
    c = cells(data)
    cols = ["variant", "policy", "seeds"]
    for b in data["budgets"]:
        cols += [f"kept {b:g}: occupancy", f"kept {b:g}: ppl +%"]
    cols += ["own threshold: occupancy", "own threshold: ppl +%"]
    t = Table("lm_compression", "Language models with a compressed KV cache: achieved kept fraction and "
              f"{data['split']} perplexity increase over the full cache (means over seeds)", cols,
              note=f"lm-compress on the published C5 {data['presets']} models (configs/compress/lm.conf: "
                   f"{data['windows']} {data['split']} windows of {context_text(data)[1]}, {evictions_text(data)}). "
                   "occupancy: entries each query attended to "
                   "over a full cache's, mean over scored tokens; ppl +%: perplexity under the policy over "
                   "the full cache's on the same windows, minus 1, in percent. The certified policies "
                   "(fpa-certified, fox-acp) take no kept fraction: their own threshold sets the occupancy.")
    for v in sorted({v for v, _ in c}, key=style.variant_sort_key):
        for m in methods_of(c):
            if m == "full" or (v, m) not in c:
                continue
            by = c[(v, m)]
            seeds = len({r for runs in by.values() for r, _, _ in runs})
            row = [style.label(v), m, str(seeds)]
            for b in data["budgets"] + [None]:
                runs = next((rs for k, rs in by.items() if (budget_of(k, data["budgets"]) == b if b else math.isnan(k))),
                            None)
                if runs:
                    row += [f"{common.mean([o for _, o, _ in runs]):.3f}",
                            f"{100 * common.mean([i for _, _, i in runs]):+.2f}"]
                else:
                    row += ["-", "-"]
            t.add(*row)
    return t
