"""The verdict rules of claims C1-C3 as functions of the theory evidence (theory.evidence, read
from the theory executables' CSVs; no figures): a theorem passes when every checked case is ok,
as the executable's own PASS line decides, and a claim is reproduced when its theorem passes.
theory.py draws; tests/verdict_rules.py calls these directly."""
from common import Claim

CLAIMS = {
    "C1": ("FPA contains FoX as a special case.", "T1"),
    "C2": ("A head of constant dimension can realise any set of keys \"left alive by later dips\".", "T3"),
    "C3": ("Softmax attention, or attention with token forget gates (FoX), needs head dimension linear "
           "in the number of keys to do the same.", "T4"),
}


def t4_rule_holds(d, max_n_tested, softmax_max_n, fox_max_n, free_weight_max_n):
    """theory-lower-bound's rule at one head dimension d: the largest n shattered is d+1 for
    softmax and FoX and d+2 for FoX with a free weight (decidable only when n = claim + 1 was
    tested; below that the count must reach the largest n tested)."""
    def claim(got, want):
        return got >= min(want, max_n_tested) if want + 1 > max_n_tested else got == want
    return claim(softmax_max_n, d + 1) and claim(fox_max_n, d + 1) and claim(free_weight_max_n, d + 2)


def theorem_verdict(e):
    """PASS when every checked row is ok (T4: its own rule, e['pass']), FAIL otherwise."""
    return "PASS" if e.get("pass", e["ok"] == e["n"]) else "FAIL"


def decide(ev):
    """{claim id: Claim} from theory.evidence's {theorem: evidence}; a claim whose theorem has no
    CSV is not tested."""
    claims = {}
    for cid, (statement, t) in CLAIMS.items():
        claim = Claim(cid, statement, f"reproduced iff every checked case of theorem {t} is ok (the theory "
                                      f"executable's PASS); not reproduced iff any is not")
        e = ev.get(t)
        claim.links = ["figures/theory_evidence.md"] + (e["files"] if e else [])
        if e:
            claim.setting = f"{t}: {e['setting']}"
            claim.number = e["evidence"]
            claim.verdict = "reproduced" if theorem_verdict(e) == "PASS" else "not reproduced"
            if t == "T4":
                claim.links.insert(1, "figures/theory_shattering.png")
        claims[cid] = claim
    return claims
