"""Passkey retrieval with a compressed KV cache (claim C6): accuracy heatmaps (evaluation length x
key depth) per variant and policy, and accuracy against cache occupancy. Reads
results/passkey/summary.csv and the per-cell CSVs under results/passkey/ (any CSV with the columns
variant, eval_len, depth, policy, accuracy)."""
import json
import math
import os

import common
import style
from common import Claim, Section, Table, num

SUMMARY_COLUMNS = ["variant", "train_len", "eval_len", "policy", "budget", "occupancy", "accuracy",
                   "n_keys", "decode_ms_per_token"]
CELL_COLUMNS = ["variant", "eval_len", "depth", "policy", "accuracy"]
OCCUPANCY_MAX = 0.30  # "about 25%"
LEARNED_MIN = 0.5  # full-cache accuracy at L below which the model did not learn retrieval
POLICY_ORDER = ["full", "fpa-certified", "certified", "budget", "window"]

C6_STATEMENT = ("FPA retrieves passkeys perfectly at 8x the training length, even with the key-value "
                "cache compressed to about 25%.")
C6_RULE = (f"reproduced iff some compressed-cache policy gives FPA accuracy 1.0 (every key, every seed) "
           f"at evaluation length 8 x training length with achieved occupancy <= {OCCUPANCY_MAX}; "
           "not reproduced iff FPA was evaluated at 8L with such an occupancy and never reached 1.0, "
           f"provided the FPA model learned retrieval at all (full-cache accuracy at L >= {LEARNED_MIN}); "
           "not tested otherwise (an FPA model that cannot retrieve with a full cache at its training "
           "length is a training failure, not evidence about the claim).")


def policy_name(row):
    """A readable policy label from a CSV row: 'budget 25%', 'budget 25% per head',
    'fpa-certified eps=0.001', 'window 25%', 'full'."""
    policy, b = row["policy"], num(row.get("budget", ""))
    name = policy
    if policy in ("budget", "window") and not math.isnan(b) and b > 0:
        name = f"{policy} {b:g}" if b >= 1 else f"{policy} {b:.0%}"
    if policy == "budget" and str(row.get("per_head", "")).lower() in ("1", "true", "yes"):
        name += " per head"
    if "certified" in policy and row.get("epsilon", "") not in ("", None):
        name += f" eps={num(row['epsilon']):g}"
    return name


# One marker per policy label (up to 12): style.MARKERS has too few for every budget variant.
POLICY_MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*", "h", "<", ">", "p"]


def policy_sort(p):
    base = p.split(" ")[0]
    return (POLICY_ORDER.index(base) if base in POLICY_ORDER else len(POLICY_ORDER), p)


def aggregate(rows):
    """Rows of one (variant, train_len, eval_len, policy label) merged over seeds: accuracy
    weighted by keys, occupancy and decode time averaged."""
    groups = {}
    for r in rows:
        key = (r["variant"], int(num(r["train_len"], 0)), int(num(r["eval_len"], 0)), policy_name(r))
        groups.setdefault(key, []).append(r)
    out = {}
    for k, g in groups.items():
        keys = [num(r["n_keys"], 0) for r in g]
        total = sum(keys)
        acc = sum(num(r["accuracy"]) * n for r, n in zip(g, keys)) / total if total else common.mean(
            [num(r["accuracy"]) for r in g])
        out[k] = {"accuracy": acc, "n_keys": int(total), "rows": len(g),
                  "occupancy": common.mean([num(r["occupancy"]) for r in g]),
                  "ms": common.mean([num(r["decode_ms_per_token"]) for r in g]),
                  "min_acc": min(num(r["accuracy"]) for r in g)}
    return out


