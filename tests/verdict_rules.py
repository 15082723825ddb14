#!/usr/bin/python3
"""Every verdict of claims C1-C6, each from a fixture made to reach it (issue 20): the fixture of
tests/fixtures/figures, copied and edited so that the claim's rule must give reproduced, not
reproduced, or not tested. A rule that always gives one verdict fails here. The rules are called
from their own modules (paper_figures/*_verdict.py) on the rows the study reads, so no figure is
drawn and nothing is patched. C5's and C6's 'trend with size' lines are checked here too.
Usage: verdict_rules.py <repo-root>"""
import csv
import math
import os
import shutil
import sys
import tempfile

repo = sys.argv[1]
sys.path.insert(0, os.path.join(repo, "paper_figures"))
import lm  # noqa: E402
import passkey  # noqa: E402
import passkey_natural  # noqa: E402
import passkey_natural_trained  # noqa: E402
import passkey_verdict  # noqa: E402
import synthetic  # noqa: E402
import synthetic_sweep  # noqa: E402
import theory  # noqa: E402
import theory_verdict  # noqa: E402

FIXTURE = os.path.join(repo, "tests", "fixtures", "figures", "results")
STUDY = {"C1": "theory", "C2": "theory", "C3": "theory", "C4": "synthetic", "C5": "lm", "C6": "passkey"}
# Each study's claims from a results directory: its loader (CSV rows, no figures), then its rules.
CLAIMS = {"theory": lambda results: theory_verdict.decide(theory.evidence(theory.load(results))),
          "synthetic": lambda results: synthetic.claims(synthetic.load(results)),
          "lm": lambda results: lm.claims(lm.load(results)),
          "passkey": lambda results: passkey.claims(passkey.load(results))}


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


def lm_seeds(fpa_ppl, seeds=3, step=0.001):
    """lm/summary.csv with `seeds` rows per variant; FPA's test perplexity fpa_ppl + step * seed."""
    def change(rows):
        out = []
        for r in rows:
            for s in range(seeds):
                r2 = dict(r, seed=str(s))
                if r["variant"] == "fpa":
                    r2["test_ppl"] = str(round(fpa_ppl + step * s, 6))
                out.append(r2)
        return out
    return change


def preset_seeds(preset, rows, fpa_ppl, seeds=3):
    """Rows of FPA and FoX at another preset (3.28M parameters) for seeds 0.., FoX's test perplexity
    as in the fixture (3.0), FPA's fpa_ppl + 0.001 * seed."""
    return [dict(r, preset=preset, seed=str(s), params="3280000",
                 test_ppl=str(round(fpa_ppl + 0.001 * s, 6)) if r["variant"] == "fpa" else r["test_ppl"])
            for r in rows if r["variant"] in ("fpa", "fox") for s in range(seeds)]


def synthetic_seeds(n):
    def change(rows):
        for r in rows:
            r["seeds_run"] = str(n)
            r["seeds_converged"] = str(min(int(r["seeds_converged"]), n))
        return rows
    return change


def remove_rows(**match):
    return lambda rows: [r for r in rows if not all(r[k] == v for k, v in match.items())]


