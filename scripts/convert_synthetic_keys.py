#!/usr/bin/env python3
"""Rewrites the `config` cell of synthetic-run CSVs written before the key came from the field
table (issue 31): old names become the flags' names (model -> variant, fpa_grad -> fpa-backward,
st_tau -> st-temperature, embed -> hidden, payloads=AxB -> payload-values=A payload-dim=B,
inc_bias -> increment-bias-init, fox_bias=default -> fox-gate-bias-init=, n -> length,
lr_final -> lr-final, wd -> weight-decay, eval_every -> eval-every, eval_seqs -> eval-seqs) and
the implementation (impl=, how a run executes) leaves the key. Only that cell changes; files
already converted are left as they are. The sweep then reuses the published runs
(synthetic-sweep --summarize-only finds them complete).

    scripts/convert_synthetic_keys.py <run.csv>...
"""
import csv
import io
import sys

RENAMED = {"model": "variant", "fpa_grad": "fpa-backward", "st_tau": "st-temperature",
           "head_dim": "head-dim", "embed": "hidden", "inc_bias": "increment-bias-init",
           "fox_bias": "fox-gate-bias-init", "n": "length", "lr_final": "lr-final",
           "wd": "weight-decay", "eval_every": "eval-every", "eval_seqs": "eval-seqs"}


def convert_key(key):
    if " variant=" in key or " model=" not in key:
        return key  # already converted, or not a synthetic-run key
    task, rest = key.split(" model=", 1)
    out = [task]
    for item in ("model=" + rest).split(" "):
        name, value = item.split("=", 1)
        if name == "impl":
            continue
        if name == "payloads":
            values, dim = value.split("x")
            out += [f"payload-values={values}", f"payload-dim={dim}"]
            continue
        if name == "fox_bias" and value == "default":
            value = ""
        out.append(f"{RENAMED.get(name, name)}={value}")
    return " ".join(out)


def convert_file(path):
    with open(path, newline="") as f:
        text = f.read()
    rows = list(csv.reader(io.StringIO(text)))
    if not rows or "config" not in rows[0]:
        return False
    col = rows[0].index("config")
    changed = False
    for r in rows[1:]:
        new = convert_key(r[col])
        changed |= new != r[col]
        r[col] = new
    if not changed:
        return False
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(rows)
    with open(path + ".tmp", "w", newline="") as f:
        f.write(buf.getvalue())
    import os
    os.replace(path + ".tmp", path)
    return True


def main(paths):
    n = sum(convert_file(p) for p in paths)
    print(f"convert_synthetic_keys: {n} of {len(paths)} files converted")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: scripts/convert_synthetic_keys.py <run.csv>...")
    main(sys.argv[1:])