def build(results, out):
    sec = Section("passkey", "Passkey retrieval with a compressed cache (C6)")
    claim = Claim("C6", C6_STATEMENT, C6_RULE)
    sec.claims["C6"] = claim
    path = os.path.join(results, "passkey", "summary.csv")
    rows = common.read_csv(path)
    if not common.has_columns(rows, SUMMARY_COLUMNS, path):
        sec.tables.append(Table("passkey_accuracy", "Passkey retrieval: accuracy per variant, length and policy",
                                ["variant", "eval length", "policy", "accuracy"], [[common.NOT_RUN, "-", "-", "-"]]))
        return sec
    sec.status = "run"
    sec.sources.append("passkey/summary.csv")
    agg = aggregate(rows)
    keys = sorted(agg, key=lambda k: (style.variant_sort_key(k[0]), k[1], k[2], policy_sort(k[3])))
    table = Table("passkey_accuracy", "Passkey retrieval: accuracy and cache occupancy per variant, length and policy",
                  ["variant", "train len L", "eval len", "policy", "occupancy", "accuracy", "worst seed", "keys",
                   "decode ms/token"], timing=["decode ms/token"],
                  note="Occupancy: kept cache entries / entries of a full cache, over layers and heads. "
                       "Accuracy: exact match of the five generated digits (greedy), all keys of all seeds.")
    for k in keys:
        a = agg[k]
        table.add(style.label(k[0]), str(k[1]), f"{k[2]} ({k[2] / k[1]:g}L)" if k[1] else str(k[2]),
                  k[3], a["occupancy"], a["accuracy"], a["min_acc"], str(a["n_keys"]),
                  f"{a['ms']:.2f}")
    sec.tables.append(table)
    sec.figures.append(occupancy_figure(agg, out))
    cells = load_cells(results)
    if cells:
        sec.figures.append(heatmap_figure(cells, out))
        sec.sources += sorted({c["rel"] for c in cells})
    else:
        sec.notes.append("No per-cell passkey CSV (with a depth column) under results/passkey/: heatmaps not drawn.")
    decide_c6(agg, claim)
    return sec


def decide_c6(agg, claim):
    claim.links = ["figures/passkey_accuracy.md", "figures/passkey_occupancy.png",
                   "figures/passkey_heatmaps.png", "passkey/summary.csv"]
    fpa8 = {k: a for k, a in agg.items() if k[0] == "fpa" and k[1] and k[2] == 8 * k[1]}
    lens = sorted({(k[1], k[2]) for k in agg})
    keys_per = sorted({a["n_keys"] for a in agg.values()})
    claim.setting = (f"training length L = {', '.join(sorted({str(l) for l, _ in lens}))}; evaluation lengths "
                     f"{', '.join(sorted({str(e) for _, e in lens}, key=int))}; {'/'.join(str(k) for k in keys_per)} "
                     f"keys per cell (over seeds); policies {', '.join(sorted({k[3] for k in agg}, key=policy_sort))}")
    if not fpa8:
        claim.number = "FPA not evaluated at 8x the training length"
        return
    compressed = {k: a for k, a in fpa8.items() if k[3] != "full" and a["occupancy"] <= OCCUPANCY_MAX + 1e-9}
    full = [a for k, a in fpa8.items() if k[3] == "full"]
    parts = []
    if full:
        parts.append(f"FPA full cache at 8L: {full[0]['accuracy']:.3f}")
    if not compressed:
        claim.number = "; ".join(parts + [f"no FPA policy reached occupancy <= {OCCUPANCY_MAX} at 8L"])
        for k, a in sorted(fpa8.items(), key=lambda kv: policy_sort(kv[0][3])):
            claim.details.append(f"FPA {k[3]} at 8L: accuracy {a['accuracy']:.3f} at occupancy {a['occupancy']:.3f}")
        return
    best_k = max(compressed, key=lambda k: (compressed[k]["accuracy"], -compressed[k]["occupancy"]))
    best = compressed[best_k]
    parts.append(f"FPA {best_k[3]} at 8L: accuracy {best['accuracy']:.3f} at occupancy "
                 f"{best['occupancy']:.3f}")
    perfect = [a["occupancy"] for k, a in fpa8.items() if a["accuracy"] >= 1.0]
    if perfect:
        parts.append(f"lowest occupancy with accuracy 1.0 at 8L: {min(perfect):.3f}")
    # Baselines under the same policy/budget and the window at comparable occupancy.
    for k, a in sorted(agg.items(), key=lambda kv: (style.variant_sort_key(kv[0][0]), policy_sort(kv[0][3]))):
        if k[0] != "fpa" and k[1] == best_k[1] and k[2] == best_k[2] and (
                k[3] == best_k[3] or k[3] == "full" or k[3].startswith("window")):
            claim.details.append(f"{style.label(k[0])} {k[3]} at 8L: accuracy {a['accuracy']:.3f}"
                                 f" at occupancy {a['occupancy']:.3f}")
    for k, a in sorted(fpa8.items(), key=lambda kv: policy_sort(kv[0][3])):
        claim.details.append(f"FPA {k[3]} at 8L: accuracy {a['accuracy']:.3f} at occupancy {a['occupancy']:.3f}")
    claim.number = "; ".join(parts)
    at_l = [a["accuracy"] for k, a in agg.items() if k[0] == "fpa" and k[3] == "full" and k[2] == k[1]]
    if at_l and max(at_l) < LEARNED_MIN:
        claim.number += (f"; FPA did not learn retrieval (full-cache accuracy at L, all keys of all "
                         f"seeds: {max(at_l):.3f}), so this is not evidence about the claim")
        return  # verdict stays "not tested at this scale"
    claim.verdict = "reproduced" if best["accuracy"] >= 1.0 else "not reproduced"


