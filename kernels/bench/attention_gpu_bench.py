#!/usr/bin/env python3
"""GPU attention benchmark (issue 48, items 7 and 8; SPEC section 9): this project's kernels
through torch.ops.fpa.attention beside PyTorch's SDPA flash kernel, FoX and FPA written as
FlexAttention score_mods, and FPA with a materialised (B, H, n, n) bias + SDPA, in one run.

  python3 kernels/bench/attention_gpu_bench.py --ops build-gpu/lib/libfpa_torch_ops.so \
      --config configs/bench/attention-gpu.conf --out results/bench/attention_gpu.csv
  /usr/bin/python3 kernels/bench/attention_gpu_bench.py --smoke --ops build/lib/libfpa_torch_ops.so \
      --out /tmp/smoke.csv          # CPU, tiny shapes: checks the harness (ctest attention_gpu_bench_smoke)

Writes (each atomically: a temporary file, then a rename; rewritten after every cell, so a run
cut short leaves the cells done so far):
  <out>                 one row per (implementation, variant, FPA backward, dtype, shape, pass):
                        median ms and TFLOP/s, or an empty timing and a skip_reason;
  <out>.json            the provenance sidecar (docs/results-schema.md): GPU, driver, CUDA,
                        PyTorch, Triton, code version, command line, wall time, every option;
  <out stem>_ratios.csv the issue's target ratios, computed from the measured cells only
                        (+ its own sidecar).
Columns: docs/results-schema.md ("attention_gpu_bench.py"). Exit status: 0 when every cell of
this project's kernels ran or was skipped for a stated limit (memory, time budget, no GPU), 1
when one of them failed with an error (the baselines' errors are recorded, not fatal), 2 for bad
arguments.

Timing: CUDA events around each pass (time.perf_counter on the CPU), one untimed call (compiles
FlexAttention), then --warmup untimed calls, then the median of --repeats timed calls (fewer, at
least 3, when a pass is slower than --cell-seconds / --repeats; a single call when one call
alone exceeds --cell-seconds). `fwd` runs under no_grad; `fwd_bwd` is the forward plus
torch.autograd.grad of q, k, v and, where it flows, the gate. TFLOP/s as SPEC section 9
counts them: causal 4 B H n^2 d / 2 for `fwd`, 3.5 times that for `fwd_bwd`, the same count
for every implementation. peak_extra_bytes: torch.cuda.max_memory_allocated during one pass
minus the bytes allocated before it (outputs, saved tensors, gradients and temporaries); -1 on
the CPU.

The implementations (`impl`):
  fpa_ops     torch.ops.fpa.attention(q, k, v, gate, variant, "auto", fpa_backward): impl cuda on
              CUDA tensors (fused on the CPU). softmax, FoX, FPA exact and straight-through; bf16
              (fp32 gate/field) and fp32 (on TF32 tensor cores unless --fp32-matmul exact).
  sdpa_flash  F.scaled_dot_product_attention(is_causal=True) under sdpa_kernel(FLASH_ATTENTION),
              bf16, softmax only (the field's speed reference).
  flex        torch.compile(flex_attention) with a causal BlockMask. FoX: score + F_i - F_j with
              F = cumsum(log f) (fp32) captured. FPA: score + M(j, i) - phi_j, the path minimum
              M(j, i) = min phi[j..i] from a sparse table (range-minimum query): ST[k][j] =
              min phi[j .. j + 2^k - 1], built from phi by log2(n) torch.minimum passes (fp32,
              (B, H, log2 n + 1, n): O(n log n) memory, no n x n tensor), and
              M = min(ST[k][j], ST[k][i - 2^k + 1]) with k = floor(log2(i - j + 1)) read from a
              table: O(1) per score. The field's gradient flows through FlexAttention's
              captured-buffer gradients (atomic adds into ST, then torch.minimum's backward to
              phi; at exact ties torch.minimum splits the gradient, where exact mode gives it all
              to the latest position; a random-walk field has no ties). When that backward
              fails, the cell is timed with the field detached: gate_grad 0 and the error in note.
  sdpa_bias   FPA as a PyTorch user writes it: the bias M_ij - phi_j materialised as a
              (B, H, n, n) fp32 tensor (M by torch.cummin down the columns of the masked field;
              cummin keeps the latest index at ties, so the field gradient is exact mode's),
              cast to the input dtype and passed to SDPA as attn_mask (PyTorch picks the
              backend). fp32 and bf16; skipped where its n x n tensors would not fit.
Forward rows also carry max_err: max |out - ref| / max |ref| over up to --check-rows query rows
(the first, the last, evenly spaced between), ref the float64 definition computed on the same
(rounded) inputs on those rows only.
"""
import argparse
import datetime
import json
import math
import os
import platform
import shlex
import statistics
import subprocess
import sys
import time

COLUMNS = ["impl", "variant", "fpa_backward", "dtype", "batch", "heads", "n", "head_dim", "pass",
           "median_ms", "tflops", "peak_extra_bytes", "repeats", "warmup", "gate_grad", "max_err",
           "skip_reason", "note"]
