#!/usr/bin/env bash
# The tiled CUDA kernels' source, run on the CPU by the emulation (tests/cuda_emulation.h), under
# AddressSanitizer and UndefinedBehaviorSanitizer: an index past an input, output, workspace or
# shared-memory buffer (the emulation's dynamic shared memory is a heap buffer of exactly the
# size the launcher asked for, its __shared__ arrays are globals), or undefined behaviour in the
# kernel source, stops the test with a report, where a GPU would read another buffer's bytes or
# fault. Too slow for CI (about 3 minutes to build and 7 to run on 2 cores); run it after
# changing a kernel:
#   scripts/sanitize-emulated.sh [BUILD_DIR]    (default build-sanitize)
# A kernels-only build (cmake/KernelsOnly.cmake) with -fsanitize=address,undefined; the CUDA
# kernels compiled by nvcc are not instrumented (nothing runs them here). ASan warns once that it
# does not fully support swapcontext (the emulation's fibers); it reported nothing else when this
# script was written. Exit status: the tests'.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build-sanitize}
flags="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined"
generator=(); command -v ninja >/dev/null && [[ ! -f $BUILD/Makefile ]] && generator=(-G Ninja)
cmake -S . -B "$BUILD" "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFPA_KERNELS_ONLY=ON \
  -DFPA_CUDA_ARCHS=90 -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="$flags" >/dev/null
cmake --build "$BUILD" -j "$(nproc)" --target test_tiled_emulated
ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0} UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1} \
  "$BUILD/tests/test_tiled_emulated"
