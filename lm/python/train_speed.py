#!/usr/bin/env python3
"""Training tokens/s of the suite's language model written in plain PyTorch (issue 47, item 10's
baseline): the same model as lm/model.h (lm/python/fpa_lm.py: RMSNorm, SwiGLU, tied embeddings,
the gate projection of FoX and FPA), bf16 autocast with fp32 weights, AdamW, no compilation of
the model. Attention, by backend:

  sdpa    softmax (the Transformer, RoPE) through F.scaled_dot_product_attention(is_causal=True)
  flex    FoX and FPA as FlexAttention score_mods (kernels/bench/attention_gpu_bench.py's: FoX
          score + F_i - F_j; FPA the path minimum from a sparse table), flex_attention compiled
  ops     any variant through this suite's kernels from PyTorch (torch.ops.fpa.attention, impl
          auto: cuda on a GPU, fused on the CPU; --ops names libfpa_torch_ops.so)

lm-train's own tokens/s at the same settings comes from lm/device-check.sh (b), which runs this
script beside it and prints the ratio the issue's target is about (lm-train >= 70% of plain
PyTorch).

  lm/python/train_speed.py [--preset configs/lm/paper.conf] [--runs transformer:sdpa,fox:flex]
      [--vocab-size 256] [--batch 8] [--steps 10] [--warmup 3] [--device cuda] [--out CSV]
  lm/python/train_speed.py --smoke     (a tiny model on the CPU, 3 steps: the mechanics, no timing
                                       worth reading; writes build/train_speed_smoke.csv)

Writes the CSV atomically (variant, backend, precision, device, parameters, batch, length,
steps timed, tokens_per_s, step_ms, first and last loss, status, note) with a .json sidecar
(docs/results-schema.md: torch, CUDA and the GPU under environment, every option under config). A run that fails (a backend this PyTorch lacks,
out of memory) gets a row with its status and the error's first line; the exit status is non-zero
only for bad options or when no run succeeded."""
import argparse
import json
import math
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "kernels", "bench"))
sys.path.insert(0, os.path.join(REPO, "experiments"))
from script_io import atomic_write, code_version, csv_text  # noqa: E402

BACKENDS = {"sdpa": ("transformer",), "flex": ("fox", "fpa"), "ops": ("transformer", "fox", "fpa")}
COLUMNS = ["variant", "backend", "precision", "device", "parameters", "vocab_size", "hidden", "layers",
           "heads", "length", "batch", "steps", "timed_steps", "tokens_per_s", "step_ms", "first_loss",
           "last_loss", "status", "note"]


def fail(message):
    print(f"error: {message}", file=sys.stderr)
    sys.exit(2)


def parser():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--preset", default=os.path.join(REPO, "configs", "lm", "paper.conf"),
                   help="an lm preset file (its hidden, layers, heads, mlp-hidden, length, vocab-size)")
    p.add_argument("--runs", default="transformer:sdpa,fox:flex,fpa:flex",
                   help="variant:backend pairs (backends: sdpa, flex, ops)")
    for name in ("vocab-size", "hidden", "layers", "heads", "mlp-hidden", "length"):
        p.add_argument(f"--{name}", type=int, help=f"overrides the preset's {name}")
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--steps", type=int, default=10, help="optimiser steps per run, warm-up included")
    p.add_argument("--warmup", type=int, default=3, help="first steps not timed (compilation, allocator)")
    p.add_argument("--precision", default="bf16", choices=["bf16", "fp32"])
    p.add_argument("--device", default="cuda")
    p.add_argument("--ops", default=os.path.join(REPO, "build", "lib", "libfpa_torch_ops.so"),
                   help="libfpa_torch_ops.so, for the ops backend")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default=os.path.join(REPO, "results", "lm", "plain_pytorch_throughput.csv"))
    p.add_argument("--code-version", default="", help="recorded when git describe is unavailable")
    p.add_argument("--smoke", action="store_true",
                   help="a tiny model on the CPU, every backend this PyTorch has, 3 steps")
    return p


