"""Language models (claim C5): perplexity and bits per byte per variant, loss against token
position. Reads results/lm/summary.csv and every per-position CSV under results/lm/ (columns
variant, position, val_loss, test_loss, ... as lm-eval --positions writes them)."""
import glob
import math
import os

import common
import lm_compress
import lm_gpu
import lm_verdict
import style
from common import Table, num
from lm_verdict import preset_rank

CONFIGS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "configs")

SUMMARY_COLUMNS = ["preset", "variant", "params", "train_tokens", "tokens_per_s", "val_ppl",
                   "test_ppl", "test_bpb"]
POSITION_COLUMNS = ["variant", "position", "test_loss"]
SMOOTH = 0.2  # moving mean over +-20% of the position: a constant width on the log position axis


def load(results):
    """What C5 is judged on, read without drawing: the summary rows (lm/reproduce.sh writes
    summary.csv last; until then the per-run summary-*.csv so far), their means per preset and
    variant, and lm-eval's bytes per document. None without usable rows."""
    path = os.path.join(results, "lm", "summary.csv")
    rows = common.read_csv(path)
    partial = []
    if rows is None:
        for f in sorted(glob.glob(os.path.join(results, "lm", "summary-*.csv"))):
            more = common.read_csv(f)
            if common.has_columns(more, SUMMARY_COLUMNS, f):
                rows = (rows or []) + more
                partial.append(os.path.relpath(f, results))
    if not common.has_columns(rows, SUMMARY_COLUMNS, path):
        return None
    keys, agg = lm_verdict.aggregate(rows)
    return {"partial": partial, "keys": keys, "agg": agg, "cap": eval_cap(results)}


def claims(data):
    """{"C5": its claim} from load's data."""
    return {"C5": lm_verdict.decide(data["agg"], data["cap"]) if data else lm_verdict.empty()}


def build(results, out):
    sec, data = common.judged_section("lm", "Language models (C5)", results, load, claims)
    if data is None:
        sec.tables.append(common.not_run_table("lm_perplexity", "Language models: perplexity per variant",
                                               ["preset", "variant", "test ppl"]))
        positions = load_positions(results)
        if positions:
            sec.figures.append(position_figure(positions, out))
            sec.status = "partial"
        lm_gpu.build(results, out, sec, CONFIGS)
        return sec
    sec.status = "run"
    sec.sources.append("lm/summary.csv")
    if data["partial"]:
        sec.status = "partial: no lm/summary.csv yet; rows from " + ", ".join(data["partial"])
        sec.sources = data["partial"]
    keys, agg = data["keys"], data["agg"]
    table = Table("lm_perplexity", "Language models: test perplexity over seeds per preset and variant (byte-level)",
                  ["preset", "variant", "seeds", "params", "train tokens", "val ppl", "test ppl mean",
                   "test ppl std", "test bpb", "tokens/s"], timing=["tokens/s"],
                  note="Perplexity per byte (byte-level tokens); means over seeds, std: sample standard "
                       "deviation over seeds ('-' for one seed); bpb: bits per byte; tokens/s: training "
                       "throughput, mean over seeds (lowest-highest seed in brackets; a timing column: seeds "
                       "trained on different machines or beside other work, so the column is no speed "
                       "comparison between variants; results/bench/attention.csv times the kernels).")
    for k in keys:
        a = agg[k]
        table.add(k[0], style.label(k[1]), str(a["runs"]), f"{a['params'] / 1e6:.3f}M",
                  f"{a['train_tokens'] / 1e6:.2f}M", a["val_ppl"], a["test_ppl"], a["test_ppl_std"], a["test_bpb"],
                  tokens_per_s_cell(a))
    sec.tables.append(table)
    sec.figures.append(perplexity_figure(keys, agg, out))
    curves = load_curves(results)
    if curves:
        sec.figures.append(curves_figure(curves, out))
    positions = load_positions(results)
    if positions:
        sec.figures.append(position_figure([d for d in positions if d["seed"] == "0"], out))
        fig = position_difference_figure(positions, out)
        if fig:
            sec.figures.append(fig)
        sec.sources += sorted({p["rel"] for p in positions})
    else:
        sec.notes.append("No per-position loss CSV found under results/lm/: loss-vs-position figure not drawn.")
    gap = lm_verdict.gap_by_size(agg)
    if gap:
        sec.figures.append(gap_figure(gap, out))
    compress = lm_compress.load(results)
    if compress:
        sec.figures.append(lm_compress.figure(compress, out))
        sec.tables.append(lm_compress.table(compress))
        sec.sources.append(compress["rel"])
    lm_gpu.build(results, out, sec, CONFIGS)  # training speed on a GPU, where the device check ran
    return sec


