"""Synthetic target-set tasks (claim C4): seeds converged per (task, model, head dim, FPA backward
mode), attention maps next to the target sets, and a field trajectory with its alive sets.

Reads results/synthetic/summary.csv, the per-run CSVs results/synthetic/runs/*.csv (for the
setting) and any attention/field dump (long format: kind,head,i,j,value,label) under
results/synthetic/."""
import math
import os

import numpy as np

import common
import style
import synthetic_sweep
import synthetic_verdict
from common import Table, num
from constants import C4_LENGTH, MASS_MIN, NMSE_MAX
from synthetic_common import DUMP_COLUMNS, SUMMARY_COLUMNS, model_key, model_label, model_sort, task_sort



def load(results):
    """What C4 is judged on, read without drawing: summary.csv's rows (until the sweep writes it,
    the finished runs so far: partial), the head-dimension sweep, the n = C4_LENGTH sweep rows of the
    dimensions summary.csv lacks (extra), and the training setting."""
    path = os.path.join(results, "synthetic", "summary.csv")
    rows = common.read_csv(path)
    partial = False
    if rows is None:
        rows = summarize_runs(results)
        partial = bool(rows)
    sweeps = synthetic_sweep.load(results)
    # The rule looks for SOME head dimension: the sweep's (n = C4_LENGTH, same training) add the
    # dimensions summary.csv lacks; where both have a dimension, summary.csv's cell (more seeds) is used.
    have = {r["head_dim"] for r in rows or []}
    extra = [r for r in sweeps.get(C4_LENGTH, []) if r["head_dim"] not in have]
    if extra and not rows:  # only the sweep has run: its rows are the study's
        path, partial, rows, extra = os.path.join(results, "synthetic", f"sweep-n{C4_LENGTH}", "summary.csv"), False, extra, []
    if not common.has_columns(rows, SUMMARY_COLUMNS, path):
        rows = None
    else:
        rows.sort(key=lambda r: (task_sort(r["task"]), int(num(r["head_dim"], 0)), model_sort(model_key(r))))
    return {"rows": rows, "extra": extra, "rel": os.path.relpath(path, results), "partial": partial,
            "sweeps": sweeps, "setting": run_setting(results) if rows else ""}


def claims(data):
    """{"C4": its claim} from load's data, with the sweep's smallest dimensions beside it."""
    sweep_links = ["figures/synthetic_smallest_dim.md"] if data["sweeps"] else []
    if data["rows"] is None:
        claim = synthetic_verdict.empty()
        claim.details, claim.links = synthetic_sweep.details(data["sweeps"]), sweep_links
        return {"C4": claim}
    claim = synthetic_verdict.decide(data["rows"] + data["extra"], data["setting"])
    claim.details[:0] = synthetic_sweep.details(data["sweeps"])
    if data["partial"]:
        synthetic_verdict.withhold(claim)
    claim.links = ["figures/synthetic_convergence.md", "figures/synthetic_convergence.png",
                   "synthetic/summary.csv"] + sweep_links
    return {"C4": claim}