RATIO_COLUMNS = ["ratio", "batch", "heads", "n", "head_dim", "dtype", "pass", "fpa_backward",
                 "numerator", "denominator", "value", "target", "target_applies", "meets", "note"]
DEFAULT_SHAPES = "4x16x1024x64,2x16x4096x64,1x16x16384x64,2x16x4096x128"
SMOKE_SHAPES = "1x2x96x16,2x2x64x32"
IMPLS = ["fpa_ops", "sdpa_flash", "flex", "sdpa_bias"]
PROGRAM = "kernels/bench/attention_gpu_bench.py"
REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(REPO, "experiments"))
from script_io import atomic_write, code_version, csv_text  # noqa: E402


# --- Options ---------------------------------------------------------------------------------

def parser():
    p = argparse.ArgumentParser(
        prog=PROGRAM, description="GPU attention benchmark: torch.ops.fpa beside SDPA flash, "
        "FlexAttention and a materialised bias (issue 48, items 7-8).")
    p.add_argument("--ops", default="", help="libfpa_torch_ops.so (default: build-gpu/lib, then build/lib)")
    p.add_argument("--out", default="results/bench/attention_gpu.csv", help="CSV to write (+ .json sidecar, _ratios.csv)")
    p.add_argument("--config", default="", help="file of 'option = value' lines (long option names); the command line wins")
    p.add_argument("--shapes", default=DEFAULT_SHAPES, help="BxHxNxD,... (batch, heads, length, head dimension)")
    p.add_argument("--impls", default=",".join(IMPLS), help="subset of " + ",".join(IMPLS))
    p.add_argument("--dtypes", default="bfloat16,float32", help="dtypes of the project's kernels (bf16 for the baselines)")
    p.add_argument("--fp32-matmul", default="tf32", choices=("tf32", "exact"),
                   help="the project's float32 products on the GPU: TF32 tensor cores (the kernels' default) or exact")
    p.add_argument("--passes", default="fwd,fwd_bwd")
    p.add_argument("--warmup", type=int, default=3, help="untimed calls after the first (compiling) one")
    p.add_argument("--repeats", type=int, default=10, help="timed calls behind the median")
    p.add_argument("--cell-seconds", type=float, default=5.0, help="fewer repeats (at least 3) when a cell would take longer")
    p.add_argument("--max-seconds", type=float, default=360.0, help="total budget; cells after it are skipped with the reason")
    p.add_argument("--check-rows", type=int, default=32, help="query rows checked against the float64 definition (0: none)")
    p.add_argument("--st-temperature", type=float, default=1.0, help="FPA straight-through temperature")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default="auto", choices=["auto", "cuda", "cpu"])
    p.add_argument("--code-version", default="", help="recorded when git describe is unavailable (a copy without .git)")
    p.add_argument("--smoke", action="store_true",
                   help="CPU, shapes " + SMOKE_SHAPES + ", 1 warm-up, 3 repeats, formulation self-checks")
    return p


def parse_options(argv):
    """Defaults, then --smoke's, then the --config file's, then the command line."""
    p = parser()
    first, _ = p.parse_known_args(argv)
    defaults = {}
    if first.smoke:
        defaults.update(shapes=SMOKE_SHAPES, device="cpu", warmup=1, repeats=3, cell_seconds=1.0,
                        max_seconds=60.0)
    if first.config:
        known = {a.dest: a for a in p._actions if a.option_strings}
        try:
            lines = open(first.config).read().splitlines()
        except OSError as e:
            p.error(f"--config {first.config}: {e.strerror}")
        for number, line in enumerate(lines, 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            key, sep, value = (s.strip() for s in line.partition("="))
            dest = key.replace("-", "_")
            if not sep or dest not in known or dest in ("config", "smoke", "help"):
                p.error(f"--config {first.config}:{number}: unknown or malformed line '{line}'")
            action = known[dest]
            try:
                defaults[dest] = action.type(value) if action.type else value
            except ValueError:
                p.error(f"--config {first.config}:{number}: bad value for {key}: '{value}'")
            if action.choices and defaults[dest] not in action.choices:
                p.error(f"--config {first.config}:{number}: {key} must be one of {', '.join(action.choices)}")
    p.set_defaults(**defaults)
    o = p.parse_args(argv)
    try:
        o.shape_list = [tuple(int(x) for x in s.lower().split("x")) for s in o.shapes.split(",") if s]
        assert o.shape_list and all(len(s) == 4 and min(s) > 0 for s in o.shape_list)
    except (ValueError, AssertionError):
        p.error(f"--shapes '{o.shapes}': expected BxHxNxD,... with positive integers")
    o.impl_list = [s for s in o.impls.split(",") if s]
    bad = [s for s in o.impl_list if s not in IMPLS]
    if bad or not o.impl_list:
        p.error(f"--impls: unknown {','.join(bad) or '(empty)'}; choose from {','.join(IMPLS)}")
    o.dtype_list = [s for s in o.dtypes.split(",") if s]
    if not o.dtype_list or any(d not in ("bfloat16", "float16", "float32") for d in o.dtype_list):
        p.error(f"--dtypes '{o.dtypes}': choose from bfloat16,float16,float32")
    o.pass_list = [s for s in o.passes.split(",") if s]
    if not o.pass_list or any(s not in ("fwd", "fwd_bwd") for s in o.pass_list):
        p.error(f"--passes '{o.passes}': choose from fwd,fwd_bwd")
    if o.warmup < 0 or o.repeats < 1 or o.cell_seconds <= 0 or o.max_seconds <= 0 or o.check_rows < 0:
        p.error("--warmup >= 0, --repeats >= 1, --cell-seconds > 0, --max-seconds > 0, --check-rows >= 0")
    if not (o.st_temperature > 0 and math.isfinite(o.st_temperature)):
        p.error("--st-temperature must be finite and > 0")
    if not o.out.endswith(".csv"):
        p.error(f"--out '{o.out}': must end in .csv")
    return o


# --- Files -----------------------------------------------------------------------------------

def environment(torch, device):
    env = {"device": str(device), "torch": torch.__version__, "cuda": torch.version.cuda or "",
           "python": platform.python_version(), "host": platform.node(), "cpu": platform.processor()}
    try:
        import triton
        env["triton"] = triton.__version__
    except Exception:
        env["triton"] = ""
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        env.update({"gpu": props.name, "compute_capability": f"{props.major}.{props.minor}",
                    "gpu_memory_bytes": int(props.total_memory),
                    "cudnn": str(torch.backends.cudnn.version())})
        try:
            smi = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                 capture_output=True, text=True, timeout=30)
            env["driver"] = smi.stdout.strip().splitlines()[0] if smi.returncode == 0 else ""
        except (OSError, subprocess.SubprocessError, IndexError):
            env["driver"] = ""
    else:
        env.update({"gpu": "", "driver": ""})
    return env