T = "theory/"
S = "synthetic/summary.csv"
SW = "synthetic/sweep-n64/summary.csv"
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
    ("C4", "not tested at this scale", [(S, synthetic_seeds(2)), (SW, None)]),
    # The head-dimension sweep alone (summary.csv gone): its fixture fails the rule at every d
    # (FoX converges on one dips seed below d = 32) until that seed is taken away at d = 2.
    ("C4", "not reproduced", [(S, None)]),
    ("C4", "reproduced", [(S, None), (SW, set_where("seeds_converged", "0", task="dips", model="fox", head_dim="2"))]),
    # ... and beside summary.csv: a sweep dimension can carry the verdict when d = 8 fails.
    ("C4", "reproduced", [(S, set_where("seeds_converged", "1", task="dips", model="fox")),
                          (SW, set_where("seeds_converged", "0", task="dips", model="fox", head_dim="4"))]),
    ("C4", "not tested at this scale", [(S, None), (SW, None)]),
    # FoX 3.0 on every seed; FPA 3.05, 3.051, 3.052: +1.7%, tight enough to be outside seed noise
    ("C5", "reproduced", "lm/summary.csv", lm_seeds(3.05), "outside seed noise (FPA worse"),
    ("C5", "not reproduced", "lm/summary.csv", lm_seeds(3.07)),  # +2.3%
    ("C5", "not tested at this scale", "lm/summary.csv", lm_seeds(3.0, seeds=2)),
    ("C5", "not tested at this scale", "lm/summary.csv", None),
    # FPA 2.99, 3.0, 3.01 against FoX 3.0 (seeds 0-2 paired): inside seed noise
    ("C5", "reproduced", "lm/summary.csv", lambda rows: [
        dict(r, seed=str(s), test_ppl=str(2.99 + 0.01 * s) if r["variant"] == "fpa" else r["test_ppl"])
        for r in rows for s in range(3)], "inside seed noise"),
    # A larger preset with one seed each (issue 30's medium) stays beside the verdict, which the
    # 3-seed preset keeps, and its move in the trend line is marked as too few seeds to judge.
    ("C5", "reproduced", "lm/summary.csv", lambda rows: lm_seeds(3.0)(rows) + [
        dict(r, preset="medium", seed="0", params="10733988", test_ppl="3.3" if r["variant"] == "fpa" else "3.0")
        for r in rows if r["variant"] in ("fpa", "fox")], "(medium has 1 seed(s): too few to tell"),
    # The trend line's move between two 3-seed presets, judged by a 95% Welch interval over their
    # per-seed gaps: tiny +1.67/+1.70/+1.73% against small 0/+0.03/+0.07% is outside seed noise ...
    ("C5", "reproduced", "lm/summary.csv", lambda rows: lm_seeds(3.05)(rows) + preset_seeds("small", rows, 3.0),
     "from tiny to small by -1.67 percentage points (95% Welch interval [-1.74, -1.59]: outside seed noise)"),
    # ... and tiny -0.33/0/+0.33% against the same small is inside it (2 degrees of freedom, t = 4.303).
    ("C5", "reproduced", "lm/summary.csv", lambda rows: lm_seeds(2.99, step=0.01)(rows) + preset_seeds("small", rows, 3.0),
     "from tiny to small by +0.03 percentage points (95% Welch interval [-0.80, +0.87]: inside seed noise)"),
    # C6 on the fixture: 3 learned FPA runs (fpa-s0..s2; fpa-s3 never learned), each perfect at 8L
    # under some policy at occupancy <= 0.30 (tests/figures_determinism.sh drives make_all the same way).
    ("C6", "reproduced", "passkey/summary.csv", lambda rows: rows),
    # ... one learned run short of 1.0 under every compressed policy at 8L ...
    ("C6", "not reproduced", "passkey/summary.csv", lambda rows: [
        dict(r, accuracy="0.95") if (r["run"], r["eval_len"], r["policy"]) == ("fpa-s1", "512", "budget") else r
        for r in rows]),
    # ... two of the three learned runs gone (the never-learned fpa-s3 counts neither way) ...
    ("C6", "not tested at this scale", "passkey/summary.csv",
     lambda rows: remove_rows(run="fpa-s2")(remove_rows(run="fpa-s1")(rows))),
    ("C6", "not tested at this scale", "passkey/summary.csv", None),
]

# C4's table of smallest converging dimensions, read from the fixture's sweep (generate.py).
SMALLEST = {("dips", "softmax"): "64", ("dips", "FoX"): "32", ("erase", "FPA (exact)"): "2",
            ("erase", "FPA (straight-through)"): "1"}

