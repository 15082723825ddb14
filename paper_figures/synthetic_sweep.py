"""Claim C4's head-dimension sweep (synthetic/reproduce.sh, PROFILE=c4-sweep): seeds converged
against head dimension per task and model, the smallest dimension at which each model converges on
every seed, and each baseline cell's margin to the thresholds (its best seed's mass and nMSE, so a
narrow failure reads as narrow). Reads results/synthetic/sweep-n<N>/summary.csv (synthetic-sweep's
summary, one folder per training length n)."""
import glob
import os

import common
import style
from common import Table, num
from constants import C4_LENGTH, MASS_MIN, MIN_SEEDS_FOR_VERDICT, NMSE_MAX
from synthetic_common import SUMMARY_COLUMNS, model_key, model_label, model_sort, task_sort


def load(results):
    """{n: summary rows} of every sweep folder with a usable summary.csv."""
    found = {}
    for path in sorted(glob.glob(os.path.join(results, "synthetic", "sweep-n*", "summary.csv"))):
        rows = common.read_csv(path)
        if common.has_columns(rows, SUMMARY_COLUMNS, path):
            n = int(os.path.basename(os.path.dirname(path))[len("sweep-n"):] or 0)
            found[n] = rows
    return found


def dims_of(rows):
    return sorted({int(num(r["head_dim"], 0)) for r in rows})


def counts(r):
    return int(num(r["seeds_converged"], 0)), int(num(r["seeds_run"], 0))


def every_seed_converged(r):
    conv, run = counts(r)
    return conv == run


def mean_mass_reached(r):
    """The attention alone: mean target mass over seeds at MASS_MIN, whatever the payload's nMSE."""
    return num(r["mass_mean"], 0.0) >= MASS_MIN


def smallest_dim(rows, task, key, ok=every_seed_converged):
    """The smallest head dimension whose cell (>= the verdict's minimum of seeds) satisfies `ok`
    (default: `key` converged on every seed), or 'none up to <largest d run>'. A cell that
    satisfies `ok` on fewer seeds than that (a sweep still running) ends the search undecided:
    '<d>? (<k> seeds so far)'."""
    cells = sorted(((int(num(r["head_dim"], 0)), r) for r in rows
                    if r["task"] == task and model_key(r) == key), key=lambda c: c[0])
    for d, r in cells:
        seeds = counts(r)[1]
        if seeds > 0 and ok(r):
            return str(d) if seeds >= MIN_SEEDS_FOR_VERDICT else f"{d}? ({seeds} seeds so far)"
    return f"none up to {cells[-1][0]}" if cells else "-"


def tasks_and_keys(sweeps):
    return (sorted({r["task"] for rows in sweeps.values() for r in rows}, key=task_sort),
            sorted({model_key(r) for rows in sweeps.values() for r in rows}, key=model_sort))


def add_to(sec, sweeps, out):
    """Adds the sweep's sources, tables and figure to the synthetic section (a note when not run)."""
    if not sweeps:
        sec.notes.append("Head-dimension sweep (PROFILE=c4-sweep) not run: no synthetic/sweep-n*/summary.csv.")
        return
    sec.sources += [f"synthetic/sweep-n{n}/summary.csv" for n in sorted(sweeps)]
    sec.tables += tables(sweeps)
    sec.figures.append((figure(sweeps, out),
                        "Seeds converged against head dimension, a panel per task, a line per model "
                        f"(solid: n = {C4_LENGTH}; dotted: other training lengths)."))


