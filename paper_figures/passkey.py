"""Passkey retrieval with a compressed KV cache (claim C6): accuracy heatmaps (evaluation length x
key depth) per variant and policy, and accuracy against cache occupancy. Reads
results/passkey/summary.csv and the per-cell CSVs under results/passkey/ (any CSV with the columns
variant, eval_len, depth, policy, accuracy)."""
import json
import math
import os

import common
import passkey_natural
import passkey_natural_trained
import passkey_scale
import passkey_sweep
import passkey_verdict
import style
from common import Table, num
from constants import KEPT, LEARNED_KEYS, LEARNED_MIN, OCCUPANCY_MAX
from passkey_common import keys_at_8l, keys_text, policy_name, policy_sort, run_sort
from passkey_verdict import per_run

SUMMARY_COLUMNS = ["variant", "train_len", "eval_len", "policy", "budget", "occupancy", "accuracy",
                   "n_keys", "decode_ms_per_token"]
CELL_COLUMNS = ["variant", "eval_len", "depth", "policy", "accuracy"]

# One marker per policy label (up to 12): style.MARKERS has too few for every budget variant.
POLICY_MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*", "h", "<", ">", "p"]


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


def load(results):
    """What C6 is judged on, read without drawing: the summary rows, their cells merged over
    seeds, every run with the compression sweep's 8L cells merged in, the sweep and the occupancy
    floor. None when results/passkey/summary.csv is missing or lacks a column."""
    path = os.path.join(results, "passkey", "summary.csv")
    rows = common.read_csv(path)
    if not common.has_columns(rows, SUMMARY_COLUMNS, path):
        return None
    runs = per_run(rows)
    sweep = passkey_sweep.load(results)
    if sweep:
        passkey_verdict.merge_sweep(runs, sweep)
    return {"rows": rows, "agg": aggregate(rows), "runs": runs, "sweep": sweep,
            "floor": passkey_scale.load(results), "natural": passkey_natural.load(results),
            "natural_trained": passkey_natural_trained.load(results)}


def claims(data):
    """{"C6": its claim} from load's data, with the sweep's and the floor's lines beside it."""
    if data is None:
        return {"C6": passkey_verdict.empty()}
    runs, sweep, floor = data["runs"], data["sweep"], data["floor"]
    claim = passkey_verdict.decide(runs, data["agg"], keys_at_8l(data["rows"]),
                                   keys_at_8l(sweep["rows"]) if sweep else ())
    if sweep:
        claim.links += ["figures/passkey_compression.png", "figures/passkey_compression.md", "passkey/sweep/summary.csv"]
        best = passkey_sweep.field_best(sweep, runs)
        if best:
            claim.details.append(best)
    if floor:
        claim.details.append(passkey_verdict.trend_line(floor))
        claim.links.append("figures/passkey_occupancy_floor.png")
    natural = data["natural"] and passkey_natural.claim_line(data["natural"])
    if natural:
        claim.details.append(natural)
        claim.links += ["figures/passkey_natural.md", "figures/passkey_natural.png", data["natural"]["rel"]]
    trained = data["natural_trained"] and passkey_natural_trained.claim_line(data["natural_trained"], data["natural"])
    if trained:
        claim.details.append(trained)
        claim.links += (["figures/passkey_natural_trained.md", "figures/passkey_natural_trained.png"] +
                        data["natural_trained"]["rels"])
    return {"C6": claim}