def build(results, out):
    sec, data = common.judged_section("synthetic", "Synthetic target-set tasks (C4)", results, load, claims)
    synthetic_sweep.add_to(sec, data["sweeps"], out)
    rows = data["rows"]
    if rows is None:
        sec.tables.append(common.not_run_table("synthetic_convergence", "Synthetic tasks: seeds converged / seeds run",
                                               ["task", "model", "head dim", "converged / run"]))
        return sec
    sec.status = "run"
    sec.sources.insert(0, data["rel"])
    if data["partial"]:
        sec.status = ("partial: no synthetic/summary.csv yet; summarised by make_all.py from the "
                      "finished runs in synthetic/runs/")
        sec.sources[0] = "synthetic/runs/"

    table = Table("synthetic_convergence",
                  "Synthetic tasks: seeds converged / seeds run per task, model (FPA backward mode) and head dim",
                  ["task", "model", "head dim", "converged / run", "target mass", "mass std",
                   "mass at 2n", "nMSE", "nMSE at 2n", "missing runs"],
                  note="Target mass: mean attention mass on the target set (head mean), mean over seeds; "
                       f"nMSE: MSE / variance of the target. Converged: mass >= {MASS_MIN} and nMSE <= {NMSE_MAX} at n.")
    for r in rows:
        table.add(r["task"], model_label(model_key(r)), r["head_dim"],
                  f"{int(num(r['seeds_converged'], 0))} / {int(num(r['seeds_run'], 0))}",
                  num(r["mass_mean"]), num(r["mass_std"]), num(r["mass2n_mean"]), num(r["nmse_mean"]),
                  num(r["nmse2n_mean"]), r.get("runs_missing", "-") or "-")
    sec.tables.append(table)

    sec.figures.append((convergence_figure(rows, out), "Fraction of seeds converged per task, model and head dimension."))
    dumps = find_dumps(results)
    if dumps:
        fig = attention_figure(dumps, out)
        if fig:
            sec.figures.append(fig)
        fig = field_figure(dumps, out)
        if fig:
            sec.figures.append(fig)
    else:
        sec.notes.append("No attention/field dump found under results/synthetic/: maps not drawn.")
    return sec


def summarize_runs(results):
    """Summary rows (SPEC columns) from the final rows of the per-run CSVs, for a sweep that has
    not written summary.csv yet. Returns [] when there are none."""
    groups = {}
    for f in common.csv_files(os.path.join(results, "synthetic", "runs")):
        if f.endswith(".dump.csv"):
            continue
        final = [r for r in (common.read_csv(f) or []) if r.get("phase") == "final"]
        if final:
            r = final[-1]
            groups.setdefault((r["task"], r["model"], r.get("fpa_backward", "n/a"), r["head_dim"]), []).append(r)
    rows = []
    for (task, model, grad, hd), g in sorted(groups.items()):
        mass = [num(r["mass"]) for r in g]
        mu = common.mean(mass)
        rows.append({"task": task, "model": model, "fpa_backward": grad, "head_dim": hd, "seeds_run": str(len(g)),
                     "seeds_converged": str(sum(r["converged"] == "1" for r in g)), "mass_mean": repr(mu),
                     "mass_std": repr(math.sqrt(common.mean([(m - mu) ** 2 for m in mass]))),
                     "mass2n_mean": repr(common.mean([num(r["mass2n"]) for r in g])),
                     "nmse_mean": repr(common.mean([num(r["nmse"]) for r in g])),
                     "nmse2n_mean": repr(common.mean([num(r["nmse2n"]) for r in g])), "runs_missing": "-"})
    return rows


def run_setting(results):
    """Training length, steps, heads from the per-run CSVs (final rows) and their sidecars."""
    files = [f for f in common.csv_files(os.path.join(results, "synthetic", "runs")) if not f.endswith(".dump.csv")]
    ns, steps, heads, seeds = set(), set(), set(), set()
    for f in files:
        side = common.read_sidecar(f)
        cfg = side.get("config", {})
        if cfg:
            ns.add(cfg.get("length", "?"))
            steps.add(cfg.get("steps", "?"))
            heads.add(cfg.get("heads", "?"))
            seeds.add(str(side.get("seed", "?")))
    if not files:
        return ""
    def show(s):
        return ",".join(sorted(s, key=lambda x: (len(x), x))) if s else "?"
    return f"n={show(ns)} (held out at n and 2n), {show(steps)} steps, heads={show(heads)}"