def occupancy_figure(agg, out):
    import matplotlib.pyplot as plt
    mults = sorted({k[2] / k[1] for k in agg if k[1]})
    fig, axes = plt.subplots(1, max(len(mults), 1), figsize=(3.3 * max(len(mults), 1) + 0.5, 3.6),
                             squeeze=False, sharey=True)
    policies = sorted({k[3] for k in agg}, key=policy_sort)
    variants = sorted({k[0] for k in agg}, key=style.variant_sort_key)
    # Points of several variants often coincide (same occupancy and accuracy): earlier variants
    # are drawn larger, so coinciding points show as concentric markers.
    sizes = {v: 30 * 1.9 ** (len(variants) - 1 - i) for i, v in enumerate(variants)}
    for ax, m in zip(axes[0], mults):
        for k, a in sorted(agg.items()):
            if not k[1] or k[2] / k[1] != m:
                continue
            marker = POLICY_MARKERS[policies.index(k[3]) % len(POLICY_MARKERS)]
            ax.scatter(a["occupancy"], a["accuracy"], color=style.colour(k[0]), marker=marker, s=sizes[k[0]],
                       edgecolors="black", linewidths=0.4, zorder=3 + variants.index(k[0]))
        ax.axvline(0.25, color="grey", linestyle=":", linewidth=1)
        ax.set_xlim(-0.03, 1.05)
        ax.set_ylim(-0.05, 1.08)
        ax.set_title(f"eval length {m:g}L")
        ax.set_xlabel("cache occupancy (kept / full)")
    axes[0][0].set_ylabel("passkey accuracy")
    from matplotlib.lines import Line2D
    handles = [Line2D([], [], color=style.colour(v), marker="o", linestyle="", label=style.label(v)) for v in variants]
    handles += [Line2D([], [], color="grey", marker=POLICY_MARKERS[i % len(POLICY_MARKERS)], linestyle="", label=p)
                for i, p in enumerate(policies)]
    fig.tight_layout(rect=(0, 0, 1, 0.86))
    fig.legend(handles=handles, loc="upper center", ncol=min(len(handles), 8), bbox_to_anchor=(0.5, 1.0), frameon=False)
    return style.save(fig, out, "passkey_occupancy"), ("Passkey accuracy against achieved cache occupancy, per "
                                                       "evaluation length (dotted line: 25%; coinciding points of "
                                                       "several variants are drawn as concentric markers).")