failures = 0
tmp = tempfile.mkdtemp()
try:
    for i, (cid, want, *case) in enumerate(CASES):
        # (file, edit[, text the claim's details must hold]) or ([(file, edit), ...])
        edits = case[0] if isinstance(case[0], list) else [(case[0], case[1])]
        text = case[2] if len(case) > 2 else None
        results = os.path.join(tmp, str(i))
        study = STUDY[cid]
        shutil.copytree(os.path.join(FIXTURE, study), os.path.join(results, study))
        for rel, edit in edits:
            path = os.path.join(results, rel)
            if edit is None:
                remove(path)
            else:
                edit_csv(path, edit)
        claims = CLAIMS[study](results)
        got = claims[cid].verdict if cid in claims else "not tested at this scale"
        ok = got == want and (text is None or any(text in d for d in claims[cid].details))
        failures += not ok
        what = ", ".join(f"{rel}: {'removed' if edit is None else 'edited'}" for rel, edit in edits)
        print(f"{'ok  ' if ok else 'FAIL'} {cid} {want:<25} ({what}{f'; says {text!r}' if text else ''}) -> {got}")
    results = os.path.join(tmp, "smallest")
    shutil.copytree(os.path.join(FIXTURE, "synthetic"), os.path.join(results, "synthetic"))

    def smallest_table():
        return next(t for t in synthetic_sweep.tables(synthetic_sweep.load(results)) if t.name == "synthetic_smallest_dim")
    table = smallest_table()
    got = {(r[0], r[1]): r[2] for r in table.rows}
    for key, want in SMALLEST.items():
        ok = got.get(key) == want
        failures += not ok
        print(f"{'ok  ' if ok else 'FAIL'} C4 table: smallest d of {key} at n=64 is {want} -> {got.get(key)}")
    at128 = {(r[0], r[1]): r[3] for r in table.rows}
    ok = at128.get(("dips", "FoX")) == "64" and at128.get(("dips", "softmax")) == "64"
    failures += not ok
    print(f"{'ok  ' if ok else 'FAIL'} C4 table: at n=128 FoX needs d = 64 (32 at n=64) -> {at128.get(('dips', 'FoX'))}")
    # A sweep still running: FoX's d = 64 cell converged on its 2 seeds so far, which does not
    # yet meet the minimum of seeds: the smallest d is undecided, not "none".
    edit_csv(os.path.join(results, "synthetic", "sweep-n128", "summary.csv"),
             lambda rows: [dict(r, seeds_run="2", seeds_converged="2", runs_missing="1")
                           if (r["task"], r["model"], r["head_dim"]) == ("dips", "fox", "64") else r
                           for r in rows])
    table = smallest_table()
    got = {(r[0], r[1]): r[3] for r in table.rows}.get(("dips", "FoX"))
    ok = got == "64? (2 seeds so far)"
    failures += not ok
    print(f"{'ok  ' if ok else 'FAIL'} C4 table: 2 of 2 seeds converged at d = 64 is undecided -> {got}")
    # C6's trend line (issue 30): each shape's move from 8 heads x 2 layers with a 95% Welch
    # interval over the runs when both sides have 3 learned runs, "too few" otherwise.
    def run(heads, layers, occupancy, fraction):
        return {"heads": heads, "layers": layers, "occupancy": occupancy, "fraction": fraction,
                "sweep": (None, math.nan, math.nan)}
    floor = {"runs": {f"r{i}": r for i, r in enumerate(
                 [run(8, 2, 0.30 + 0.01 * s, 0.25) for s in range(3)]
                 + [run(16, 2, 0.10 + 0.01 * s, 0.25) for s in range(3)]
                 + [run(8, 4, 0.5, 0.5), run(8, 4, 0.6, 0.5)])},
             "counts": {(8, 2): (3, 3), (16, 2): (3, 3), (8, 4): (2, 3)}}
    line = passkey_verdict.trend_line(floor)
    for want in ["to 16 heads x 2 layers the certified occupancy moved by -0.200 (95% Welch interval "
                 "[-0.223, -0.177]: outside seed noise), the keep-everything share by +0.000 (95% Welch "
                 "interval [+0.000, +0.000]: inside seed noise)",
                 "to 8 heads x 4 layers the certified occupancy moved by +0.240, the keep-everything share by "
                 "+0.250 (fewer than 3 learned runs on a side: too few to tell the move from seed noise)"]:
        ok = want in line
        failures += not ok
        print(f"{'ok  ' if ok else 'FAIL'} C6 trend line says {want!r}" + ("" if ok else f" -> {line}"))
    # C6 in natural text (issue 46): the learned runs (judged on the repeated filler) in both
    # fillers, the share of the 8L retrieval that survives, the certified policy beside the full cache.
    def rows(acc8, cert8, learned_runs=3):
        out = []
        for s in range(4):
            acc_l = "1" if s < learned_runs else "0.5"
            base = {"variant": "fpa", "run": f"fpa-s{s}", "train_len": "512", "n_keys": "20", "per_head": "0",
                    "decode_ms_per_token": "0.1", "epsilon": ""}
            out += [dict(base, eval_len="512", policy="full", budget="1", occupancy="1", accuracy=acc_l),
                    dict(base, eval_len="4096", policy="full", budget="1", occupancy="1", accuracy=acc8),
                    dict(base, eval_len="4096", policy="fpa-certified", budget="", occupancy="0.3",
                         accuracy=cert8, epsilon="0.001"),
                    dict(base, eval_len="4096", policy="budget", budget="0.25", occupancy="0.25", accuracy="0.2")]
        return out
    data = {"study": {"repeated": passkey.per_run(rows("1", "1")), "natural": passkey.per_run(rows("0.4", "0.4"))},
            "sweep": {"repeated": None, "natural": None},
            "rows": {"repeated": rows("1", "1"), "natural": rows("0.4", "0.4")}, "rel": "passkey/c6-natural/summary.csv"}
    line = passkey_natural.claim_line(data)
    for want in ["FPA 0.40 (repeated 1.00, 3 runs)", "gives 0.40 at occupancy 0.30 in natural text against the full "
                 "cache's 0.40"]:
        ok = want in line
        failures += not ok
        print(f"{'ok  ' if ok else 'FAIL'} C6 natural-filler line says {want!r}" + ("" if ok else f" -> {line}"))
    natural_rows = {r[1]: r for r in passkey_natural.table(data).rows}
    got = (natural_rows["natural"][2], natural_rows["natural"][7], natural_rows["repeated"][6])
    ok = got == ("3 of 4", "40%", "1.00 (fpa-certified eps=0.001, study)")
    failures += not ok
    print(f"{'ok  ' if ok else 'FAIL'} C6 natural-filler table: learned 3 of 4, 40% of 8L kept, best at 25% kept -> {got}")
    # Trained with natural filler (issue 46, item 3): runs learned in natural text (3 of 4), the 8L
    # means over all runs and over the learned ones, beside the repeated-filler-trained learned runs.
    def trained_rows(acc8_learned, acc8_other):
        out = []
        for s in range(4):
            learned = s < 3
            base = {"variant": "fpa-natural", "run": f"fpa-natural-s{s}", "train_len": "512", "n_keys": "20",
                    "per_head": "0", "decode_ms_per_token": "0.1", "epsilon": ""}
            acc8 = acc8_learned if learned else acc8_other
            out += [dict(base, eval_len="512", policy="full", budget="1", occupancy="1",
                         accuracy="1" if learned else "0.5"),
                    dict(base, eval_len="4096", policy="full", budget="1", occupancy="1", accuracy=acc8),
                    dict(base, eval_len="4096", policy="fpa-certified", budget="", occupancy="0.2",
                         accuracy=acc8, epsilon="0.001")]
        return out
    trained = {"runs": {"repeated": passkey.per_run(trained_rows("1", "0")),
                        "natural": passkey.per_run(trained_rows("0.9", "0.1"))}, "rels": []}
    line = passkey_natural_trained.claim_line(trained, data)
    want = ("FPA learned in 3 of 4 runs; at 8L with a full cache 0.70 over all of them, 0.90 over the learned "
            "ones (fpa-certified 0.90 at occupancy 0.20), against 0.40 (occupancy 0.30) for the 3 "
            "repeated-filler-trained runs that learned")
    ok = want in (line or "")
    failures += not ok
    print(f"{'ok  ' if ok else 'FAIL'} C6 natural-trained line says {want!r}" + ("" if ok else f" -> {line}"))
finally:
    shutil.rmtree(tmp)
print("PASS" if not failures else f"FAIL: {failures} verdict(s) wrong")
sys.exit(1 if failures else 0)
