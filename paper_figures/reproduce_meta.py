#!/usr/bin/python3
"""Bookkeeping of `make reproduce`: the profile, each study's wall time and exit code, the total
wall time and the machine, written to results/reproduce_meta.json for REPORT.md
(results/<study>/reproduce_meta-<profile>.json for a study's own profile, which runs that study
alone: PROFILE=passkey, c4-sweep, lm-small).

  reproduce_meta.py --state DIR start [N]          validate PROFILE, remember the start time (N studies)
  reproduce_meta.py --state DIR step NAME -- CMD   run one study, say what it does, time it
  reproduce_meta.py --state DIR finish             write results/reproduce_meta.json
"""
import argparse
import datetime
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# A study's own profile runs that study alone (the Makefile's STUDY_OF_PROFILE): profile -> results folder.
OWN_PROFILES = {"passkey": "passkey", "c4-sweep": "synthetic", "lm-small": "lm", "lm-medium": "lm", "passkey-scale": "passkey", "eval": "weights",
                "passkey-sweep": "passkey", "lm-compress": "lm", "paper-smoke": "lm", "paper": "lm"}
PROFILES = ("quick", "full") + tuple(OWN_PROFILES)
import atomic  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def utc_now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def write_json(path, data):
    atomic.write_text(path, json.dumps(data, indent=2, sort_keys=True) + "\n")


def read_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def meta_path(results, profile):
    if profile == "passkey":  # its name before the other own profiles existed
        return os.path.join(results, "passkey", "reproduce_meta.json")
    if profile in OWN_PROFILES:
        return os.path.join(results, OWN_PROFILES[profile], f"reproduce_meta-{profile}.json")
    return os.path.join(results, "reproduce_meta.json")


def start(state, profile, studies):
    if profile not in PROFILES:
        print(f"error: PROFILE must be one of {', '.join(PROFILES)} (got '{profile}')", file=sys.stderr)
        return 2
    os.makedirs(state, exist_ok=True)
    for f in os.listdir(state):
        if f.endswith(".json"):
            os.remove(os.path.join(state, f))
    write_json(os.path.join(state, "start.json"), {"started_utc": utc_now(), "t0": time.time(), "profile": profile,
                                                      "studies": studies})
    what = OWN_PROFILES.get(profile, "theory, kernels benchmark, synthetic, language models, passkey")
    print(f"[reproduce] PROFILE={profile}: {what}, then tables, figures and results/REPORT.md")
    return 0


def step(state, name, cmd, profile):
    t0 = time.time()
    print(f"[reproduce] {name}: starting ({' '.join(cmd)}, PROFILE={profile})", flush=True)
    try:
        rc = subprocess.call(cmd)
    except OSError as e:
        print(f"error: {name}: cannot run {cmd[0]}: {e}", file=sys.stderr)
        rc = 127
    wall = time.time() - t0
    write_json(os.path.join(state, f"step-{name}.json"),
               {"name": name, "command": " ".join(cmd), "rc": rc, "wall_s": round(wall, 1), "finished_utc": utc_now()})
    word = "done" if rc == 0 else f"FAILED (exit code {rc})"
    finished = len([f for f in os.listdir(state) if f.startswith("step-")])
    total = (read_json(os.path.join(state, "start.json")) or {}).get("studies", "?")
    print(f"[reproduce] {name}: {word} in {wall:.0f} s ({finished} of {total} studies finished)", flush=True)
    return rc


def finish(state, results):
    import report
    s = read_json(os.path.join(state, "start.json"))
    if not s:
        print("error: no start record; run via `make reproduce`", file=sys.stderr)
        return 1
    steps = []
    for f in sorted(os.listdir(state)):
        if f.startswith("step-") and f.endswith(".json"):
            steps.append(read_json(os.path.join(state, f)))
    try:
        version = subprocess.run(["git", "describe", "--always", "--dirty"], cwd=REPO, capture_output=True,
                                 text=True).stdout.strip()
    except OSError:
        version = ""
    wall = time.time() - s["t0"]
    write_json(meta_path(results, s["profile"]),
               {"profile": s["profile"], "started_utc": s["started_utc"], "finished_utc": utc_now(),
                "wall_s": round(wall, 1), "steps": [x for x in steps if x], "machine": report.machine_now(),
                "code_version": version})
    failed = [x["name"] for x in steps if x and x.get("rc")]
    print(f"[reproduce] studies finished in {wall:.0f} s" + (f"; FAILED: {', '.join(failed)}" if failed else ""))
    return 0


def main():
    p = argparse.ArgumentParser(description="bookkeeping of make reproduce")
    p.add_argument("--state", required=True, help="directory for the run's temporary records")
    p.add_argument("--results", default=os.path.join(REPO, "results"))
    p.add_argument("action", choices=["start", "step", "finish"])
    p.add_argument("rest", nargs=argparse.REMAINDER)
    a = p.parse_args()
    profile = os.environ.get("PROFILE", "quick")
    if a.action == "start":
        return start(a.state, profile, int(a.rest[0]) if a.rest else 5)
    if a.action == "finish":
        return finish(a.state, a.results)
    rest = a.rest
    if len(rest) < 3 or rest[1] != "--":
        print("error: usage: step NAME -- COMMAND...", file=sys.stderr)
        return 2
    return step(a.state, rest[0], rest[2:], profile)


if __name__ == "__main__":
    sys.exit(main())