def load_cells(results):
    """Per-cell CSVs of the runs merged into summary.csv (the folder its sidecar names)."""
    cells = []
    folder = os.path.join(results, "passkey")
    try:
        with open(os.path.join(folder, "summary.csv.json")) as f:
            folder = os.path.join(folder, json.load(f).get("runs_dir", "."))
    except (OSError, ValueError):
        pass
    for f in common.csv_files(folder):
        if os.path.basename(f) == "summary.csv":
            continue
        rows = common.read_csv(f)
        if not rows or any(c not in rows[0] for c in CELL_COLUMNS):
            continue
        rel = os.path.relpath(f, results)
        for r in rows:
            cells.append({"rel": rel, "variant": r["variant"], "train_len": int(num(r.get("train_len", "0"), 0)),
                          "eval_len": int(num(r["eval_len"], 0)), "depth": num(r["depth"]),
                          "policy": policy_name(r),
                          "accuracy": num(r["accuracy"]), "n": num(r.get("n_keys", "1"), 1)})
    return cells


def heatmap_figure(cells, out):
    import matplotlib.pyplot as plt
    import numpy as np
    panels = sorted({(c["variant"], c["policy"]) for c in cells},
                    key=lambda p: (style.variant_sort_key(p[0]), policy_sort(p[1])))
    variants = sorted({p[0] for p in panels}, key=style.variant_sort_key)
    policies = sorted({p[1] for p in panels}, key=policy_sort)
    fig, axes = plt.subplots(len(variants), len(policies), figsize=(2.4 * len(policies) + 1.6, 2.1 * len(variants) + 0.8),
                             squeeze=False, sharex=True, sharey=True)
    im = None
    for vi, v in enumerate(variants):
        for pi, p in enumerate(policies):
            ax = axes[vi][pi]
            ax.grid(False)
            if vi == 0:
                ax.set_title(f"policy: {p}", fontsize=9)
            if pi == 0:
                ax.set_ylabel(f"{style.short_label(v)}\nkey depth", color=style.colour(v))
            if vi == len(variants) - 1:
                ax.set_xlabel("evaluation length")
            sel = [c for c in cells if c["variant"] == v and c["policy"] == p]
            if not sel:
                ax.text(0.5, 0.5, "not run", ha="center", va="center", transform=ax.transAxes, fontsize=8)
                ax.set_xticks([])
                ax.set_yticks([])
                continue
            lens = sorted({c["eval_len"] for c in cells})
            depths = sorted({round(c["depth"], 3) for c in cells})
            acc = np.zeros((len(depths), len(lens)))
            wsum = np.zeros_like(acc)
            for c in sel:
                i, j = depths.index(round(c["depth"], 3)), lens.index(c["eval_len"])
                acc[i, j] += c["accuracy"] * c["n"]
                wsum[i, j] += c["n"]
            acc = np.ma.masked_where(wsum == 0, acc / np.maximum(wsum, 1e-12))
            im = ax.imshow(acc, cmap="RdYlGn", vmin=0, vmax=1, aspect="auto", origin="lower")
            for i in range(len(depths)):  # the numbers, so a reader need not decode colours
                for j in range(len(lens)):
                    if wsum[i, j] > 0:
                        ax.text(j, i, f"{acc[i, j]:.2f}", ha="center", va="center", fontsize=6)
            L = sel[0]["train_len"]
            ax.set_xticks(range(len(lens)))
            ax.set_xticklabels([f"{l / L:g}L" if L else str(l) for l in lens], fontsize=8)
            ax.set_yticks(range(len(depths)))
            ax.set_yticklabels([f"{d:g}" for d in depths], fontsize=7)
    if im is not None:
        cb = fig.colorbar(im, ax=axes, fraction=0.02, pad=0.02)
        cb.set_label("passkey accuracy")
    # Above the panel titles: y in figure coordinates, 0.45 inch over the top edge of the axes.
    fig.suptitle("Passkey accuracy by evaluation length (multiples of the training length L) and key depth "
                 "(fraction of the prompt)", fontsize=9, y=1.0 + 0.2 / fig.get_size_inches()[1])
    return style.save(fig, out, "passkey_heatmaps"), ("Passkey accuracy by evaluation length and key depth, per "
                                                      "variant (rows) and cache policy (columns).")
