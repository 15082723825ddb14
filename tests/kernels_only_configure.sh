#!/usr/bin/env bash
# The kernels-only build (cmake/KernelsOnly.cmake: the GPU device check's, and torch.ops.fpa's for
# a PyTorch installation) configures from LibTorch, fmt's headers and GoogleTest's source alone:
# the packages of fmt and GoogleTest are hidden from CMake, and the kernel tests must be targets.
# Configuring only (seconds); kernels/cuda/device-check.sh builds and runs it on a GPU machine.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
[[ -f /usr/src/googletest/CMakeLists.txt && -f /usr/include/fmt/format.h ]] ||
  { echo "FAIL: needs Debian's googletest and libfmt-dev (make deps)"; exit 1; }
mkdir -p "$dir/fmt-include" && cp -r /usr/include/fmt "$dir/fmt-include/fmt"
cmake -S "$src" -B "$dir/build" -DFPA_KERNELS_ONLY=ON -DCMAKE_DISABLE_FIND_PACKAGE_fmt=ON \
  -DCMAKE_DISABLE_FIND_PACKAGE_GTest=ON -DFPA_FMT_INCLUDE="$dir/fmt-include" \
  -DFPA_GTEST_SOURCE=/usr/src/googletest >"$dir/configure.log" 2>&1 ||
  { cat "$dir/configure.log"; echo "FAIL: the kernels-only build does not configure"; exit 1; }
targets=$(cmake --build "$dir/build" --target help)
for t in fpa_kernels fpa_torch_ops test_tile_algorithm test_fused_cuda; do
  grep -Eq "(^|\.\.\. )$t(:|$)" <<<"$targets" || { echo "FAIL: no target $t"; exit 1; }
done
for t in attention-bench lm-train test_runtime; do  # nothing of the suite beyond the kernels
  if grep -Eq "(^|\.\.\. )$t(:|$)" <<<"$targets"; then echo "FAIL: target $t in the kernels-only build"; exit 1; fi
done
echo "kernels-only build configures: $(grep -c '' <<<"$targets") targets, kernel tests among them"
