#!/usr/bin/env python3
"""What ptxas gives each CUDA kernel, per architecture: registers, static shared memory, the
per-thread stack frame (local memory) and spills. Needs nvcc only (no GPU): the first look at a
kernel's speed before a GPU is at hand, and the list a tuning pass starts from (a large stack
frame means per-thread arrays in local memory instead of registers).

  kernels/cuda/resource_report.py [--archs 80,90] [--out results/bench/cuda_kernel_resources.csv]

Writes the CSV (one row per architecture and kernel instance) atomically, with a .json sidecar
(nvcc's version under environment, the options and flags under config, the code version, the wall time)."""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(REPO, "experiments"))
from script_io import atomic_write, code_version  # noqa: E402

SOURCES = ["kernels/cuda/tiled_forward.cu", "kernels/cuda/tiled_backward.cu",
           "kernels/cuda/fpa_cuda_kernels.cu"]
FLAGS = ["-std=c++17", "-O3"]  # as CMake's Release build of fpa_cuda_kernels (CUDA_STANDARD 17)
COLUMNS = ["arch", "source", "kernel", "dtype", "registers", "smem_static_bytes",
           "stack_frame_bytes", "spill_store_bytes", "spill_load_bytes"]


def demangle(names):
    out = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True,
                         check=True).stdout.splitlines()
    return dict(zip(names, out))


def short_name(demangled):
    """'fpa::cuda::tiled::detail::dq_kernel<float>(...)' -> ('dq_kernel', 'float'); a kernel's
    further template arguments stay with its name: 'forward_mma_kernel<__half, 64>' ->
    ('forward_mma_kernel<64>', 'fp16')."""
    head = demangled.replace("(anonymous namespace)::", "")
    head = re.sub(r"^void ", "", head).split("(", 1)[0]
    m = re.match(r"(?:.*::)?(\w+)(?:<(.*)>)?$", head)
    if not m:
        return head, ""
    dtype, *rest = [a.strip() for a in (m.group(2) or "").split(",")]
    dtype = dtype.replace("__nv_bfloat16", "bf16").replace("__half", "fp16")
    return m.group(1) + (f"<{', '.join(rest)}>" if rest else ""), dtype


def ptxas_rows(nvcc, source, arch):
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [nvcc, *FLAGS, f"-arch=sm_{arch}", "-I", REPO, "-Xptxas", "-v", "-c",
               os.path.join(REPO, source), "-o", os.path.join(tmp, "k.o")]
        r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"error: nvcc failed on {source} (sm_{arch}): {r.stderr.strip().splitlines()[-1:]}")
    rows, name, frame = [], None, None
    for line in r.stderr.splitlines():
        if m := re.search(r"Compiling entry function '(\S+)'", line):
            name, frame = m.group(1), None
        elif m := re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line):
            frame = tuple(int(x) for x in m.groups())
        elif (m := re.search(r"Used (\d+) registers", line)) and name:
            smem = re.search(r"(\d+) bytes smem", line)
            rows.append([name, int(m.group(1)), int(smem.group(1)) if smem else 0, *(frame or (0, 0, 0))])
            name = None
    return rows


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--archs", default="80,90", help="SM architectures, comma-separated")
    p.add_argument("--out", default="results/bench/cuda_kernel_resources.csv")
    p.add_argument("--nvcc", default=os.environ.get("NVCC", "/usr/local/cuda/bin/nvcc"))
    o = p.parse_args()
    archs = [a.strip() for a in o.archs.split(",") if a.strip()]
    if not archs or not all(a.isdigit() for a in archs):
        sys.exit(f"error: --archs must be numbers like 80,90, got '{o.archs}'")
    if not os.access(o.nvcc, os.X_OK):
        sys.exit(f"error: no nvcc at '{o.nvcc}' (--nvcc or NVCC)")
    started = time.time()
    raw = [(arch, src, *row) for arch in archs for src in SOURCES for row in ptxas_rows(o.nvcc, src, arch)]
    names = demangle(sorted({r[2] for r in raw}))
    lines = [",".join(COLUMNS)]
    for arch, src, mangled, regs, smem, frame, st, ld in raw:
        kernel, dtype = short_name(names[mangled])
        lines.append(",".join(str(x) for x in (f"sm_{arch}", os.path.basename(src), kernel, dtype,
                                               regs, smem, frame, st, ld)))
    version = subprocess.run([o.nvcc, "--version"], capture_output=True, text=True).stdout.strip().splitlines()
    sidecar = {"program": "kernels/cuda/resource_report.py", "command_line": " ".join(sys.argv),
               "code_version": code_version(),
               "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
               "wall_s": round(time.time() - started, 3),
               "environment": {"nvcc": version[-1] if version else ""},
               "sources": SOURCES,  # what the table is derived from (docs/results-schema.md)
               "config": {"archs": ",".join(archs), "out": o.out, "nvcc": o.nvcc,
                          "flags": " ".join(FLAGS + ["-Xptxas", "-v"])}}
    atomic_write(o.out, "\n".join(lines) + "\n")
    atomic_write(o.out + ".json", json.dumps(sidecar, indent=2) + "\n")
    print(f"resource_report: wrote {o.out} ({len(raw)} kernels)")


if __name__ == "__main__":
    main()
