#!/usr/bin/env bash
# One-shot GPU check of the attention kernels, for a machine with an NVIDIA GPU, nvcc and PyTorch
# (with CUDA), and none of the suite's Debian packages:
#   scripts/prepare-device-check.sh     (here, on a machine with the suite's packages: copies
#                                        GoogleTest's source and fmt's headers into third_party/)
#   kernels/cuda/device-check.sh        (there, from the repository root, third_party/ carried)
# 1. configures the kernels-only build (cmake/KernelsOnly.cmake) against PyTorch's LibTorch, for
#    this GPU's architecture only;
# 2. builds the kernel tests and torch.ops.fpa (libfpa_torch_ops.so);
# 3. runs them: the tile algorithm on the CPU (test_tile_algorithm), the tiled kernels' source
#    emulated on the CPU (test_tiled_emulated; without a GPU, or with EMULATED=1: CI runs it),
#    the tiled kernels on the GPU against the float64 reference and the CPU tile run, with
#    bitwise repeatability (test_tiled_cuda), the choice of
#    kernel (test_cuda_dispatch), fpa::attention with impl 'cuda' in every dtype, the tiled and
#    the row-per-thread kernels through the binding (test_fused_cuda), and torch.ops.fpa on CUDA
#    tensors from Python (tests/python/test_torch_ops.py);
# 4. the benchmark (issue 48, items 7 and 8; kernels/bench/attention_gpu_bench.py with
#    configs/bench/attention-gpu.conf): torch.ops.fpa.attention beside SDPA flash, FlexAttention
#    and a materialised bias, writing $OUT/attention_gpu.csv, its sidecar and
#    $OUT/attention_gpu_ratios.csv (with no GPU: its CPU --smoke mode, attention_gpu_smoke.csv).
#    BENCH=0 skips it; BENCH_ONLY=1 builds only torch.ops.fpa and runs only the benchmark (a
#    second call on a warm machine); BENCH_ARGS adds options (e.g. "--max-seconds 200 --shapes
#    2x16x4096x64"); CODE_VERSION is recorded when the copy has no .git.
# 5. SANITIZE=racecheck (or memcheck, synccheck, initcheck): one GPU test under compute-sanitizer
#    (after the tests; see the comment there), e.g. in a second call: BENCH=0 SANITIZE=racecheck.
# Output: $OUT (the device tool's folder, which returns at most 8 files; default
# build-gpu/device-check/): everything printed (device-check.log), the benchmark's CSVs and
# sidecars, and logs.tar.gz, packed after each step: each test's log and GoogleTest XML, the GPU's
# and the toolchain's description (device.txt), configure, build and benchmark logs. A build
# failure of one target does not stop the others (ninja -k 0): what was built still runs. Exit
# status: non-zero when a build or a test failed, or a cell of this project's kernels failed with
# an error in the benchmark (the baselines' errors are recorded in the CSV).
# FULL=1 also builds the whole suite and runs attention-bench --device cuda (reference and cuda,
# float32, into $OUT/attention_bench_cuda.csv; needs the suite's packages,
# scripts/install-deps.sh).
set -uo pipefail
cd "$(dirname "$0")/../.."
case ${SANITIZE:-} in
  ""|memcheck|racecheck|synccheck|initcheck) ;;
  *) echo "error: SANITIZE must be memcheck, racecheck, synccheck or initcheck, not '$SANITIZE'" >&2; exit 2 ;;
esac
BUILD=${BUILD:-build-gpu}
OUT_DIR=${OUT:-$BUILD/device-check}
# The device tool returns at most 8 files from $OUT: the results stay there, every log goes to
# $LOGS and is packed into $OUT/logs.tar.gz after each step and at exit.
LOGS=$BUILD/device-check-logs
mkdir -p "$OUT_DIR"
rm -rf "$LOGS" && mkdir -p "$LOGS"
exec > >(tee "$OUT_DIR/device-check.log") 2>&1
pack_logs() { tar -czf "$OUT_DIR/logs.tar.gz" -C "$LOGS" . 2>/dev/null || true; }
trap 'pack_logs; sleep 1' EXIT  # (the sleep lets tee write the last lines)
status=0

{
  date -u
  command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,compute_cap,memory.total,driver_version --format=csv
  nvcc --version | tail -n 2
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "gpu", torch.cuda.is_available())'
} 2>&1 | tee "$LOGS/device.txt"
TORCH_PREFIX=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)') || {
  echo "error: python3 cannot import torch (install PyTorch with CUDA first)" >&2; exit 1; }