def tokens_per_s_cell(a):
    """Mean training tokens/s, with the seeds' range where more than one ran: a mean alone would hide
    that the seeds' timings came from different machines and loads."""
    lo, hi = a["tokens_per_s_range"]
    return f"{a['tokens_per_s']:.0f}" if a["runs"] < 2 else f"{a['tokens_per_s']:.0f} ({lo:.0f}-{hi:.0f})"


def gap_figure(gap, out):
    """FPA - FoX relative test perplexity against parameters: each seed a point, the mean with its
    95% interval where 2 or more seeds ran."""
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(5.2, 3.4))
    for p, params, per_seed, mean_d, half, n in gap:
        xs = [params] * len(per_seed)
        ax.plot(xs, [100 * d for d in per_seed.values()], "o", color=style.colour("fpa"), alpha=0.35,
                markersize=4, linestyle="none")
        ax.errorbar([params], [100 * mean_d], yerr=[[100 * half], [100 * half]] if n >= 2 else None,
                    fmt="s", color="black", capsize=4, markersize=5)
        ax.annotate(f"{p} ({n} seed{'s' if n != 1 else ''})", (params, 100 * mean_d), textcoords="offset points",
                    xytext=(6, 6), fontsize=8)
    ax.axhline(0, color="grey", linewidth=0.8, linestyle=":")
    ax.set_xscale("log")
    ax.margins(x=0.4)  # room on the right for the largest preset's label
    ax.set_xlabel("parameters (FPA)")
    ax.set_ylabel("FPA - FoX test perplexity (% of FoX)")
    fig.tight_layout()
    return style.save(fig, out, "lm_gap_by_size"), (
        "Claim C5's deciding quantity against model size: FPA - FoX test perplexity relative to FoX, paired "
        "by seed; faded points are seeds, squares the mean with its 95% Student t interval (2+ seeds).")


def eval_cap(results):
    """lm-eval's --max-tokens-per-doc of the FPA summary row (0 or '' when whole documents)."""
    for name in ("summary-fpa.csv", "summary.csv"):
        side = common.read_sidecar(os.path.join(results, "lm", name))
        cap = side.get("config", {}).get("max-tokens-per-doc", "")
        if cap not in ("", "0"):
            return cap
    return ""


def perplexity_figure(keys, agg, out):
    import matplotlib.pyplot as plt
    presets = sorted({p for p, _ in keys}, key=lambda p: (preset_rank(p), p))
    fig, axes = plt.subplots(1, len(presets), figsize=(4.5 * len(presets), 3.4), squeeze=False)
    for ax, p in zip(axes[0], presets):
        vs = [v for pp, v in keys if pp == p]
        for i, v in enumerate(vs):
            a = agg[(p, v)]
            ys = [a["by_seed"][sd] for sd in sorted(a["by_seed"])]
            ax.scatter([i] * len(ys), ys, color=style.colour(v), s=18, alpha=0.7, zorder=3)
            ax.plot([i - 0.3, i + 0.3], [a["test_ppl"]] * 2, color=style.colour(v), linewidth=2.5)
            ax.text(i + 0.32, a["test_ppl"], f"{a['test_ppl']:.3f}", va="center", fontsize=7)
        ax.set_xticks(range(len(vs)))
        ax.set_xticklabels([style.label(v).replace(" (", "\n(") for v in vs], fontsize=8)
        ax.set_xlim(-0.6, len(vs) - 0.2)
        ax.set_ylabel("test perplexity (per byte)")
        ax.set_title(f"preset '{p}': a point per seed, bar = mean")
    fig.tight_layout()
    return style.save(fig, out, "lm_perplexity"), "Test perplexity per variant: every seed a point, the mean a bar."


