"""Claim C4's verdict rule as a function of the synthetic summary rows (no figures): for some FPA
backward mode and head dimension, FPA converged on every seed of every task and softmax and FoX
on none. synthetic.py draws; tests/verdict_rules.py calls these directly."""
from common import Claim, num
from constants import MASS_MIN, MIN_SEEDS_FOR_VERDICT, NMSE_MAX
from synthetic_common import model_key, model_label, task_sort

STATEMENT = ("On synthetic target-set tasks, one-layer FPA heads reach the target sets on every "
             "seed, while softmax and FoX baselines fail on every seed.")
RULE = ("reproduced iff, for some FPA backward mode and one head dimension d, on EVERY task: FPA "
        "converged on every seed, and softmax and FoX converged on no seed, each with at least "
        f"{MIN_SEEDS_FOR_VERDICT} seeds run (converged: target mass >= {MASS_MIN} and normalised MSE <= {NMSE_MAX} "
        "at the training length). Not reproduced iff every such cell was run and the rule fails. "
        "Otherwise not tested.")


def empty():
    """C4 before any row: not tested."""
    return Claim("C4", STATEMENT, RULE)


def decide(rows, setting=""):
    """C4 from summary rows (SPEC columns; several head dimensions, FPA backward modes); setting:
    the training setting to state beside the counts."""
    claim = empty()
    cells = {}  # (head_dim, task) -> {model_key: (conv, run)}
    for r in rows:
        cells.setdefault((r["head_dim"], r["task"]), {})[model_key(r)] = (
            int(num(r["seeds_converged"], 0)), int(num(r["seeds_run"], 0)))
    tasks = sorted({t for _, t in cells}, key=task_sort)
    dims = sorted({d for d, _ in cells}, key=lambda d: int(num(d, 0)))
    fpa_keys = sorted({k for c in cells.values() for k in c if k.startswith("fpa")})
    seeds = sorted({run for c in cells.values() for (_, run) in c.values()})
    total = sum(run for c in cells.values() for (_, run) in c.values())
    claim.setting = (f"{total} runs: tasks {', '.join(tasks)}; head dims {', '.join(dims)}; "
                     f"{'/'.join(str(s) for s in seeds)} seeds per cell" + (f"; {setting}" if setting else ""))
    best = None
    outcomes = []
    any_complete = False
    for d in dims:
        for fk in fpa_keys:
            ok, complete, parts, score = True, True, [], 0
            for t in tasks:
                c = cells.get((d, t), {})
                need = [fk, "softmax", "fox"]
                if any(k not in c or c[k][1] < MIN_SEEDS_FOR_VERDICT for k in need):
                    complete = False
                    continue
                fpa_ok = c[fk][0] == c[fk][1]
                base_ok = c["softmax"][0] == 0 and c["fox"][0] == 0
                ok = ok and fpa_ok and base_ok
                score += c[fk][0] - c["softmax"][0] - c["fox"][0]
                parts.append(f"{t}: FPA {c[fk][0]}/{c[fk][1]}, softmax {c['softmax'][0]}/{c['softmax'][1]}, "
                             f"FoX {c['fox'][0]}/{c['fox'][1]}")
            if complete and tasks:
                any_complete = True
                outcomes.append((ok, d, fk, parts, score))
                if ok and best is None:
                    best = (d, fk, parts)
    for ok, d, fk, parts, _ in outcomes:
        claim.details.append(f"head dim {d}, {model_label(fk)}: {'rule holds' if ok else 'rule fails'} "
                             f"({'; '.join(parts)})")
    if best:
        d, fk, parts = best
        claim.verdict = "reproduced"
        claim.number = f"head dim {d}, {model_label(fk)}, seeds converged: " + "; ".join(parts)
    elif any_complete:
        claim.verdict = "not reproduced"
        ok, d, fk, parts, _ = max(outcomes, key=lambda o: o[4])  # the closest to the claim
        claim.number = f"head dim {d}, {model_label(fk)}, seeds converged: " + "; ".join(parts)
    else:
        claim.verdict = "not tested at this scale"
        claim.number = f"fewer than {MIN_SEEDS_FOR_VERDICT} seeds, or a model missing, in some cell"
    return claim


def withhold(claim):
    """An unfinished sweep decides nothing (tasks or seeds may still be missing): the verdict is
    withheld, and what the rule would say so far is stated."""
    claim.details.insert(0, f"verdict withheld: the sweep has not finished; rule applied to the runs so far "
                            f"would say '{claim.verdict}'")
    claim.verdict = "not tested at this scale"
    claim.setting = "sweep in progress (no summary.csv); " + claim.setting
