"""Claim C6's verdict rule and its 'trend with size' line, as functions of the passkey rows (no
figures): each run's cells, what the verdict reads from them, the verdict, and how the occupancy
floor moved between shapes. passkey.py and passkey_scale.py draw; tests/verdict_rules.py calls
these directly."""
import math

import common
import passkey_sweep
import stats
import style
from common import Claim, num
from constants import KEPT, LEARNED_KEYS, LEARNED_MIN, OCCUPANCY_MAX, RUNS_NEEDED
from passkey_common import keys_text, policy_name, policy_sort, run_sort

STATEMENT = ("FPA retrieves passkeys perfectly at 8x the training length, even with the key-value "
             "cache compressed to about 25%.")


def rule(study_keys=(), sweep_keys=()):
    """The rule's text; the keys per cell are those of the rows judged (sets of n_keys at 8L)."""
    def cells(keys):
        return f"{keys_text(keys)}-key cells" if keys else "cells"
    return (f"judged on the runs that learned the task (full-cache accuracy at L >= {LEARNED_MIN} on >= "
            f"{LEARNED_KEYS} keys); reproduced iff at least {RUNS_NEEDED} FPA runs learned and, on every one, "
            f"some compressed-cache policy with achieved occupancy <= {OCCUPANCY_MAX:g} gives accuracy 1.0 at "
            f"8L (every online policy evaluated: for a run in the compression sweep its {cells(sweep_keys)} at 8L, "
            f"query-aware SnapKV excluded; otherwise the C6 study's {cells(study_keys)}); not reproduced iff at "
            f"least {RUNS_NEEDED} learned and that fails on one of them; not tested "
            f"iff fewer than {RUNS_NEEDED} FPA runs learned (a run that did not learn says nothing about "
            "the claim, and cannot hide one that did).")


def empty():
    """C6 before any row: not tested."""
    return Claim("C6", STATEMENT, rule())


def per_run(rows):
    """Each run (a trained model: variant and seed) with its cells: (eval_len, policy label) -> row
    values, and the numbers the verdict needs."""
    runs = {}
    for r in rows:
        name = r.get("run") or r["variant"]
        run = runs.setdefault(name, {"run": name, "variant": r["variant"], "L": int(num(r["train_len"], 0)),
                                     "cells": {}})
        run["cells"][(int(num(r["eval_len"], 0)), policy_name(r))] = {
            "accuracy": num(r["accuracy"]), "occupancy": num(r["occupancy"]), "n_keys": int(num(r["n_keys"], 0))}
    for run in runs.values():
        derive(run)
    return runs


def merge_sweep(runs, sweep):
    """The verdict's 8L cells come from the compression sweep for every run it evaluated (every
    online policy, more keys), instead of the C6 study's cells; query-aware ones are left out."""
    swept = {}
    for r in sweep["rows"]:
        run = runs.get(r["run"])
        if not run or r["policy"] in passkey_sweep.QUERY_AWARE or int(num(r["eval_len"], 0)) != 8 * run["L"]:
            continue
        swept.setdefault(r["run"], {})[(8 * run["L"], policy_name(r))] = {
            "accuracy": num(r["accuracy"]), "occupancy": num(r["occupancy"]), "n_keys": int(num(r["n_keys"], 0))}
    for name, cells in swept.items():
        run = runs[name]
        run["cells"] = {k: c for k, c in run["cells"].items() if k[0] != 8 * run["L"]}
        run["cells"].update(cells)
        run["swept"] = True
        derive(run)


def derive(run):
    """The numbers the verdict needs, from a run's cells."""
    L, cells = run["L"], run["cells"]
    at_l = cells.get((L, "full"))
    run["acc_L"] = at_l["accuracy"] if at_l else math.nan
    run["learned"] = bool(at_l and at_l["accuracy"] >= LEARNED_MIN and at_l["n_keys"] >= LEARNED_KEYS)
    at8 = {p: c for (e, p), c in cells.items() if L and e == 8 * L}
    run["evaluated_8L"] = bool(at8)
    run["acc_8L_full"] = at8["full"]["accuracy"] if "full" in at8 else math.nan
    small = {p: c for p, c in at8.items() if p != "full" and c["occupancy"] <= OCCUPANCY_MAX + 1e-9}
    best = max(small, key=lambda p: (small[p]["accuracy"], -small[p]["occupancy"]), default=None)
    run["best_small"] = (best, small[best]) if best else None
    perfect = [(c["occupancy"], p) for p, c in at8.items() if c["accuracy"] >= 1.0]
    run["min_perfect"] = min(perfect) if perfect else None