# --- The implementations ----------------------------------------------------------------------

def causal_mask_mod(b, h, q_idx, kv_idx):
    return q_idx >= kv_idx


def cumsum_gate(log_f):
    return log_f.cumsum(-1)


def sparse_table(phi):
    """(B, H, L, n), L = floor(log2 n) + 1: [k][j] = min phi[j .. j + 2^k - 1] (past the end: the
    minimum up to it; such entries are never read for a causal pair)."""
    import torch
    levels, n, width = [phi], phi.shape[-1], 1
    while 2 * width <= n:
        prev = levels[-1]
        pad = prev.new_full(prev.shape[:-1] + (width,), math.inf)
        levels.append(torch.minimum(prev, torch.cat([prev[..., width:], pad], -1)))
        width *= 2
    return torch.stack(levels, -2)


def rmq_tables(n, device):
    """lvl[d] = floor(log2(d + 1)) and span[d] = 2^lvl[d] for the query distance d = i - j."""
    import torch
    d = torch.arange(n, device=device, dtype=torch.int64) + 1
    lvl = torch.zeros(n, dtype=torch.int64, device=device)
    while True:
        step = (d >= (2 ** (lvl + 1))).to(torch.int64)
        if not bool(step.any()):
            break
        lvl = lvl + step
    return lvl, 2 ** lvl


def fpa_score_mod(st, phi, lvl, span):
    """score + M(j, i) - phi_j, M from the sparse table: O(1) per score."""
    import torch

    def score_mod(score, b, h, q_idx, kv_idx):
        dist = torch.where(q_idx >= kv_idx, q_idx - kv_idx, q_idx - q_idx)  # 0 above the diagonal (masked)
        k = lvl[dist]
        m = torch.minimum(st[b, h, k, kv_idx], st[b, h, k, q_idx - span[dist] + 1])
        return score + m - phi[b, h, kv_idx]
    return score_mod


def fox_score_mod(F):
    def score_mod(score, b, h, q_idx, kv_idx):
        return score + F[b, h, q_idx] - F[b, h, kv_idx]
    return score_mod


def flex_fox(q, k, v, log_f, block_mask):
    from torch.nn.attention.flex_attention import flex_attention
    return flex_attention(q, k, v, score_mod=fox_score_mod(cumsum_gate(log_f)), block_mask=block_mask)


def flex_fpa(q, k, v, phi, lvl, span, block_mask):
    from torch.nn.attention.flex_attention import flex_attention
    return flex_attention(q, k, v, score_mod=fpa_score_mod(sparse_table(phi), phi, lvl, span),
                          block_mask=block_mask)


def materialised_fpa_bias(phi):
    """(B, H, n, n) fp32: min phi[j..i] - phi_j on and below the diagonal, -inf above."""
    import torch
    n = phi.shape[-1]
    causal = torch.ones(n, n, dtype=torch.bool, device=phi.device).tril()
    column = phi[..., :, None].expand(*phi.shape, n).masked_fill(~causal, math.inf)  # [i, j] = phi_i, i >= j
    m = torch.cummin(column, dim=-2).values  # [i, j] = min phi[j..i]; the latest index at ties
    return (m - phi[..., None, :]).masked_fill(~causal, -math.inf)


