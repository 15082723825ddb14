"""Reading results/ CSVs (with their provenance sidecars) and writing tables as Markdown and
LaTeX. Nothing here knows about a particular study."""
import csv
import functools
import glob
import json
import math
import os
import re

import atomic

NOT_RUN = "not run"

# Columns renamed so that one quantity has one name (docs/results-schema.md): CSVs written
# before the rename read as if written after.
RENAMED_COLUMNS = {"min_grad": "fpa_backward", "fpa_grad": "fpa_backward"}


@functools.lru_cache(maxsize=None)
def renamed_options():
    """Retired flag -> current flag, from their one home, experiments/renamed_flags.cpp (sidecars
    written before the rename record the old names)."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "experiments", "renamed_flags.cpp")
    try:
        with open(path) as f:
            return dict(re.findall(r'\{"([a-z0-9-]+)", "([a-z0-9-]+)"\}', f.read()))
    except OSError:
        return {}


def read_csv(path):
    """Rows of a CSV as dicts (strings), or None when the file is missing or has no header."""
    if not os.path.isfile(path):
        return None
    try:
        with open(path, newline="") as f:
            reader = csv.DictReader(f)
            if not reader.fieldnames:
                return None
            return [{RENAMED_COLUMNS.get(k, k): v for k, v in row.items()} for row in reader]
    except (OSError, csv.Error, UnicodeDecodeError) as e:
        warn(f"{path}: unreadable ({e}); treated as missing")
        return None


def read_sidecar(path):
    """The provenance JSON written beside a CSV (<file>.json), or {} when absent or corrupt."""
    try:
        with open(path + ".json") as f:
            side = json.load(f)
    except (OSError, ValueError):
        return {}
    if isinstance(side, dict) and isinstance(side.get("config"), dict):
        renamed = renamed_options()
        side["config"] = {renamed.get(k, k): v for k, v in side["config"].items()}
    return side


def read_conf(path):
    """A key = value config file (configs/**/*.conf; '#' starts a comment) as a dict, {} when absent."""
    kv = {}
    try:
        with open(path) as f:
            for line in f:
                k, sep, v = line.split("#")[0].partition("=")
                if sep:
                    kv[k.strip()] = v.strip()
    except OSError:
        pass
    return kv


def csv_files(directory, pattern="*.csv"):
    return sorted(glob.glob(os.path.join(directory, "**", pattern), recursive=True))


def gpu_runs(directory, stem):
    """A GPU check's published CSVs in `directory` (not below it): (path, slug, sidecar) for every
    <stem>_<slug>.csv (or <stem>.csv, slug "gpu"), sorted by name; the _ratios.csv companions are
    not runs. The slug names the GPU in the tables' and figures' file names."""
    out = []
    for path in sorted(glob.glob(os.path.join(directory, stem + "*.csv"))):
        name = os.path.basename(path)[:-4]
        if name.endswith("_ratios"):
            continue
        slug = name[len(stem):].lstrip("_") or "gpu"
        out.append((path, slug, read_sidecar(path) or {}))
    return out


def sidecar_part(side, key):
    """A sidecar's dict field (environment, config), {} when absent or not a dict."""
    part = side.get(key)
    return part if isinstance(part, dict) else {}


def has_columns(rows, columns, path):
    """True when the rows carry every required column; warns otherwise (the study is then skipped)."""
    if not rows:
        return False
    missing = [c for c in columns if c not in rows[0]]
    if missing:
        warn(f"{path}: missing required columns {missing}; treated as not run")
        return False
    return True


def num(text, default=math.nan):
    try:
        return float(text)
    except (TypeError, ValueError):
        return default