def run_info(results):
    """name -> (preset, seed) from the summary-<name>.csv files (the run names of lm/reproduce.sh)."""
    info = {}
    for f in glob.glob(os.path.join(results, "lm", "summary-*.csv")):
        rows = common.read_csv(f) or []
        if rows:
            side = common.read_sidecar(f)
            seed = rows[0].get("seed") or side.get("config", {}).get("train-seed") or str(side.get("seed", "0"))
            info[os.path.basename(f)[len("summary-"):-4]] = (rows[0].get("preset", "?"), seed,
                                                              rows[0].get("fpa_backward", ""))
    return info


def load_curves(results):
    """Validation loss against training tokens of every train-<name>.csv (lm-train's log)."""
    info, curves = run_info(results), []
    for f in sorted(glob.glob(os.path.join(results, "lm", "train-*.csv"))):
        name = os.path.basename(f)[len("train-"):-4]
        rows = common.read_csv(f) or []
        cfg = common.read_sidecar(f).get("config", {})
        preset, seed, grad = info.get(name, (cfg.get("preset", "?"), cfg.get("seed", "?"), ""))
        pts = [(num(r["tokens"]), num(r["val_loss"])) for r in rows if r.get("val_loss")]
        if pts and grad != "exact" and cfg.get("variant"):
            curves.append({"variant": cfg["variant"], "preset": preset, "seed": seed, "pts": pts})
    return curves


def curves_figure(curves, out):
    import matplotlib.pyplot as plt
    presets = sorted({c["preset"] for c in curves}, key=lambda p: (preset_rank(p), p))
    fig, axes = plt.subplots(1, len(presets), figsize=(5 * len(presets), 3.6), squeeze=False)
    for ax, p in zip(axes[0], presets):
        seen = set()
        for c in sorted(curves, key=lambda c: (style.variant_sort_key(c["variant"]), c["seed"])):
            if c["preset"] != p:
                continue
            xs, ys = zip(*c["pts"])
            ax.plot([x / 1e6 for x in xs], [y / math.log(2) for y in ys], color=style.colour(c["variant"]),
                    linewidth=1.1, alpha=0.8, label=None if c["variant"] in seen else style.label(c["variant"]))
            seen.add(c["variant"])
        ax.set_xlabel("training tokens (millions)")
        ax.set_ylabel("validation loss (bits per byte)")
        ax.set_title(f"preset '{p}': a line per seed")
        ax.legend(fontsize=8)
    fig.tight_layout()
    return style.save(fig, out, "lm_validation_curves"), "Validation loss against training tokens, a line per run."


def load_positions(results):
    info, found = run_info(results), []
    for f in common.csv_files(os.path.join(results, "lm")):
        rows = common.read_csv(f)
        if not rows or any(c not in rows[0] for c in POSITION_COLUMNS):
            continue
        side = common.read_sidecar(f)
        ckpt = side.get("config", {}).get("checkpoint", "")
        name = os.path.basename(f)[len("positions-"):-4] if os.path.basename(f).startswith("positions-") else ""
        preset, seed, grad = info.get(name, ("?", side.get("config", {}).get("train-seed") or "0", ""))
        found.append({"rel": os.path.relpath(f, results), "variant": rows[0]["variant"],
                      "run": os.path.basename(os.path.normpath(ckpt)) if ckpt else os.path.basename(f)[:-4],
                      "preset": preset, "seed": str(seed), "fpa_backward": grad,
                      "pos": [int(num(r["position"], 0)) for r in rows],
                      "loss": [num(r["test_loss"]) for r in rows],
                      "windows": [num(r.get("test_windows", "1"), 1) for r in rows]})
    found.sort(key=lambda d: (style.variant_sort_key(d["variant"]), d["rel"]))
    return found