def build(results, out):
    sec, data = common.judged_section("passkey", "Passkey retrieval with a compressed cache (C6)", results, load, claims)
    if data is None:
        sec.tables.append(common.not_run_table("passkey_accuracy", "Passkey retrieval: accuracy per variant, length "
                                               "and policy", ["variant", "eval length", "policy", "accuracy"]))
        return sec
    sec.status = "run"
    sec.sources.append("passkey/summary.csv")
    agg, runs, sweep, floor = data["agg"], data["runs"], data["sweep"], data["floor"]
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
    if sweep:
        sec.sources.append(sweep["rel"])
    training = training_logs(results)
    sec.sources += sorted({t["rel"] for t in training.values()})
    sec.tables.append(run_table(runs, training))
    sec.tables.append(compute_table(runs, training, results))
    probes = load_probes(results)
    if probes:
        sec.tables.append(probe_table(probes, runs))
        sec.sources += sorted({p["rel"] for p in probes.values()})
    sec.figures.append(occupancy_figure(runs, out))
    cells = load_cells(results)
    if cells:
        for v in sorted({c["variant"] for c in cells}, key=style.variant_sort_key):
            sec.figures.append(heatmap_figure([c for c in cells if c["variant"] == v], v, out))
        sec.sources += sorted({c["rel"] for c in cells})
    else:
        sec.notes.append("No per-cell passkey CSV (with a depth column) under results/passkey/: heatmaps not drawn.")
    if sweep:
        sec.figures.append(passkey_sweep.figure(sweep, runs, out))
        sec.tables += passkey_sweep.table(sweep, runs)
    if floor:
        sec.figures.append(passkey_scale.figure(floor, out))
        sec.tables.append(passkey_scale.table(floor))
    if data["natural"]:
        sec.sources.append(data["natural"]["rel"])
        sec.tables.append(passkey_natural.table(data["natural"]))
        sec.figures.append(passkey_natural.figure(data["natural"], out))
    if data["natural_trained"]:
        sec.sources += data["natural_trained"]["rels"]
        sec.tables.append(passkey_natural_trained.table(data["natural_trained"]))
        sec.figures.append(passkey_natural_trained.figure(data["natural_trained"], out))
    return sec


def training_logs(results):
    """Steps to learn per run, from the training logs (train-<run>.csv) in the folder that
    summary.csv was merged from: the first held-out check at or above the run's
    --learned-accuracy, and the last step trained. Logs without held-out checks give None."""
    out = {}
    for path in sorted(common.csv_files(runs_folder(results), "train-*.csv")):
        rows = common.read_csv(path)
        if not rows or "step" not in rows[0]:
            continue
        config = common.read_sidecar(path).get("config", {})
        threshold = num(config.get("learned-accuracy"), math.nan)
        learned_at = None
        if "heldout_acc" in rows[0] and not math.isnan(threshold):
            learned_at = next((int(num(r["step"])) for r in rows
                               if r["heldout_acc"] not in ("", None) and num(r["heldout_acc"]) >= threshold), None)
        checked = "heldout_acc" in rows[0] and any(r["heldout_acc"] for r in rows)
        out[os.path.basename(path)[len("train-"):-len(".csv")]] = {
            "rel": os.path.relpath(path, results), "learned_at": learned_at, "checked": checked,
            "last_step": int(num(rows[-1]["step"], 0)), "cap": int(num(config.get("steps"), 0)),
            "check_keys": config.get("check-keys", ""),
            "train_s": num(rows[-1].get("elapsed_s"), math.nan)}
    return out


def learned_cell(run, training):
    t = training.get(run["run"])
    if not t or not t["checked"]:
        return "-"
    if t["learned_at"] is not None:
        return str(t["learned_at"])
    return f"not by {t['last_step']}" + (" (cap)" if t["last_step"] >= t["cap"] > 0 else " (still training)")


def run_table(runs, training):
    prompts = keys_text({int(t["check_keys"]) for t in training.values() if str(t["check_keys"]).isdigit()})
    table = Table("passkey_runs", "Passkey retrieval per run: learned or not, and what each keeps at 8L",
                  ["run", "variant", "held-out check passed at step", "full cache at L", "learned",
                   "full cache at 8L", f"best at 8L with occupancy <= {OCCUPANCY_MAX}",
                   "smallest occupancy with 1.0 at 8L"],
                  note=f"A run has learned the task when its full-cache accuracy at L is >= {LEARNED_MIN} "
                       f"(passkey-eval, >= {LEARNED_KEYS} keys). The held-out check is the training's own "
                       f"stopping rule ({prompts or 'its'} prompts at L, teacher-forced greedy). Best at 8L: the compressed "
                       "policy with the highest accuracy among those whose achieved occupancy is at most "
                       f"{OCCUPANCY_MAX}; smallest occupancy: over the policies evaluated (full cache = 1).")
    for run in sorted(runs.values(), key=run_sort):
        best = run["best_small"]
        table.add(run["run"], style.label(run["variant"]), learned_cell(run, training), run["acc_L"],
                  "yes" if run["learned"] else "no", run["acc_8L_full"],
                  f"{best[1]['accuracy']:.2f} ({best[0]}, {best[1]['occupancy']:.2f})" if best else "-",
                  f"{run['min_perfect'][0]:.2f} ({run['min_perfect'][1]})" if run["min_perfect"] else "none")
    return table


