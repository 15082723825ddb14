"""C6 in natural text (issue 46): the published C6 models evaluated with every prompt's filler a
passage of the Brown corpus's test split (results/passkey/c6-natural/, and the compression sweep's
settings in results/passkey/sweep-natural/), beside the classic repeated filler they were trained
on (results/passkey/summary.csv, results/passkey/sweep/). The C6 verdict stays defined on the
classic form (SPEC section 8); this module says, per variant and over the runs that learned the
task on the classic form, how much of the 8L retrieval survives natural text."""
import math

import common
import passkey_sweep
import style
from common import Table
from constants import KEPT, OCCUPANCY_MAX
from passkey_common import keys_at_8l, keys_text, run_sort
from passkey_verdict import per_run

FILLERS = ("repeated", "natural")
CERTIFIED = "fpa-certified"


def load(results):
    """{"study": {filler: runs}, "sweep": {filler: sweep or None}, "rows"} or None before the
    natural-filler evaluation has run. Runs are passkey_verdict.per_run's, one dict per filler."""
    natural = common.load_summary(results, "passkey", "c6-natural", "summary.csv")
    classic = common.load_summary(results, "passkey", "summary.csv")
    if not natural or not classic:
        return None
    return {"study": {"repeated": per_run(classic["rows"]), "natural": per_run(natural["rows"])},
            "sweep": {"repeated": passkey_sweep.load(results),
                      "natural": common.load_summary(results, "passkey", "sweep-natural", "summary.csv")},
            "rows": {"repeated": classic["rows"], "natural": natural["rows"]},
            "rel": natural["rel"]}


def learned(data, variant):
    """The runs of `variant` that learned the task on the classic form (the verdict's rule), and
    that the natural-filler study evaluated."""
    classic, natural = data["study"]["repeated"], data["study"]["natural"]
    return sorted((r for r in classic.values() if r["variant"] == variant and r["learned"] and r["run"] in natural),
                  key=run_sort)


def at_8l(run, policy):
    """The 8L cell of `policy` of one run, or None: a label of policy_name, or CERTIFIED for the
    certified policy whatever its epsilon."""
    if policy == CERTIFIED:
        cells = [c for (e, p), c in run["cells"].items() if e == 8 * run["L"] and p.split(" ")[0] == CERTIFIED]
        return cells[0] if len(cells) == 1 else None
    return run["cells"].get((8 * run["L"], policy))


def mean_cell(runs, policy, what):
    return common.mean([at_8l(r, policy)[what] for r in runs if at_8l(r, policy)])


def best_kept(data, filler, names):
    """The best online policy at KEPT kept (occupancy <= OCCUPANCY_MAX) at 8L over the runs
    `names`, by mean accuracy: from the compression sweep when it evaluated all of them in this
    filler, else from the C6 study's cells. (accuracy, policy, source) or None."""
    sweep = data["sweep"][filler]
    cells = passkey_sweep.cells_8l(sweep) if sweep else {}
    if sweep and all(any(run == n for run, _ in cells) for n in names):
        acc = {}
        for (run, m), pts in cells.items():
            if run in names and m not in passkey_sweep.QUERY_AWARE and m != "full":
                for b, occ, a, _ in pts:
                    if passkey_sweep.at_kept(b, occ):
                        acc.setdefault(m, {})[run] = a
        full = {m: common.mean(list(v.values())) for m, v in acc.items() if len(v) == len(names)}
        if full:
            m = max(full, key=full.get)
            return full[m], m, "sweep"
    runs = [data["study"][filler][n] for n in names]
    policies = {p for r in runs for (e, p) in r["cells"] if e == 8 * r["L"] and p != "full"}
    scored = {}
    for p in policies:
        cs = [at_8l(r, p) for r in runs]
        if all(c and c["occupancy"] <= OCCUPANCY_MAX + 1e-9 for c in cs):
            scored[p] = common.mean([c["accuracy"] for c in cs])
    if not scored:
        return None
    p = max(scored, key=scored.get)
    return scored[p], p, "study"


