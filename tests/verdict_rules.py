#!/usr/bin/python3
"""Every verdict of claims C1-C5, each from a fixture made to reach it (issue 20): the fixture of
tests/fixtures/figures, copied and edited so that the claim's rule must give reproduced, not
reproduced, or not tested. A rule that always gives one verdict fails here. (C6 has its own rule
and tests, maintained with lm/passkey.)
Usage: verdict_rules.py <repo-root>"""
import csv
import os
import shutil
import sys
import tempfile

repo = sys.argv[1]
sys.path.insert(0, os.path.join(repo, "paper_figures"))
import matplotlib  # noqa: E402

matplotlib.use("Agg")
import lm  # noqa: E402
import synthetic  # noqa: E402
import theory  # noqa: E402

# The verdicts do not depend on the figures: draw none (they are most of the time).
for module in (lm, synthetic, theory):
    for name in dir(module):
        if name.endswith("_figure"):
            setattr(module, name, lambda *args, **kwargs: ("not-drawn.png", "not drawn"))

FIXTURE = os.path.join(repo, "tests", "fixtures", "figures", "results")
MODULE = {"C1": theory, "C2": theory, "C3": theory, "C4": synthetic, "C5": lm}
STUDY = {"C1": "theory", "C2": "theory", "C3": "theory", "C4": "synthetic", "C5": "lm"}


def edit_csv(path, change):
    """Rewrites a CSV with change(rows) -> rows (dicts), keeping its columns."""
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        columns, rows = reader.fieldnames, list(reader)
    rows = change(rows)
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, columns, lineterminator="\n")
        w.writeheader()
        w.writerows(rows)


def remove(path):
    for p in (path, path + ".json"):
        if os.path.exists(p):
            os.remove(p)


def set_where(key, value, **match):
    def change(rows):
        hit = [r for r in rows if all(r[k] == v for k, v in match.items())]
        assert hit, f"fixture has no row with {match}"
        for r in hit[:1]:
            r[key] = value
        return rows
    return change


def lm_seeds(fpa_ppl, seeds=3):
    """lm/summary.csv with `seeds` rows per variant; FPA's test perplexity set to fpa_ppl."""
    def change(rows):
        out = []
        for r in rows:
            for s in range(seeds):
                r2 = dict(r)
                if r["variant"] == "fpa":
                    r2["test_ppl"] = str(fpa_ppl + 0.001 * s)
                out.append(r2)
        return out
    return change


def synthetic_seeds(n):
    def change(rows):
        for r in rows:
            r["seeds_run"] = str(n)
            r["seeds_converged"] = str(min(int(r["seeds_converged"]), n))
        return rows
    return change


T = "theory/"
CASES = [
    # claim, expected verdict, file (relative to results/), edit (None: remove the file)
    ("C1", "reproduced", T + "fox_special_case.csv", lambda rows: rows),
    ("C1", "not reproduced", T + "fox_special_case.csv", set_where("ok", "false", check="t1_nonincreasing")),
    ("C1", "not tested at this scale", T + "fox_special_case.csv", None),
    ("C2", "reproduced", T + "realization.csv", lambda rows: rows),
    ("C2", "not reproduced", T + "realization.csv", set_where("ok", "false", part="c")),
    ("C2", "not tested at this scale", T + "realization.csv", None),
    # the fixture's FoX at d = 2 is off the d + 1 rule on purpose; put it back for "reproduced"
    ("C3", "reproduced", T + "lower_bound_summary.csv", set_where("fox_max_n", "3", d="2")),
    ("C3", "not reproduced", T + "lower_bound_summary.csv", lambda rows: rows),
    ("C3", "not tested at this scale", T + "lower_bound.csv", None),
    ("C4", "reproduced", "synthetic/summary.csv", lambda rows: rows),
    ("C4", "not reproduced", "synthetic/summary.csv",
     set_where("seeds_converged", "2", task="erase", model="fpa", fpa_backward="straight-through")),
    ("C4", "not reproduced", "synthetic/summary.csv", set_where("seeds_converged", "1", task="dips", model="fox")),
    ("C4", "not tested at this scale", "synthetic/summary.csv", synthetic_seeds(2)),
    ("C5", "reproduced", "lm/summary.csv", lm_seeds(3.05)),     # FoX 3.0: +1.7%
    ("C5", "not reproduced", "lm/summary.csv", lm_seeds(3.07)),  # +2.3%
    ("C5", "not tested at this scale", "lm/summary.csv", lm_seeds(3.0, seeds=2)),
    ("C5", "not tested at this scale", "lm/summary.csv", None),
]

failures = 0
tmp = tempfile.mkdtemp()
try:
    for i, (cid, want, rel, edit) in enumerate(CASES):
        results = os.path.join(tmp, str(i))
        study = STUDY[cid]
        shutil.copytree(os.path.join(FIXTURE, study), os.path.join(results, study))
        path = os.path.join(results, rel)
        if edit is None:
            remove(path)
        else:
            edit_csv(path, edit)
        sec = MODULE[cid].build(results, os.path.join(results, "figures"))
        got = sec.claims[cid].verdict if cid in sec.claims else "not tested at this scale"
        ok = got == want
        failures += not ok
        print(f"{'ok  ' if ok else 'FAIL'} {cid} {want:<25} ({rel}: {'removed' if edit is None else 'edited'}) -> {got}")
finally:
    shutil.rmtree(tmp)
print("PASS" if not failures else f"FAIL: {failures} verdict(s) wrong")
sys.exit(1 if failures else 0)