# PyTorch's wheels decide the C++ ABI; build everything with the same one.
ABI=$(python3 -c 'import torch; print(int(torch._C._GLIBCXX_USE_CXX11_ABI))')
# Compile for this GPU's architecture only (fast), e.g. 9.0 -> 90.
ARCH=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d '. ')
ARCH=${ARCH:-90}
extra=()
[[ -f third_party/googletest/CMakeLists.txt ]] && extra+=(-DFPA_GTEST_SOURCE="$PWD/third_party/googletest")
[[ -f third_party/fmt-include/fmt/format.h ]] && extra+=(-DFPA_FMT_INCLUDE="$PWD/third_party/fmt-include")
# Debian's RapidCheck library has the C++11 ABI: with a PyTorch of the old ABI, test_tile_algorithm
# is left out (CI runs it).
if [[ -f third_party/rapidcheck/lib/librapidcheck.a ]]; then
  if [[ $ABI == 1 ]]; then extra+=(-DFPA_RAPIDCHECK_DIR="$PWD/third_party/rapidcheck")
  else echo "note: PyTorch has the old C++ ABI; third_party/rapidcheck unused, test_tile_algorithm not built"; fi
fi
generator=(); command -v ninja >/dev/null && generator=(-G Ninja)

cmake -S . -B "$BUILD" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DFPA_KERNELS_ONLY=ON \
  -DCMAKE_PREFIX_PATH="$TORCH_PREFIX" -DFPA_CUDA_ARCHS="$ARCH" -DCMAKE_CUDA_ARCHITECTURES="$ARCH" \
  -DCMAKE_CXX_FLAGS="-D_GLIBCXX_USE_CXX11_ABI=$ABI" "${extra[@]}" >"$LOGS/configure.log" 2>&1 ||
  { tail -n 30 "$LOGS/configure.log"; echo "error: configure failed (configure.log in $OUT_DIR/logs.tar.gz)" >&2; exit 1; }
grep -E "FPA:" "$LOGS/configure.log"
gpu=$(python3 -c 'import torch; print(int(torch.cuda.is_available()))' 2>/dev/null || echo 0)
# The emulation (the kernels' source on the CPU, about 2 minutes on one core) checks nothing
# GPU-specific and runs in CI: on a GPU machine it is left out unless EMULATED=1.
optional=(test_tile_algorithm test_tiled_cuda)
[[ $gpu == 0 || ${EMULATED:-0} == 1 ]] && optional+=(test_tiled_emulated)
targets=(test_cuda_dispatch test_fused_cuda fpa_torch_ops)
for t in "${optional[@]}"; do  # where the build has them
  cmake --build "$BUILD" --target help | grep -Eq "^(\.\.\. )?$t(:|$)" && targets+=("$t")
done
[[ ${BENCH_ONLY:-0} == 1 ]] && targets=(fpa_torch_ops)
# Keep going past a target that fails, so that one broken test costs its own run, not the slot's:
# what was built runs below; the failure is reported and fails the check.
keep_going=(-- -k 0)
[[ ${generator[*]} == *Ninja* ]] || keep_going=(-- -k)
if ! cmake --build "$BUILD" -j "$(nproc)" --target "${targets[@]}" "${keep_going[@]}" \
    >"$LOGS/build.log" 2>&1; then
  status=1
  grep -E "error|FAILED" "$LOGS/build.log" | head -n 30
  echo "error: build failed (build.log in logs.tar.gz); running what was built"
  [[ -f $BUILD/lib/libfpa_torch_ops.so || ${BENCH_ONLY:-0} != 1 ]] || exit 1
fi

if [[ ${BENCH_ONLY:-0} != 1 ]]; then
for t in test_tile_algorithm test_cuda_dispatch test_tiled_emulated test_tiled_cuda test_fused_cuda; do
  [[ $t != test_tiled_emulated || " ${targets[*]} " == *" $t "* ]] ||
    { echo "== $t: left out on a GPU machine (CI runs it; EMULATED=1 runs it here)"; continue; }
  [[ -x $BUILD/tests/$t ]] || { echo "== $t: not built"; continue; }
  echo "== $t"
  "$BUILD/tests/$t" --gtest_output="xml:$LOGS/$t.xml" >"$LOGS/$t.log" 2>&1
  rc=$?
  grep -E "^\[  (PASSED|FAILED|SKIPPED) |tests? ran" "$LOGS/$t.log" | tail -n 4
  pack_logs
  (( rc == 0 )) || { status=1; grep -E "Failure|error|FAILED" "$LOGS/$t.log" | head -n 20; }
  if [[ $gpu == 1 ]] && grep -q "^\[  SKIPPED \]" "$LOGS/$t.log"; then
    status=1; echo "error: $t skipped tests although torch sees a GPU"
  fi
done

