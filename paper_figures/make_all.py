#!/usr/bin/python3
"""Tables (Markdown + LaTeX), figures (PNG + PDF) and results/REPORT.md from the CSVs under
results/ only. A study whose CSVs are missing is reported as "not run"; nothing is invented.

Usage: /usr/bin/python3 paper_figures/make_all.py [--results DIR] [--out DIR] [--report FILE]
"""
import argparse
import json
import os
import sys
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import atomic  # noqa: E402
import common  # noqa: E402
import kernels  # noqa: E402
import lm  # noqa: E402
import passkey  # noqa: E402
import report  # noqa: E402
import synthetic  # noqa: E402
import theory  # noqa: E402

FAMILIES = [("theory", theory), ("synthetic", synthetic), ("lm", lm), ("passkey", passkey), ("bench", kernels)]


def remove_stale(out, written):
    """Deletes outputs of the previous run that this run did not write (a figure whose CSVs have
    gone must not linger), using the previous run's list in tables.json."""
    try:
        with open(os.path.join(out, "tables.json")) as f:
            previous = json.load(f).get("files", [])
    except (OSError, ValueError, AttributeError):
        return
    for name in set(previous) - set(written):
        path = os.path.join(out, os.path.basename(name))
        if os.path.isfile(path):
            os.remove(path)


def main(argv=None):
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--results", default=os.path.join(repo, "results"), help="results directory (input)")
    p.add_argument("--out", help="where tables and figures go (default: RESULTS/figures)")
    p.add_argument("--report", help="report file (default: RESULTS/REPORT.md)")
    args = p.parse_args(argv)
    results = os.path.abspath(args.results)
    out = os.path.abspath(args.out or os.path.join(results, "figures"))
    report_path = os.path.abspath(args.report or os.path.join(results, "REPORT.md"))
    os.makedirs(out, exist_ok=True)

    sections, claims, errors = [], {}, []
    for name, module in FAMILIES:
        try:
            sec = module.build(results, out)
        except Exception as e:  # one study's bad CSV must not take the others down
            traceback.print_exc()
            errors.append(f"{name}: {type(e).__name__}: {e}")
            sec = common.Section(name, name)
            sec.status = "error in the figure script (see stderr of make figures)"
        sections.append(sec)
        claims.update(sec.claims)
        print(f"make_all: {name}: {sec.status}; {len(sec.tables)} table(s), {len(sec.figures)} figure(s)")

    tables = [t for s in sections for t in s.tables] + [report.claims_table(claims)]
    manifest = {}
    for t in tables:
        t.write(out)
        manifest[t.name] = {"title": t.title, "timing_columns": t.timing}
    written = sorted([t.name + ext for t in tables for ext in (".md", ".tex")] +
                     [png[:-4] + ext for s in sections for png, _ in s.figures for ext in (".png", ".pdf")])
    remove_stale(out, written)
    atomic.write_text(os.path.join(out, "tables.json"),
                      json.dumps({"tables": manifest, "files": written}, indent=1, sort_keys=True) + "\n")
    report.write(results, report_path, sections, claims, errors)
    print(f"make_all: wrote {len(tables)} tables and "
          f"{sum(len(s.figures) for s in sections)} figures to {out}, report {report_path}")
    return 3 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