def fmt(x, digits=3):
    """Fixed, deterministic formatting: '-' for missing, integers without decimals."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    if isinstance(x, str):
        return x
    if isinstance(x, int) or (isinstance(x, float) and x.is_integer() and abs(x) < 1e15 and digits == 0):
        return str(int(x))
    if x != 0 and (abs(x) < 10 ** -(digits) or abs(x) >= 1e6):
        return f"{x:.{max(digits - 1, 1)}e}"
    return f"{x:.{digits}f}"


def load_summary(results, *parts):
    """{rel, rows} of the CSV results/<parts...> (rel relative to results/), or None when it is
    missing or empty."""
    path = os.path.join(results, *parts)
    rows = read_csv(path)
    if not rows:
        return None
    return {"rel": os.path.relpath(path, results), "rows": rows}


def policy_method(row):
    """The cache method a CSV row ran: its policy, 'budget per head' for the per-head budget (CSV
    policy 'budget' with per_head 1, as the passkey CSVs have always written it)."""
    p = row["policy"]
    if p == "budget" and str(row.get("per_head", "")) in ("1", "true"):
        return "budget per head"
    return p


def mean(xs):
    xs = [x for x in xs if not math.isnan(x)]
    return sum(xs) / len(xs) if xs else math.nan


def warn(message):
    import sys
    print(f"make_all: warning: {message}", file=sys.stderr)


def rel(path, start):
    return os.path.relpath(path, start)


class Table:
    """A table with a title; `timing` names the columns measured with a clock (excluded from the
    determinism check)."""

    def __init__(self, name, title, columns, rows=None, timing=(), note=""):
        self.name, self.title, self.columns = name, title, list(columns)
        self.rows = [list(r) for r in (rows or [])]
        self.timing = [c for c in timing if c in self.columns]
        self.note = note

    def add(self, *cells):
        self.rows.append([fmt(c) if not isinstance(c, str) else c for c in cells])

    def markdown(self):
        lines = ["| " + " | ".join(self.columns) + " |", "|" + "---|" * len(self.columns)]
        for r in self.rows:
            lines.append("| " + " | ".join(str(c).replace("|", "\\|") for c in r) + " |")
        return "\n".join(lines) + "\n"

    def latex(self):
        def esc(s):
            s = str(s)
            for a, b in [("\\", r"\textbackslash{}"), ("&", r"\&"), ("%", r"\%"), ("$", r"\$"),
                         ("#", r"\#"), ("_", r"\_"), ("{", r"\{"), ("}", r"\}"), ("~", r"\~{}"),
                         ("^", r"\^{}"), ("<=", r"$\le$"), (">=", r"$\ge$")]:
                s = s.replace(a, b)
            return s
        def bold(s):
            parts = str(s).split("**")
            return "".join(esc(p) if i % 2 == 0 else r"\textbf{" + esc(p) + "}" for i, p in enumerate(parts))
        # Long text columns wrap (p{...}); short ones stay left-aligned.
        spec = ""
        for i, c in enumerate(self.columns):
            longest = max([len(str(r[i])) for r in self.rows if i < len(r)] + [len(c)])
            spec += "l" if longest <= 30 else ("p{3.5cm}" if longest <= 90 else "p{6cm}")
        out = [f"% {self.title} (generated by paper_figures/make_all.py; do not edit)",
               r"\begin{tabular}{" + spec + "}", r"\hline",
               " & ".join(esc(c) for c in self.columns) + r" \\", r"\hline"]
        out += [" & ".join(bold(c) for c in r) + r" \\" for r in self.rows]
        out += [r"\hline", r"\end{tabular}"]
        return "\n".join(out) + "\n"

    def write(self, out_dir):
        md = f"<!-- generated by paper_figures/make_all.py; do not edit -->\n**{self.title}**\n\n" + self.markdown()
        atomic.write_text(os.path.join(out_dir, self.name + ".md"), md + ("\n" + self.note + "\n" if self.note else ""))
        atomic.write_text(os.path.join(out_dir, self.name + ".tex"), self.latex())


def not_run_table(name, title, columns):
    """A study's main table when its CSVs are missing: one row that says so."""
    return Table(name, title, columns, [[NOT_RUN] + ["-"] * (len(columns) - 1)])


class Claim:
    """One row of the report's claim table."""

    def __init__(self, cid, statement, rule):
        self.id, self.statement, self.rule = cid, statement, rule
        self.setting = NOT_RUN
        self.number = "-"
        self.verdict = "not tested at this scale"
        self.links = []  # paths relative to results/
        self.details = []  # extra lines for the report


class Section:
    """What one study contributes: its status, tables, figures and claims."""

    def __init__(self, study, title):
        self.study, self.title = study, title
        self.status = NOT_RUN
        self.sources = []   # CSV paths read (relative to results/)
        self.tables = []    # Table
        self.figures = []   # (png file name, caption)
        self.claims = {}    # id -> Claim
        self.notes = []


def judged_section(study, title, results, load, claims):
    """A study's section with its claims decided first, from load(results) alone (the verdict
    never depends on a figure), and that data for the tables and figures."""
    data = load(results)
    sec = Section(study, title)
    sec.claims = claims(data)
    return sec, data
