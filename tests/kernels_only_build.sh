#!/usr/bin/env bash
# The kernels-only build (cmake/KernelsOnly.cmake: the GPU device check's, and torch.ops.fpa's for
# a PyTorch installation) from LibTorch and a folder filled by scripts/prepare-device-check.sh
# alone, as kernels/cuda/device-check.sh sets it up on a GPU machine: the packages of fmt,
# GoogleTest and RapidCheck are hidden from CMake.
#   1. Without RapidCheck it configures and leaves test_tile_algorithm out.
#   2. With the folder's RapidCheck, the kernel tests are targets, nothing of the rest of the
#      suite, and the kernel tests that g++ compiles alone (test_tile_algorithm, test_cuda_dispatch,
#      test_fused_cuda) build and link: a test that includes a header the device machine lacks,
#      or links a library it lacks, fails here instead of failing the device check's build.
# The CUDA targets are left to the device check (nvcc takes minutes); about 2 minutes on 2 cores.
set -euo pipefail
# shellcheck source=tests/prepared_third_party.sh
source "$(dirname "$0")/prepared_third_party.sh"  # src, dir, dir/tp
hidden=(-DCMAKE_DISABLE_FIND_PACKAGE_fmt=ON -DCMAKE_DISABLE_FIND_PACKAGE_GTest=ON
        -DCMAKE_DISABLE_FIND_PACKAGE_rapidcheck=ON -DFPA_FMT_INCLUDE="$dir/tp/fmt-include"
        -DFPA_GTEST_SOURCE="$dir/tp/googletest")
generator=(); command -v ninja >/dev/null && generator=(-G Ninja)
has_target() { grep -Eq "(^|\.\.\. )$1(:|$)" <<<"$2"; }

cmake -S "$src" -B "$dir/plain" "${generator[@]}" -DFPA_KERNELS_ONLY=ON "${hidden[@]}" \
  >"$dir/configure-plain.log" 2>&1 ||
  { cat "$dir/configure-plain.log"; echo "FAIL: the kernels-only build does not configure"; exit 1; }
targets=$(cmake --build "$dir/plain" --target help)
if has_target test_tile_algorithm "$targets"; then
  echo "FAIL: test_tile_algorithm is a target without RapidCheck"; exit 1
fi

cmake -S "$src" -B "$dir/build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DFPA_KERNELS_ONLY=ON \
  "${hidden[@]}" -DFPA_RAPIDCHECK_DIR="$dir/tp/rapidcheck" >"$dir/configure.log" 2>&1 ||
  { cat "$dir/configure.log"; echo "FAIL: the kernels-only build with RapidCheck does not configure"; exit 1; }
targets=$(cmake --build "$dir/build" --target help)
for t in fpa_kernels fpa_torch_ops test_tile_algorithm test_cuda_dispatch test_fused_cuda; do
  has_target "$t" "$targets" || { echo "FAIL: no target $t"; exit 1; }
done
for t in attention-bench lm-train test_runtime; do  # nothing of the suite beyond the kernels
  if has_target "$t" "$targets"; then echo "FAIL: target $t in the kernels-only build"; exit 1; fi
done
built=(test_tile_algorithm test_cuda_dispatch test_fused_cuda)
cmake --build "$dir/build" -j 2 --target "${built[@]}" >"$dir/build.log" 2>&1 ||
  { grep -E "error|FAILED" "$dir/build.log" | head -n 30; echo "FAIL: the kernel tests do not build"; exit 1; }
for t in "${built[@]}"; do
  [[ -x $dir/build/tests/$t ]] || { echo "FAIL: $t was not written"; exit 1; }
done
echo "kernels-only build: configures with and without RapidCheck; ${built[*]} build and link" \
  "from $(du -sh "$dir/tp" | cut -f1) of vendored packages"