def compute_table(runs, training, results):
    """The profile's compute per run: training (the log's elapsed_s, resumed sessions included),
    evaluation and probe (their sidecars' wall_s), in hours of one single-threaded process."""
    folder = runs_folder(results)
    table = Table("passkey_compute", "Passkey profile: compute per run (hours of one single-threaded process)",
                  ["run", "training", "evaluation", "probe", "total"],
                  timing=["training", "evaluation", "probe", "total"],
                  note="Training: the log's elapsed_s (summed over resumed sessions); evaluation and probe: "
                       "their sidecars' wall_s. Runs shared 2 cores with 1-4 other processes, so each figure "
                       "is inflated by that sharing; the profile's wall time is the total divided by the "
                       "processes run at once.")
    totals = [0.0, 0.0, 0.0]

    def wall_h(path):
        return num(common.read_sidecar(path).get("wall_s"), math.nan) / 3600 if os.path.exists(path) else math.nan

    for run in sorted(runs.values(), key=run_sort):
        t = training.get(run["run"], {})
        parts = [num(t.get("train_s"), math.nan) / 3600,
                 wall_h(os.path.join(folder, run["run"] + ".csv")),
                 wall_h(os.path.join(folder, "probe-" + run["run"] + ".csv"))]
        for i, x in enumerate(parts):
            totals[i] += 0.0 if math.isnan(x) else x
        table.add(run["run"], *[f"{x:.2f}" if not math.isnan(x) else "-" for x in parts],
                  f"{sum(x for x in parts if not math.isnan(x)):.2f}")
    table.add(f"all {len(runs)} runs", *[f"{x:.2f}" for x in totals], f"{sum(totals):.2f}")
    return table


def runs_folder(results):
    folder = os.path.join(results, "passkey")
    try:
        with open(os.path.join(folder, "summary.csv.json")) as f:
            return os.path.join(folder, json.load(f).get("runs_dir", "."))
    except (OSError, ValueError):
        return folder


def load_probes(results):
    """passkey-probe CSVs (probe-<run>.csv) beside the runs merged into summary.csv."""
    out = {}
    for path in common.csv_files(runs_folder(results), "probe-*.csv"):
        rows = common.read_csv(path)
        if not rows or "key_kept_certified" not in rows[0]:
            continue
        out[os.path.basename(path)[len("probe-"):-len(".csv")]] = {"rel": os.path.relpath(path, results),
                                                                   "rows": rows}
    return out


def median(xs):
    xs = sorted(x for x in xs if not math.isnan(x))
    if not xs:
        return math.nan
    m = len(xs) // 2
    return xs[m] if len(xs) % 2 else 0.5 * (xs[m - 1] + xs[m])


def probe_table(probes, runs):
    """Per run and head at the longest probed length: what fpa-certified keeps, and how often the
    key survives the T5 threshold and the budget cut-offs (the probe's --budget) at the answer query."""
    probed = {num(r["budget"]) for p in probes.values() for r in p["rows"] if r.get("budget")}
    budget = "/".join(f"{b:.0%}" for b in sorted(probed)) + " " if probed else ""  # '25% ', or nothing
    table = Table("passkey_heads", "Where the key sits at the answer query, per head (longest evaluated length, full cache)",
                  ["run", "learned", "eval len", "layer", "head", "entries kept by fpa-certified",
                   "prompts with the key above the T5 threshold", f"... above the per-head {budget}cut-off",
                   f"... above the shared {budget}cut-off", "median key bias", "median T5 threshold"],
                  note="From passkey-probe: each evaluation prompt prefilled with a full cache; at the answer "
                       "query, per head, the key's bias (the highest over its digit positions), the T5 threshold "
                       f"-(2R + log(n/eps)) and the bias of the last entry a {budget}budget would keep if it ranked "
                       "the full cache at that query (per head, or one pool shared by every head of every "
                       "layer). A head that keeps every entry (fraction 1.00) has a field that never dipped "
                       "below any key: such heads set a floor under the occupancy of any policy that keeps "
                       "what they see.")
    for name in sorted(probes, key=lambda n: run_sort(runs[n]) if n in runs else ("", n)):
        rows = probes[name]["rows"]
        longest = max(int(num(r["eval_len"], 0)) for r in rows)
        sel = [r for r in rows if int(num(r["eval_len"], 0)) == longest]
        heads = sorted({(int(num(r["layer"])), int(num(r["head"]))) for r in sel})
        learned = runs[name]["learned"] if name in runs else None
        for layer, head in heads:
            hs = [r for r in sel if int(num(r["layer"])) == layer and int(num(r["head"])) == head]
            frac = lambda col: common.mean([num(r[col]) for r in hs])
            table.add(name, "-" if learned is None else ("yes" if learned else "no"), str(longest), str(layer),
                      str(head), frac("kept_certified"), frac("key_kept_certified"), frac("key_kept_per_head"),
                      frac("key_kept_shared"), median([num(r["key_bias"]) for r in hs]),
                      median([num(r["threshold"]) for r in hs]))
    return table


