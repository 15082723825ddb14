#!/usr/bin/python3
"""docs/results-schema.md covers every CSV the suite writes.

1. Each column list an executable writes (read from its source: a CsvWriter's `{"a", "b", ...}`,
   a named list passed to one, or a comma-joined header constant) equals, in order, the table of
   one section of the document whose `Source:` names that file.
2. Every column of every CSV committed under results/ (retired names mapped as paper_figures maps
   them) is listed in a section whose `Files:` pattern matches the CSV; every CSV matches one.
3. Every field of every committed sidecar is a documented field.
4. Every committed sidecar names its config file, except the archives the document lists.
Usage: results_schema.py <repo>"""
import fnmatch
import glob
import json
import os
import re
import sys

repo = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".")
sys.path.insert(0, os.path.join(repo, "paper_figures"))
import common  # noqa: E402  (RENAMED_COLUMNS, the one home of retired column names)

failures = []


def fail(message):
    failures.append(message)
    print("FAIL " + message)


def sections(doc):
    """[{title, files: [patterns], sources: [paths], columns: [names]}] of the CSV sections."""
    out, cur = [], None
    for line in doc.splitlines():
        if line.startswith("### "):
            cur = {"title": line[4:], "files": [], "sources": [], "columns": []}
            out.append(cur)
        elif line.startswith("## ") or cur is None:
            cur = None  # a chapter heading ends the CSV section before it
        elif line.startswith("Files:"):
            cur["files"] = re.findall(r"`([^`]+)`", line)
        elif line.startswith("Source:"):
            cur["sources"] = re.findall(r"`([^`]+)`", line)
        else:
            m = re.match(r"\| `([a-z0-9_]+)` \|", line)
            if m:
                cur["columns"].append(m.group(1))
    return [s for s in out if s["columns"]]


def literals(text):
    return re.findall(r'"([^"]*)"', text)


def until_close(text, start):
    """The text from `start` (just after an opening parenthesis) to its matching ')'."""
    depth = 1
    for i in range(start, len(text)):
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        if depth == 0:
            return text[start:i]
    return text[start:]


def written_headers(source_files):
    """(file, [columns]) for every CSV header the sources write."""
    texts = {f: open(f).read() for f in source_files}
    # Named lists and comma-joined header constants, by name, from every source file.
    named = {}
    for text in texts.values():
        for m in re.finditer(r"(\w+)\s*=\s*\{([^{}]*)\};", text):
            named[m.group(1)] = literals(m.group(2))
        for m in re.finditer(r"(\w+)\s*=\s*\"([a-z0-9_]+(?:,[a-z0-9_]+)+)\";", text):
            named[m.group(1)] = m.group(2).split(",")
    found, writers = [], 0
    for f, text in texts.items():
        for m in re.finditer(r"CsvWriter\s+\w+\(", text):
            writers += 1
            args = until_close(text, m.end())
            brace = re.search(r"\{([^{}]*)\}", args)
            if brace:
                found.append((f, literals(brace.group(1))))
                continue
            names = [n for n in re.findall(r"\w+", args) if n in named]
            if names:
                found.append((f, named[names[-1]]))
            else:
                fail(f"{rel(f)}: cannot read the columns of `CsvWriter {args.strip()[:60]}`")
        # Logs written as text with a header function (lm's trainer).
        for m in re.finditer(r"header\(\)\s*\{\s*return\s*\"([a-z0-9_,]+)\";", text):
            found.append((f, m.group(1).split(",")))
    if writers == 0:
        fail("no CsvWriter found in the sources: the extraction is broken")
    return found


def rel(path):
    return os.path.relpath(path, repo)


doc = open(os.path.join(repo, "docs", "results-schema.md")).read()
secs = sections(doc)
if len(secs) < 15:
    fail(f"only {len(secs)} CSV sections parsed from docs/results-schema.md")

# 1. Headers in the sources.
sources = [f for d in ("kernels", "lm", "synthetic", "theory")
           for f in glob.glob(os.path.join(repo, d, "**", "*.cpp"), recursive=True)
           + glob.glob(os.path.join(repo, d, "**", "*.h"), recursive=True)]
headers = written_headers(sources)
for f, cols in headers:
    mine = [s for s in secs if rel(f) in s["sources"]]
    if not mine:
        fail(f"{rel(f)} writes a CSV ({','.join(cols)}) and no section names it as its Source")
    elif not any(s["columns"] == cols for s in mine):
        undocumented = [c for c in cols if not any(c in s["columns"] for s in mine)]
        fail(f"{rel(f)} writes {','.join(cols)}; no section of it lists exactly these columns"
             + (f" (undocumented: {', '.join(undocumented)})" if undocumented else " (order differs)"))
