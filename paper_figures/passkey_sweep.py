"""The compression sweep (lm/passkey/sweep.sh): every cache policy of lm/cache/README.md at kept
fractions 0.1, 0.25, 0.5 on the published C6 models. A kvpress-style figure (accuracy at 8L
against achieved kept fraction, a panel per variant, a line per policy, every learned run
visible) and a table at 25% kept: each variant's best policy, and on the FPA runs whether FPA's
own signals beat the attention-score signals. Reads results/passkey/sweep/summary.csv."""
import math

import common
import style
from common import Table, num
from constants import KEPT, OCCUPANCY_MAX, POLICY_ORDER
from passkey_common import fractions_text, keys_at_8l, keys_text

QUERY_AWARE = {"snapkv"}  # compress after reading the question: references, out of the verdict
OWN_SIGNALS = {"budget", "budget per head", "fpa-certified", "duo-certified"}  # FPA's bias/certificate
ATTENTION_SIGNALS = {"h2o", "tova"}


method = common.policy_method


def load(results):
    return common.load_summary(results, "passkey", "sweep", "summary.csv")


def cells_8l(sweep):
    """(run, method) -> [(budget or nan, occupancy, accuracy, n_keys)] at 8L."""
    out = {}
    for r in sweep["rows"]:
        L, n = int(num(r["train_len"], 0)), int(num(r["eval_len"], 0))
        if not L or n != 8 * L:
            continue
        out.setdefault((r["run"], method(r)), []).append(
            (num(r["budget"]), num(r["occupancy"]), num(r["accuracy"]), int(num(r["n_keys"], 0))))
    return out


def at_kept(budget, occupancy):
    """The cell the compression tables compare: kept fraction KEPT, or a certified policy (no
    budget) at its own occupancy, either at most OCCUPANCY_MAX."""
    return (abs(budget - KEPT) < 1e-9 or math.isnan(budget)) and occupancy <= OCCUPANCY_MAX + 1e-9


def budgets(cells, most=1.0):
    """The kept fractions the sweep ran at 8L (below `most`; the full cache's 1 left out)."""
    return {b for pts in cells.values() for b, _, _, _ in pts if not math.isnan(b) and 0 < b < most}


def methods_in(cells):
    found = {m for _, m in cells}
    return [m for m in POLICY_ORDER if m in found] + sorted(found - set(POLICY_ORDER))


def figure(sweep, runs, out):
    """Accuracy at 8L against achieved kept fraction: a panel per variant, a line per policy
    (through its kept fractions, the mean over learned runs), each learned run's points faded."""
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    cells = cells_8l(sweep)
    swept = {run for run, _ in cells}
    variants = sorted({runs[r]["variant"] for r in swept if r in runs}, key=style.variant_sort_key)
    methods = methods_in(cells)
    colours = ["#000000", "#D55E00", "#E69F00", "#0072B2", "#56B4E9", "#009E73", "#6a3d9a",
               "#CC79A7", "#b15928", "#999999", "#F0E442", "#888888", "#e31a1c"]
    markers = ["o", "s", "^", "D", "v", "P", "X", "*", "h", "<", ">", "p", "d"]
    fig, axes = plt.subplots(1, max(1, len(variants)), figsize=(3.6 * max(1, len(variants)) + 0.4, 3.9),
                             squeeze=False, sharey=True)
    for ax, v in zip(axes[0], variants):
        learned = sorted(r for r in swept if r in runs and runs[r]["variant"] == v and runs[r]["learned"])
        for mi, m in enumerate(methods):
            col, mk = colours[mi % len(colours)], markers[mi % len(markers)]
            by_budget = {}
            for run in learned:
                for b, occ, acc, _ in cells.get((run, m), []):
                    ax.plot(occ, acc, marker=mk, color=col, alpha=0.25, markersize=3.5, linestyle="none")
                    by_budget.setdefault(b if not math.isnan(b) else -1.0, []).append((occ, acc))
            pts = sorted((common.mean([o for o, _ in ps]), common.mean([a for _, a in ps]))
                         for ps in by_budget.values())
            if pts:
                xs, ys = zip(*pts)
                ax.plot(xs, ys, marker=mk, color=col, linewidth=1.1, markersize=4.5,
                        linestyle="--" if m in QUERY_AWARE else "-")
        ax.axvline(KEPT, color="grey", linestyle=":", linewidth=1)
        ax.set_xlim(-0.02, 1.04)
        ax.set_ylim(-0.05, 1.08)
        ax.set_xlabel("achieved kept fraction at 8L")
        ax.set_title(f"{style.short_label(v)}: {len(learned)} learned run(s)", color=style.colour(v))
        if not learned:
            ax.text(0.5, 0.5, "no learned run swept", ha="center", va="center", transform=ax.transAxes)
    axes[0][0].set_ylabel("passkey accuracy at 8L")
    handles = [Line2D([], [], color=colours[i % len(colours)], marker=markers[i % len(markers)],
                      linestyle="--" if m in QUERY_AWARE else "-",
                      label=m + (" (query-aware)" if m in QUERY_AWARE else "")) for i, m in enumerate(methods)]
    fig.tight_layout(rect=(0, 0, 1, 0.80))
    fig.legend(handles=handles, loc="upper center", ncol=min(7, len(handles)), bbox_to_anchor=(0.5, 1.0),
               frameon=False, fontsize=7.5)
    return style.save(fig, out, "passkey_compression"), (
        "Compression sweep: passkey accuracy at 8x the training length against the achieved kept "
        f"fraction, learned runs only; a line per policy through its kept fractions ({fractions_text(budgets(cells))}; "
        "the mean over learned runs), each run's own points faded; dashed: query-aware (SnapKV).")