class Bench:
    def __init__(self, torch, opts, device, ops_error):
        self.torch, self.o, self.dev, self.ops_error = torch, opts, device, ops_error
        self.F = torch.nn.functional
        self.has_sdpa = hasattr(self.F, "scaled_dot_product_attention")
        self.flex_error = None
        self.compiled = {}
        try:
            from torch.nn.attention.flex_attention import create_block_mask  # noqa: F401
        except Exception as e:
            self.flex_error = f"no FlexAttention in torch {torch.__version__} ({type(e).__name__})"
        self.block_masks = {}

    # Why an implementation cannot run here at all (None: it can).
    def unsupported(self, impl, variant, dtype):
        t, cuda = self.torch, self.dev.type == "cuda"
        if impl == "fpa_ops":
            return self.ops_error
        if impl == "sdpa_flash":
            if not cuda:
                return "flash attention is CUDA-only"
            if not self.has_sdpa:
                return f"torch {t.__version__} has no scaled_dot_product_attention"
            return None
        if impl == "flex":
            if self.flex_error:
                return self.flex_error
            if not cuda:
                return "FlexAttention is timed compiled on CUDA only (Triton); CPU run"
            return None
        if impl == "sdpa_bias":
            if not self.has_sdpa:
                return f"torch {t.__version__} has no scaled_dot_product_attention"
            return None
        return "unknown implementation"

    def flex_fn(self, name):
        if name not in self.compiled:
            t = self.torch
            import torch._dynamo
            cfg = torch._dynamo.config
            for knob in ("cache_size_limit", "recompile_limit", "accumulated_cache_size_limit",
                         "accumulated_recompile_limit"):
                try:  # every shape and pass compiles its own graph
                    setattr(cfg, knob, max(getattr(cfg, knob), 512))
                except (AttributeError, TypeError, ValueError):
                    pass
            fn = {"fox": flex_fox, "fpa": flex_fpa}[name]
            self.compiled[name] = t.compile(fn, dynamic=False)
        return self.compiled[name]

    def block_mask(self, n):
        if n not in self.block_masks:
            from torch.nn.attention.flex_attention import create_block_mask
            self.block_masks[n] = create_block_mask(causal_mask_mod, None, None, n, n, device=str(self.dev))
        return self.block_masks[n]

    def forward(self, impl, variant, mode, q, k, v, gate):
        """The implementation's attention output for these tensors (autograd recording or not)."""
        t = self.torch
        if impl == "fpa_ops":
            # A forward row's mode is "-": both modes share the forward.
            return t.ops.fpa.attention(q, k, v, gate, variant, "auto", mode if mode != "-" else "exact",
                                       self.o.st_temperature, fp32_matmul=self.o.fp32_matmul)
        if impl == "sdpa_flash":
            return self.flash(q, k, v)
        if impl == "flex":
            n = q.shape[-2]
            if variant == "fox":
                return self.flex_fn("fox")(q, k, v, gate, self.block_mask(n))
            lvl, span = self.rmq(n)
            return self.flex_fn("fpa")(q, k, v, gate, lvl, span, self.block_mask(n))
        if impl == "sdpa_bias":
            return self.F.scaled_dot_product_attention(q, k, v, attn_mask=materialised_fpa_bias(gate).to(q.dtype))
        raise ValueError(impl)

    def rmq(self, n):
        key = ("rmq", n)
        if key not in self.block_masks:
            self.block_masks[key] = rmq_tables(n, self.dev)
        return self.block_masks[key]

    def flash(self, q, k, v):
        t = self.torch
        try:
            from torch.nn.attention import SDPBackend, sdpa_kernel
            ctx = sdpa_kernel(SDPBackend.FLASH_ATTENTION)
        except ImportError:
            ctx = t.backends.cuda.sdp_kernel(enable_flash=True, enable_math=False, enable_mem_efficient=False)
        with ctx:
            return self.F.scaled_dot_product_attention(q, k, v, is_causal=True)


# --- Measuring ---------------------------------------------------------------------------------

def flops(shape, pass_):
    B, H, n, d = shape
    fwd = 4.0 * B * H * n * n * d / 2.0
    return fwd * (3.5 if pass_ == "fwd_bwd" else 1.0)


def estimated_bytes(impl, pass_, shape, dtype_bytes):
    """A generous estimate of the device memory a cell needs (to skip what cannot fit)."""
    B, H, n, d = shape
    io = B * H * n * d * dtype_bytes * (4 if pass_ == "fwd" else 9) + 64 * B * H * n
    if impl != "sdpa_bias":
        return io
    per_pair = 40 if pass_ == "fwd" else 72  # fp32 field copy, cummin values + int64 indices, bias, grads
    return io + B * H * n * n * per_pair


class Timer:
    def __init__(self, torch, device):
        self.torch, self.cuda = torch, device.type == "cuda"

    def sync(self):
        if self.cuda:
            self.torch.cuda.synchronize()

    def once(self, fn):
        """Milliseconds of one call."""
        if self.cuda:
            start, end = (self.torch.cuda.Event(enable_timing=True) for _ in range(2))
            start.record()
            fn()
            end.record()
            end.synchronize()
            return start.elapsed_time(end)
        t0 = time.perf_counter()
        fn()
        return (time.perf_counter() - t0) * 1e3


