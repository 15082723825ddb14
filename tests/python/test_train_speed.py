#!/usr/bin/python3
"""lm/python/train_speed.py (the plain-PyTorch training baseline of issue 47, item 10) in its CPU
--smoke mode: every requested run has a row, the suite's operator trains (finite losses that
start near ln(vocab), as lm/model.cpp's initialisation gives, and fall), a backend this PyTorch
lacks is a row with its reason rather than a crash, the same seed gives the same losses, the
sidecar has only documented fields, and bad options exit 2 with one line.

Usage: test_train_speed.py LIBRARY (libfpa_torch_ops.so). Exit 0: pass; 77: PyTorch is not
installed (ctest SKIP); anything else: a failure, printed.
"""
import csv
import json
import math
import os
import subprocess
import sys
import tempfile

try:
    import torch  # noqa: F401
except ImportError:
    print("SKIP: python3-torch is not installed (PyTorch for this Python)")
    sys.exit(77)

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SCRIPT = os.path.join(REPO, "lm", "python", "train_speed.py")
SIDECAR_FIELDS = {"program", "command_line", "seed", "code_version", "started_utc", "wall_s",
                  "environment", "config"}
failures = []


def check(ok, message):
    print(("ok   " if ok else "FAIL ") + message)
    if not ok:
        failures.append(message)


def run(*args):
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True)


library = sys.argv[1]
with tempfile.TemporaryDirectory() as tmp:
    rows_of = {}
    for tag in ("a", "b"):
        out = os.path.join(tmp, f"{tag}.csv")
        r = run("--smoke", "--ops", library, "--out", out)
        check(r.returncode == 0, f"smoke run {tag} exits 0 ({r.returncode}: {r.stderr.strip()[-300:]})")
        rows_of[tag] = list(csv.DictReader(open(out))) if os.path.exists(out) else []
    rows = rows_of["a"]
    check([(x["variant"], x["backend"]) for x in rows] ==
          [("transformer", "sdpa"), ("fox", "flex"), ("fpa", "flex"), ("fpa", "ops")],
          "one row per requested run, in order")
    ops = [x for x in rows if x["backend"] == "ops"]
    if ops:
        x = ops[0]
        first, last = float(x["first_loss"] or "nan"), float(x["last_loss"] or "nan")
        check(x["status"] == "ok" and float(x["tokens_per_s"]) > 0, "the suite's operator trains")
        check(abs(first - math.log(int(x["vocab_size"]))) < 0.2,
              f"first loss {first} near ln(vocab) (lm/model.cpp's initialisation)")
        check(last < first, f"the loss falls ({first} -> {last})")
    for x in rows:
        check(x["status"] in ("ok", "failed") and (x["status"] == "ok") != bool(x["note"]),
              f"{x['variant']}:{x['backend']} is ok or failed with a reason ({x['status']}: {x['note']})")
    same = [(x["first_loss"], x["last_loss"]) for x in rows_of["a"]] == \
           [(x["first_loss"], x["last_loss"]) for x in rows_of["b"]]
    check(same, "the same seed gives the same losses")
    side = json.load(open(os.path.join(tmp, "a.csv.json")))
    check(set(side) <= SIDECAR_FIELDS, f"sidecar fields documented ({sorted(set(side) - SIDECAR_FIELDS)})")
    check(side["config"].get("hidden") == "32" and side["environment"].get("device") == "cpu",
          "the sidecar records the model and the device")
    for bad, what in ((["--runs", "fpa:sdpa"], "backend sdpa runs transformer"),
                      (["--runs", "fox:nope"], "unknown backend"),
                      (["--smoke", "--warmup", "5"], "must exceed --warmup"),
                      (["--preset", os.path.join(tmp, "missing.conf")], "no such file")):
        r = run(*bad, "--out", os.path.join(tmp, "bad.csv"))
        lines = r.stderr.strip().splitlines()
        check(r.returncode == 2 and len(lines) == 1 and what in lines[0],
              f"{' '.join(bad)}: exit 2 with one line naming it ({r.returncode}: {r.stderr.strip()})")
    check(not os.path.exists(os.path.join(tmp, "bad.csv")), "a refused run writes nothing")

print("PASS" if not failures else f"FAIL ({len(failures)})")
sys.exit(1 if failures else 0)
