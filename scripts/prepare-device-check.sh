#!/usr/bin/env bash
# Puts what kernels/cuda/device-check.sh needs besides PyTorch and nvcc into third_party/
# (ignored by git; the device tool carries it): GoogleTest's source (Debian's googletest,
# /usr/src/googletest) and fmt's headers (libfmt-dev, used header-only). Both come from the
# suite's Debian packages (scripts/install-deps.sh), so a GPU machine without apt needs no network.
set -euo pipefail
cd "$(dirname "$0")/.."
[[ -f /usr/src/googletest/CMakeLists.txt && -f /usr/include/fmt/format.h ]] ||
  { echo "error: needs Debian's googletest and libfmt-dev (make deps)" >&2; exit 1; }
rm -rf third_party/googletest third_party/fmt-include
mkdir -p third_party/fmt-include
cp -r /usr/src/googletest third_party/googletest
cp -r /usr/include/fmt third_party/fmt-include/fmt
echo "prepare-device-check: third_party/ holds googletest ($(du -sh third_party/googletest | cut -f1)) and fmt's headers"
