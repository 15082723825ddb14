#!/usr/bin/env bash
# Builds and runs the whole test suite on Debian sid, in a chroot: LibTorch 2.x and PyTorch 2.x
# (sid's libtorch-dev and python3-torch), and the newest GCC, CMake, Eigen, Boost, fmt, GoogleTest
# and SentencePiece. The suite is developed on bookworm (LibTorch 1.13); the GPU machines and many
# users have a LibTorch 2.x, which bookworm cannot install. scripts/check_torch_headers.py checks
# that every unit compiles against 2.x headers; this checks that it links, runs and passes there,
# and that `make deps` installs what it needs on a newer Debian.
#
#   scripts/check-debian-sid.sh [ROOT]     ROOT: the chroot's folder (default /srv/fpa-sid)
#
# Needs root and deb.debian.org. The first run bootstraps the chroot (about 1 minute) and installs
# the packages (about 3); the build (about 20 minutes on 2 cores: C++20) and ccache stay in ROOT
# between runs, the sources are copied fresh each time (a clone of the repository with the working
# tree's tracked and untracked, not ignored, files on top); ctest takes about 10 minutes.
# Env: SUITE (sid), JOBS (2), CTEST_ARGS (extra ctest arguments); GPU_DRY_RUN=1 then also runs
# scripts/gpu-check.sh as its CPU dry run there (about 13 minutes; it needs what a device call
# carries: third_party/ from scripts/prepare-device-check.sh, make data-brown, make weights), its
# output in ROOT/root/gpu-dry-run.
# Exit status: 0 when everything passed, ctest's or 1 when something failed, 2 when the chroot
# cannot be set up.
set -euo pipefail

ROOT=${1:-/srv/fpa-sid}
SUITE=${SUITE:-sid}
JOBS=${JOBS:-2}
MIRROR=http://deb.debian.org/debian
REPO=$(cd "$(dirname "$0")/.." && pwd)

die() { echo "check-debian-sid: $*" >&2; exit 2; }
[[ $(id -u) -eq 0 ]] || die "needs root (debootstrap and chroot)"
if ! command -v debootstrap >/dev/null; then
  apt-get install -y -qq debootstrap >/dev/null || die "cannot install debootstrap"
fi

if [[ ! -f $ROOT/etc/debian_version ]]; then
  echo "check-debian-sid: bootstrapping $SUITE into $ROOT"
  debootstrap --variant=minbase --include=ca-certificates "$SUITE" "$ROOT" "$MIRROR" \
    >"$ROOT.debootstrap.log" 2>&1 || die "debootstrap failed (log: $ROOT.debootstrap.log)"
fi
# A mirror that is a dated snapshot serves an expired Release file; its signatures still count.
echo 'Acquire::Check-Valid-Until "false";' >"$ROOT/etc/apt/apt.conf.d/99fpa-snapshot"
cp /etc/resolv.conf "$ROOT/etc/resolv.conf"

mounted=()
cleanup() { for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount "${mounted[i]}" || true; done; }
trap cleanup EXIT
for d in proc sys dev dev/pts; do
  if ! mountpoint -q "$ROOT/$d"; then
    mount --bind "/$d" "$ROOT/$d" && mounted+=("$ROOT/$d")
  fi
done

# Fresh sources each run: a clone (the tests of the weights' store read its history) with the
# working tree's files on top (-m: stamped now, so that the kept build folder never looks newer
# than a changed source; ccache makes the rebuild cheap); the build folder lives beside them.
rm -rf "$ROOT/root/fpa"
git clone -q "$REPO" "$ROOT/root/fpa"
git -C "$REPO" ls-files -z --cached --others --exclude-standard |
  (cd "$REPO" && tar --null -T - -cf - 2>/dev/null) | tar -xmf - -C "$ROOT/root/fpa"
CODE_VERSION=$(git -C "$REPO" describe --always --abbrev=12 --dirty)

# GPU_DRY_RUN=1: the device inputs scripts/gpu-check.sh needs, copied beside the sources.
if [[ ${GPU_DRY_RUN:-0} == 1 ]]; then
  decode=$(sed -n 's/^DECODE_WEIGHTS="\(.*\)"$/\1/p' "$REPO/lm/device-check.sh")  # its one list
  inputs=(third_party data/brown/text)
  for w in $decode; do inputs+=("results/weights/$w.pt"); done
  for p in "${inputs[@]}"; do
    [[ -e $REPO/$p ]] || die "GPU_DRY_RUN=1 needs $p (scripts/prepare-device-check.sh, make data-brown, make weights)"
  done
  (cd "$REPO" && tar -cf - "${inputs[@]}") | tar -xmf - -C "$ROOT/root/fpa"
fi

in_chroot() {
  chroot "$ROOT" env -i HOME=/root TERM=dumb CODE_VERSION="$CODE_VERSION" \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin bash -c "set -euo pipefail; $1"
}

status=0
in_chroot "cd /root/fpa
    apt-get update -qq || exit 2
    scripts/install-deps.sh || exit 2
    dpkg-query -W -f '\${Package} \${Version}\n' libtorch-dev python3-torch g++ cmake libeigen3-dev \
      libboost-program-options-dev libfmt-dev libgtest-dev libsentencepiece-dev
    cmake -S . -B /root/fpa-build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
    cmake --build /root/fpa-build -j $JOBS
    cd /root/fpa-build && ctest -j $JOBS --output-on-failure ${CTEST_ARGS:-}" || status=$?

# The GPU machines' check as its dry run on the CPU (lm/device-check.sh's settings for one), with
# PyTorch 2.x: the kernels-only and language-model builds against python3-torch's LibTorch, the
# operators from Python, and the published weights (saved by LibTorch 1.13) decoded by 2.x.
# CPU_THREADS=1: the check's CPU runs on one thread. With as many threads as cores, a machine busy
# with anything else makes them spin against it (lm-eval of step (d): 23 s on one thread, 3 min 05 s
# on two beside one training, past the step's 180 s), and the dry run checks paths, not speed.
if [[ ${GPU_DRY_RUN:-0} == 1 ]]; then
  in_chroot "cd /root/fpa && OUT=/root/gpu-dry-run KERNELS_S=1500 TOTAL_S=2400 DEVICE=cpu \
    SMALL_STEPS=12 PAPER_STEPS=3 STEPS='c d b e f' JOBS=$JOBS CPU_THREADS=1 \
    PAPER_ARGS='--hidden 128 --layers 2 --heads 2 --length 256 --mlp-hidden 384' \
    scripts/gpu-check.sh" || status=1
fi
exit $status