def tables(sweeps):
    """synthetic_head_dim (every cell), synthetic_smallest_dim, synthetic_baseline_margins."""
    tasks, keys = tasks_and_keys(sweeps)

    every_dim = sorted({d for rows in sweeps.values() for d in dims_of(rows)})
    grid = Table("synthetic_head_dim", "Head-dimension sweep: seeds converged / seeds run per task, model and d",
                 ["n", "task", "model"] + [f"d={d}" for d in every_dim] + ["smallest d, every seed"],
                 note=f"Converged: target mass >= {MASS_MIN} and nMSE <= {NMSE_MAX} at the training length n. "
                      f"Smallest d: the smallest head dimension at which every seed (at least "
                      f"{MIN_SEEDS_FOR_VERDICT}) converged. '-': not run at that d.")
    for n in sorted(sweeps):
        rows = sweeps[n]
        for t in tasks:
            for k in keys:
                cells = {int(num(r["head_dim"], 0)): counts(r) for r in rows if r["task"] == t and model_key(r) == k}
                if cells:
                    grid.add(str(n), t, model_label(k),
                             *[f"{cells[d][0]}/{cells[d][1]}" if d in cells else "-" for d in every_dim],
                             smallest_dim(rows, t, k))

    smallest = Table("synthetic_smallest_dim", "Smallest head dimension at which each model converges on every seed",
                     ["task", "model"] + [f"n={n}" for n in sorted(sweeps)]
                     + [f"n={n}, mean mass >= {MASS_MIN} only" for n in sorted(sweeps)],
                     note="From the head-dimension sweep (figures/synthetic_head_dim.md for every cell). "
                          "T3 predicts a constant dimension for FPA, T4 one growing with n for softmax and FoX. "
                          "Converging also needs the payload back (nMSE), and a head's value width is its "
                          "dimension d, which caps how much of the payload (synthetic/README.md) it can "
                          "return: the last columns ask about the attention alone (mean target mass over seeds).")
    for t in tasks:
        for k in keys:
            smallest.add(t, model_label(k), *[smallest_dim(sweeps[n], t, k) for n in sorted(sweeps)],
                         *[smallest_dim(sweeps[n], t, k, mean_mass_reached) for n in sorted(sweeps)])

    margins = Table("synthetic_baseline_margins", "Baseline cells of the sweep: the best seed against the thresholds",
                    ["n", "task", "model", "d", "converged / run", "best seed", f"its mass (>= {MASS_MIN})",
                     f"its nMSE (<= {NMSE_MAX})"],
                    note="Best seed: the lowest nMSE (ties: the higher mass). A failing cell whose best seed "
                         "sits just short of a threshold fails narrowly.")
    for n in sorted(sweeps):
        for r in sorted(sweeps[n], key=lambda r: (task_sort(r["task"]), model_sort(model_key(r)),
                                                  int(num(r["head_dim"], 0)))):
            if r["model"] in ("softmax", "fox"):
                conv, run = counts(r)
                margins.add(str(n), r["task"], model_label(model_key(r)), r["head_dim"], f"{conv}/{run}",
                            r.get("best_seed") or "-", num(r.get("best_seed_mass")), num(r.get("best_seed_nmse")))
    return [grid, smallest, margins]


def details(sweeps):
    """C4's lines about the sweep: the smallest dimension converging on every seed, per n."""
    tasks, keys = tasks_and_keys(sweeps)
    return [f"smallest head dimension converging on every seed at n = {n} (sweep): " + "; ".join(
            f"{t}: " + ", ".join(f"{model_label(k)} {smallest_dim(sweeps[n], t, k)}" for k in keys) for t in tasks)
            for n in sorted(sweeps)]


def figure(sweeps, out):
    import matplotlib.pyplot as plt
    tasks, keys = tasks_and_keys(sweeps)
    every_dim = sorted({d for rows in sweeps.values() for d in dims_of(rows)})
    fig, axes = plt.subplots(1, len(tasks), figsize=(4.2 * len(tasks), 3.6), squeeze=False, sharey=True)
    for ax, t in zip(axes[0], tasks):
        for n in sorted(sweeps):
            for i, k in enumerate(keys):
                cells = sorted((int(num(r["head_dim"], 0)), counts(r)) for r in sweeps[n]
                               if r["task"] == t and model_key(r) == k and counts(r)[1] > 0)
                if not cells:
                    continue
                xs = [d for d, _ in cells]
                ys = [conv / run for _, (conv, run) in cells]
                ax.plot(xs, ys, color=style.colour(k.split("/")[0]), linestyle="-" if n == C4_LENGTH else ":",
                        marker=style.MARKERS[i % len(style.MARKERS)], markersize=4,
                        label=model_label(k) + ("" if n == C4_LENGTH else f", n = {n}"))
        ax.set_xscale("log", base=2)
        ax.set_xticks(every_dim)
        ax.set_xticklabels([str(d) for d in every_dim])
        ax.set_ylim(-0.05, 1.05)
        ax.set_title(f"task '{t}'")
        ax.set_xlabel("head dimension d (log scale)")
    axes[0][0].set_ylabel("fraction of seeds converged")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.tight_layout(rect=(0, 0, 1, 0.84))
    fig.legend(handles, labels, loc="upper center", ncol=min(len(labels), 4), bbox_to_anchor=(0.5, 1.0),
               frameon=False, fontsize=8)
    return style.save(fig, out, "synthetic_head_dim")
