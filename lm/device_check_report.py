#!/usr/bin/env python3
"""Helpers of lm/device-check.sh (standard library only; Python 3.8+).

  corpus DIR DOCS BYTES            a deterministic corpus of DOCS plain-text documents (word salad
                                   from a Zipf-like vocabulary, one sentence per line), for a
                                   machine without Brown (no network there)
  throughput RUN_DIR SKIP          one JSON object from an lm-train run directory's log.csv:
                                   tokens/s over the steps after the first SKIP (warm-up: CUDA
                                   context, cuBLAS handles, allocator) up to the last step before
                                   the final validation, the step time, the last losses
  agree OUT.csv LABEL A B          appends the per-step train losses of run directories A and B
                                   (and their difference) to OUT.csv; prints the largest absolute
                                   and relative difference
  model RUN_DIR PRESET.conf         hidden,layers,heads,length,vocab,batch,accum of a run: its
                                   sidecar's flags (log.csv.json), where a flag was 0 ("keep")
                                   the preset file's value, else lm-train's default
  sidecar OUT.json KEY=VALUE...    writes the throughput CSV's sidecar (env.KEY: its environment,
                                   config.KEY: its config, other keys at the top)
  speed THROUGHPUT.csv PLAIN.csv   issue 47 item 10's ratio per variant: lm-train's paper-preset
                                   tokens/s (gpu_throughput.csv) over the same model's in plain
                                   PyTorch (lm/python/train_speed.py's CSV), target 0.70
"""
import csv
import json
import os
import random
import sys


def read_log(run_dir):
    with open(os.path.join(run_dir, "log.csv"), newline="") as f:
        return list(csv.DictReader(f))