def reference_rows(torch, q, k, v, gate, variant, rows):
    """The float64 definition on query rows `rows`: (B, H, len(rows), Dv)."""
    q, k, v = (x.detach().double() for x in (q, k, v))
    n, d = q.shape[-2], q.shape[-1]
    idx = torch.tensor(rows, device=q.device)
    s = q[..., idx, :] @ k.transpose(-1, -2) / math.sqrt(d)  # (B, H, r, n)
    after = torch.arange(n, device=q.device)[None, :] > idx[:, None]  # key j after query i
    if variant == "fox":
        F = gate.detach().double().cumsum(-1)
        s = s + F[..., idx, None] - F[..., None, :]
    elif variant == "fpa":
        phi = gate.detach().double()
        x = phi[..., None, :].expand(*phi.shape[:-1], len(rows), n).masked_fill(after, math.inf)
        m = torch.cummin(x.flip(-1), dim=-1).values.flip(-1)  # [r, j] = min phi[j..i_r]
        s = s + m - phi[..., None, :]
    return torch.softmax(s.masked_fill(after, -math.inf), -1) @ v


def make_inputs(torch, shape, seed, device):
    B, H, n, d = shape
    g = torch.Generator().manual_seed(seed)
    q, k, v, dout = (torch.randn(B, H, n, d, generator=g) for _ in range(4))
    log_f = torch.nn.functional.logsigmoid(3.0 + torch.randn(B, H, n, generator=g))  # FoX gates
    phi = torch.randn(B, H, n, generator=g).cumsum(-1)  # FPA's field: a standard-normal walk
    return {name: x.to(device) for name, x in
            dict(q=q, k=k, v=v, dout=dout, fox=log_f, fpa=phi).items()}


def first_line(e, limit=200):
    text = (str(e).strip().splitlines() or [type(e).__name__])[0]
    return f"{type(e).__name__}: {text}"[:limit]


def is_oom(torch, e):
    oom = getattr(torch.cuda, "OutOfMemoryError", ())
    return (oom and isinstance(e, oom)) or "out of memory" in str(e).lower()


def run_cell(bench, timer, cell, inputs, o):
    torch = bench.torch
    impl, variant, mode, dtype_name, shape, pass_ = (cell[c] for c in
                                                     ("impl", "variant", "fpa_backward", "dtype", "shape", "pass"))
    dtype = getattr(torch, dtype_name)
    row = cell["row"]
    q, k, v = (inputs[x].to(dtype) for x in ("q", "k", "v"))
    gate = inputs[variant] if variant in ("fox", "fpa") else None  # the gate / field stays fp32
    dout = inputs["dout"].to(dtype)

    def pass_fn(with_gate_grad):
        if pass_ == "fwd":
            def fn():
                with torch.no_grad():
                    return bench.forward(impl, variant, mode, q, k, v, gate)
            return fn
        leaves = [x.detach().requires_grad_() for x in (q, k, v)]
        g = None
        if gate is not None:
            g = gate.detach().requires_grad_(with_gate_grad)
            if with_gate_grad:
                leaves.append(g)

        def fn():
            out = bench.forward(impl, variant, mode, leaves[0], leaves[1], leaves[2], g)
            return torch.autograd.grad(out, leaves, dout)
        return fn

    notes = []
    gate_grad = gate is not None and pass_ == "fwd_bwd"
    fn = pass_fn(gate_grad)
    try:
        t_first = timer.once(fn)  # compiles FlexAttention; not counted
    except Exception as e:
        if is_oom(torch, e) or not gate_grad or impl == "fpa_ops":
            raise
        notes.append(f"with the field's gradient: {first_line(e, 150)}")
        gate_grad = False
        fn = pass_fn(False)
        t_first = timer.once(fn)
    if gate is not None and pass_ == "fwd_bwd":
        row["gate_grad"] = 1 if gate_grad else 0
    warm, t_last = 0, t_first
    for _ in range(o.warmup):
        if warm and t_last * (warm + 1) > o.cell_seconds * 1e3 / 2:
            break
        t_last = timer.once(fn)
        warm += 1
    reps = max(3, min(o.repeats, int(o.cell_seconds * 1e3 / max(t_last, 1e-3))))
    if t_last > o.cell_seconds * 1e3:
        reps = 1
        notes.append("one timed call (slower than --cell-seconds)")
    if timer.cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        result = fn()
        torch.cuda.synchronize()
        row["peak_extra_bytes"] = torch.cuda.max_memory_allocated() - base
    else:
        result = fn()
        row["peak_extra_bytes"] = -1
    if pass_ == "fwd_bwd" and gate_grad and not bool(result[-1].abs().max() > 0):
        notes.append("the gate's gradient is all zero")
    del result
    times = [timer.once(fn) for _ in range(reps)]
    ms = statistics.median(times)
    row.update(median_ms=f"{ms:.4f}", tflops=f"{flops(shape, pass_) / (ms * 1e-3) / 1e12:.4g}",
               repeats=reps, warmup=warm + 1)
    if impl == "fpa_ops":
        notes.append("impl " + ("cuda" if q.is_cuda else "fused"))
    if pass_ == "fwd" and o.check_rows > 0:
        n = shape[2]
        count = min(o.check_rows, n)
        rows = sorted({round(i * (n - 1) / max(count - 1, 1)) for i in range(count)})
        with torch.no_grad():
            out = bench.forward(impl, variant, mode, q, k, v, gate)
            ref = reference_rows(torch, q, k, v, gate, variant, rows)
            idx = torch.tensor(rows, device=out.device)
            err = (out[..., idx, :].double() - ref).abs().max() / ref.abs().max().clamp_min(1e-30)
        row["max_err"] = f"{err.item():.3g}"
    row["note"] = "; ".join(notes)


