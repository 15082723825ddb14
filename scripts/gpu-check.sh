#!/usr/bin/env bash
# Both GPU device checks in one call of the device tool, so that one machine start and one time
# budget serve them (a session has about 15 minutes of device time, starts included):
#   1. kernels/cuda/device-check.sh (issue 48): the tiled kernels against the float64 reference
#      on the GPU, then the benchmark against SDPA flash and FlexAttention, its cells cut at
#      KERNEL_BENCH_S (150) seconds; the whole step at most KERNELS_S (300) seconds;
#   2. lm/device-check.sh (issue 47): lm-train and lm-eval on the GPU, CPU against GPU, resuming
#      across devices, the paper preset's speed against plain PyTorch, decoding on the device;
#      its hard limit is what is left of TOTAL_S (570), and it stops starting optional runs
#      90 seconds before that. Its build runs in the background from the start (BUILD_ONLY=1),
#      beside the kernels check; LM_BIN=<folder> uses binaries built already instead.
# Each check runs whole on its own; a failure of the first does not skip the second.
#
# Here, before: scripts/prepare-device-check.sh (BOOST_PO_SOURCE=... for Boost's sources), make
# weights, make data-brown. Through the device tool (the command names the commit, since the
# copy has no .git; carry the paths lm/device-check.sh lists for decoding):
#   run(command="CODE_VERSION=<git describe --always --abbrev=12 --dirty> scripts/gpu-check.sh",
#       carry=["third_party", "data/brown/text", "results/weights/passkey/fpa-s0.pt", ...],
#       timeout_s=600)
# Then, here: scripts/publish-gpu-check.sh <the reply's files_at> <gpu, e.g. h100> puts the CSVs
# under results/ with the GPU's name, and `make figures` adds them to REPORT.md.
#
# Output in $OUT (default build-gpu-check/), 3 files (the tool returns at most 8): gpu-check.log
# (everything printed), kernels.tar.gz and lm.tar.gz (each check's $OUT and logs). Exit status:
# 0 when both passed, else 1 (the log says which).
set -uo pipefail
cd "$(dirname "$0")/.."
FINAL=${OUT:-build-gpu-check}
TOTAL_S=${TOTAL_S:-570}
KERNELS_S=${KERNELS_S:-300}
KERNEL_BENCH_S=${KERNEL_BENCH_S:-150}
for v in TOTAL_S KERNELS_S KERNEL_BENCH_S; do
  [[ ${!v} =~ ^[0-9]+$ ]] || { echo "error: $v must be a whole number of seconds, not '${!v}'" >&2; exit 2; }
done
START=$SECONDS
mkdir -p "$FINAL"
FINAL=$(cd "$FINAL" && pwd)
rm -f "$FINAL/gpu-check.log" "$FINAL/kernels.tar.gz" "$FINAL/lm.tar.gz"
WORK=$(mktemp -d /tmp/fpa-gpu-check.XXXXXX)
exec > >(tee "$FINAL/gpu-check.log") 2>&1
trap 'sleep 1' EXIT  # lets tee write the last lines
echo "gpu-check: code version ${CODE_VERSION:-(from git)}, $(date -u +%FT%TZ), budget $TOTAL_S s"

# pack NAME: $WORK/NAME (a check's $OUT) into $FINAL/NAME.tar.gz, as NAME/...
pack() { [[ -d $WORK/$1 ]] && tar -czf "$FINAL/$1.tar.gz" -C "$WORK" "$1"; }

# The language models' build (lm-train, lm-eval and the decoders; minutes) runs beside the
# kernels check, which needs the GPU and a few cores.
LM_BUILD=${LM_BUILD:-build-gpu-lm}
if [[ -z ${LM_BIN:-} ]]; then
  echo "== 0. lm/device-check.sh BUILD_ONLY=1 into $LM_BUILD, in the background"
  OUT="$WORK/lm/build" WORK="$WORK/lm-build-work" BUILD="$LM_BUILD" BUILD_ONLY=1 \
    lm/device-check.sh >/dev/null 2>&1 &
  lm_build_pid=$!
fi

echo "== 1. kernels/cuda/device-check.sh (at most $KERNELS_S s)"
BENCH_ARGS="--max-seconds $KERNEL_BENCH_S ${BENCH_ARGS:-}" OUT="$WORK/kernels" \
  timeout --kill-after=10 "$KERNELS_S" kernels/cuda/device-check.sh
kernels=$?
(( kernels == 124 )) && echo "error: the kernels check ran past $KERNELS_S s and was stopped"
# Its logs as they stand (its own logs.tar.gz is packed after each step; a stopped check's last
# step is only here).
cp -r "${BUILD:-build-gpu}/device-check-logs" "$WORK/kernels/logs" 2>/dev/null
pack kernels
echo "== kernels: $( ((kernels)) && echo "FAILED (exit $kernels)" || echo passed) at $(( SECONDS - START )) s"

lm_bin=${LM_BIN:-}
if [[ -n ${lm_build_pid:-} ]]; then
  wait "$lm_build_pid" && lm_bin=$LM_BUILD/bin
  echo "== 0. language models' build: $([[ -n $lm_bin ]] && echo "done" || echo "FAILED (lm/build/device-check.log in lm.tar.gz)") at $(( SECONDS - START )) s"
fi

left=$(( TOTAL_S - (SECONDS - START) - 10 ))
if (( left < 120 )); then
  echo "error: $left s left of $TOTAL_S: the language-model check is not started"
  lm=1
  pack lm  # the build's log, when it ran
else
  echo "== 2. lm/device-check.sh (at most $left s)"
  OUT="$WORK/lm" HARD_S=$left BUDGET_S=$(( left - 90 )) WORK="$WORK/lm-work" LM_BIN=$lm_bin \
    BUILD="$LM_BUILD" lm/device-check.sh
  lm=$?
  pack lm
  echo "== lm: $( ((lm)) && echo "FAILED (exit $lm)" || echo passed) at $(( SECONDS - START )) s"
fi
echo "gpu-check: kernels $( ((kernels)) && echo FAILED || echo passed), lm $( ((lm)) && echo FAILED || echo passed); $(( SECONDS - START )) s; files in $FINAL"
rm -rf "$WORK"
(( kernels == 0 && lm == 0 ))
