#!/usr/bin/python3
"""Do two builds of the CPU attention kernels give the same bits?

Usage: /usr/bin/python3 scripts/kernel_bits.py BEFORE.so AFTER.so
  (each a libfpa_torch_ops.so: build/lib/ of a checkout, or a copy taken before a change)

Published CPU numbers stay bit for bit, so a change meant to make a CPU kernel faster (or to
move code) must leave its outputs and gradients unchanged, not merely within the tests'
tolerances of the float64 reference. This runs torch.ops.fpa.attention forward and backward
with both libraries on the same inputs: every variant and FPA backward mode, the reference and
fused implementations, float32 and float64, one and two threads (the fused backward splits work
by thread count), shapes inside one tile and across partial tiles, and for FPA fields that are
smooth (the straight-through backward's factored tiles), steep (its general tiles), offset by
1000, full of ties, and random walks. Each library runs in its own process (both register
torch.ops.fpa). Exit 0 when every tensor is equal bit for bit, 1 otherwise (the cases named).
It says nothing about another machine: OpenBLAS and LibTorch pick their kernels by the CPU.
"""
import subprocess
import sys
import tempfile

import torch

MODES = [("softmax", "exact"), ("fox", "exact"), ("fpa", "exact"), ("fpa", "straight-through")]
IMPLS = ["reference", "fused"]
SHAPES = [(2, 3, 256, 64), (1, 2, 300, 32), (1, 1, 70, 8)]  # (B, H, n, d)
FIELDS = ["smooth", "steep", "offset", "ties", "walk"]
TAU = 0.7


def field(kind, shape, dtype, gen):
    n = shape[-1]
    x = torch.arange(n, dtype=dtype)
    if kind == "smooth":
        return (2 * torch.sin(x / 40)).expand(shape).clone()
    if kind == "steep":
        return 30 * torch.randn(shape, generator=gen, dtype=dtype)
    if kind == "offset":
        return 1000 + 0.5 * torch.randn(shape, generator=gen, dtype=dtype)
    if kind == "ties":
        return torch.randint(0, 3, shape, generator=gen).to(dtype)
    return 0.3 * torch.randn(shape, generator=gen, dtype=dtype).cumsum(-1)


def cases():
    for threads in (1, 2):
        for dtype in (torch.float32, torch.float64):
            for (variant, backward) in MODES:
                for impl in IMPLS:
                    for (B, H, n, d) in SHAPES:
                        kinds = FIELDS if variant == "fpa" else ["-"]
                        for kind in kinds:
                            yield threads, dtype, variant, backward, impl, (B, H, n, d), kind


def dump(library, out):
    torch.ops.load_library(library)
    attention = torch.ops.fpa.attention
    results = {}
    for threads, dtype, variant, backward, impl, (B, H, n, d), kind in cases():
        torch.set_num_threads(threads)
        gen = torch.Generator().manual_seed(n * 1000 + d)
        q, k, v = (torch.randn(B, H, n, d, generator=gen, dtype=dtype) for _ in range(3))
        gate = None
        if variant == "fox":
            gate = torch.nn.functional.logsigmoid(2 + 2 * torch.randn(B, H, n, generator=gen,
                                                                      dtype=dtype))
        elif variant == "fpa":
            gate = field(kind, (B, H, n), dtype, gen)
        leaves = [t.clone().requires_grad_() for t in (q, k, v) + ((gate,) if gate is not None else ())]
        out_t = attention(leaves[0], leaves[1], leaves[2], leaves[3] if gate is not None else None,
                          variant, impl, backward, TAU)
        out_t.backward(torch.randn(out_t.shape, generator=gen, dtype=dtype))
        name = f"{variant}/{backward} {impl} {str(dtype)[6:]} {threads}t {(B, H, n, d)} {kind}"
        results[name] = [out_t.detach()] + [t.grad for t in leaves]
    torch.save(results, out)


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--dump":
        dump(sys.argv[2], sys.argv[3])
        return 0
    if len(sys.argv) != 3:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        saved = []
        for i, library in enumerate(sys.argv[1:]):
            path = f"{tmp}/{i}.pt"
            subprocess.run([sys.executable, __file__, "--dump", library, path], check=True)
            saved.append(torch.load(path))
    before, after = saved
    differ = []
    for name, tensors in before.items():
        for label, a, b in zip(["out", "dq", "dk", "dv", "dgate"], tensors, after[name]):
            if not torch.equal(a, b):
                differ.append(f"{name}: {label} differs by up to {(a - b).abs().max().item():.3g}")
    for line in differ:
        print("DIFFER " + line)
    print(f"kernel_bits: {len(before)} cases, {'every tensor equal bit for bit' if not differ else f'{len(differ)} tensors differ'}")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
