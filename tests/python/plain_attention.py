"""Attention written out in plain PyTorch (float64 ground truth for the tests of torch.ops.fpa.*),
and the inputs those tests draw. Imported by the test scripts next to it."""
import math

import torch

# The operator's (variant, backward) combinations and its CPU implementations.
MODES = [("softmax", "exact"), ("fox", "exact"), ("fpa", "exact"), ("fpa", "straight-through")]
IMPLS = ["reference", "fused", "auto"]


# --- The definitions, written out in plain PyTorch -------------------------------------------

def outside_path(n):
    """[i, j, l] is True unless j <= l <= i. Above the diagonal (j > i) the path is taken as
    [j, j], so no row is empty (an empty logsumexp has a NaN gradient); callers mask those."""
    idx = torch.arange(n)
    i, j, l = idx.view(n, 1, 1), idx.view(1, n, 1), idx.view(1, 1, n)
    return ~((j <= l) & (l <= torch.maximum(i, j)))


def path_min(phi):
    """M[..., i, j] = min_{j <= l <= i} phi_l (for j <= i), via an (N, N, N) mask."""
    n = phi.shape[-1]
    outside = outside_path(n)
    return phi[..., None, None, :].expand(*phi.shape[:-1], n, n, n).masked_fill(outside, math.inf).amin(-1)


def soft_path_min(phi, tau):
    """-tau log sum_{j <= l <= i} exp(-phi_l / tau)."""
    n = phi.shape[-1]
    outside = outside_path(n)
    z = (-phi / tau)[..., None, None, :].expand(*phi.shape[:-1], n, n, n).masked_fill(outside, -math.inf)
    return -tau * torch.logsumexp(z, -1)


def python_attention(q, k, v, gate, variant, backward="exact", tau=1.0):
    n, d = q.shape[-2], q.shape[-1]
    s = q @ k.transpose(-1, -2) / math.sqrt(d)
    causal = torch.ones(n, n, dtype=torch.bool).tril()
    if variant == "fox":  # b_ij = F_i - F_j, F = cumsum(log f)
        F = gate.cumsum(-1)
        s = s + (F[..., :, None] - F[..., None, :]).masked_fill(~causal, 0)
    elif variant == "fpa":  # b_ij = min_{j<=l<=i} phi_l - phi_j
        m = path_min(gate)
        if backward == "straight-through":  # exact value, the soft minimum's gradient
            soft = soft_path_min(gate, tau)
            m = m.detach() + (soft - soft.detach())
        s = s + (m - gate[..., None, :]).masked_fill(~causal, 0)
    return torch.softmax(s.masked_fill(~causal, -math.inf), -1) @ v


# --- Inputs ----------------------------------------------------------------------------------

def inputs(n, variant, seed, B=2, H=2, D=4, Dv=3):
    g = torch.Generator().manual_seed(seed)
    q, k = (torch.randn(B, H, n, D, generator=g, dtype=torch.float64) for _ in range(2))
    v = torch.randn(B, H, n, Dv, generator=g, dtype=torch.float64)
    gate = None
    if variant == "fox":
        gate = torch.nn.functional.logsigmoid(2 + torch.randn(B, H, n, generator=g, dtype=torch.float64))
    elif variant == "fpa":
        # Levels distinct by about 0.02 (shuffled, plus noise 10x smaller): no ties, so the
        # exact subgradient is a gradient and finite differences do not cross a kink.
        levels = torch.randperm(n * B * H, generator=g).double().view(B, H, n) * 0.02
        gate = levels + torch.randn(B, H, n, generator=g, dtype=torch.float64) * 0.002
        gate = gate - gate.mean()
    return q, k, v, gate


def rel_err(a, b, floor=1e-12):
    """max |a - b| / max |b|; the floor keeps a gradient that is zero in exact arithmetic (q and k
    at n = 1) from comparing rounding noise against zero."""
    return ((a - b).abs().max() / b.abs().max().clamp_min(floor)).item()