def corpus(out_dir, docs, size):
    rng = random.Random(47)
    syll = ["ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "we", "zu", "an", "er", "is", "on", "ul"]
    words = sorted({"".join(rng.choice(syll) for _ in range(rng.randint(1, 4))) for _ in range(4000)})
    weights = [1.0 / (i + 1) for i in range(len(words))]
    os.makedirs(out_dir, exist_ok=True)
    for d in range(int(docs)):
        lines, n = [], 0
        while n < int(size):
            s = " ".join(rng.choices(words, weights, k=rng.randint(4, 24)))
            s = s[0].upper() + s[1:] + rng.choice([" .", " .", " ,", " ?", " !"])
            lines.append(s)
            n += len(s) + 1
        with open(os.path.join(out_dir, f"doc{d:03d}.txt"), "w") as f:
            f.write("\n".join(lines) + "\n")


def throughput(run_dir, skip):
    rows = read_log(run_dir)
    if not rows:
        raise SystemExit(f"error: {run_dir}/log.csv has no steps")
    n = len(rows)
    # The last row's elapsed_s includes the final validation: end one step before it.
    end = rows[-2] if n >= 2 else rows[-1]
    k = min(int(skip), max(0, n - 3))
    start = rows[k - 1] if k >= 1 else None
    t0 = float(start["elapsed_s"]) if start else 0.0
    tok0 = int(start["tokens"]) if start else 0
    dt = float(end["elapsed_s"]) - t0
    dtok = int(end["tokens"]) - tok0
    steps = int(end["step"]) - (int(start["step"]) if start else 0)
    out = {
        "steps": int(rows[-1]["step"]),
        "timed_steps": steps,
        "tokens_per_s": round(dtok / dt, 1) if dt > 0 else "",
        "step_ms": round(1000 * dt / steps, 2) if steps > 0 and dt > 0 else "",
        "first_loss": rows[0]["train_loss"],
        "last_loss": rows[-1]["train_loss"],
        "val_loss": rows[-1]["val_loss"],
        "elapsed_s": rows[-1]["elapsed_s"],
    }
    print(json.dumps(out))


def agree(out_csv, label, a, b):
    ra, rb = read_log(a), read_log(b)
    new = not os.path.exists(out_csv)
    worst_abs = worst_rel = 0.0
    with open(out_csv, "a", newline="") as f:
        w = csv.writer(f)
        if new:
            w.writerow(["comparison", "step", "loss_a", "loss_b", "abs_diff", "rel_diff", "run_a", "run_b"])
        for x, y in zip(ra, rb):
            if x["step"] != y["step"]:
                raise SystemExit(f"error: {a} and {b} log different steps ({x['step']} vs {y['step']})")
            la, lb = float(x["train_loss"]), float(y["train_loss"])
            d = abs(la - lb)
            r = d / max(abs(la), 1e-12)
            worst_abs, worst_rel = max(worst_abs, d), max(worst_rel, r)
            w.writerow([label, x["step"], x["train_loss"], y["train_loss"], f"{d:.3g}", f"{r:.3g}",
                        os.path.basename(a), os.path.basename(b)])
        if len(ra) != len(rb):
            raise SystemExit(f"error: {a} has {len(ra)} steps, {b} {len(rb)}")
    print(f"{label}: {len(ra)} steps, largest |diff| {worst_abs:.3g} (relative {worst_rel:.3g})")


MODEL_KEYS = ("hidden", "layers", "heads", "length", "vocab-size", "batch", "accum")


def model(run_dir, preset_file):
    preset = {}
    with open(preset_file) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if "=" in line:
                k, _, v = line.partition("=")
                preset[k.strip()] = v.strip()
    with open(os.path.join(run_dir, "log.csv.json")) as f:
        flags = json.load(f).get("config", {})
    defaults = {"vocab-size": "256", "accum": "1"}
    out = []
    for k in MODEL_KEYS:
        v = flags.get(k, "")
        if v in ("", "0"):
            v = preset.get(k, defaults.get(k, ""))
        out.append(v)
    print(",".join(out))


def sidecar(out_json, pairs):
    """KEY=VALUE pairs as docs/results-schema.md's sidecar: env.KEY under `environment`,
    config.KEY under `config`, the others (program, command_line, code_version, started_utc,
    wall_s) at the top; written atomically."""
    obj = {"environment": {}, "config": {}}
    for p in pairs:
        k, _, v = p.partition("=")
        group, _, key = k.partition(".")
        if key and group in ("env", "config"):
            obj["environment" if group == "env" else "config"][key] = v
        else:
            obj[k] = float(v) if k == "wall_s" else v
    tmp = out_json + ".tmp"
    with open(tmp, "w") as f:
        json.dump(obj, f, indent=2, sort_keys=True)
        f.write("\n")
    os.replace(tmp, out_json)


# The plain-PyTorch baseline of each variant (issue 47, item 10): SDPA for softmax, FlexAttention
# for FoX; FPA beside both its FlexAttention version and the softmax baseline.
BASELINES = {"transformer": ["sdpa"], "fox": ["flex"], "fpa": ["flex"]}
SPEED_TARGET = 0.70


def speed(throughput_csv, plain_csv):
    with open(throughput_csv, newline="") as f:
        ours = {r["variant"]: r for r in csv.DictReader(f) if r["preset"] == "paper" and r["tokens_per_s"]}
    with open(plain_csv, newline="") as f:
        plain = {(r["variant"], r["backend"]): r for r in csv.DictReader(f) if r["status"] == "ok"}
    softmax = plain.get(("transformer", "sdpa"))
    for v, mine in sorted(ours.items()):
        for b in BASELINES.get(v, []):
            base = plain.get((v, b))
            if base:
                ratio = float(mine["tokens_per_s"]) / float(base["tokens_per_s"])
                print(f"{v}: lm-train {float(mine['tokens_per_s']):.0f} tokens/s, plain PyTorch ({b}) "
                      f"{float(base['tokens_per_s']):.0f}: ratio {ratio:.2f} (target {SPEED_TARGET})")
            else:
                print(f"{v}: no plain-PyTorch {b} measurement to compare with")
        if v != "transformer" and softmax:
            print(f"{v}: lm-train over plain softmax (sdpa) {float(mine['tokens_per_s']) / float(softmax['tokens_per_s']):.2f}")


if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "corpus":
        corpus(*args)
    elif cmd == "throughput":
        throughput(*args)
    elif cmd == "agree":
        agree(*args)
    elif cmd == "model":
        model(*args)
    elif cmd == "sidecar":
        sidecar(args[0], args[1:])
    elif cmd == "speed":
        speed(*args)
    else:
        raise SystemExit(__doc__)
