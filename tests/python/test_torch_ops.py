#!/usr/bin/python3
"""torch.ops.fpa.attention (kernels/python/) against a pure-PyTorch float64 implementation.

Usage: test_torch_ops.py LIBRARY. Exit 0: all checks pass; 77: PyTorch is not installed (ctest
SKIP); anything else: a failure, printed.
"""
import itertools
import math
import sys

try:
    import torch
except ImportError:
    print("SKIP: python3-torch is not installed (PyTorch for /usr/bin/python3)")
    sys.exit(77)

from plain_attention import IMPLS, MODES, inputs, path_min, python_attention, rel_err  # noqa: E402

torch.ops.load_library(sys.argv[1])
attention = torch.ops.fpa.attention
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


TAU = 0.7

# Values and gradients of every variant x implementation x backward against the plain one, with
# n = 1, n inside one tile, and n = 70 across the fused kernels' 64-wide tiles.
for (variant, backward), impl, n in itertools.product(MODES, IMPLS, [1, 9, 70]):
    q, k, v, gate = inputs(n, variant, seed=n)
    leaves = [t.clone().requires_grad_() for t in (q, k, v) + ((gate,) if gate is not None else ())]
    gate_arg = leaves[3] if gate is not None else None
    got = attention(leaves[0], leaves[1], leaves[2], gate_arg, variant, impl, backward, TAU)
    want_leaves = [t.clone().requires_grad_() for t in leaves]
    want = python_attention(*want_leaves[:3], want_leaves[3] if gate is not None else None,
                            variant, backward, TAU)
    w = torch.randn(got.shape, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    grads = torch.autograd.grad((got * w).sum(), leaves)
    want_grads = torch.autograd.grad((want * w).sum(), want_leaves)
    floor = 1e-3 * max(g.abs().max().item() for g in want_grads)
    errs = [rel_err(got.detach(), want.detach())] + [rel_err(a, b, floor) for a, b in zip(grads, want_grads)]
    check(got.dtype == torch.float64 and max(errs) < 1e-10,
          f"{variant}/{backward}/{impl} n={n}: value and q,k,v{',gate' if gate is not None else ''} "
          f"gradients, max rel err {max(errs):.1e}")

# gradcheck in float64 (finite differences against the operators' backward). For the
# straight-through mode the gate's gradient is by design not the derivative of the value, so
# only q, k and v are checked there.
for (variant, backward), impl in itertools.product(MODES, IMPLS):
    q, k, v, gate = inputs(7, variant, seed=3, B=1, H=2, D=3, Dv=2)
    st = backward == "straight-through"
    args = [q.requires_grad_(), k.requires_grad_(), v.requires_grad_(),
            None if gate is None else gate.requires_grad_(not st)]
    fn = lambda q, k, v, g: attention(q, k, v, g, variant, impl, backward, TAU)
    ok = torch.autograd.gradcheck(fn, args, eps=1e-6, atol=1e-7, rtol=1e-5, raise_exception=False)
    check(ok, f"gradcheck {variant}/{backward}/{impl}")

# The helper operators against their definitions.
_, _, _, phi = inputs(6, "fpa", seed=5)
causal = torch.ones(6, 6, dtype=torch.bool).tril()
b = torch.ops.fpa.fpa_bias(phi, "exact", 1.0)
want = (path_min(phi) - phi[..., None, :]).masked_fill(~causal, -math.inf)
check(torch.equal(b, want), "fpa_bias equals min_{j<=l<=i} phi_l - phi_j (-inf above the diagonal)")
_, _, _, lf = inputs(6, "fox", seed=5)
F = lf.cumsum(-1)
check(torch.allclose(torch.ops.fpa.fox_bias(lf), (F[..., :, None] - F[..., None, :]).masked_fill(~causal, -math.inf),
                     rtol=0, atol=1e-12), "fox_bias equals F_i - F_j")

# TorchScript: the operator compiles into a scripted function.
@torch.jit.script
def scripted(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, phi: torch.Tensor) -> torch.Tensor:
    return torch.ops.fpa.attention(q, k, v, phi, "fpa", "fused", "exact")

q, k, v, phi = inputs(9, "fpa", seed=2)
check(torch.allclose(scripted(q, k, v, phi), python_attention(q, k, v, phi, "fpa"), rtol=0, atol=1e-12),
      "torch.jit.script calls torch.ops.fpa.attention")

# float32 runs (the models' dtype), close to the float64 answer.
q, k, v, phi = inputs(70, "fpa", seed=4)
got = attention(q.float(), k.float(), v.float(), phi.float(), "fpa", "fused", "exact")
check(got.dtype == torch.float32 and rel_err(got.double(), python_attention(q, k, v, phi, "fpa")) < 1e-4,
      "float32 fused FPA within 1e-4 of the float64 definition")

# bfloat16/float16 q, k, v with a float32 field: computed in float32 on the CPU, returned (and
# differentiated) in the input dtype; a half-precision field is refused.
for dtype in (torch.bfloat16, torch.float16):
    leaves = [t.to(dtype).requires_grad_() for t in (q, k, v)] + [phi.float().requires_grad_()]
    got = attention(*leaves, "fpa", "fused", "exact")
    grads = torch.autograd.grad(got.float().sum(), leaves)
    check(got.dtype == dtype and [g.dtype for g in grads] == [dtype] * 3 + [torch.float32]
          and rel_err(got.double(), python_attention(q, k, v, phi, "fpa")) < 2e-2,
          f"{dtype} fused FPA: output and gradients in the input dtypes, within 2e-2")
    try:
        attention(*[t.to(dtype) for t in (q, k, v, phi)], "fpa", "fused", "exact")
        check(False, f"{dtype} field refused")
    except (RuntimeError, ValueError) as e:
        check("gate must be float32" in str(e), f"{dtype} field refused")

# Keyword arguments carry the command line's names (--fpa-backward, --st-temperature).
by_name = attention(q, k, v, phi, variant="fpa", impl="fused", fpa_backward="straight-through",
                    st_temperature=TAU)
by_position = attention(q, k, v, phi, "fpa", "fused", "straight-through", TAU)
check(torch.equal(by_name, by_position), "keywords fpa_backward and st_temperature")

# fp32_matmul ("tf32", the default, or "exact"): float32 on the GPU only; the CPU ignores it.
f32 = [t.float() for t in (q, k, v, phi)]
check(torch.equal(attention(*f32, "fpa", "fused", "exact", fp32_matmul="exact"),
                  attention(*f32, "fpa", "fused", "exact", fp32_matmul="tf32"))
      and torch.equal(attention(*f32, "fpa", "fused", "exact"),
                      attention(*f32, "fpa", "fused", "exact", 1.0, 0.0, "tf32")),
      "fp32_matmul: keyword and position, ignored on the CPU")

# Bad arguments raise with the operator's message (std::invalid_argument arrives as ValueError).
for bad, needle in [(lambda: attention(q, k, v, phi, "fpx", "fused", "exact"), "unknown attention variant"),
                    (lambda: attention(q, k, v, phi, "fpa", "fast", "exact"), "unknown implementation"),
                    (lambda: attention(q, k, v, None, "fpa", "fused", "exact"), "needs a gate"),
                    (lambda: attention(q, k, v, phi, "fpa", "fused", "exact", -1.0), "temperature"),
                    (lambda: attention(q, k, v, phi, "fpa", "fused", "exact", fp32_matmul="fp16"),
                     "unknown fp32 matmul mode")]:
    try:
        bad()
        check(False, f"bad argument raises ({needle})")
    except (RuntimeError, ValueError) as e:
        check(needle in str(e), f"bad argument raises ({needle})")

# The GPU, when this library was built with CUDA and a GPU is present: every mode, float64 and
# float32 (D 64, the tiled kernels, exact and on TF32 tensor cores; D 4 / Dv 3, their scalar
# tiles) and bfloat16 / float16 on tensor cores (D 64, float32 field) against the plain float64
# definition on the same rounded inputs. Tolerances: the C++ tests' (tests/test_fused_support.h,
# tests/tiled_test_support.h: TF32 5e-3).
GPU_TOL = {torch.float64: 1e-9, torch.float32: 1e-4, torch.bfloat16: 2e-2, torch.float16: 4e-3}
TF32_TOL = 5e-3
if torch.cuda.is_available():
    for (variant, backward), (dtype, fp32_matmul), (D, Dv) in itertools.product(
            MODES, [(t, "exact") for t in GPU_TOL] + [(torch.float32, "tf32")], [(4, 3), (64, 64)]):
        if dtype in (torch.bfloat16, torch.float16) and D % 16:
            continue
        if fp32_matmul == "tf32" and D % 16:
            continue  # scalar tiles: exact fp32 whatever the option
        tol = TF32_TOL if fp32_matmul == "tf32" else GPU_TOL[dtype]
        q, k, v, gate = inputs(70, variant, seed=6, D=D, Dv=Dv)
        q, k, v = (t.to(dtype).double() for t in (q, k, v))  # what the kernels see
        gate_dtype = torch.float32 if dtype in (torch.bfloat16, torch.float16) else dtype
        if gate is not None:
            gate = gate.to(gate_dtype).double()
        dev = [t.cuda().to(dt).requires_grad_() if t is not None else None
               for t, dt in zip((q, k, v, gate), (dtype,) * 3 + (gate_dtype,))]
        got = attention(dev[0], dev[1], dev[2], dev[3], variant, "auto", backward, TAU,
                        fp32_matmul=fp32_matmul)
        cpu = [t.clone().requires_grad_() if t is not None else None for t in (q, k, v, gate)]
        want = python_attention(cpu[0], cpu[1], cpu[2], cpu[3], variant, backward, TAU)
        grads = torch.autograd.grad(got.float().sum(), [t for t in dev if t is not None])
        want_grads = torch.autograd.grad(want.sum(), [t for t in cpu if t is not None])
        floor = (1e-3 if dtype == torch.float64 else 1e-2) * max(g.abs().max().item() for g in want_grads)
        errs = [rel_err(got.detach().cpu().double(), want.detach())] + [
            rel_err(a.cpu().double(), b, floor) for a, b in zip(grads, want_grads)]
        check(got.dtype == dtype and max(errs) < tol,
              f"cuda {variant}/{backward} {dtype} ({fp32_matmul}) D={D}: max rel err {max(errs):.1e}")
else:
    print("note: no GPU visible; the CUDA implementation is not checked here")

print(f"{len(failures)} failure(s)")
sys.exit(1 if failures else 0)
