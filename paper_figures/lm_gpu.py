"""Language-model training on a GPU (issue 47, items 6, 9 and 10), from lm/device-check.sh's CSVs
published as results/lm/gpu_throughput_<gpu>.csv (+ plain_pytorch_throughput_<gpu>.csv): tokens/s
per preset, variant and precision; the time one PROFILE=paper run would take at the measured
paper-preset speed (its token count from configs/lm/paper.conf); and lm-train's speed over the
same model written in plain PyTorch (item 10's target). A dry run on the CPU (sidecar
config.dry_run 1) is not a GPU result and is left out. Without a GPU CSV the section says how to
get one."""
import os
import sys

import common
from common import Table, num

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lm"))
# Issue 47 item 10's target and each variant's plain-PyTorch baseline: the device check's, one home.
from device_check_report import BASELINES, SPEED_TARGET  # noqa: E402
HOW_TO_RUN = ("lm/device-check.sh on a machine with an NVIDIA GPU writes one (lm/README.md, \"Device "
              "and precision\"); commit it as results/lm/gpu_throughput_<gpu>.csv with its sidecar")


def paper_tokens_per_run(repo_configs):
    """steps x batch x length of configs/lm/paper.conf (batch counts sequences per optimiser step)."""
    c = common.read_conf(os.path.join(repo_configs, "lm", "paper.conf"))
    try:
        return int(c["steps"]) * int(c["batch"]) * int(c["length"])
    except (KeyError, ValueError):
        return None


def measured_on_gpu(side):
    """lm/device-check.sh's sidecar of a run on a GPU (a dry run records config.dry_run 1)."""
    return str(common.sidecar_part(side, "config").get("dry_run", "1")) == "0"


def build(results, out, sec, configs):
    found = 0
    lm_dir = os.path.join(results, "lm")
    for path, slug, side in common.gpu_runs(lm_dir, "gpu_throughput"):
        if not measured_on_gpu(side):
            continue  # a dry run on the CPU
        env = common.sidecar_part(side, "environment")
        rows = common.read_csv(path)
        if not common.has_columns(rows, ["preset", "variant", "precision", "tokens_per_s", "status"], path):
            continue
        found += 1
        gpu = env.get("gpu") or slug
        sec.sources.append(common.rel(path, results))
        plain_path = os.path.join(lm_dir, f"plain_pytorch_throughput_{slug}.csv")
        plain = common.read_csv(plain_path) if os.path.exists(plain_path) else []
        if plain:
            sec.sources.append(common.rel(plain_path, results))
        sec.tables.append(table(rows, plain, slug, gpu, env, side, paper_tokens_per_run(configs)))
    if not found:
        sec.notes.append("no GPU training speed yet (results/lm/gpu_throughput_<gpu>.csv): " + HOW_TO_RUN + ".")


def table(rows, plain, slug, gpu, env, side, paper_tokens):
    cols = ["preset", "variant", "precision", "model (width, layers, heads, context, vocabulary)", "batch",
            "tokens/s", "ms/step", "one PROFILE=paper run on one GPU (h)", "plain PyTorch tokens/s", "ours / plain"]
    t = Table(f"lm_gpu_{slug}", f"Language-model training on {gpu}: tokens/s per preset, variant and precision",
              cols, timing=["tokens/s", "ms/step", "one PROFILE=paper run on one GPU (h)", "plain PyTorch tokens/s",
                            "ours / plain"],
              note=f"lm/device-check.sh (code version {side.get('code_version', '?')}; PyTorch "
                   f"{env.get('torch', '?')}, CUDA {env.get('cuda', '?')}, driver {env.get('driver', '?')}). "
                   "tokens/s over the timed steps (after the warm-up ones). The paper preset is timed as issue "
                   "47 item 10 sets it (bf16, batch 8 without accumulation) with the bytes tokenizer (vocabulary "
                   "256: SentencePiece is not built on the GPU machine), so its embedding and output layer are "
                   "smaller than the real preset's (50,277 pieces) and its time per run is a lower bound: "
                   f"{paper_tokens if paper_tokens else '?'} tokens (configs/lm/paper.conf: steps x batch x "
                   "context) over the measured tokens/s. Plain PyTorch: the same model in lm/python/train_speed.py "
                   f"(SDPA for the Transformer, FlexAttention for FoX and FPA); target ours / plain >= {SPEED_TARGET}.")
    for r in rows:
        tps = num(r["tokens_per_s"])
        model = ", ".join(r.get(k, "") for k in ("hidden", "layers", "heads", "length", "vocab"))
        batch = r.get("batch", "") + (f" x {r['accum']}" if r.get("accum") not in ("", "1", None) else "")
        hours = ("-" if r["preset"] != "paper" or not paper_tokens or tps != tps or tps <= 0
                 else f"{paper_tokens / tps / 3600:.1f}")
        plain_tps, ratio = "-", "-"
        if r["preset"] == "paper":
            for p in plain:
                if p.get("variant") == r["variant"] and p.get("backend") == BASELINES.get(r["variant"], [""])[0] \
                        and p.get("precision") == r["precision"] and p.get("status") == "ok":
                    ptps = num(p["tokens_per_s"])
                    plain_tps = f"{ptps:.0f}"
                    if tps == tps and ptps > 0:
                        ratio = f"{tps / ptps:.2f}"
        t.add(r["preset"], r["variant"], r["precision"], model, batch,
              f"{tps:.0f}" if tps == tps else r["status"], r.get("step_ms") or "-", hours, plain_tps, ratio)
    return t