def convergence_figure(rows, out):
    import matplotlib.pyplot as plt
    dims = sorted({r["head_dim"] for r in rows}, key=lambda d: int(num(d, 0)))
    tasks = sorted({r["task"] for r in rows}, key=task_sort)
    models = sorted({model_key(r) for r in rows}, key=model_sort)
    fig, axes = plt.subplots(1, len(dims), figsize=(max(5.5, 1.6 * len(tasks) * len(dims) + 1.5), 3.4),
                             squeeze=False, sharey=True)
    width = 0.8 / max(len(models), 1)
    for ax, d in zip(axes[0], dims):
        for mi, m in enumerate(models):
            base = m.split("/")[0]
            hatch = "//" if m == "fpa/exact" else None
            for ti, t in enumerate(tasks):
                hit = [r for r in rows if r["head_dim"] == d and r["task"] == t and model_key(r) == m]
                if not hit:
                    continue
                conv, run = int(num(hit[0]["seeds_converged"], 0)), int(num(hit[0]["seeds_run"], 0))
                frac = conv / run if run else 0.0
                x = ti - 0.4 + width * (mi + 0.5)
                ax.bar(x, frac, width * 0.92, color=style.colour(base), hatch=hatch, edgecolor="white",
                       label=model_label(m) if ti == 0 else None)
                if conv == 0:  # a zero bar is invisible: mark its place in the model's colour
                    ax.plot([x - width * 0.4, x + width * 0.4], [0.005, 0.005], color=style.colour(base), linewidth=3,
                            solid_capstyle="butt", clip_on=False)
                ax.text(x, frac + 0.02, f"{conv}/{run}", ha="center", va="bottom", fontsize=7, rotation=90)
        ax.set_xticks(range(len(tasks)))
        ax.set_xticklabels(tasks)
        ax.set_ylim(0, 1.3)
        ax.set_yticks([0, 0.25, 0.5, 0.75, 1.0])
        ax.set_title(f"head dim {d}")
        ax.set_xlabel("task")
    axes[0][0].set_ylabel("fraction of seeds converged")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.tight_layout(rect=(0, 0, 1, 0.88))
    fig.legend(handles, labels, loc="upper center", ncol=len(models), bbox_to_anchor=(0.5, 1.0), frameon=False)
    return style.save(fig, out, "synthetic_convergence")


# ---- dumps -------------------------------------------------------------------------------------

def parse_run_name(name):
    """'<task>-<model>[-<grad>]-d<hd>-s<seed>' (the sweep's run names) -> dict, or None."""
    parts = name.split("-")
    for mi, p in enumerate(parts):
        if p in ("softmax", "fox", "fpa") and mi > 0:
            rest = parts[mi + 1:]
            dpart = [x for x in rest if x.startswith("d") and x[1:].isdigit()]
            spart = [x for x in rest if x.startswith("s") and x[1:].isdigit()]
            grad = "-".join(x for x in rest if x not in dpart + spart) or "n/a"
            return {"task": "-".join(parts[:mi]), "model": p, "fpa_backward": grad if p == "fpa" else "n/a",
                    "head_dim": dpart[0][1:] if dpart else "?", "seed": spart[0][1:] if spart else "?"}
    return None


def find_dumps(results):
    dumps = []
    for f in common.csv_files(os.path.join(results, "synthetic")):
        try:
            with open(f) as fh:
                header = fh.readline().strip().split(",")
        except OSError:
            continue
        if header[:len(DUMP_COLUMNS)] != DUMP_COLUMNS:
            continue
        base = os.path.basename(f)[:-4]
        for suffix in (".dump", "-dump", "_dump", ".attention"):
            if base.endswith(suffix):
                base = base[: -len(suffix)]
        info = parse_run_name(base)
        if info:
            info["path"] = f
            info["rel"] = os.path.relpath(f, results)
            dumps.append(info)
    dumps.sort(key=lambda d: (task_sort(d["task"]), d["rel"]))
    return dumps