POLICY_COLOURS = ["#000000", "#D55E00", "#0072B2", "#CC79A7", "#009E73", "#E69F00", "#56B4E9", "#F0E442"]


def policy_family(label):
    """'budget 25% per head' -> 'budget per head'; 'window 50%' -> 'window'; others unchanged."""
    words = [w for w in label.split(" ") if not w.endswith("%")]
    return " ".join(words)


def occupancy_figure(runs, out):
    """Accuracy at 8L against achieved occupancy: a panel per variant, learned runs only, one line
    per (run, policy family) through its budgets and the full cache."""
    import matplotlib.pyplot as plt
    variants = sorted({r["variant"] for r in runs.values()}, key=style.variant_sort_key)
    families = sorted({policy_family(p) for r in runs.values() for (_, p) in r["cells"]}, key=policy_sort)
    fig, axes = plt.subplots(1, max(len(variants), 1), figsize=(3.4 * max(len(variants), 1) + 0.5, 3.7),
                             squeeze=False, sharey=True)
    for ax, v in zip(axes[0], variants):
        learned = sorted((r for r in runs.values() if r["variant"] == v and r["learned"]), key=run_sort)
        trained = sum(1 for r in runs.values() if r["variant"] == v)
        for ri, run in enumerate(learned):
            L = run["L"]
            at8 = {p: c for (e, p), c in run["cells"].items() if e == 8 * L}
            full = at8.get("full")
            for fi, fam in enumerate(families):
                pts = sorted((c["occupancy"], c["accuracy"]) for p, c in at8.items() if policy_family(p) == fam)
                if fam != "full" and full and fam not in ("fpa-certified", "certified"):
                    pts.append((full["occupancy"], full["accuracy"]))  # budget 100% = the full cache
                if not pts:
                    continue
                xs, ys = zip(*pts)
                jitter = 0.012 * (ri - (len(learned) - 1) / 2)  # runs side by side where they coincide
                ax.plot(xs, [y + jitter for y in ys], color=POLICY_COLOURS[fi % len(POLICY_COLOURS)],
                        marker=POLICY_MARKERS[fi % len(POLICY_MARKERS)], markersize=4, linewidth=0.9, alpha=0.85)
        ax.axvline(KEPT, color="grey", linestyle=":", linewidth=1)
        ax.axvspan(0, OCCUPANCY_MAX, color="grey", alpha=0.07)
        ax.set_xlim(-0.03, 1.05)
        ax.set_ylim(-0.06, 1.1)
        ax.set_title(f"{style.short_label(v)}: {len(learned)} of {trained} runs learned", color=style.colour(v))
        ax.set_xlabel("cache occupancy at 8L (kept / full)")
        if not learned:
            ax.text(0.5, 0.5, "no learned run", ha="center", va="center", transform=ax.transAxes)
    axes[0][0].set_ylabel("passkey accuracy at 8L")
    from matplotlib.lines import Line2D
    handles = [Line2D([], [], color=POLICY_COLOURS[i % len(POLICY_COLOURS)], marker=POLICY_MARKERS[i % len(POLICY_MARKERS)],
                      label=f) for i, f in enumerate(families)]
    fig.tight_layout(rect=(0, 0, 1, 0.86))
    fig.legend(handles=handles, loc="upper center", ncol=min(len(handles), 6), bbox_to_anchor=(0.5, 1.0), frameon=False)
    return style.save(fig, out, "passkey_occupancy"), (
        "Passkey accuracy at 8x the training length against achieved cache occupancy, learned runs only "
        "(one line per run and policy, through its budgets and the full cache; runs are offset vertically "
        f"by a hair so coinciding lines stay visible; shaded: occupancy <= {OCCUPANCY_MAX}).")