def read_preset(path):
    if not os.path.isfile(path):
        fail(f"--preset: no such file '{path}'")
    values = {}
    with open(path) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if "=" in line:
                key, value = (x.strip() for x in line.split("=", 1))
                values[key] = value
    return values


def model_config(o):
    preset = read_preset(o.preset)
    c = {}
    for name in ("vocab-size", "hidden", "layers", "heads", "mlp-hidden", "length"):
        given = getattr(o, name.replace("-", "_"))
        if given is None and name not in preset:
            fail(f"--{name}: not in {o.preset} and not given")
        c[name] = given if given is not None else int(preset[name])
        if c[name] <= 0:
            fail(f"--{name} must be positive, got {c[name]}")
    if c["hidden"] % c["heads"]:
        fail(f"--hidden {c['hidden']} is not a multiple of --heads {c['heads']}")
    return c


def parse_runs(text):
    runs = []
    for item in filter(None, (x.strip() for x in text.split(","))):
        variant, _, backend = item.partition(":")
        if backend not in BACKENDS:
            fail(f"--runs: unknown backend '{backend}' in '{item}' (sdpa, flex, ops)")
        if variant not in BACKENDS[backend]:
            fail(f"--runs: backend {backend} runs {', '.join(BACKENDS[backend])}, not '{variant}'")
        runs.append((variant, backend))
    if not runs:
        fail("--runs is empty")
    return runs


def attention_of(torch, backend, length, device):
    """The attention override for fpa_lm (q, k, v, gate, variant) -> o, or None for the ops."""
    import torch.nn.functional as F
    if backend == "sdpa":
        if not hasattr(F, "scaled_dot_product_attention"):
            raise RuntimeError(f"this PyTorch ({torch.__version__}) has no scaled_dot_product_attention")
        return lambda q, k, v, gate, variant: F.scaled_dot_product_attention(q, k, v, is_causal=True)
    if backend == "flex":
        from torch.nn.attention.flex_attention import create_block_mask, flex_attention
        import attention_gpu_bench as bench
        flex = torch.compile(flex_attention, dynamic=False)
        mask = create_block_mask(bench.causal_mask_mod, None, None, length, length, device=device)
        lvl, span = bench.rmq_tables(length, device)

        def attend(q, k, v, gate, variant):
            gate = gate.float()  # the field and gates in fp32, as lm-train keeps them
            if variant == "fox":
                score_mod = bench.fox_score_mod(bench.cumsum_gate(gate))
            else:
                score_mod = bench.fpa_score_mod(bench.sparse_table(gate), gate, lvl, span)
            return flex(q, k, v, score_mod=score_mod, block_mask=mask)
        return attend
    return None