# SANITIZE=memcheck|racecheck|synccheck|initcheck: test_tiled_cuda's SANITIZE_FILTER under
# compute-sanitizer (default TiledCuda.RunsAreBitwiseRepeatable: every mode in bf16 and TF32 on
# the register and WMMA kernels, run twice each), at most SANITIZE_S (300) seconds; its report
# goes into the logs and an error fails the check. For a second call on the warm machine
# (BENCH=0 SANITIZE=racecheck), or to locate an illegal address the GPU tests met.
if [[ -n ${SANITIZE:-} ]]; then
  echo "== compute-sanitizer --tool $SANITIZE"
  cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  if [[ $gpu == 1 && -x $cs && -x $BUILD/tests/test_tiled_cuda ]]; then
    timeout "${SANITIZE_S:-300}" "$cs" --tool "$SANITIZE" --error-exitcode 99 \
      "$BUILD/tests/test_tiled_cuda" --gtest_filter="${SANITIZE_FILTER:-TiledCuda.RunsAreBitwiseRepeatable}" \
      >"$LOGS/sanitize-$SANITIZE.log" 2>&1
    rc=$?
    pack_logs
    grep -E "ERROR SUMMARY|Invalid|race|Race|^\[  (PASSED|FAILED) " "$LOGS/sanitize-$SANITIZE.log" | head -n 20
    (( rc == 0 )) || { status=1; echo "error: compute-sanitizer --tool $SANITIZE exited $rc (sanitize-$SANITIZE.log)"; }
  else
    echo "  skipped: needs a GPU, compute-sanitizer ($cs) and test_tiled_cuda"
  fi
fi

# torch.ops.fpa.attention on CUDA tensors through this PyTorch: every mode, float64, float32
# (exact and on TF32 tensor cores, fp32_matmul), bfloat16 and float16
# (tests/python/test_torch_ops.py; its GPU part runs only with a GPU).
echo "== python test_torch_ops"
python3 tests/python/test_torch_ops.py "$BUILD/lib/libfpa_torch_ops.so" >"$LOGS/test_torch_ops.log" 2>&1 ||
  { status=1; grep -E "^FAIL|Error|error" "$LOGS/test_torch_ops.log" | head -n 20; }
grep -cE "^ok +cuda" "$LOGS/test_torch_ops.log" | sed 's/^/GPU checks passed: /'
if [[ $gpu == 1 ]] && ! grep -qE "^ok +cuda" "$LOGS/test_torch_ops.log"; then
  status=1; echo "error: test_torch_ops checked nothing on the GPU although torch sees one"
fi
fi  # BENCH_ONLY

# The benchmark (issue 48, items 7 and 8), after the tests: CSVs, sidecars and log in $OUT.
if [[ ${BENCH:-1} == 1 ]]; then
  echo "== attention_gpu_bench"
  bench=(python3 kernels/bench/attention_gpu_bench.py --ops "$BUILD/lib/libfpa_torch_ops.so")
  code_version=${CODE_VERSION:-$(git describe --always --abbrev=12 2>/dev/null || true)}
  [[ -n $code_version ]] && bench+=(--code-version "$code_version")
  if [[ $gpu == 1 ]]; then
    bench+=(--config configs/bench/attention-gpu.conf --out "$OUT_DIR/attention_gpu.csv")
  else
    bench+=(--smoke --out "$OUT_DIR/attention_gpu_smoke.csv")
  fi
  # shellcheck disable=SC2206  # BENCH_ARGS is split into options on purpose
  bench+=(${BENCH_ARGS:-})
  "${bench[@]}" >"$LOGS/attention_gpu_bench.log" 2>&1
  rc=$?
  grep -E "^attention_gpu_bench|self-checks|^  fpa_vs|^  fwd_vs|^cells:|^wrote|^Traceback|^error" "$LOGS/attention_gpu_bench.log" | tail -n 40
  (( rc == 0 )) || { status=1; echo "error: attention_gpu_bench exited $rc (attention_gpu_bench.log in logs.tar.gz)"; }
fi

if [[ ${FULL:-0} == 1 ]]; then
  echo "== FULL=1: the whole suite against the same LibTorch, and attention-bench"
  cmake -S . -B "$BUILD-full" -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$TORCH_PREFIX" \
    -DFPA_CUDA_ARCHS="$ARCH" -DCMAKE_CUDA_ARCHITECTURES="$ARCH" \
    -DCMAKE_CXX_FLAGS="-D_GLIBCXX_USE_CXX11_ABI=$ABI" >"$LOGS/configure-full.log" 2>&1 &&
  cmake --build "$BUILD-full" -j "$(nproc)" --target attention-bench >"$LOGS/build-full.log" 2>&1 &&
  "$BUILD-full/bin/attention-bench" --device cuda --impls reference,cuda \
    --lengths "${N_LIST:-256,1024,4096}" --threads "$(nproc)" --repeats 5 \
    --out "$OUT_DIR/attention_bench_cuda.csv" || status=1
fi
echo "device-check: $( ((status)) && echo FAILED || echo passed) (results and logs.tar.gz in $OUT_DIR)"
exit $status
