"""C6 with natural filler in training (issue 46, item 3): FPA, FoX and the Transformer trained
with every prompt's filler a passage of the Brown corpus's training split (lm/passkey/reproduce.sh
PROFILE=passkey-natural: results/passkey/natural-trained/), evaluated in both fillers: the
repeated sentence group (<run>.csv) and test-split passages (natural-filler/<run>.csv). Beside
them, the models trained on the repeated filler (passkey_natural). Every trained run is counted;
a run has learned the task in a filler when its full-cache accuracy at L meets the verdict's rule
there (passkey_verdict.derive)."""
import math

import common
import passkey_natural
import style
from common import Table
from passkey_common import run_sort
from constants import OCCUPANCY_MAX
from passkey_natural import CERTIFIED, FILLERS, at_8l, occupancy_figure
from passkey_verdict import per_run

FOLDER = "natural-trained"
# The repeated-filler recipe each natural-filler recipe changes (configs/passkey/c6-<v>.conf).
BASE = {"fpa-natural": "fpa", "fox-b5-natural": "fox-b5", "transformer-natural": "transformer"}


def load(results):
    """{"runs": {filler: per_run}, "rels": [...]} or None before any natural-filler training has
    been evaluated."""
    repeated = common.load_summary(results, "passkey", FOLDER, "summary.csv")
    natural = common.load_summary(results, "passkey", FOLDER, "natural-filler", "summary.csv")
    if not repeated or not natural:
        return None
    return {"runs": {"repeated": per_run(repeated["rows"]), "natural": per_run(natural["rows"])},
            "rels": [repeated["rel"], natural["rel"]]}


def variants(data):
    return sorted({r["variant"] for r in data["runs"]["natural"].values()},
                  key=lambda v: style.variant_sort_key(BASE.get(v, v)))


def summary(data):
    """Per variant and evaluation filler: trained runs, learned runs (in that filler), means over
    all trained runs, and the 8L means over the learned runs alone (as passkey_natural reports the
    models trained on the repeated filler)."""
    out = []
    for v in variants(data):
        names = [r["run"] for r in sorted((r for r in data["runs"]["natural"].values() if r["variant"] == v),
                                          key=run_sort)]
        for f in FILLERS:
            runs = [data["runs"][f][n] for n in names if n in data["runs"][f]]
            row = {"variant": v, "filler": f, "trained": len(runs),
                   "learned": sum(1 for r in runs if r["learned"]),
                   "acc_L": common.mean([r["acc_L"] for r in runs])}
            for tag, subset in (("", runs), ("learned_", [r for r in runs if r["learned"]])):
                cert = [at_8l(r, CERTIFIED) for r in subset if at_8l(r, CERTIFIED)]
                full8 = [at_8l(r, "full") for r in subset if at_8l(r, "full")]
                row[tag + "acc_8L"] = common.mean([c["accuracy"] for c in full8]) if full8 else math.nan
                row[tag + "cert_acc"] = common.mean([c["accuracy"] for c in cert]) if cert else math.nan
                row[tag + "cert_occ"] = common.mean([c["occupancy"] for c in cert]) if cert else math.nan
            out.append(row)
    return out


def cert_text(r, tag=""):
    return (f"{r[tag + 'cert_acc']:.2f} ({r[tag + 'cert_occ']:.2f})" if not math.isnan(r[tag + "cert_acc"])
            else "-")


def table(data):
    t = Table("passkey_natural_trained",
              "Passkey retrieval after training with natural filler (a Brown training-split passage per "
              "prompt), evaluated in both fillers: means over every trained run, and over the runs that "
              "learned the task in that filler",
              ["variant (recipe)", "evaluated in", "runs learned at L", "accuracy at L, full", "at 8L, full",
               f"at 8L, {CERTIFIED} (occupancy)", "learned runs: at 8L, full",
               f"learned runs: at 8L, {CERTIFIED} (occupancy)"],
              note=("lm/passkey/reproduce.sh PROFILE=passkey-natural (configs/passkey/c6-<variant>-natural.conf: "
                    "the C6 recipe with natural filler from the training split); evaluated as the C6 study "
                    "(configs/passkey/eval-c6.conf, repeated filler) and with test-split passages "
                    "(configs/passkey/eval-c6-natural.conf). A run has learned the task in a filler when its "
                    "full-cache accuracy at L meets the verdict's rule there; the first means are over every "
                    "trained run, learned or not, the last two over the learned runs alone. Compare with "
                    "passkey_natural, the models trained on the repeated filler (learned runs)."))
    for r in summary(data):
        t.add(f"{style.label(BASE.get(r['variant'], r['variant']))}, natural-filler training", r["filler"],
              f"{r['learned']} of {r['trained']}", r["acc_L"], r["acc_8L"], cert_text(r),
              r["learned_acc_8L"] if r["learned"] else "-", cert_text(r, "learned_") if r["learned"] else "-")
    return t


def figure(data, out):
    """passkey_natural's figure for these models: accuracy at 8L against achieved occupancy in
    both fillers, runs that learned the task in the filler they were trained on (natural)."""
    panels = []
    for v in variants(data):
        names = [r["run"] for r in sorted(data["runs"]["natural"].values(), key=run_sort)
                 if r["variant"] == v and r["learned"]]
        panels.append((BASE.get(v, v), {f: [data["runs"][f][n] for n in names if n in data["runs"][f]]
                                        for f in FILLERS}))
    return occupancy_figure(panels, out, "passkey_natural_trained", "natural", (
        "Passkey accuracy at 8x the training length against achieved cache occupancy for the models trained "
        "with natural filler (a Brown training-split passage per prompt), in test-split passages (hollow) and "
        "in the repeated filler (filled), every cache policy of the C6 study, runs that learned the task in "
        f"natural text only; dashed: the full cache's mean accuracy; shaded: occupancy <= {OCCUPANCY_MAX}."))


def claim_line(data, natural=None):
    """One line for C6's report entry; with `natural` (passkey_natural's data), each variant's
    learned runs beside the repeated-filler-trained runs that learned, in the same test-split
    passages."""
    rows = {(r["variant"], r["filler"]): r for r in summary(data)}
    before = ({(r["variant"], r["filler"]): r for r in passkey_natural.summary(natural)}
              if natural else {})
    parts = []
    for v in variants(data):
        nat = rows[(v, "natural")]
        text = (f"{style.short_label(BASE.get(v, v))} learned in {nat['learned']} of {nat['trained']} runs; "
                f"at 8L with a full cache {nat['acc_8L']:.2f} over all of them")
        if nat["learned"]:
            text += f", {nat['learned_acc_8L']:.2f} over the learned ones"
            if not math.isnan(nat["learned_cert_acc"]):
                text += (f" ({CERTIFIED} {nat['learned_cert_acc']:.2f} at occupancy "
                         f"{nat['learned_cert_occ']:.2f})")
        old = before.get((BASE.get(v, v), "natural"))
        if old and old["learned"]:
            text += f", against {old['acc_8L']:.2f}"
            if not math.isnan(old["cert_occ"]):
                text += f" (occupancy {old['cert_occ']:.2f})"
            text += f" for the {old['learned']} repeated-filler-trained runs that learned"
        parts.append(text)
    if not parts:
        return None
    return ("trained with natural filler and evaluated in test-split passages: " + "; ".join(parts) +
            " (figures/passkey_natural_trained.md)")