def load_dump(path):
    rows = common.read_csv(path) or []
    n = 1 + max((int(num(r["j"], 0)) for r in rows if r["j"] != ""), default=-1)
    heads = 1 + max((int(num(r["head"], 0)) for r in rows if r["head"] != ""), default=0)
    att = np.zeros((heads, n, n))
    target = np.zeros((n, n))
    field = np.full((heads, n), np.nan)
    true_field = np.full(n, np.nan)
    types = [""] * n
    for r in rows:
        k = r["kind"]
        if k == "attention":
            att[int(r["head"]), int(r["i"]), int(r["j"])] = num(r["value"])
        elif k == "target":
            target[int(r["i"]), int(r["j"])] = 1.0
        elif k == "field":
            field[int(r["head"]), int(r["j"])] = num(r["value"])
        elif k == "true_field":
            true_field[int(r["j"])] = num(r["value"])
        elif k == "type":
            types[int(r["j"])] = r["label"]
    return {"att": att, "target": target, "field": field, "true_field": true_field, "types": types, "n": n}


def target_mass(att, target):
    """Per head: mean over queries of the attention mass on the target set."""
    return [(att[h] * target).sum(axis=1).mean() for h in range(att.shape[0])]


def pick_example(dumps):
    """One task where softmax, FoX and FPA dumps share a seed and head dim (prefer erase, then
    FPA's straight-through mode)."""
    by = {}
    for d in dumps:
        by.setdefault((d["task"], d["head_dim"], d["seed"]), []).append(d)
    cands = []
    for key, ds in by.items():
        models = {x["model"] for x in ds}
        if {"softmax", "fox", "fpa"} <= models:
            cands.append(key)
    if not cands:
        return None, None
    pref = ["erase", "brackets", "dips"]
    cands.sort(key=lambda k: (pref.index(k[0]) if k[0] in pref else 9, int(num(k[1], 0)), int(num(k[2], 0))))
    key = cands[0]
    chosen = {}
    for x in sorted(by[key], key=lambda x: (x["fpa_backward"] != "straight-through", x["rel"])):
        chosen.setdefault(x["model"], x)
    return key, chosen


def attention_figure(dumps, out):
    import matplotlib.pyplot as plt
    key, chosen = pick_example(dumps)
    if not key:
        return None
    task, hd, seed = key
    data = {m: load_dump(chosen[m]["path"]) for m in ("softmax", "fox", "fpa")}
    n = data["fpa"]["n"]
    show = min(n, 48)  # a readable window: the first 48 queries and keys
    fig, axes = plt.subplots(1, 4, figsize=(13, 3.6))
    panels = [("target sets $S_i$", data["fpa"]["target"], None)]
    for m in ("softmax", "fox", "fpa"):
        att = data[m]["att"]
        masses = target_mass(att, data[m]["target"])
        h = int(np.argmax(masses))
        label = style.label(m) + (f" ({chosen[m]['fpa_backward']})" if m == "fpa" else "")
        panels.append((f"{label}, head {h}\ntarget mass {masses[h]:.2f}", att[h], m))
    for ax, (title, mat, m) in zip(axes, panels):
        if m is not None:  # each row divided by its maximum: late rows spread over many keys
            mat = mat / np.maximum(mat.max(axis=1, keepdims=True), 1e-12)
        masked = np.ma.masked_where(np.triu(np.ones_like(mat), 1) > 0, mat)[:show, :show]
        im = ax.imshow(masked, cmap="Greens" if m is None else "viridis", vmin=0, vmax=1, interpolation="nearest")
        ax.set_title(title, color="black" if m is None else style.colour(m))
        ax.set_xlabel("key position j")
        ax.grid(False)
        if m is not None:
            cb = fig.colorbar(im, ax=ax, fraction=0.046, pad=0.03)
            cb.set_label("$a_{ij}$ / max$_j$ $a_{ij}$ (row-normalised)", fontsize=8)
    axes[0].set_ylabel("query position i")
    fig.suptitle(f"Task '{task}', head dim {hd}, seed {seed}: attention on one held-out sequence "
                 f"(first {show} of {n} positions)", y=1.02)
    fig.tight_layout()
    name = style.save(fig, out, "synthetic_attention_maps")
    return name, (f"Attention maps of softmax, FoX and FPA on one held-out '{task}' sequence next to the "
                  f"target sets (from {', '.join(chosen[m]['rel'] for m in ('softmax', 'fox', 'fpa'))}).")