def decide(runs, agg, study_keys=(), sweep_keys=()):
    """C6 from the runs (per_run, sweep merged) and the aggregated cells (passkey.aggregate, for
    the setting)."""
    claim = Claim("C6", STATEMENT, rule(study_keys, sweep_keys))
    claim.links = ["figures/passkey_runs.md", "figures/passkey_compute.md", "figures/passkey_heads.md",
                   "figures/passkey_accuracy.md", "figures/passkey_occupancy.png", "passkey/summary.csv"]
    lens = sorted({(k[1], k[2]) for k in agg})
    keys_per = sorted({a["n_keys"] for a in agg.values()})
    claim.setting = (f"training length L = {', '.join(sorted({str(l) for l, _ in lens}))}; evaluation lengths "
                     f"{', '.join(sorted({str(e) for _, e in lens}, key=int))}; {'/'.join(str(k) for k in keys_per)} "
                     f"keys per cell (over seeds); policies {', '.join(sorted({k[3] for k in agg}, key=policy_sort))}")
    variants = sorted({r["variant"] for r in runs.values()}, key=style.variant_sort_key)
    tally = []
    for v in variants:
        rs = [r for r in runs.values() if r["variant"] == v]
        learned = [r for r in rs if r["learned"]]
        ok = [r for r in learned if r["best_small"] and r["best_small"][1]["accuracy"] >= 1.0]
        perfect8 = [r for r in learned if r["acc_8L_full"] >= 1.0]
        tally.append(f"{style.short_label(v)} {len(learned)}/{len(rs)} learned")
        best_small = [r["best_small"][1]["accuracy"] for r in learned if r["best_small"]]
        smallest = [f"{r['min_perfect'][0]:.2f}" if r["min_perfect"] else "none" for r in sorted(learned, key=run_sort)]
        claim.details.append(
            f"{style.label(v)}: {len(learned)} of {len(rs)} runs learned; of those, {len(perfect8)} retrieve every "
            f"key at 8L with a full cache and {len(ok)} with some policy at occupancy <= {OCCUPANCY_MAX:g}"
            + (f" (best such accuracy per learned run: {', '.join(f'{a:.2f}' for a in best_small)})" if best_small else "")
            + (f"; smallest occupancy keeping 1.0 at 8L per learned run: {', '.join(smallest)}" if learned else ""))
    fpa = [r for r in runs.values() if r["variant"] == "fpa"]
    learned = [r for r in fpa if r["learned"]]
    claim.number = "runs learned: " + ", ".join(tally)
    if not fpa:
        claim.number = "FPA not evaluated"
        return claim
    if len(learned) < RUNS_NEEDED:
        claim.number += (f"; fewer than {RUNS_NEEDED} FPA runs learned the task, so C6 cannot be judged "
                         "(see the per-run table)")
        return claim
    if not all(r["evaluated_8L"] for r in learned):
        claim.number += "; a learned FPA run was not evaluated at 8L"
        return claim
    failing = [r for r in learned if not (r["best_small"] and r["best_small"][1]["accuracy"] >= 1.0)]
    best = [r["best_small"][1]["accuracy"] if r["best_small"] else math.nan for r in sorted(learned, key=run_sort)]
    claim.number += (f"; best FPA accuracy at 8L with occupancy <= {OCCUPANCY_MAX:g}, per learned run: "
                     + ", ".join(common.fmt(a, 2) for a in best))
    claim.verdict = "not reproduced" if failing else "reproduced"
    return claim


# ---- trend with size (issue 30): beside the verdict, not part of it ----------------------------

def shape(r):
    return (r["heads"], r["layers"])


def count_text(counts, s):
    n_learned, n = counts.get(s, (0, 0))
    return f"{n_learned} of {n} learned"


def trend_line(floor):
    """C6's 'trend with size' line from passkey_scale.load's runs and counts: each shape's means,
    and how each moved from 8 heads x 2 layers (a 95% Welch interval over the runs, since
    different shapes are different runs, not pairs)."""
    runs, counts = floor["runs"], floor["counts"]
    by = {}
    for r in runs.values():
        by.setdefault(shape(r), []).append(r)

    def spread(rs, what):  # mean, then the runs' range when there are several
        v = [r[what] for r in rs]
        return f"{common.mean(v):.3f}" + (f" (runs {min(v):.3f}-{max(v):.3f})" if len(v) > 1 else "")

    def best_kept(rs):  # the sweep's best online accuracy at the kept fraction, when every run is swept
        if any(r["sweep"][0] is None for r in rs):
            return ""
        return f", best online accuracy at {KEPT:.0%} kept (sweep) {spread([{'a': r['sweep'][1]} for r in rs], 'a')}"
    parts = [f"{h} heads x {l} layers: certified occupancy {spread(rs, 'occupancy')}, "
             f"keep-everything share {spread(rs, 'fraction')}{best_kept(rs)}, {count_text(counts, (h, l))}"
             for (h, l), rs in sorted(by.items())]
    parts += [f"{h} heads x {l} layers: {count_text(counts, (h, l))}" for (h, l) in sorted(counts) if (h, l) not in by]
    text = "trend with size (learned FPA runs, means): " + "; ".join(parts)
    if len(by) < 2:
        text += (". One shape with learned runs so far (the 16-head and 4-layer runs of make reproduce "
                 "PROFILE=passkey-scale are not in results yet): no trend.")
        return text
    # From C6's own shape (8 heads x 2 layers; else the smallest run).
    base = (8, 2) if (8, 2) in by else min(by)
    moves = []
    for s, rs in sorted(by.items()):
        if s == base:
            continue
        few = len(rs) < RUNS_NEEDED or len(by[base]) < RUNS_NEEDED

        def moved(values):
            d, half = stats.welch_difference(values(by[base]), values(rs))
            return f"{d:+.3f}" + ("" if few else f" ({stats.noise_text(d, half, lambda x: f'{x:+.3f}')})")
        swept = all(r["sweep"][0] is not None for r in rs + by[base])
        moves.append(f"to {s[0]} heads x {s[1]} layers the certified occupancy moved by "
                     f"{moved(lambda g: [r['occupancy'] for r in g])}, the keep-everything share by "
                     f"{moved(lambda g: [r['fraction'] for r in g])}"
                     + (f" and the best online accuracy at {KEPT:.0%} kept by "
                        f"{moved(lambda g: [r['sweep'][1] for r in g])}" if swept else "")
                     + (f" (fewer than {RUNS_NEEDED} learned runs on a side: too few to tell the move from seed noise)"
                        if few else ""))
    return text + f". From {base[0]} heads x {base[1]} layers " + "; ".join(moves) + \
        "; nothing is extrapolated past the shapes run."
