#!/usr/bin/python3
"""The GPU attention benchmark's harness (kernels/bench/attention_gpu_bench.py) in its CPU --smoke
mode: it runs, its self-checks of the baselines' bias formulations pass, the CSV and the ratios
CSV have the columns docs/results-schema.md lists for them (in order), every row has either a
timing or a skip reason, this project's operator is timed in every cell (it runs on the CPU),
and the sidecar has only documented fields.

Usage: test_attention_gpu_bench.py LIBRARY (libfpa_torch_ops.so). Exit 0: pass; 77: PyTorch is
not installed (ctest SKIP); anything else: a failure, printed.
"""
import csv
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

try:
    import torch  # noqa: F401
except ImportError:
    print("SKIP: python3-torch is not installed (PyTorch for this Python)")
    sys.exit(77)

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BENCH = os.path.join(REPO, "kernels", "bench", "attention_gpu_bench.py")
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def documented(title_part):
    """Columns of the docs/results-schema.md section whose title contains title_part."""
    doc = open(os.path.join(REPO, "docs", "results-schema.md")).read()
    cols, inside = [], False
    for line in doc.splitlines():
        if line.startswith("### ") or line.startswith("## "):
            inside = line.startswith("### ") and title_part in line
            continue
        m = re.match(r"\| `([a-z0-9_]+)` \|", line)
        if inside and m:
            cols.append(m.group(1))
    return cols, doc


def run(args, timeout=120):
    return subprocess.run([sys.executable, BENCH] + args, capture_output=True, text=True, timeout=timeout)


with tempfile.TemporaryDirectory() as tmp:
    out = os.path.join(tmp, "attention_gpu.csv")
    r = run(["--smoke", "--ops", sys.argv[1], "--out", out])
    print(r.stdout[-3000:] + r.stderr[-3000:])
    check(r.returncode == 0, f"--smoke exits 0 (got {r.returncode})")
    check("self-checks of the baselines' formulations: passed" in r.stdout,
          "self-checks: materialised bias and FlexAttention score_mods equal fpa_bias / fox_bias")

    rows = list(csv.DictReader(open(out)))
    header = open(out).readline().strip().split(",")
    want, doc = documented("attention_gpu_bench.py: time")
    check(len(want) > 10 and header == want, f"CSV columns are the documented ones, in order ({header})")
    timed = lambda row: row["median_ms"] != "" and float(row["median_ms"]) > 0 and float(row["tflops"]) > 0
    bad = [row for row in rows if not ((timed(row) and row["skip_reason"] == "") or
                                       (row["median_ms"] == "" and row["skip_reason"] != ""))]
    check(rows and not bad, f"every row has either a timing or a skip reason ({len(rows)} rows, {len(bad)} bad)")
    impls = {row["impl"] for row in rows}
    check(impls == {"fpa_ops", "sdpa_flash", "flex", "sdpa_bias"}, f"every implementation has rows ({impls})")
    ops = [row for row in rows if row["impl"] == "fpa_ops"]
    check(ops and all(timed(row) for row in ops), "torch.ops.fpa.attention is timed in every one of its cells")
    variants = {(row["variant"], row["fpa_backward"], row["dtype"], row["pass"]) for row in ops}
    check({("fpa", "straight-through", "bfloat16", "fwd_bwd"), ("fox", "-", "float32", "fwd"),
           ("softmax", "-", "bfloat16", "fwd_bwd"), ("fpa", "exact", "float32", "fwd_bwd")} <= variants,
          "the project's cells cover softmax, FoX, FPA exact and straight-through, bf16 and fp32")
    check({(row["batch"], row["heads"], row["n"], row["head_dim"]) for row in rows} ==
          {("1", "2", "96", "16"), ("2", "2", "64", "32")}, "the smoke shapes")
    tol = {"bfloat16": 2e-2, "float32": 1e-5}
    errs = [(row, float(row["max_err"])) for row in ops if row["pass"] == "fwd"]
    check(errs and all(e <= tol[row["dtype"]] for row, e in errs),
          "forward outputs within 2e-2 (bf16) / 1e-5 (fp32) of the float64 definition on the checked rows")
    check(all(row["gate_grad"] == "1" for row in ops if row["pass"] == "fwd_bwd" and row["variant"] != "softmax"),
          "the gate's gradient is computed in the project's fwd_bwd cells")

    ratios_path = os.path.join(tmp, "attention_gpu_ratios.csv")
    ratio_rows = list(csv.DictReader(open(ratios_path)))
    want_r, _ = documented("attention_gpu_bench.py: the target ratios")
    check(len(want_r) > 5 and open(ratios_path).readline().strip().split(",") == want_r,
          "ratios CSV columns are the documented ones, in order")
    check(ratio_rows and all((row["value"] == "") == row["note"].startswith("not measured") for row in ratio_rows),
          "a ratio has a value exactly when both of its cells were measured")
    own = [row for row in ratio_rows if row["ratio"] == "fpa_vs_fox_own"]
    check(own and all(row["value"] != "" for row in own), "fpa_vs_fox_own is computed from the CPU cells")

    side = json.load(open(out + ".json"))
    part = doc.split("## Provenance sidecar", 1)[1].split("\n## ", 1)[0]
    fields = set(re.findall(r"^\| `([a-z_]+)` \|", part, re.M))
    check(set(side) <= fields, f"sidecar fields are documented ({sorted(set(side) - fields)} are not)")
    check(side.get("cells_pending") == 0 and side.get("environment", {}).get("torch") and
          side.get("command_line", "").endswith(out) and side.get("code_version"),
          "sidecar: finished run, torch version, command line, code version")
    check(os.path.exists(ratios_path + ".json"), "the ratios CSV has its sidecar")
    check(not glob.glob(os.path.join(tmp, "*.tmp.*")), "no temporary files left")

    # A config file sets options (the command line wins); bad options are refused with exit 2.
    conf = os.path.join(tmp, "b.conf")
    open(conf, "w").write("# test\nshapes = 1x1x8x4\nimpls = fpa_ops\npasses = fwd\n")
    r = run(["--smoke", "--ops", sys.argv[1], "--config", conf, "--out", out, "--dtypes", "float32"])
    rows = list(csv.DictReader(open(out)))
    check(r.returncode == 0 and len(rows) == 3 and {row["n"] for row in rows} == {"8"}
          and json.load(open(out + ".json"))["config"]["config"] == conf,
          f"--config sets shapes, impls, passes; the sidecar names it ({len(rows)} rows)")
    for bad_args in (["--shapes", "4x4"], ["--impls", "cudnn"], ["--out", "x.txt"], ["--repeats", "0"]):
        r = run(["--smoke", "--out", out] + bad_args)
        check(r.returncode == 2, f"{' '.join(bad_args)} refused with exit 2")
    open(conf, "w").write("shape = 1x1x8x4\n")
    check(run(["--config", conf, "--out", out]).returncode == 2, "an unknown key in --config is refused")

print("FAIL" if failures else "PASS")
sys.exit(1 if failures else 0)