def variants(data):
    return sorted({r["variant"] for r in data["study"]["repeated"].values()}, key=style.variant_sort_key)


def summary(data):
    """Per variant and filler: the numbers the table, the figure's caption and the claim line give."""
    out = []
    for v in variants(data):
        names = [r["run"] for r in learned(data, v)]
        trained = sum(1 for r in data["study"]["repeated"].values() if r["variant"] == v)
        for f in FILLERS:
            runs = [data["study"][f][n] for n in names]
            L = [r for r in runs if r["L"]]
            cert = [at_8l(r, CERTIFIED) for r in runs if at_8l(r, CERTIFIED)]
            out.append({"variant": v, "filler": f, "learned": len(names), "trained": trained,
                        "acc_L": common.mean([r["cells"][(r["L"], "full")]["accuracy"] for r in L
                                              if (r["L"], "full") in r["cells"]]),
                        "acc_8L": mean_cell(runs, "full", "accuracy"),
                        "cert_acc": common.mean([c["accuracy"] for c in cert]) if cert else math.nan,
                        "cert_occ": common.mean([c["occupancy"] for c in cert]) if cert else math.nan,
                        "best": best_kept(data, f, names) if names else None})
    return out


def table(data):
    rows = summary(data)
    keys = {f: keys_text(keys_at_8l(data["rows"][f])) for f in FILLERS}
    t = Table("passkey_natural",
              "Passkey retrieval in natural text: the C6 models with the filler drawn from the Brown test "
              "split beside the repeated filler they were trained on (runs that learned the task)",
              ["variant", "filler", "learned runs", "accuracy at L, full", "at 8L, full",
               f"at 8L, {CERTIFIED} (occupancy)", f"at 8L, best online policy at {KEPT:.0%} kept",
               "8L full vs repeated"],
              note=(f"Runs that learned the task on the classic (repeated) form, SPEC section 8's rule; every "
                    f"accuracy is the mean over those runs. 8L cells: {keys['repeated']} keys (repeated) and "
                    f"{keys['natural']} (natural) per run in the C6 study, same keys and depths in both fillers "
                    f"(configs/passkey/eval-c6-natural.conf); the best online policy comes from the compression "
                    f"sweep (50 keys at 8L) where it evaluated every one of the runs in that filler, else from the "
                    f"C6 study's policies. Natural filler: a passage of the Brown corpus's test split per prompt, "
                    f"text no model was trained on."))
    repeated = {r["variant"]: r for r in rows if r["filler"] == "repeated"}
    for r in rows:
        best = r["best"]
        best_text = f"{best[0]:.2f} ({best[1]}, {best[2]})" if best else "-"
        cert = f"{r['cert_acc']:.2f} ({r['cert_occ']:.2f})" if not math.isnan(r["cert_acc"]) else "-"
        base = repeated[r["variant"]]["acc_8L"]
        kept = (f"{r['acc_8L'] / base:.0%}" if r["filler"] == "natural" and base > 0 and not math.isnan(r["acc_8L"])
                else "-")
        t.add(style.label(r["variant"]), r["filler"], f"{r['learned']} of {r['trained']}",
              r["acc_L"], r["acc_8L"], cert, best_text, kept)
    return t


def claim_line(data):
    """One line for C6's report entry: how much of the 8L retrieval survives natural text."""
    rows = {(r["variant"], r["filler"]): r for r in summary(data)}
    parts = []
    for v in variants(data):
        rep, nat = rows[(v, "repeated")], rows[(v, "natural")]
        if not nat["learned"]:
            continue
        text = f"{style.short_label(v)} {nat['acc_8L']:.2f} (repeated {rep['acc_8L']:.2f}, {nat['learned']} runs)"
        parts.append(text)
    if not parts:
        return None
    fpa = rows.get(("fpa", "natural"))
    cert = ""
    if fpa and fpa["learned"] and not math.isnan(fpa["cert_acc"]):
        cert = (f"; FPA's {CERTIFIED} policy gives {fpa['cert_acc']:.2f} at occupancy {fpa['cert_occ']:.2f} "
                f"in natural text against the full cache's {fpa['acc_8L']:.2f}")
    return ("in natural filler (a Brown test-split passage per prompt, same keys and depths), the learned runs "
            "retrieve at 8L with a full cache: " + ", ".join(parts) + cert +
            " (figures/passkey_natural.md; the verdict stays on the classic form)")


