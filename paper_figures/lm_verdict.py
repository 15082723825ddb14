"""Claim C5's verdict rule and its 'trend with size' line, as functions of the rows of
results/lm/summary.csv (no figures): per (preset, variant) means over seeds, the FPA - FoX gap
paired by seed, the verdict at the largest preset with enough seeds, and how the gap moved from
preset to preset. lm.py draws; tests/verdict_rules.py calls these directly."""
import glob
import math
import os

import common
import stats
import style
from common import Claim, num
from constants import C5_MIN_SEEDS, C5_TOLERANCE

STATEMENT = "At language-model scale (about 110M parameters in the paper), FPA matches FoX perplexity."
RULE = (f"at the largest preset with at least {C5_MIN_SEEDS} seeds of FPA and of FoX, "
        f"reproduced iff FPA's mean test perplexity over seeds is at most {C5_TOLERANCE:.0%} "
        "above FoX's, (mean ppl_FPA - mean ppl_FoX) / mean ppl_FoX <= "
        f"{C5_TOLERANCE}; not reproduced otherwise; not tested with fewer than {C5_MIN_SEEDS} seeds. "
        "The FPA-FoX difference is given with a 95% Student t interval over the seeds both variants "
        "ran (paired by seed); it is 'inside seed noise' when that interval contains 0. A preset with "
        "fewer seeds is reported beside, outside the verdict. "
        "The scale is stated: a tiny byte-level model is not the paper's 110M.")


def preset_sizes():
    """preset -> layers x width^2 from configs/lm/<preset>.conf: the order lm-train lists presets
    in (smallest first), read from the preset files rather than a list kept here."""
    if not hasattr(preset_sizes, "cache"):
        sizes = {}
        root = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "configs", "lm")
        for f in glob.glob(os.path.join(root, "*.conf")):
            kv = common.read_conf(f)
            sizes[os.path.basename(f)[:-5]] = int(kv.get("layers", 0)) * int(kv.get("hidden", 0)) ** 2
        preset_sizes.cache = sizes
    return preset_sizes.cache


def preset_rank(p):
    return preset_sizes().get(p, -1)


def aggregate(rows):
    """(keys sorted smallest preset first, {(preset, variant): means over seeds and per-seed test
    perplexity}). FPA's exact-backward rows are an ablation (fpa_backward.csv): never pooled."""
    groups = {}
    for r in rows:
        if r.get("fpa_backward") == "exact":
            continue
        groups.setdefault((r["preset"], r["variant"]), []).append(r)
    keys = sorted(groups, key=lambda k: (preset_rank(k[0]), k[0], style.variant_sort_key(k[1])))
    agg = {}
    for k in keys:
        g = groups[k]
        a = {c: common.mean([num(r[c]) for r in g]) for c in ("params", "train_tokens", "tokens_per_s",
                                                               "val_ppl", "test_ppl", "test_bpb")}
        a["runs"] = len(g)
        a["tokens_per_s_range"] = (min(num(r["tokens_per_s"]) for r in g), max(num(r["tokens_per_s"]) for r in g))
        a["by_seed"] = {r.get("seed", str(i)): num(r["test_ppl"]) for i, r in enumerate(g)}
        a["test_ppl_std"] = stats.sample_std([num(r["test_ppl"]) for r in g])
        a["steps"] = "/".join(sorted({r.get("steps", "") for r in g if r.get("steps")})) or "?"
        a["fpa_backward"] = "/".join(sorted({r.get("fpa_backward", "") for r in g if r.get("fpa_backward")}))
        agg[k] = a
    return keys, agg


def paired_difference(fpa, fox):
    """Relative FPA-FoX test perplexity difference per seed both ran: (mean, 95% t half-width, n)."""
    seeds = sorted(set(fpa["by_seed"]) & set(fox["by_seed"]))
    diffs = [(fpa["by_seed"][s] - fox["by_seed"][s]) / fox["by_seed"][s] for s in seeds]
    if len(diffs) < 2:
        return common.mean(diffs), math.nan, len(diffs)
    return common.mean(diffs), stats.t975(len(diffs) - 1) * stats.sample_std(diffs) / math.sqrt(len(diffs)), len(diffs)


def empty():
    """C5 before any row: not tested."""
    return Claim("C5", STATEMENT, RULE)


