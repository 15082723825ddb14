#!/usr/bin/env bash
# Installs the project's Debian packages when any is missing (a no-op otherwise), then checks
# that LibTorch's BLAS resolves to OpenBLAS and not the slow reference BLAS.
set -euo pipefail

PACKAGES=(
  cmake ninja-build g++ make ccache git
  libtorch-dev libeigen3-dev libboost-program-options-dev libfmt-dev
  libgtest-dev librapidcheck-dev libfccp-dev libbenchmark-dev libglpk-dev
  libgloo-dev libopenblas0-pthread python3-matplotlib nlohmann-json3-dev
  libsentencepiece-dev libssl-dev  # the sub-word tokenizer (lm/tokenizer.h) and its SHA-256
  libabsl-dev  # SentencePiece 0.2's header includes Abseil's, and its package does not pull it in
  python3-torch  # PyTorch for /usr/bin/python3: the operators and models from Python (tests)
)
# Tools that may come from elsewhere than Debian (Node.js often does): installed from Debian
# only when the command itself is missing, so a packaged npm never fights an existing Node.
declare -A TOOLS=([npm]=npm)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

for cmd in "${!TOOLS[@]}"; do
  command -v "$cmd" >/dev/null || missing+=("${TOOLS[$cmd]}")
done

if ((${#missing[@]})); then
  echo "deps: installing ${missing[*]}"
  SUDO=""
  if [[ $(id -u) -ne 0 ]]; then
    command -v sudo >/dev/null || { echo "error: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
    SUDO="sudo"
  fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
  echo "deps: all ${#PACKAGES[@]} packages present"
fi

# LibTorch links libblas.so.3; Debian's alternatives pick which BLAS that is.
blas=$(readlink -f /usr/lib/x86_64-linux-gnu/libblas.so.3 || true)
if [[ "$blas" != *openblas* ]]; then
  alt=$(update-alternatives --list libblas.so.3-x86_64-linux-gnu 2>/dev/null | grep openblas | head -1 || true)
  if [[ -n "$alt" ]]; then
    ${SUDO:-} update-alternatives --set libblas.so.3-x86_64-linux-gnu "$alt" >/dev/null
    blas=$(readlink -f /usr/lib/x86_64-linux-gnu/libblas.so.3)
  fi
fi
if [[ "$blas" != *openblas* ]]; then
  echo "error: LibTorch's BLAS is '$blas', not OpenBLAS (expected ~40x slower matmuls)" >&2
  exit 1
fi
echo "deps: LibTorch BLAS -> $blas"
