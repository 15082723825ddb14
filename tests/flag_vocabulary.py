#!/usr/bin/python3
"""Every executable answers to the shared flag vocabulary (docs/flags.md).

- Each tool's --help lists the shared flags where they apply (the table below), and no retired
  spelling (experiments/renamed_flags.cpp).
- Each retired spelling of a flag a tool has under its new name is refused on the command line
  and in a --config file: exactly one line, "error: --old is now --new", exit code 2.
- --impl defaults to auto wherever a tool has it.
- docs/flags.md lists exactly the retired spellings of experiments/renamed_flags.cpp.
Usage: flag_vocabulary.py <bin-dir> <tool,tool,...> <repo>"""
import os
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

bin_dir, tools, repo = sys.argv[1], sys.argv[2].split(","), sys.argv[3]
failures = []

# Which shared flags each tool must have (beyond --out, --seed, --threads, --config, --help).
SHARED = {
    "synthetic-run": ["variant", "fpa-backward", "st-temperature", "length", "impl", "hidden", "device", "precision"],
    "synthetic-sweep": ["variants", "fpa-backward", "st-temperature", "length", "impl", "out-dir", "device", "precision"],
    "lm-train": ["variant", "fpa-backward", "st-temperature", "length", "impl", "hidden", "corpus",
                 "out-dir", "device", "precision"],
    "passkey-train": ["variant", "fpa-backward", "st-temperature", "length", "impl", "hidden",
                      "corpus", "out-dir", "device", "precision"],
    "attention-bench": ["variants", "fpa-backward", "lengths", "device", "precision"],
    "bias-bench": ["lengths"],
    "lm-eval": ["corpus", "positions", "summary", "device", "precision"],
    "passkey-eval": ["variant", "lengths", "summary", "device", "precision"],
    "passkey-probe": ["variant", "lengths", "device", "precision"],
    "theory-realization": ["lengths"],
    "theory-fox-special-case": ["lengths"],
    "lm-prepare-brown": ["out-dir"],
    "lm-compress": ["device", "precision"],
}
COMMON = ["out", "seed", "threads", "config", "help"]


def fail(message):
    failures.append(message)
    print("FAIL " + message)


def run(tool, *args):
    p = subprocess.run([os.path.join(bin_dir, tool), *args], capture_output=True, text=True,
                       timeout=120, env=dict(os.environ, OMP_NUM_THREADS="1"))
    return p.returncode, p.stdout, p.stderr


with open(os.path.join(repo, "experiments", "renamed_flags.cpp")) as f:
    renamed = re.findall(r'\{"([a-z0-9-]+)", "([a-z0-9-]+)"\}', f.read())
if len(renamed) < 10:
    fail(f"only {len(renamed)} renames read from experiments/renamed_flags.cpp")
with open(os.path.join(repo, "docs", "flags.md")) as f:
    documented = re.findall(r"^\| `--([a-z0-9-]+)` \| `--([a-z0-9-]+)` \|", f.read(), re.M)
if sorted(documented) != sorted(renamed):
    fail(f"docs/flags.md's retired spellings {sorted(set(documented) ^ set(renamed))} differ from "
         "experiments/renamed_flags.cpp")

def check_help(tool):
    """The tool's flags from --help, after checking the shared ones and --impl's default."""
    rc, out, _ = run(tool, "--help")
    if rc != 0:
        fail(f"{tool} --help: exit {rc}")
        return tool, set()
    flags = set(re.findall(r"^\s+(?:-\w \[ )?--([a-z0-9-]+)", out, re.M))
    for name in COMMON + SHARED.get(tool, []):
        if name not in flags:
            fail(f"{tool}: no --{name}")
    m = re.search(r"^\s+--impl arg \(=([^)]*)\)", out, re.M)
    if "impl" in flags and (not m or m.group(1) != "auto"):
        fail(f"{tool}: --impl's default is {m.group(1) if m else '?'}, not auto")
    for old, _ in renamed:
        if old in flags:
            fail(f"{tool}: still has the retired --{old}")
    return tool, flags


def check_refused(case):
    """One retired spelling given to one tool, on the command line or in a --config file."""
    tool, old, new, conf = case
    want = f"error: --{old} is now --{new}"
    if conf is None:
        rc, _, err = run(tool, f"--{old}", "1")
        if rc != 2 or err.strip() != want:
            fail(f"{tool} --{old} 1: exit {rc}, stderr {err.strip()!r}")
    else:
        with open(conf, "w") as f:
            f.write(f"# written before the rename\n{old} = 1\n")
        rc, _, err = run(tool, "--config", conf)
        if rc != 2 or err.count("\n") != 1 or f"--{old} is now --{new}" not in err:
            fail(f"{tool} --config with '{old} = 1': exit {rc}, stderr {err.strip()!r}")


# Each start of a LibTorch executable costs a second or more of CPU: two at a time, and the
# --config path (the same code for every tool) once per retired spelling.
with tempfile.TemporaryDirectory() as tmp, ThreadPoolExecutor(2) as pool:
    helps = dict(pool.map(check_help, tools))
    cases, tried = [], set()
    for tool in tools:
        for old, new in renamed:
            if new in helps[tool]:
                cases.append((tool, old, new, None))
                if old not in tried:
                    cases.append((tool, old, new, os.path.join(tmp, f"{tool}-{old}.conf")))
                tried.add(old)
    list(pool.map(check_refused, cases))
    for tool in tools:
        print(f"ok   {tool}: {len(helps[tool])} flags" if helps[tool] else f"-- {tool}: no flags read")
    print(f"{len(cases)} refusals tried")
    untried = sorted({old for old, _ in renamed} - tried)
    if untried:
        fail(f"retired flags no tool has under the new name (so never tried): {untried}")

print("FAIL" if failures else "PASS")
sys.exit(1 if failures else 0)