# --- The cells and the ratios ------------------------------------------------------------------

def cells(o):
    """Every cell in the order they run: the bf16 cells behind the issue's targets first, then the
    others, so that a run cut short by --max-seconds keeps what matters most."""
    out = []
    bf16 = "bfloat16"

    def add(tier, impl, variant, mode, dtype, shape, pass_):
        if impl in o.impl_list and pass_ in o.pass_list:
            out.append(dict(tier=tier, impl=impl, variant=variant, fpa_backward=mode, dtype=dtype,
                            shape=shape, **{"pass": pass_}))

    for shape in o.shape_list:
        for pass_ in ("fwd", "fwd_bwd"):
            exact = "exact" if pass_ == "fwd_bwd" else "-"
            if bf16 in o.dtype_list:
                add(0, "fpa_ops", "fpa", exact, bf16, shape, pass_)
                add(0, "fpa_ops", "fox", "-", bf16, shape, pass_)
            add(0, "sdpa_flash", "softmax", "-", bf16, shape, pass_)
            add(0, "flex", "fox", "-", bf16, shape, pass_)
            add(0, "flex", "fpa", exact, bf16, shape, pass_)
    for shape in o.shape_list:
        if bf16 in o.dtype_list:
            add(1, "fpa_ops", "fpa", "straight-through", bf16, shape, "fwd_bwd")
            for pass_ in ("fwd", "fwd_bwd"):
                add(1, "fpa_ops", "softmax", "-", bf16, shape, pass_)
        for dtype in ("float32", bf16):
            for pass_ in ("fwd", "fwd_bwd"):
                add(1, "sdpa_bias", "fpa", "exact" if pass_ == "fwd_bwd" else "-", dtype, shape, pass_)
    for dtype in o.dtype_list:
        if dtype == bf16:
            continue
        for shape in o.shape_list:
            for pass_ in ("fwd", "fwd_bwd"):
                add(2, "fpa_ops", "softmax", "-", dtype, shape, pass_)
                add(2, "fpa_ops", "fox", "-", dtype, shape, pass_)
                add(2, "fpa_ops", "fpa", "exact" if pass_ == "fwd_bwd" else "-", dtype, shape, pass_)
            add(2, "fpa_ops", "fpa", "straight-through", dtype, shape, "fwd_bwd")
    for c in out:
        B, H, n, d = c["shape"]
        c["row"] = {"impl": c["impl"], "variant": c["variant"], "fpa_backward": c["fpa_backward"],
                    "dtype": c["dtype"], "batch": B, "heads": H, "n": n, "head_dim": d,
                    "pass": c["pass"], "gate_grad": "-" if c["variant"] == "softmax" or c["pass"] == "fwd" else ""}
    return out


# (name, pass, numerator (impl, variant, fpa_backward), denominator, target)
RATIOS = [
    ("fpa_vs_flash", "fwd_bwd", ("fpa_ops", "fpa", "{m}"), ("sdpa_flash", "softmax", "-"), 0.5),
    ("fpa_vs_fox_flex", "fwd_bwd", ("fpa_ops", "fpa", "{m}"), ("flex", "fox", "-"), 1.0),
    ("fpa_vs_fox_own", "fwd_bwd", ("fpa_ops", "fpa", "{m}"), ("fpa_ops", "fox", "-"), 0.85),
    ("fwd_vs_flash", "fwd", ("fpa_ops", "fpa", "-"), ("sdpa_flash", "softmax", "-"), 0.6),
    ("fpa_vs_fpa_flex", "fwd_bwd", ("fpa_ops", "fpa", "{m}"), ("flex", "fpa", "exact"), None),
    ("fpa_vs_materialised", "fwd_bwd", ("fpa_ops", "fpa", "{m}"), ("sdpa_bias", "fpa", "exact"), None),
]


