#!/usr/bin/env bash
# One-shot GPU check, for a machine with an NVIDIA GPU, nvcc and PyTorch (with CUDA) installed:
#   kernels/cuda/device-check.sh            (from the repository root)
# 1. configures a build against PyTorch's LibTorch (so Impl::Cuda is compiled in),
# 2. builds the CUDA test and the benchmark,
# 3. runs the GPU tests (CUDA kernels against the CPU float64 reference; the tiled kernels also
#    against the CPU run of their tile algorithm),
# 4. runs the benchmark for {fused (CPU), cuda} and prints a short table.
# Output: build-gpu/, results/bench/attention_gpu.csv (+ .json), and the table on stdout.
# The suite's other dependencies (fmt, Boost, GTest, RapidCheck, Google Benchmark, GLPK) must
# be installed (scripts/install-deps.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build-gpu}
OUT=${OUT:-results/bench/attention_gpu.csv}
N_LIST=${N_LIST:-256,1024,4096}

command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,compute_cap,memory.total --format=csv
TORCH_PREFIX=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)') || {
  echo "error: python3 cannot import torch (install PyTorch with CUDA first)" >&2; exit 1; }
python3 -c 'import torch; assert torch.cuda.is_available(), "torch sees no GPU"; print("torch", torch.__version__, "cuda", torch.version.cuda)'
# PyTorch's wheels decide the C++ ABI; build everything with the same one.
ABI=$(python3 -c 'import torch; print(int(torch._C._GLIBCXX_USE_CXX11_ABI))')
# Compile for this GPU's architecture only (fast), e.g. 9.0 -> 90.
ARCH=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d '. ')
ARCH=${ARCH:-90}

cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$TORCH_PREFIX" \
  -DFPA_CUDA_ARCHS="$ARCH" -DCMAKE_CUDA_ARCHITECTURES="$ARCH" \
  -DCMAKE_CXX_FLAGS="-D_GLIBCXX_USE_CXX11_ABI=$ABI" | grep -E "FPA:|Torch" || true
cmake --build "$BUILD" -j "$(nproc)" --target test_fused_cuda test_tiled_cuda test_tile_algorithm test_fused attention-bench

echo "== GPU tests (CUDA kernels vs CPU float64 reference)"
"$BUILD/tests/test_fused_cuda"
echo "== tiled CUDA kernels (kernels/cuda/tiled_*.cu) vs the reference and the CPU tile run"
"$BUILD/tests/test_tiled_cuda"
"$BUILD/tests/test_tile_algorithm" --gtest_brief=1
echo "== CPU fused tests (same build)"
"$BUILD/tests/test_fused" --gtest_brief=1

echo "== GPU benchmark"
mkdir -p "$(dirname "$OUT")"
"$BUILD/bin/attention-bench" --impls fused,cuda --lengths "$N_LIST" --fpa-backward exact \
  --threads "$(nproc)" --repeats 5 --out "$OUT"

echo "== table (median ms)"
python3 - "$OUT" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
print(f"{'variant':8} {'impl':6} {'n':>6} {'pass':8} {'median_ms':>10} {'gflops':>8}")
for r in rows:
    print(f"{r['variant']:8} {r['impl']:6} {r['n']:>6} {r['pass']:8} {r['median_ms']:>10} {r['gflops']:>8}")
PY
