"""The suite's language model (lm/model.h) in plain PyTorch, for checkpoints exported by lm-export.

Attention goes through the suite's operator library (torch.ops.fpa.attention, built into
build/lib/libfpa_torch_ops.so); everything else is ordinary torch.nn. Parameter names match
lm-export's state dict, so `load_state_dict(strict=True)` checks that the architecture matches.

    import torch, fpa_lm
    fpa_lm.load_ops("build/lib/libfpa_torch_ops.so")
    model = fpa_lm.load_exported("model.pt")
    print(fpa_lm.mean_loss(model, b"The jury said it was a fine day."))
"""
import math

import torch
import torch.nn.functional as F


def load_ops(library_path):
    """Registers torch.ops.fpa.* from the suite's operator library."""
    torch.ops.load_library(library_path)


def parse_config(text):
    """lm/checkpoint.h's `name = value` lines -> dict with typed values."""
    raw = dict(line.split(" = ", 1) for line in text.splitlines() if " = " in line)
    ints = ("vocab_size", "hidden", "layers", "heads", "mlp_hidden", "context")
    floats = ("rope_base", "norm_eps", "init_std", "st_temperature")
    c = {k: raw[k] for k in ("kind", "impl", "min_grad")}
    c.update({k: int(raw[k]) for k in ints})
    c.update({k: float(raw[k]) for k in floats})
    c["tie_embeddings"] = raw["tie_embeddings"] == "1"
    return c


def rope(x, offset=0, base=10000.0):
    """Rotates pairs (x[2m], x[2m+1]) of the last dim by angle (offset + t) * base^(-2m/D)."""
    n, d = x.shape[-2], x.shape[-1]
    pos = torch.arange(offset, offset + n, dtype=x.dtype, device=x.device).unsqueeze(-1)
    inv_freq = base ** (-torch.arange(0, d, 2, dtype=x.dtype, device=x.device) / d)
    cos, sin = (pos * inv_freq).cos(), (pos * inv_freq).sin()
    xe, xo = x[..., 0::2], x[..., 1::2]
    return torch.stack((xe * cos - xo * sin, xe * sin + xo * cos), -1).flatten(-2)