def figure(data, out):
    """Accuracy at 8L against achieved occupancy, a panel per variant, learned runs only: every
    (run, policy) cell of the C6 study in the repeated filler and in natural text."""
    panels = [(v, {f: [data["study"][f][r["run"]] for r in learned(data, v)] for f in FILLERS})
              for v in variants(data)]
    return occupancy_figure(panels, out, "passkey_natural", "repeated", (
        "Passkey accuracy at 8x the training length against achieved cache occupancy in the repeated filler "
        "the models were trained on (filled) and in natural text (hollow: a Brown test-split passage per "
        "prompt, same keys and depths), every cache policy of the C6 study, learned runs only; dashed: the "
        f"full cache's mean accuracy; shaded: occupancy <= {OCCUPANCY_MAX}."))


def occupancy_figure(panels, out, name, trained_in, caption):
    """The figure of `panels`, [(variant, {filler: [per_run dicts of its learned runs]})]: a panel
    per variant, each run's 8L cells in both fillers, the full cache's mean as a dashed line.
    `trained_in` names the filler the models were trained on, for the legend."""
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    colours = {"repeated": "#0072B2", "natural": "#D55E00"}
    markers = {"repeated": "o", "natural": "s"}
    fig, axes = plt.subplots(1, max(1, len(panels)), figsize=(3.4 * max(1, len(panels)) + 0.4, 3.7),
                             squeeze=False, sharey=True)
    for ax, (v, runs) in zip(axes[0], panels):
        count = len(runs[FILLERS[0]])
        for f in FILLERS:
            for ri, run in enumerate(runs[f]):
                pts = [(c["occupancy"], c["accuracy"]) for (e, p), c in run["cells"].items() if e == 8 * run["L"]]
                jitter = 0.012 * (ri - (len(runs[f]) - 1) / 2)
                for occ, acc in pts:
                    ax.plot(occ, acc + jitter, marker=markers[f], color=colours[f], alpha=0.6,
                            markersize=4.5, linestyle="none", markerfacecolor="none" if f == "natural" else colours[f])
            full = [at_8l(r, "full") for r in runs[f] if at_8l(r, "full")]
            acc = common.mean([c["accuracy"] for c in full]) if full else math.nan
            if not math.isnan(acc):
                ax.axhline(acc, color=colours[f], linestyle="--", linewidth=0.9, alpha=0.8)
        ax.axvspan(0, OCCUPANCY_MAX, color="grey", alpha=0.07)
        ax.set_xlim(-0.03, 1.05)
        ax.set_ylim(-0.06, 1.1)
        ax.set_xlabel("cache occupancy at 8L (kept / full)")
        ax.set_title(f"{style.short_label(v)}: {count} learned run(s)", color=style.colour(v))
        if not count:
            ax.text(0.5, 0.5, "no learned run", ha="center", va="center", transform=ax.transAxes)
    axes[0][0].set_ylabel("passkey accuracy at 8L")
    where = {"repeated": "", "natural": " (Brown test split)"}
    handles = [Line2D([], [], color=colours[f], marker=markers[f], linestyle="none",
                      markerfacecolor="none" if f == "natural" else colours[f],
                      label=f"{f} filler" + where[f] + (" (as trained)" if f == trained_in else ""))
               for f in FILLERS]
    handles.append(Line2D([], [], color="grey", linestyle="--", label="full cache, mean over learned runs"))
    fig.tight_layout(rect=(0, 0, 1, 0.86))
    fig.legend(handles=handles, loc="upper center", ncol=3, bbox_to_anchor=(0.5, 1.0), frameon=False, fontsize=8)
    return style.save(fig, out, name), caption