def ratio_rows(rows, shapes):
    """The issue's target ratios (bf16, TFLOP/s over TFLOP/s), from measured cells only."""
    table = {(r["impl"], r["variant"], r["fpa_backward"], r["dtype"], r["batch"], r["heads"], r["n"],
              r["head_dim"], r["pass"]): r for r in rows}
    out = []
    for (B, H, n, d) in shapes:
        for name, pass_, num, den, target in RATIOS:
            modes = ["exact", "straight-through"] if "{m}" in num[2] else ["-"]
            for mode in modes:
                nkey = (num[0], num[1], num[2].format(m=mode))
                a = table.get(nkey + ("bfloat16", B, H, n, d, pass_))
                b = table.get(tuple(den) + ("bfloat16", B, H, n, d, pass_))
                r = {"ratio": name, "batch": B, "heads": H, "n": n, "head_dim": d, "dtype": "bfloat16",
                     "pass": pass_, "fpa_backward": mode if num[1] == "fpa" and pass_ == "fwd_bwd" else "-",
                     "numerator": "/".join(nkey), "denominator": "/".join(den),
                     "target": "" if target is None else target,
                     "target_applies": int(target is not None and n >= 4096 and d in (64, 128))}
                missing = [("/".join(k)) for k, c in ((nkey, a), (tuple(den), b)) if not c or not c.get("tflops")]
                if missing:
                    r.update(value="", meets="", note="not measured: " + ", ".join(missing))
                else:
                    value = float(a["tflops"]) / float(b["tflops"])
                    r.update(value=f"{value:.3f}", note="",
                             meets="" if target is None else int(value >= target))
                out.append(r)
    return out


# --- Self-checks of the formulations (smoke mode) ---------------------------------------------