class RMSNorm(torch.nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class SwiGLU(torch.nn.Module):
    def __init__(self, dim, inner):
        super().__init__()
        self.gate = torch.nn.Linear(dim, inner, bias=False)
        self.up = torch.nn.Linear(dim, inner, bias=False)
        self.down = torch.nn.Linear(inner, dim, bias=False)

    def forward(self, x):
        return self.down(F.silu(self.gate(x)) * self.up(x))


class Attention(torch.nn.Module):
    def __init__(self, c, impl, attention=None):
        super().__init__()
        h = c["hidden"]
        self.c, self.impl, self.attention = c, impl, attention
        self.q_proj, self.k_proj, self.v_proj, self.o_proj = (
            torch.nn.Linear(h, h, bias=False) for _ in range(4))
        if c["kind"] in ("fox", "fpa"):
            self.gate_proj = torch.nn.Linear(h, c["heads"], bias=True)

    def forward(self, x):
        B, N, C = x.shape
        H = self.c["heads"]
        split = lambda t: t.view(B, N, H, C // H).transpose(1, 2)  # (B, H, N, D)
        q, k, v = split(self.q_proj(x)), split(self.k_proj(x)), split(self.v_proj(x))
        kind, gate, variant = self.c["kind"], None, "softmax"
        if kind == "transformer":
            q, k = rope(q, 0, self.c["rope_base"]), rope(k, 0, self.c["rope_base"])
        elif kind == "fox":  # log forget gates
            gate, variant = F.logsigmoid(self.gate_proj(x)).transpose(1, 2), "fox"
        elif kind == "fpa":  # the field is the walk of the increments
            gate, variant = self.gate_proj(x).transpose(1, 2).cumsum(-1), "fpa"
        if self.attention is not None:  # another operator on the same inputs (train_speed.py)
            o = self.attention(q, k, v, gate, variant)
        else:
            o = torch.ops.fpa.attention(q, k, v, gate, variant, self.impl, self.c["min_grad"],
                                        self.c["st_temperature"])
        return self.o_proj(o.transpose(1, 2).reshape(B, N, C))


class Block(torch.nn.Module):
    def __init__(self, c, impl, attention=None):
        super().__init__()
        self.attn_norm = RMSNorm(c["hidden"], c["norm_eps"])
        self.attn = Attention(c, impl, attention)
        self.mlp_norm = RMSNorm(c["hidden"], c["norm_eps"])
        self.mlp = SwiGLU(c["hidden"], c["mlp_hidden"])

    def forward(self, x):
        h = x + self.attn(self.attn_norm(x))
        return h + self.mlp(self.mlp_norm(h))


class LanguageModel(torch.nn.Module):
    """tokens (B, N) int64 -> logits (B, N, vocab); `impl` is the operator's implementation;
    `attention`, when given, replaces the operator: (q, k, v, gate, variant) -> o, each (B, H, N, D),
    gate (B, H, N) (FoX's log forget gates, FPA's field) or None."""

    def __init__(self, config, impl="auto", attention=None):
        super().__init__()
        c = self.config = config
        self.embed = torch.nn.Embedding(c["vocab_size"], c["hidden"])
        self.layers = c["layers"]
        for l in range(c["layers"]):  # named block0, block1, ... as in the C++ model
            setattr(self, f"block{l}", Block(c, impl, attention))
        self.final_norm = RMSNorm(c["hidden"], c["norm_eps"])
        if not c["tie_embeddings"]:
            self.lm_head = torch.nn.Linear(c["hidden"], c["vocab_size"], bias=False)

    def forward(self, tokens):
        x = self.embed(tokens)
        for l in range(self.layers):
            x = getattr(self, f"block{l}")(x)
        h = self.final_norm(x)
        return self.lm_head(h) if hasattr(self, "lm_head") else h @ self.embed.weight.t()


def init_weights(model):
    """lm/model.cpp's init_weights, for a model trained from scratch in PyTorch (train_speed.py):
    weights N(0, init_std), residual output projections N(0, init_std / sqrt(2 layers)), gate
    projections as FoX's code (FPA: N(0, init_std / 2) and bias -log 2)."""
    c = model.config
    std, resid = c["init_std"], c["init_std"] / math.sqrt(2.0 * c["layers"])
    with torch.no_grad():
        model.embed.weight.normal_(0.0, std)
        if hasattr(model, "lm_head"):
            model.lm_head.weight.normal_(0.0, std)
        for l in range(model.layers):
            b = getattr(model, f"block{l}")
            for lin in (b.attn.q_proj, b.attn.k_proj, b.attn.v_proj, b.mlp.gate, b.mlp.up):
                lin.weight.normal_(0.0, std)
            b.attn.o_proj.weight.normal_(0.0, resid)
            b.mlp.down.weight.normal_(0.0, resid)
            if hasattr(b.attn, "gate_proj"):
                fpa = c["kind"] == "fpa"
                b.attn.gate_proj.weight.normal_(0.0, std / 2 if fpa else std)
                b.attn.gate_proj.bias.fill_(-math.log(2.0) if fpa else 0.0)
    return model


def load_exported_file(path):
    """lm-export's dict (config, preset, state_dict, step). torch::pickle_save tags each dict with
    torch.jit._pickle.restore_type_tag, which the weights-only unpickler (PyTorch >= 2.6's
    default) refuses unless it is allowed; a PyTorch without that allow-list (< 2.5) loads it
    unrestricted, as its torch.load does by default."""
    import torch.jit._pickle as jit_pickle  # not imported by `import torch` in every version

    serialization = torch.serialization
    if hasattr(serialization, "safe_globals"):
        with serialization.safe_globals([jit_pickle.restore_type_tag]):
            return torch.load(path, weights_only=True)
    return torch.load(path, weights_only=False)


def load_exported(path, impl="auto"):
    """A LanguageModel (eval mode) from lm-export's file."""
    data = load_exported_file(path)
    model = LanguageModel(parse_config(data["config"]), impl)
    model.load_state_dict(data["state_dict"], strict=True)
    return model.eval()


def nll_of_bytes(model, data):
    """(summed next-byte loss in nats, bytes predicted) over `data`, cut as lm-eval cuts a
    document: windows of context + 1 bytes overlapping by one, each starting afresh."""
    tokens = torch.tensor(list(data), dtype=torch.long)
    context, total, count = model.config["context"], 0.0, 0
    with torch.no_grad():
        for s in range(0, len(tokens) - 1, context):
            w = tokens[s:s + context + 1].unsqueeze(0)
            logits = model(w[:, :-1])
            total += F.cross_entropy(logits[0], w[0, 1:], reduction="sum").double().item()
            count += w.shape[1] - 1
    return total, count


def mean_loss(model, data):
    """Mean next-byte cross-entropy (nats) of a byte string."""
    total, count = nll_of_bytes(model, data)
    return total / count