def best_at(cells, run, methods, kept_max=OCCUPANCY_MAX):
    """The best (accuracy, method, occupancy) over `methods` with occupancy <= kept_max."""
    best = None
    for m in methods:
        for _, occ, acc, _ in cells.get((run, m), []):
            if occ <= kept_max + 1e-9 and (best is None or (acc, -occ) > (best[0], -best[2])):
                best = (acc, m, occ)
    return best


def table(sweep, runs):
    """At about KEPT kept (occupancy <= OCCUPANCY_MAX): per variant, each method's mean accuracy over learned
    runs, the best one; then per FPA run, FPA's own signals against the attention-score signals."""
    cells = cells_8l(sweep)
    swept = sorted({run for run, _ in cells})
    methods = [m for m in methods_in(cells) if m != "full"]
    t = Table("passkey_compression",
              f"Compression sweep at about {KEPT:.0%} kept (occupancy <= {OCCUPANCY_MAX:.2f}), accuracy at 8L",
              ["variant", "learned runs swept", "best online policy (mean accuracy)", "its per-run accuracy",
               "every online policy (mean accuracy, mean occupancy)", "snapkv (query-aware)"],
              note="Per (variant, method), over the learned runs of the C6 study that the sweep evaluated: "
                   f"the cell with kept fraction {KEPT:g} (or, for the certified policies, their own occupancy "
                   f"when it is <= {OCCUPANCY_MAX:.2f}), {keys_text(keys_at_8l(sweep['rows']))} keys per run at 8L. "
                   "Online policies compress before the question "
                   "arrives; snapkv reads the question first and is kept out of the ranking.")
    for v in sorted({runs[r]["variant"] for r in swept if r in runs}, key=style.variant_sort_key):
        learned = [r for r in swept if r in runs and runs[r]["variant"] == v and runs[r]["learned"]]
        if not learned:
            t.add(style.label(v), "0", "-", "-", "-", "-")
            continue
        scores = {}
        for m in methods:
            accs, occs = [], []
            for run in learned:
                pts = [(occ, acc) for b, occ, acc, _ in cells.get((run, m), []) if at_kept(b, occ)]
                if pts:
                    occs.append(pts[0][0])
                    accs.append(pts[0][1])
            if len(accs) == len(learned):
                scores[m] = (common.mean(accs), common.mean(occs), accs)
        online = {m: s for m, s in scores.items() if m not in QUERY_AWARE}
        best = max(online, key=lambda m: online[m][0], default=None)
        t.add(style.label(v), str(len(learned)),
              f"{best} ({online[best][0]:.2f})" if best else "-",
              " ".join(f"{a:.2f}" for a in online[best][2]) if best else "-",
              "; ".join(f"{m} {s[0]:.2f} ({s[1]:.2f})" for m, s in sorted(online.items(), key=lambda x: -x[1][0])),
              " ".join(f"{a:.2f}" for a in scores["snapkv"][2]) if "snapkv" in scores else "-")
    own = Table("passkey_own_signals", "FPA's own signals against attention scores, per learned FPA run "
                f"(8L, occupancy <= {OCCUPANCY_MAX:.2f})",
                ["run", "best of FPA's signals (budget, budget per head, fpa-certified, duo-certified)",
                 "best of attention scores (h2o, tova)", "FPA's signals better"],
                note="Each run's best accuracy at 8L over the policies of each group whose achieved occupancy is "
                     f"at most {OCCUPANCY_MAX:.2f} (kept fractions {fractions_text(budgets(cells, OCCUPANCY_MAX), ' and ')}, "
                     "and the certified policies' own occupancy).")
    for run in swept:
        if run not in runs or runs[run]["variant"] != "fpa" or not runs[run]["learned"]:
            continue
        a, b = best_at(cells, run, OWN_SIGNALS), best_at(cells, run, ATTENTION_SIGNALS)
        fmt = lambda x: f"{x[0]:.2f} ({x[1]}, {x[2]:.2f})" if x else "-"
        verdict = "-" if not (a and b) else ("yes" if a[0] > b[0] else ("tie" if a[0] == b[0] else "no"))
        own.add(run, fmt(a), fmt(b), verdict)
    return [t, own]


def field_best(sweep, runs):
    """For the C6 report entry: the best online (variant, method) at KEPT kept over learned runs,
    and FPA's best, as text; None without sweep data."""
    cells = cells_8l(sweep)
    swept = sorted({run for run, _ in cells})
    best = {}
    for run in swept:
        if run not in runs or not runs[run]["learned"]:
            continue
        for (r, m), pts in cells.items():
            if r != run or m in QUERY_AWARE or m == "full":
                continue
            for b, occ, acc, _ in pts:
                if at_kept(b, occ):
                    best.setdefault((runs[run]["variant"], m), []).append(acc)
    if not best:
        return None
    mean = {k: common.mean(v) for k, v in best.items()}
    top = max(mean, key=mean.get)
    fpa = [k for k in mean if k[0] == "fpa"]
    text = (f"compression sweep at {KEPT:.0%} kept, 8L, {keys_text(keys_at_8l(sweep['rows']))} keys per run "
            "(learned runs swept so far): best online "
            f"(variant, policy) {style.short_label(top[0])} {top[1]} {mean[top]:.2f} (over {len(best[top])} run(s))")
    if fpa:
        f = max(fpa, key=mean.get)
        text += f"; FPA's best {f[1]} {mean[f]:.2f} (over {len(best[f])} run(s))"
    return text