def load_cells(results):
    """Per-cell CSVs of the runs merged into summary.csv (the folder its sidecar names)."""
    cells = []
    for f in common.csv_files(runs_folder(results)):
        if os.path.basename(f) == "summary.csv":
            continue
        rows = common.read_csv(f)
        if not rows or any(c not in rows[0] for c in CELL_COLUMNS):
            continue
        rel = os.path.relpath(f, results)
        for r in rows:
            cells.append({"rel": rel, "variant": r["variant"], "run": r.get("run") or r["variant"], "train_len": int(num(r.get("train_len", "0"), 0)),
                          "eval_len": int(num(r["eval_len"], 0)), "depth": num(r["depth"]),
                          "policy": policy_name(r),
                          "accuracy": num(r["accuracy"]), "n": num(r.get("n_keys", "1"), 1)})
    return cells


def heatmap_figure(cells, variant, out):
    """One figure per variant: a row per run, a column per policy, each panel accuracy by
    evaluation length and key depth (cividis: readable in grey and by colour-blind readers)."""
    import matplotlib.pyplot as plt
    import numpy as np
    run_names = sorted({c["run"] for c in cells})
    policies = sorted({c["policy"] for c in cells}, key=policy_sort)
    lens = sorted({c["eval_len"] for c in cells})
    depths = sorted({round(c["depth"], 3) for c in cells})
    fig, axes = plt.subplots(len(run_names), len(policies),
                             figsize=(1.75 * len(policies) + 1.4, 1.45 * len(run_names) + 0.9),
                             squeeze=False, sharex=True, sharey=True)
    im = None
    for ri, run in enumerate(run_names):
        for pi, p in enumerate(policies):
            ax = axes[ri][pi]
            ax.grid(False)
            if ri == 0:
                ax.set_title(p, fontsize=8)
            if pi == 0:
                ax.set_ylabel(f"{run}\nkey depth", fontsize=8)
            if ri == len(run_names) - 1:
                ax.set_xlabel("eval length", fontsize=8)
            sel = [c for c in cells if c["run"] == run and c["policy"] == p]
            if not sel:
                ax.text(0.5, 0.5, "not run", ha="center", va="center", transform=ax.transAxes, fontsize=7)
                continue
            acc = np.zeros((len(depths), len(lens)))
            wsum = np.zeros_like(acc)
            for c in sel:
                i, j = depths.index(round(c["depth"], 3)), lens.index(c["eval_len"])
                acc[i, j] += c["accuracy"] * c["n"]
                wsum[i, j] += c["n"]
            acc = np.ma.masked_where(wsum == 0, acc / np.maximum(wsum, 1e-12))
            im = ax.imshow(acc, cmap="cividis", vmin=0, vmax=1, aspect="auto", origin="lower")
            for i in range(len(depths)):  # the numbers, so a reader need not decode colours
                for j in range(len(lens)):
                    if wsum[i, j] > 0:
                        ax.text(j, i, f"{acc[i, j]:.2f}".replace("0.", ".").replace("1.00", "1"), ha="center",
                                va="center", fontsize=6.5, color="black" if acc[i, j] > 0.55 else "white")
            L = sel[0]["train_len"]
            ax.set_xticks(range(len(lens)))
            ax.set_xticklabels([f"{l / L:g}L" if L else str(l) for l in lens], fontsize=7)
            ax.set_yticks(range(len(depths)))
            ax.set_yticklabels([f"{d:g}" for d in depths], fontsize=7)
    if im is not None:
        cb = fig.colorbar(im, ax=axes, fraction=0.02, pad=0.02)
        cb.set_label("passkey accuracy")
    fig.suptitle(f"{style.label(variant)}: passkey accuracy by evaluation length (multiples of L) and key depth, "
                 "per run (rows) and cache policy (columns)", fontsize=9,
                 y=1.0 + 0.2 / fig.get_size_inches()[1])
    safe = variant.replace("/", "_")
    return style.save(fig, out, f"passkey_heatmaps_{safe}"), (
        f"{style.label(variant)}: passkey accuracy per run (rows) and cache policy (columns), by evaluation "
        "length and key depth.")