print(f"checked {len(headers)} headers written by {len({f for f, _ in headers})} source files")

# 2. Committed CSVs.
results = os.path.join(repo, "results")
csvs = [f for f in glob.glob(os.path.join(results, "**", "*.csv"), recursive=True)]
for f in csvs:
    path = rel(f)
    with open(f) as fh:
        header = fh.readline().strip().split(",")
    cols = [common.RENAMED_COLUMNS.get(c, c) for c in header]
    matching = [s for s in secs if any(fnmatch.fnmatch(path, p) for p in s["files"])]
    if not matching:
        fail(f"{path}: no section's Files pattern matches it")
    elif not any(set(cols) <= set(s["columns"]) for s in matching):
        best = min(matching, key=lambda s: len(set(cols) - set(s["columns"])))
        fail(f"{path}: columns {sorted(set(cols) - set(best['columns']))} are not in '{best['title']}'")
print(f"checked the headers of {len(csvs)} committed CSVs")

# 3. Committed sidecars.
sidecar_part = doc.split("## Provenance sidecar", 1)[1].split("\n## ", 1)[0]
fields = set(re.findall(r"^\| `([a-z_]+)` \|", sidecar_part, re.M))
for f in glob.glob(os.path.join(results, "**", "*.csv.json"), recursive=True):
    try:
        keys = set(json.load(open(f)))
    except ValueError:
        fail(f"{rel(f)}: not JSON")
        continue
    if keys - fields:
        fail(f"{rel(f)}: fields {sorted(keys - fields)} are not documented")
print(f"checked sidecar fields against {sorted(fields)}")

# 4. Every sidecar names the config file its settings came from, except the documented archives
#    ("Every sidecar of a study's current results names its config file" in the schema).
ARCHIVES = ["passkey/protocol-v1/*", "passkey/full/*", "passkey/diagnostics/*",
            "passkey/decode_speed/before-*"]


def names_config(side):
    c = side.get("config") if isinstance(side.get("config"), dict) else {}
    return bool(c.get("config") or c.get("study-config") or c.get("train-config") or c.get("preset")
                or side.get("sources"))


unnamed = 0
for f in sorted(glob.glob(os.path.join(results, "**", "*.csv.json"), recursive=True)):
    r = os.path.relpath(f, results)
    if any(fnmatch.fnmatch(r, a) for a in ARCHIVES):
        continue
    try:
        side = json.load(open(f))
    except ValueError:
        continue  # reported above
    if names_config(side):
        continue
    # A sweep's run made before --study-config: its folder's summary names the grid.
    summary = os.path.join(os.path.dirname(os.path.dirname(f)), "summary.csv.json")
    if fnmatch.fnmatch(r, "synthetic/sweep-n*/runs/*") and os.path.exists(summary) and \
            names_config(json.load(open(summary))):
        continue
    unnamed += 1
    fail(f"{rel(f)}: names no config file (config.config, config.study-config or config.train-config)")
print(f"checked that sidecars name their config file ({unnamed} do not)")

# 5. The sidecars the GPU checks write, which a session with a GPU commits under results/ (none is
#    committed yet): lm/device-check.sh's, through lm/device_check_report.py with the keys the script
#    passes, must have documented fields only and name its presets.
script = open(os.path.join(repo, "lm", "device-check.sh")).read()
passed = re.search(r"^sidecar=\((.*?)\)$", script, re.M | re.S)
if not passed:
    fail("lm/device-check.sh: no sidecar=( ... ) array found")
else:
    import shlex
    import subprocess
    import tempfile
    pairs = [re.sub(r"\$\(.*\)|\$\{?\w+[^}\"]*\}?", "x", p) for p in shlex.split(passed.group(1))]
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "gpu_throughput.csv.json")
        subprocess.run([sys.executable, os.path.join(repo, "lm", "device_check_report.py"), "sidecar", out]
                       + pairs + ["wall_s=1.5"], check=True)
        side = json.load(open(out))
    if set(side) - fields:
        fail(f"lm/device-check.sh's sidecar: fields {sorted(set(side) - fields)} are not documented")
    if not names_config(side):
        fail("lm/device-check.sh's sidecar names no preset (config.preset)")
    print(f"checked lm/device-check.sh's sidecar ({len(pairs)} keys)")

print("FAIL" if failures else "PASS")
sys.exit(1 if failures else 0)