def position_difference_figure(positions, out):
    """FPA minus FoX test loss by position, per seed both ran (paired), per preset: the mean over
    seeds and the band from the lowest to the highest seed."""
    import matplotlib.pyplot as plt
    runs = {}
    for d in positions:
        if d["variant"] in ("fpa", "fox") and d["fpa_backward"] != "exact":
            runs.setdefault((d["preset"], d["seed"]), {})[d["variant"]] = d
    pairs = {}
    for (preset, seed), r in sorted(runs.items()):
        if "fpa" in r and "fox" in r and r["fpa"]["pos"] == r["fox"]["pos"]:
            diff = [(a - b) / math.log(2) for a, b in zip(r["fpa"]["loss"], r["fox"]["loss"])]
            pairs.setdefault(preset, []).append((r["fpa"]["pos"], smooth(diff, SMOOTH)))
    if not pairs:
        return None
    fig, ax = plt.subplots(figsize=(7, 4))
    for i, (preset, ds) in enumerate(sorted(pairs.items(), key=lambda kv: preset_rank(kv[0]))):
        xs = [p + 1 for p in ds[0][0]]
        cols = list(zip(*[d for _, d in ds]))
        mean = [common.mean(list(c)) for c in cols]
        colour = style.OTHER_COLOURS[i % len(style.OTHER_COLOURS)]
        ax.plot(xs, mean, color=colour, label=f"preset '{preset}': mean over {len(ds)} seed(s)")
        if len(ds) > 1:
            ax.fill_between(xs, [min(c) for c in cols], [max(c) for c in cols], color=colour, alpha=0.25,
                            label=f"preset '{preset}': lowest to highest seed")
    ax.axhline(0, color="black", linewidth=0.8)
    ax.set_xscale("log")
    ax.set_xlabel("token position in the context window (bytes, log scale)")
    ax.set_ylabel("FPA - FoX test loss (bits per byte)")
    ax.set_title(f"FPA minus FoX loss by position (paired by seed; moving mean over +-{SMOOTH:.0%})")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return style.save(fig, out, "lm_position_difference"), ("FPA minus FoX test loss against token position, "
                                                            "the mean over seeds and their spread.")


def smooth(xs, fraction):
    """Moving mean whose half-width grows with the position (a constant width on a log axis)."""
    out = []
    for i in range(len(xs)):
        half = int(i * fraction)
        lo, hi = max(0, i - half), min(len(xs), i + half + 1)
        window = [x for x in xs[lo:hi] if not math.isnan(x)]
        out.append(sum(window) / len(window) if window else math.nan)
    return out


def position_figure(positions, out):
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4))
    seen = {}
    for d in positions:
        # A second run of one variant (e.g. run directory 'fpa-exact') is drawn as its own series.
        name = d["run"] if d["run"].startswith(d["variant"] + "-") else d["variant"]
        idx = seen.setdefault(name, 0)
        seen[name] += 1
        pts = [(p, l) for p, l, w in zip(d["pos"], d["loss"], d["windows"]) if w > 0 and not math.isnan(l)]
        if not pts:
            continue
        xs = [p + 1 for p, _ in pts]
        ys = smooth([l / math.log(2) for _, l in pts], SMOOTH)
        ax.plot(xs, ys, color=style.colour(name), linestyle=style.LINESTYLES[idx % 4], linewidth=1.3,
                label=style.label(name) + (f" [{d['run']}]" if idx else ""))
    ax.set_xscale("log")
    ax.set_xlabel("token position in the context window (bytes, log scale)")
    ax.set_ylabel("test loss (bits per byte)")
    ax.set_title(f"Loss against token position (moving mean over +-{SMOOTH:.0%} of the position)")
    ax.legend()
    fig.tight_layout()
    return style.save(fig, out, "lm_loss_by_position"), ("Test loss against token position "
                                                         "(from " + ", ".join(d["rel"] for d in positions) + ").")