ALIVE_MARGIN = 0.5  # half a ground-truth step: how far a key may sit above the running minimum


def alive_sets(phi, tau):
    n = len(phi)
    alive = np.zeros((n, n))
    for i in range(n):
        run_min = math.inf
        for j in range(i, -1, -1):
            run_min = min(run_min, phi[j])
            if run_min - phi[j] >= -tau:
                alive[i, j] = 1.0
    return alive


def field_figure(dumps, out):
    import matplotlib.pyplot as plt
    fpa = [d for d in dumps if d["model"] == "fpa"]
    if not fpa:
        return None
    key, chosen = pick_example(dumps)
    d = chosen["fpa"] if key else sorted(fpa, key=lambda x: (x["fpa_backward"] != "straight-through", x["rel"]))[0]
    data = load_dump(d["path"])
    n = data["n"]
    show = min(n, 48)
    masses = target_mass(data["att"], data["target"])
    h = int(np.argmax(masses))
    learned = data["field"][h]
    true = data["true_field"]
    # The bias is invariant to a constant shift and the learned field has its own scale: fit
    # learned ~ a * true + b by least squares to draw both on the true field's axis.
    a, b = np.polyfit(true, learned, 1) if np.std(true) > 0 else (1.0, 0.0)
    scaled = (learned - b) / a if abs(a) > 1e-12 else learned
    learned_alive = alive_sets(list(scaled), ALIVE_MARGIN)
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(8, 7), gridspec_kw={"height_ratios": [1, 1.6]}, sharex=True)
    x = np.arange(show)
    ax1.step(x, true[:show], where="mid", color="black", label="ground-truth field")
    ax1.step(x, scaled[:show], where="mid", linestyle="--", marker="o", ms=3, color=style.colour("fpa"),
             label=f"learned FPA field, head {h} (affine fit: scale {a:.2f})")
    q = show - 1
    alive_q = data["target"][q, :show] > 0
    ax1.scatter(x[alive_q], true[:show][alive_q], s=60, facecolors="none", edgecolors="red", zorder=5,
                label=f"alive keys at query {q}")
    ax1.set_ylabel("field level $\\phi_t$ (ground-truth units)")
    ax1.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=3, frameon=False)
    fig.suptitle(f"Task '{d['task']}', FPA ({d['fpa_backward']}), head dim {d['head_dim']}, seed {d['seed']}: "
                 f"one held-out sequence (first {show} of {n} positions)", fontsize=10)
    types = data["types"][:show]
    img = data["target"][:show, :show].copy()
    mism = (learned_alive[:show, :show] != data["target"][:show, :show]) & (np.tril(np.ones((show, show))) > 0)
    img[mism] = 0.5
    ax2.imshow(np.ma.masked_where(np.triu(np.ones_like(img), 1) > 0, img), cmap="Greys", vmin=0, vmax=1,
               interpolation="nearest", aspect="auto")
    ax2.set_ylabel("query position i")
    ax2.set_xlabel("key position j (token type below)")
    ax2.set_title(f"alive sets $S_i$ (black); grey: learned field (margin {ALIVE_MARGIN:g}) disagrees "
                  f"({int(mism.sum())} of {show * (show + 1) // 2} pairs)")
    ax2.grid(False)
    ax2.set_xticks(x)
    ax2.set_xticklabels(types, rotation=90, fontsize=6)
    fig.tight_layout()
    name = style.save(fig, out, "synthetic_field")
    return name, (f"A ground-truth field trajectory with its alive sets, and the learned FPA field "
                  f"(from {d['rel']}).")
