"""Theorems T1-T5 (claims C1, C2, C3; T5 serves C6): one evidence table. Reads every CSV under
results/theory/ in the theory executables' long format (check, ..., statistic, value, limit, ok):
rows are grouped by theorem (the `check` prefix t1_, t2_, t3..., t4..., t5...), a theorem passes
when every one of its rows has ok true."""
import math
import os
import re

import common
from common import Claim, Section, Table, num

THEOREMS = {
    "T1": ("FPA with a non-increasing field equals FoX; non-monotone fields differ", "C1"),
    "T2": ("FoX alive sets are suffix windows; FPA erases selectively (3-token witness)", "C1, C2"),
    "T3": ("constant-dimension FPA head realises any 'left alive by later dips' set", "C2"),
    "T4": ("softmax/FoX heads need head dim linear in the number of keys", "C3"),
    "T5": ("certified eviction: output change <= 2 eps V", "C6"),
}
CLAIMS = {
    "C1": ("FPA contains FoX as a special case.", "T1"),
    "C2": ("A head of constant dimension can realise any set of keys \"left alive by later dips\".", "T3"),
    "C3": ("Softmax attention, or attention with token forget gates (FoX), needs head dimension linear "
           "in the number of keys to do the same.", "T4"),
}
REQUIRED = ["check", "statistic", "value", "ok"]


def truthy(text):
    return str(text).strip().lower() in ("1", "true", "yes", "pass", "ok")


def theorem_of(check):
    m = re.match(r"t([1-5])", check.strip().lower())
    return f"T{m.group(1)}" if m else None


def load(results):
    """theorem -> list of (csv rel path, row)."""
    by = {}
    for f in common.csv_files(os.path.join(results, "theory")):
        rows = common.read_csv(f)
        if not rows or any(c not in rows[0] for c in REQUIRED):
            continue
        rel = os.path.relpath(f, results)
        for r in rows:
            t = theorem_of(r["check"])
            if t:
                by.setdefault(t, []).append((rel, r))
    return by


def summarize(rows):
    """Per (check, statistic): count, worst (largest) value, its limit, all ok."""
    stats = {}
    for _, r in rows:
        k = (r["check"], r["statistic"])
        s = stats.setdefault(k, {"n": 0, "ok": 0, "max": -math.inf, "limit": r.get("limit", ""), "witness": ""})
        s["n"] += 1
        s["ok"] += truthy(r["ok"])
        v = num(r["value"])
        if not math.isnan(v) and v >= s["max"]:
            s["max"], s["limit"] = v, r.get("limit", "")
            if r.get("witness"):
                s["witness"] = r["witness"]
    return stats


def build(results, out):
    sec = Section("theory", "Theorems T1-T5")
    by = load(results)
    table = Table("theory_evidence", "Theorems T1-T5: numeric evidence (results/theory/*.csv)",
                  ["theorem", "statement", "claim", "checks passed", "largest value per statistic (limit)",
                   "verdict", "CSV"],
                  note="Verdict: PASS when every row of the theorem's checks has ok = true; 'not run' when "
                       "no theory CSV has rows for it. The value column shows the largest value of each "
                       "statistic over all rows, next to its limit where the executable states one.")
    verdicts = {}
    for t, (statement, claim) in THEOREMS.items():
        rows = by.get(t)
        if not rows:
            table.add(t, statement, claim, "-", "-", common.NOT_RUN, "-")
            verdicts[t] = None
            continue
        stats = summarize(rows)
        ok = sum(s["ok"] for s in stats.values())
        n = sum(s["n"] for s in stats.values())
        shown = [f"{c}/{st}: {common.fmt(s['max'], 3)}" + (f" ({s['limit']})" if s["limit"] not in ("", None) else "")
                 for (c, st), s in sorted(stats.items())]
        verdict = "PASS" if ok == n else "FAIL"
        verdicts[t] = (verdict, ok, n, stats)
        files = sorted({rel for rel, _ in rows})
        table.add(t, statement, claim, f"{ok}/{n}", "; ".join(shown), verdict, ", ".join(files))
    sec.tables.append(table)
    if any(v is not None for v in verdicts.values()):
        sec.status = "run"
        sec.sources += sorted({rel for rows in by.values() for rel, _ in rows})
    for cid, (statement, t) in CLAIMS.items():
        claim = Claim(cid, statement, f"reproduced iff theorem {t}'s numeric checks all pass "
                                      f"(the theory executable's PASS); not reproduced iff any fails")
        claim.links = ["figures/theory_evidence.md"] + sorted({rel for rel, _ in by.get(t, [])})
        v = verdicts.get(t)
        if v:
            verdict, ok, n, stats = v
            claim.setting = f"{t}: {len(stats)} statistics over {n} checked cases ({', '.join(sorted({c for c, _ in stats}))})"
            claim.number = f"{ok}/{n} checks ok; " + "; ".join(
                f"{st} max {common.fmt(s['max'], 3)}" for (c, st), s in sorted(stats.items())[:4])
            claim.verdict = "reproduced" if verdict == "PASS" else "not reproduced"
        sec.claims[cid] = claim
    return sec