def one_run(torch, fpa_lm, o, c, variant, backend):
    device = torch.device(o.device)
    torch.manual_seed(o.seed)
    config = {"kind": variant, "impl": "auto", "min_grad": "straight-through", "vocab_size": c["vocab-size"],
              "hidden": c["hidden"], "layers": c["layers"], "heads": c["heads"], "mlp_hidden": c["mlp-hidden"],
              "context": c["length"], "rope_base": 10000.0, "norm_eps": 1e-5, "init_std": 0.02,
              "st_temperature": 1.0, "tie_embeddings": True}
    model = fpa_lm.LanguageModel(config, attention=attention_of(torch, backend, c["length"], device))
    model = fpa_lm.init_weights(model).to(device)
    optimiser = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.1)
    params = sum(p.numel() for p in model.parameters())
    g = torch.Generator().manual_seed(o.seed)
    tokens = torch.randint(0, c["vocab-size"], (o.batch, c["length"] + 1), generator=g).to(device)
    losses, times = [], []
    autocast = torch.autocast(device_type=device.type, dtype=torch.bfloat16,
                              enabled=o.precision == "bf16")
    for _ in range(o.steps):
        t0 = time.perf_counter()
        with autocast:
            logits = model(tokens[:, :-1])
        loss = torch.nn.functional.cross_entropy(logits.float().flatten(0, 1), tokens[:, 1:].flatten())
        optimiser.zero_grad(set_to_none=True)
        loss.backward()
        optimiser.step()
        losses.append(loss.item())  # waits for the device
        times.append(time.perf_counter() - t0)
        if not math.isfinite(losses[-1]):
            raise RuntimeError(f"loss {losses[-1]} at step {len(losses)}")
    timed = times[o.warmup:]
    step_s = sorted(timed)[len(timed) // 2]
    return {"parameters": params, "timed_steps": len(timed), "step_ms": f"{1000 * step_s:.2f}",
            "tokens_per_s": f"{o.batch * c['length'] / step_s:.1f}", "first_loss": f"{losses[0]:.4f}",
            "last_loss": f"{losses[-1]:.4f}", "status": "ok", "note": ""}


def main(argv):
    p = parser()
    o = p.parse_args(argv)
    if o.smoke:  # its own defaults; what the command line gives still wins
        p.set_defaults(device="cpu", precision="fp32", steps=3, warmup=1, batch=2, hidden=32, layers=1,
                       heads=2, mlp_hidden=64, length=64, vocab_size=64,
                       runs="transformer:sdpa,fox:flex,fpa:flex,fpa:ops",
                       out=os.path.join(REPO, "build", "train_speed_smoke.csv"))  # never results/
        o = p.parse_args(argv)
    if o.steps <= o.warmup:
        fail(f"--steps {o.steps} must exceed --warmup {o.warmup} (at least one timed step)")
    if o.batch <= 0:
        fail(f"--batch must be positive, got {o.batch}")
    c = model_config(o)
    runs = parse_runs(o.runs)
    import torch
    import fpa_lm
    if o.device.startswith("cuda") and not torch.cuda.is_available():
        fail(f"--device {o.device}: this PyTorch sees no GPU")
    if any(b == "ops" for _, b in runs):
        if not os.path.isfile(o.ops):
            fail(f"--ops: no operator library at '{o.ops}' (build the target fpa_torch_ops)")
        fpa_lm.load_ops(o.ops)
    started = time.time()
    rows, ok = [], 0
    for variant, backend in runs:
        row = {"variant": variant, "backend": backend, "precision": o.precision, "device": o.device,
               "vocab_size": c["vocab-size"], "hidden": c["hidden"], "layers": c["layers"],
               "heads": c["heads"], "length": c["length"], "batch": o.batch, "steps": o.steps}
        try:
            row.update(one_run(torch, fpa_lm, o, c, variant, backend))
            ok += 1
        except Exception as e:  # recorded in the row: a missing backend or OOM is a result here
            row.update({"status": "failed", "note": (str(e).strip().splitlines() or [type(e).__name__])[0][:200]})
        print(f"train_speed: {variant} {backend}: " +
              (f"{row['tokens_per_s']} tokens/s ({row['step_ms']} ms/step, loss {row['first_loss']} -> "
               f"{row['last_loss']})" if row["status"] == "ok" else f"failed: {row['note']}"), flush=True)
        rows.append(row)
        if o.device.startswith("cuda"):
            torch.cuda.empty_cache()
    text = csv_text(COLUMNS, rows)
    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() and o.device.startswith("cuda") else ""
    config = {k.replace("_", "-"): str(v) for k, v in vars(o).items()}
    config.update({k: str(v) for k, v in c.items()})  # the model's sizes after the preset
    sidecar = {"program": "lm/python/train_speed.py", "command_line": " ".join([sys.argv[0]] + argv),
               "seed": o.seed, "code_version": code_version(o.code_version),
               "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
               "wall_s": round(time.time() - started, 3),
               "environment": {"device": o.device, "gpu": gpu, "torch": torch.__version__,
                               "cuda": torch.version.cuda or "", "python": sys.version.split()[0]},
               "config": config}
    atomic_write(o.out, text)
    atomic_write(o.out + ".json", json.dumps(sidecar, indent=2) + "\n")
    print(f"train_speed: wrote {o.out} ({ok} of {len(rows)} runs ok)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