def decide(agg, cap=""):
    """C5 from aggregate's means, with its trend line beside it; cap: lm-eval's bytes per document
    ('' when whole documents)."""
    claim = empty()
    presets = sorted({p for p, _ in agg}, key=lambda p: (preset_rank(p), p))
    both = [p for p in presets if (p, "fpa") in agg and (p, "fox") in agg]
    claim.links = ["figures/lm_perplexity.md", "figures/lm_perplexity.png", "lm/summary.csv"]
    if not both:
        claim.setting = f"presets run: {', '.join(presets) or 'none'}; FPA and FoX not both present"
        return claim
    enough = [p for p in both if min(agg[(p, "fpa")]["runs"], agg[(p, "fox")]["runs"]) >= C5_MIN_SEEDS]
    p = (enough or both)[-1]
    fpa, fox = agg[(p, "fpa")], agg[(p, "fox")]
    diff = (fpa["test_ppl"] - fox["test_ppl"]) / fox["test_ppl"]
    steps = f"{fpa['steps']} steps, " if fpa["steps"] != "?" else ""
    grad = f"FPA backward '{fpa['fpa_backward']}', " if fpa["fpa_backward"] else ""
    claim.setting = (f"preset '{p}': {fpa['params'] / 1e6:.2f}M parameters (FPA), {steps}"
                     f"{fpa['train_tokens'] / 1e6:.2f}M training tokens, byte-level Brown corpus, {grad}"
                     f"{fpa['runs']} FPA / {fox['runs']} FoX seed(s)"
                     + (f"; evaluated on the first {cap} bytes of each validation/test document" if cap else ""))
    claim.number = (f"mean test ppl FPA {fpa['test_ppl']:.3f} vs FoX {fox['test_ppl']:.3f} "
                    f"({diff:+.2%}); bpb {fpa['test_bpb']:.4f} vs {fox['test_bpb']:.4f}")
    mean_d, half, n = paired_difference(fpa, fox)
    if n >= 2:
        lo, hi = mean_d - half, mean_d + half
        inside = lo <= 0 <= hi
        claim.number += f"; paired difference {mean_d:+.2%}, 95% interval [{lo:+.2%}, {hi:+.2%}] over {n} seeds"
        claim.details.append(
            f"FPA - FoX test perplexity, relative to FoX, per seed both ran ({n} seeds): mean {mean_d:+.2%}, "
            f"95% Student t interval (paired by seed, {n - 1} degrees of freedom) [{lo:+.2%}, {hi:+.2%}]: "
            + ("the difference is inside seed noise (the interval contains 0)." if inside else
               f"the difference is outside seed noise (FPA {'worse' if lo > 0 else 'better'} than FoX on "
               "every plausible mean)."))
    else:
        claim.details.append(f"FPA - FoX difference: {n} seed(s) run by both, too few for an interval; whether "
                             "it is inside seed noise is not known.")
    claim.verdict = "reproduced" if diff <= C5_TOLERANCE else "not reproduced"
    if min(fpa["runs"], fox["runs"]) < C5_MIN_SEEDS:
        claim.details.append(f"verdict withheld: {fpa['runs']} FPA and {fox['runs']} FoX seed(s), fewer than "
                             f"{C5_MIN_SEEDS} each; the rule applied to them would say '{claim.verdict}'")
        claim.verdict = "not tested at this scale"
    for (pp, v), a in sorted(agg.items(), key=lambda kv: (preset_rank(kv[0][0]), style.variant_sort_key(kv[0][1]))):
        std = f" (std {a['test_ppl_std']:.3f})" if a["runs"] > 1 else ""
        beside = "" if pp == p else " (outside the verdict)"
        claim.details.append(f"preset '{pp}'{beside}, {style.label(v)}: {a['runs']} seed(s), mean test ppl "
                             f"{a['test_ppl']:.3f}{std}, test bpb {a['test_bpb']:.4f}")
    for pp in both:
        if pp != p:
            d = (agg[(pp, "fpa")]["test_ppl"] - agg[(pp, "fox")]["test_ppl"]) / agg[(pp, "fox")]["test_ppl"]
            claim.details.append(f"preset '{pp}' beside the verdict: FPA {d:+.2%} against FoX "
                                 f"({agg[(pp, 'fpa')]['runs']} / {agg[(pp, 'fox')]['runs']} seed(s))")
    claim.details.append(trend_line(gap_by_size(agg)))  # some preset has both: the gap has a point
    claim.links.append("figures/lm_gap_by_size.png")
    return claim


# ---- trend with size (issue 30): beside the verdict, not part of it ----------------------------

def gap_by_size(agg):
    """Per preset with FPA and FoX runs, smallest first: (preset, FPA params, per-seed relative gaps
    {seed: (FPA - FoX) / FoX}, paired mean, 95% half-width or nan, seeds)."""
    out = []
    for p in sorted({p for p, _ in agg}, key=lambda p: (preset_rank(p), p)):
        if (p, "fpa") not in agg or (p, "fox") not in agg:
            continue
        fpa, fox = agg[(p, "fpa")], agg[(p, "fox")]
        seeds = sorted(set(fpa["by_seed"]) & set(fox["by_seed"]))
        per_seed = {s: (fpa["by_seed"][s] - fox["by_seed"][s]) / fox["by_seed"][s] for s in seeds}
        mean_d, half, n = paired_difference(fpa, fox)
        out.append((p, fpa["params"], per_seed, mean_d, half, n))
    return out


def trend_line(gap):
    """C5's 'trend with size' line: the FPA - FoX gap at each preset run, and how it moved from each
    preset to the next larger one (a 95% Welch interval over the two presets' per-seed gaps where
    both have enough seeds, since different presets are different runs, not pairs)."""
    parts = []
    for p, params, _, mean_d, half, n in gap:
        ci = f", 95% interval [{mean_d - half:+.2%}, {mean_d + half:+.2%}]" if n >= 2 else ""
        parts.append(f"{p} ({params / 1e6:.2f}M parameters) {mean_d:+.2%} over {n} seed(s){ci}")
    text = "trend with size: FPA - FoX test perplexity, relative, paired by seed: " + "; ".join(parts)
    if len(gap) < 2:
        return text + ". One preset run: no trend yet."
    moves = []
    for (p0, _, s0, _, _, n0), (p1, _, s1, _, _, n1) in zip(gap, gap[1:]):
        d, half = stats.welch_difference(list(s0.values()), list(s1.values()))
        if min(n0, n1) >= C5_MIN_SEEDS:
            judged = stats.noise_text(d, half, lambda x: f"{100 * x:+.2f}")
        else:
            few, n_few = (p0, n0) if n0 < n1 else (p1, n1)
            judged = f"{few} has {n_few} seed(s): too few to tell the move from seed noise"
        moves.append(f"from {p0} to {p1} by {100 * d:+.2f} percentage points ({judged})")
    return text + ". The gap moved " + "; ".join(moves) + "; nothing is extrapolated past the largest preset run."