def self_checks(torch, device, have_ops):
    """The baselines' bias formulations against torch.ops.fpa.fpa_bias / fox_bias (the project's
    definitions), evaluated eagerly, so a CPU with torch 1.13 checks what FlexAttention computes."""
    failures = []
    g = torch.Generator().manual_seed(7)
    for n in (1, 2, 5, 64, 97):
        phi = torch.randn(2, 3, n, generator=g).cumsum(-1)
        phi[0, 0, n // 2:] = phi[0, 0, n // 2]  # a plateau: ties
        phi = phi.to(device)
        causal = torch.ones(n, n, dtype=torch.bool, device=device).tril()
        if have_ops:  # the project's operator
            want = torch.ops.fpa.fpa_bias(phi, "exact", 1.0)
        else:  # the definition, entry by entry
            want = torch.full(phi.shape + (n,), -math.inf, device=device)
            for i in range(n):
                for j in range(i + 1):
                    want[..., i, j] = phi[..., j:i + 1].amin(-1) - phi[..., j]
        got = materialised_fpa_bias(phi)
        if not torch.equal(got, want):
            failures.append(f"materialised FPA bias differs at n={n}")
        lvl, span = rmq_tables(n, device)
        mod = fpa_score_mod(sparse_table(phi), phi, lvl, span)
        B, H = phi.shape[:2]
        b = torch.arange(B, device=device).view(B, 1, 1, 1)
        h = torch.arange(H, device=device).view(1, H, 1, 1)
        qi = torch.arange(n, device=device).view(1, 1, n, 1)
        ki = torch.arange(n, device=device).view(1, 1, 1, n)
        flex_bias = mod(torch.zeros(B, H, n, n, device=device), b, h, qi, ki)
        if not torch.equal(flex_bias.masked_fill(~causal, -math.inf), want):
            failures.append(f"FlexAttention FPA score_mod (sparse table) differs at n={n}")
        log_f = torch.nn.functional.logsigmoid(torch.randn(B, H, n, generator=g) + 3).to(device)
        fox = fox_score_mod(cumsum_gate(log_f))(torch.zeros(B, H, n, n, device=device), b, h, qi, ki)
        if have_ops:
            want_fox = torch.ops.fpa.fox_bias(log_f)
            if (fox.masked_fill(~causal, -math.inf) - want_fox).abs().masked_fill(~causal, 0).max() > 1e-5:
                failures.append(f"FlexAttention FoX score_mod differs at n={n}")
    return failures


# --- Main --------------------------------------------------------------------------------------

def main(argv):
    started = time.time()
    started_utc = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    o = parse_options(argv)
    import torch
    if o.device == "auto":
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    elif o.device == "cuda" and not torch.cuda.is_available():
        print("error: --device cuda: torch sees no GPU", file=sys.stderr)
        return 2
    else:
        device = torch.device(o.device)
    torch.manual_seed(o.seed)

    ops = o.ops or next((p for p in (os.path.join(REPO, "build-gpu/lib/libfpa_torch_ops.so"),
                                     os.path.join(REPO, "build/lib/libfpa_torch_ops.so")) if os.path.exists(p)), "")
    ops_error = None
    if not ops:
        ops_error = "no libfpa_torch_ops.so (--ops)"
    else:
        try:
            torch.ops.load_library(ops)
        except Exception as e:
            ops_error = f"cannot load {ops}: {first_line(e, 150)}"
    if ops_error:
        print("error: " + ops_error, flush=True)

    env = environment(torch, device)
    print(f"attention_gpu_bench: {env.get('gpu') or 'CPU'}, torch {env['torch']}, cuda {env['cuda'] or '-'}, "
          f"triton {env['triton'] or '-'}, driver {env.get('driver') or '-'}", flush=True)
    status = 1 if ops_error and "fpa_ops" in o.impl_list else 0
    if o.smoke:
        failures = self_checks(torch, torch.device("cpu"), ops_error is None)
        for f in failures:
            print("FAIL " + f)
        print(f"self-checks of the baselines' formulations: {'FAILED' if failures else 'passed'}", flush=True)
        status = 1 if failures else status

    config = {k.replace("_", "-"): str(v) for k, v in vars(o).items()
              if k not in ("shape_list", "impl_list", "dtype_list", "pass_list")}
    config["smoke"] = "true" if o.smoke else "false"
    config["ops"] = ops
    sidecar = {"program": PROGRAM, "command_line": " ".join(shlex.quote(a) for a in [PROGRAM] + argv),
               "seed": o.seed, "code_version": code_version(o.code_version), "started_utc": started_utc,
               "wall_s": 0.0, "config": config, "environment": env}
    ratios_path = o.out[:-len(".csv")] + "_ratios.csv"
    todo = cells(o)

    def write(done):
        rows = [c["row"] for c in todo[:done]]
        sidecar["wall_s"] = round(time.time() - started, 3)
        sidecar["cells_pending"] = len(todo) - done
        side = json.dumps(sidecar, indent=2) + "\n"
        atomic_write(o.out + ".json", side)
        atomic_write(o.out, csv_text(COLUMNS, rows))
        atomic_write(ratios_path + ".json", side)
        atomic_write(ratios_path, csv_text(RATIO_COLUMNS, ratio_rows(rows, o.shape_list)))

    bench, timer = Bench(torch, o, device, ops_error), Timer(torch, device)
    inputs, inputs_shape = None, None
    for i, cell in enumerate(todo):
        row = cell["row"]
        label = (f"{cell['impl']:10s} {cell['variant']:7s} {cell['fpa_backward']:16s} {cell['dtype']:8s} "
                 f"{'x'.join(map(str, cell['shape'])):14s} {cell['pass']:7s}")
        reason = bench.unsupported(cell["impl"], cell["variant"], cell["dtype"])
        if reason is None and time.time() - started > o.max_seconds:
            reason = f"time budget spent (--max-seconds {o.max_seconds:g})"
        if reason is None and device.type == "cuda":
            itemsize = torch.empty((), dtype=getattr(torch, cell["dtype"])).element_size()
            need = estimated_bytes(cell["impl"], cell["pass"], cell["shape"], itemsize)
            free = torch.cuda.mem_get_info()[0]
            if need > 0.85 * free:
                reason = f"would not fit: needs ~{need / 2**30:.1f} GiB, {free / 2**30:.1f} GiB free"
                if cell["impl"] == "sdpa_bias":
                    reason += " (materialised B*H*n*n bias)"
        if reason is None:
            try:
                if inputs_shape != cell["shape"]:
                    inputs = None
                    if device.type == "cuda":
                        torch.cuda.empty_cache()
                    inputs, inputs_shape = make_inputs(torch, cell["shape"], o.seed, device), cell["shape"]
                run_cell(bench, timer, cell, inputs, o)
            except Exception as e:
                oom = is_oom(torch, e)
                reason = ("out of memory: " if oom else "error: ") + first_line(e)
                for c in ("median_ms", "tflops", "peak_extra_bytes", "repeats", "warmup", "max_err"):
                    row.pop(c, None)
                if not oom and cell["impl"] == "fpa_ops":
                    status = 1
            if device.type == "cuda":
                torch.cuda.empty_cache()
        if reason is not None:
            row["skip_reason"] = reason
            print(f"{label} skipped: {reason}", flush=True)
        else:
            print(f"{label} {float(row['median_ms']):10.3f} ms {float(row['tflops']):9.3f} TFLOP/s "
                  f"mem {row['peak_extra_bytes']} err {row.get('max_err', '-')} {row.get('note', '')}", flush=True)
        write(i + 1)
    if not todo:
        write(0)

    print("\nratios (bf16, TFLOP/s / TFLOP/s; targets at n >= 4096, d 64 and 128):")
    for r in ratio_rows([c["row"] for c in todo], o.shape_list):
        shape = f"{r['batch']}x{r['heads']}x{r['n']}x{r['head_dim']}"
        print(f"  {r['ratio']:20s} {r['fpa_backward']:16s} {shape:14s} {r['value'] or '-':>7s} "
              f"target {r['target'] if r['target'] != '' else '-':>4} "
              f"{('meets' if r['meets'] == 1 else 'misses') if r['meets'] != '' and r['target_applies'] else ''}")
    timed = sum(1 for c in todo if c["row"].get("median_ms"))
    failed = [c["row"] for c in todo if c["row"].get("skip_reason", "").startswith("error:")]
    print(f"cells: {timed} timed, {len(todo) - timed} skipped ({len(failed)} by an error"
          + (", this project's kernels among them" if status and failed else "") + ")")
    print(f"wrote {o.out} (+ .json) and {ratios_path}; {time.time() - started:.1f} s", flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
