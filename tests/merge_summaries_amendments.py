#!/usr/bin/env python3
"""lm/passkey/merge_summaries.py with amendments (lm/passkey/sweep.sh SWEEP_POLICIES): an
amendment's methods (policy, and per_head for "budget") replace the base's rows of those methods
for that run only, every other row is kept, the sidecar names the amendment, and an amendment
without a base is an error."""
import csv, json, os, subprocess, sys, tempfile

MERGE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lm", "passkey", "merge_summaries.py")
HEADER = "policy,budget,per_head,accuracy,run\n"


def write(d, name, rows):
    with open(os.path.join(d, name), "w") as f:
        f.write(HEADER + "".join(r + "\n" for r in rows))


def merged(d):
    with open(os.path.join(d, "summary.csv"), newline="") as f:
        return sorted(tuple(r.values()) for r in csv.DictReader(f))


with tempfile.TemporaryDirectory() as d:
    write(d, "a.summary.csv", ["duo-certified,0.5,0,0.1,a", "budget,0.5,0,0.7,a", "budget,0.5,1,0.2,a"])
    write(d, "b.summary.csv", ["duo-certified,0.5,0,0.3,b", "budget,0.5,1,0.4,b"])
    write(d, "a@duo-certified+budget-per-head.summary.csv",
          ["duo-certified,0.5,0,0.9,a", "budget,0.5,1,0.8,a"])
    subprocess.run([sys.executable, MERGE, d], check=True, stdout=subprocess.DEVNULL)
    want = sorted([("duo-certified", "0.5", "0", "0.9", "a"), ("budget", "0.5", "0", "0.7", "a"),
                   ("budget", "0.5", "1", "0.8", "a"), ("duo-certified", "0.5", "0", "0.3", "b"),
                   ("budget", "0.5", "1", "0.4", "b")])
    got = merged(d)
    assert got == want, "merged rows:\n{}\nwanted:\n{}".format(got, want)
    with open(os.path.join(d, "summary.csv.json")) as f:
        side = json.load(f)
    assert list(side["amendments"]) == ["a@duo-certified+budget-per-head.summary.csv"], side

    os.remove(os.path.join(d, "a.summary.csv"))
    r = subprocess.run([sys.executable, MERGE, d], capture_output=True, text=True)
    assert r.returncode != 0 and "has no base" in r.stderr, (r.returncode, r.stderr)
print("ok")
