#!/usr/bin/env bash
# GPU device check of the language models (issue 47, item 9), in one call of at most 10 minutes
# on a machine with one NVIDIA GPU, PyTorch (with CUDA), nvcc, CMake and ninja, and none of the
# suite's Debian packages or a network:
#   scripts/prepare-device-check.sh   (here, once: fills the ignored third_party/ from the suite's
#                                      Debian packages; BOOST_PO_SOURCE=<boostorg/program_options
#                                      checkout> adds program_options' sources)
#   lm/device-check.sh                (there, from the repository root, with third_party/ carried;
#                                      data/brown/text may be carried too, else a corpus is generated)
# Through the device tool: run(command="lm/device-check.sh", carry=["third_party"] (and
# "data/brown/text" for Brown), timeout_s=600). The tool sends the tracked tree too, limited to
# 64 MiB with the carried folders. The published weights live in history, out of the tree
# (results/weights/README.md), and the test tracked_tree_under_64mib keeps the tracked tree under
# 64 MiB; third_party/ is 16 MB, Brown 7 MB.
#
# Steps (each logged to its own file; every log is packed into $OUT/logs.tar.gz after each step,
# so a killed call still returns what was done):
#   build   cmake -DFPA_DEVICE_LM=ON (cmake/DeviceLm.cmake) against PyTorch's LibTorch
#           (torch.utils.cmake_prefix_path, its C++ ABI; C++20 when its headers refuse C++17), this
#           GPU's architecture only, the NCCL path when PyTorch's nccl.h is found (retried without
#           the NCCL and Gloo paths when that does not compile); targets lm-train and lm-eval.
#           LM_BIN=<folder> uses binaries built already instead.
#   corpus  data/brown/text when it is there (CORPUS=<dir> for another), else a generated corpus
#           of 60 documents (CORPUS=generate forces it; lm/device_check_report.py corpus).
#   (a)     the small preset, SMALL_STEPS (300) steps per variant (fpa, fox, transformer) on
#           $DEVICE in fp32 and bf16: tokens/s over the steps after the first SKIP_STEPS (10).
#   (c)     CPU against GPU from one seed: the small preset in fp32, AGREE_STEPS (4) steps per
#           variant on each device; the train loss of every step side by side, the largest
#           difference printed; then FPA's GPU run once more (deterministic mode: the same losses).
#   (d)     resuming across devices: the GPU run of (c) continued 2 steps on the CPU and the CPU
#           run 2 steps on the GPU, each beside the same run continued on its own device; then
#           lm-eval of the GPU-trained FPA checkpoint on the CPU and on the GPU (first
#           EVAL_TOKENS bytes of each validation/test document), losses compared.
#   (b)     the paper preset (configs/lm/paper.conf: width 768, 12 layers, 12 heads, context 2048)
#           in bf16 for PAPER_STEPS (10) steps per variant, batch 8 without accumulation (issue 47,
#           item 10's setting), with the bytes tokenizer and --vocab-size 256: the SentencePiece
#           module is not built there (no libsentencepiece), and lm-train accepts 256 with bytes
#           only. About 71M parameters instead of 110M (the 50,277 x 768 embedding is 38.6M of
#           them), so its tokens/s overstates the paper preset's by the vocabulary's share.
#           Then the same model in plain PyTorch (lm/python/train_speed.py: SDPA for the
#           Transformer, FlexAttention for FoX and FPA; bf16 autocast, AdamW) at the same
#           settings, into plain_pytorch_throughput.csv, and lm-train's ratio to it per variant
#           (issue 47, item 10: target >= 0.70).
#   (e)     2-rank data parallelism (NCCL) on 2 GPUs: skipped with a note on a machine with one.
#   (f)     KV-cache decoding on the device (issue 47, item 3): builds passkey-eval and
#           lm-compress and runs scripts/decode-device-check.sh (the published C6 and small C5
#           models decoded with --device cpu and --device $DEVICE, every cell compared; under
#           a minute); skipped unless results/weights/{passkey/fpa-s0,
#           passkey/fox-b5-s0,passkey/transformer-s0,lm/small-fpa,lm/small-fox}.pt and
#           data/brown/text were carried (make weights; make data-brown: 39 MB together, which
#           with third_party/ and the tracked tree stays under the tool's 64 MiB).
# STEPS (default "a c d b e f") picks steps and their order; (d) needs (c). A second call on the
# warm machine reuses the build: STEPS=f for decoding alone. BUILD_ONLY=1 builds and stops.
# Output, in $OUT (the device tool's folder; default build-gpu-lm/device-check), 8 files (the
# tool returns at most 8; columns and sidecar: docs/results-schema.md):
#   gpu_throughput.csv       preset, variant, precision, device, model and batch, steps, timed
#                            steps, tokens_per_s, step_ms, first/last train loss, val loss, status
#   gpu_throughput.csv.json  sidecar: GPU (nvidia-smi), driver, CUDA, PyTorch, nvcc, CMake, code
#                            version, the settings of this check
#   cpu_gpu_agreement.csv (+ .json, the same sidecar)  per step: comparison, step, loss_a,
#                            loss_b, abs_diff, rel_diff, run_a, run_b
#   plain_pytorch_throughput.csv (+ .json)  the plain-PyTorch baseline of (b)
#   device-check.log         everything printed; logs.tar.gz: each step's log (build included)
# Dry run on a machine without a GPU (the whole script, small sizes): DEVICE=cpu SMALL_STEPS=12
#   PAPER_STEPS=3 PAPER_ARGS="--hidden 128 --layers 2 --heads 2 --length 256 --mlp-hidden 384"
#   lm/device-check.sh    (LM_BIN=build/bin skips the build; JOBS=1 for a shared machine;
#   (a)'s bf16 runs are slow here, LibTorch's bf16 on the CPU being over ten times slower than
#   fp32: STEPS="c d b e f" leaves (a) out).
# Time on an H100/H200: about 8 minutes (an estimate before the first run: build 2-3 min on 16
# cores, (a) about 1 min, (c)+(d) about 1.5 min, (b) up to 3 min); BUDGET_S (480) stops starting
# optional runs ((b)'s later variants, (e)) once that many seconds have passed since the start,
# and no step runs past HARD_S (570) seconds (each step's timeout is cut to what is left).
# Exit status: 0 when every step passed, 1 when one failed (the message names its log), 2 when
# the check could not start (no torch, no third_party/).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
DEVICE=${DEVICE:-cuda}
BUILD=${BUILD:-build-gpu-lm}
OUT_DIR=${OUT:-$BUILD/device-check}
WORK=${WORK:-/tmp/fpa-lm-device-check}
SMALL_STEPS=${SMALL_STEPS:-300}
SKIP_STEPS=${SKIP_STEPS:-10}
AGREE_STEPS=${AGREE_STEPS:-4}
PAPER_STEPS=${PAPER_STEPS:-10}
PAPER_ARGS=${PAPER_ARGS:-}
EVAL_TOKENS=${EVAL_TOKENS:-2048}
BUDGET_S=${BUDGET_S:-480}
HARD_S=${HARD_S:-570}
VARIANTS=${VARIANTS:-fpa fox transformer}
STEPS=${STEPS:-a c d b e f}
CORPUS=${CORPUS:-auto}
JOBS=${JOBS:-$(nproc)}
CPU_THREADS=${CPU_THREADS:-$(nproc)}
START=$SECONDS

mkdir -p "$OUT_DIR"
OUT_DIR=$(cd "$OUT_DIR" && pwd)
rm -rf "$WORK"
mkdir -p "$WORK/logs" "$WORK/runs"
exec > >(tee -a "$OUT_DIR/device-check.log") 2>&1
status=0
pack_logs() { tar -czf "$OUT_DIR/logs.tar.gz" -C "$WORK" logs 2>/dev/null || true; }
fail() { echo "error: $*"; status=1; pack_logs; }
die() { echo "error: $1"; pack_logs; echo "lm device-check: FAILED ($(( SECONDS - START )) s)"; exit "${2:-1}"; }
elapsed() { echo $(( SECONDS - START )); }
over_budget() { (( SECONDS - START > BUDGET_S )); }
# run_step NAME TIMEOUT_S COMMAND...: the command's output to logs/NAME.log; non-zero on failure.
# Every step's limit is cut to what is left of HARD_S, so the script ends (logs packed) before
# the device tool's 600 s.
run_step() {
  local name=$1 limit=$2; shift 2
  local t0=$SECONDS rc=0 left=$(( HARD_S - (SECONDS - START) ))
  if (( left < 15 )); then
    echo "  [$name] not started: HARD_S=$HARD_S s reached" >"$WORK/logs/$name.log"
    echo "  [$name] not started: HARD_S=$HARD_S s reached"
    return 125
  fi
  (( limit > left - 5 )) && limit=$(( left - 5 ))
  timeout --kill-after=10 "$limit" "$@" >"$WORK/logs/$name.log" 2>&1 || rc=$?
  echo "  [$name] rc=$rc $(( SECONDS - t0 )) s"
  pack_logs
  if (( rc != 0 )); then
    tail -n 15 "$WORK/logs/$name.log" | sed 's/^/    | /'
    (( rc == 124 || rc == 137 )) && echo "    (timed out after $limit s)"
  fi
  return "$rc"
}
report() { python3 "$ROOT/lm/device_check_report.py" "$@"; }
# Any exit, planned or not (set -e): the logs packed, and a line saying so when it was unplanned.
on_exit() {
  local rc=$?
  pack_logs
  (( rc != 0 && rc != 1 && rc != 2 )) && echo "lm device-check: stopped unexpectedly (exit $rc); see device-check.log and logs.tar.gz"
  sleep 1  # let tee write the last lines to device-check.log
}
trap on_exit EXIT

echo "== lm device check: DEVICE=$DEVICE, $(date -u +%FT%TZ), work folder $WORK, output $OUT_DIR"
command -v python3 >/dev/null || die "python3 is missing" 2
[[ $DEVICE == cpu || $DEVICE == cuda* ]] || die "DEVICE must be cuda, cuda:N or cpu, not '$DEVICE'" 2
for s in $STEPS; do [[ $s =~ ^[a-f]$ ]] || die "STEPS: unknown step '$s' (the steps are a b c d e f)" 2; done

# --- the machine ----------------------------------------------------------------------------
torch_version=$(python3 -c 'import torch;print(torch.__version__)' 2>/dev/null || echo none)
torch_cuda=$(python3 -c 'import torch;print(torch.version.cuda)' 2>/dev/null || echo none)
ngpu=$(python3 -c 'import torch;print(torch.cuda.device_count() if torch.cuda.is_available() else 0)' 2>/dev/null || echo 0)
gpu=none; driver=none; cap=""
if command -v nvidia-smi >/dev/null; then
  gpu=$(nvidia-smi --query-gpu=name,memory.total --format=csv,noheader 2>/dev/null | head -1 || echo unknown)
  driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -1 || echo unknown)
  cap=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d '. ' || true)
fi
nvcc_version=$(nvcc --version 2>/dev/null | sed -n 's/.*release \([0-9.]*\).*/\1/p' || true)
echo "torch $torch_version (CUDA $torch_cuda), GPUs visible to torch: $ngpu, GPU: $gpu, driver $driver, nvcc ${nvcc_version:-none}"
if [[ $DEVICE == cuda* ]] && (( ngpu == 0 )); then
  die "DEVICE=$DEVICE but torch sees no GPU (torch $torch_version); DEVICE=cpu is the dry run" 2
fi
code_version=${CODE_VERSION:-$(git describe --always --abbrev=12 --dirty 2>/dev/null || echo unknown)}

# --- build ----------------------------------------------------------------------------------
# (f)'s decoders, in the same build: with BUILD_ONLY=1 up front, else when (f) runs.
build_decoders() { run_step build-decode 300 cmake --build "$BUILD" -j "$JOBS" --target passkey-eval lm-compress; }
if [[ -n ${LM_BIN:-} ]]; then
  BIN=$(cd "$LM_BIN" && pwd)
  echo "== build: skipped, LM_BIN=$BIN"
else
  echo "== build ($BUILD, FPA_DEVICE_LM=ON, -j$JOBS) at $(elapsed) s"
  [[ -f third_party/boost-include/boost/program_options.hpp ]] ||
    die "third_party/ lacks the vendored packages: run scripts/prepare-device-check.sh on a machine with the suite's packages and carry third_party/" 2
  cfg=(-DFPA_DEVICE_LM=ON -DCMAKE_BUILD_TYPE=Release)
  if [[ $torch_version != none ]]; then
    cfg+=(-DCMAKE_PREFIX_PATH="$(python3 -c 'import torch;print(torch.utils.cmake_prefix_path)')")
    abi=$(python3 -c 'import torch;print(int(torch._C._GLIBCXX_USE_CXX11_ABI))')
  else
    abi=1  # no PyTorch (the dry run here): the system's LibTorch, built with the new ABI
  fi
  # C++17 or 20: cmake/TorchCxxStandard.cmake probes PyTorch's headers; CXX_STANDARD overrides.
  [[ -n ${CXX_STANDARD:-} ]] && cfg+=(-DFPA_CXX_STANDARD="$CXX_STANDARD")
  cfg+=(-DCMAKE_CXX_FLAGS="-D_GLIBCXX_USE_CXX11_ABI=$abi")
  if [[ -n $cap ]]; then cfg+=(-DFPA_CUDA_ARCHS="$cap" -DCMAKE_CUDA_ARCHITECTURES="$cap"); fi
  # PyTorch's nccl.h (the nvidia-nccl wheel) for the NCCL path of lm/distributed.cpp.
  nccl_inc=$(python3 -c 'import nvidia.nccl as m, os; print(os.path.join(list(m.__path__)[0], "include"))' 2>/dev/null || true)
  [[ -n $nccl_inc && -f $nccl_inc/nccl.h ]] && cfg+=(-DNCCL_INCLUDE_DIR="$nccl_inc")
  # Unity batches, as every build here is tested (UNITY=OFF compiles each source alone: more
  # parallel on 16 cores, but a source that relies on a batch-mate's includes would fail there).
  [[ -n ${UNITY:-} ]] && cfg+=(-DCMAKE_UNITY_BUILD="$UNITY")
  command -v ninja >/dev/null && [[ ! -f $BUILD/CMakeCache.txt || -f $BUILD/build.ninja ]] && cfg+=(-G Ninja)
  [[ -n ${EXTRA_CMAKE_ARGS:-} ]] && read -r -a extra <<<"$EXTRA_CMAKE_ARGS" && cfg+=("${extra[@]}")
  run_step configure 300 cmake -S . -B "$BUILD" "${cfg[@]}" || die "configure failed (logs/configure.log)"
  grep -E "^-- FPA:" "$WORK/logs/configure.log" | sed 's/^/  /'
  build_rc=0
  run_step build 420 cmake --build "$BUILD" -j "$JOBS" --target lm-train lm-eval || build_rc=$?
  if (( build_rc == 124 || build_rc == 137 || build_rc == 125 )); then
    die "build did not finish in time (logs/build.log): a timeout, not a compile error"
  elif (( build_rc != 0 )); then
    # lm/distributed.cpp is the one source that includes c10d's NCCL and Gloo process groups; its
    # NCCL path has never been compiled against a CUDA PyTorch: without them lm-train still
    # trains one process.
    if grep -qE "with (NCCL|Gloo)" "$WORK/logs/configure.log"; then
      echo "  the build failed with c10d's NCCL or Gloo path on; retrying without them (2-rank runs then refused)"
      grep -E "error" "$WORK/logs/build.log" | head -n 5 | sed 's/^/    | /'
      fail "build with the NCCL/Gloo path failed (logs/build.log); rebuilt without it"
      run_step configure-no-c10d 120 cmake -S . -B "$BUILD" -DFPA_LM_NCCL=OFF -DGLOO_INCLUDE_DIR=OFF ||
        die "configure failed (logs/configure-no-c10d.log)"
      run_step build-no-c10d 420 cmake --build "$BUILD" -j "$JOBS" --target lm-train lm-eval ||
        die "build failed (logs/build-no-c10d.log)"
    else
      die "build failed (logs/build.log)"
    fi
  fi
  BIN=$(cd "$BUILD" && pwd)/bin
fi
[[ -x $BIN/lm-train && -x $BIN/lm-eval ]] || die "no lm-train and lm-eval in $BIN"
echo "  built or found by $(elapsed) s: $BIN"
# BUILD_ONLY=1 (scripts/gpu-check.sh runs it beside the kernels check): the build alone, with
# (f)'s decoders when (f) is among STEPS; the steps then run with LM_BIN=$BUILD/bin.
if [[ ${BUILD_ONLY:-0} == 1 ]]; then
  if [[ -z ${LM_BIN:-} && " $STEPS " == *" f "* ]]; then
    build_decoders || die "building passkey-eval and lm-compress failed (logs/build-decode.log)"
  fi
  pack_logs
  echo "lm device-check: built in $(elapsed) s: $BIN"
  exit 0
fi

# --- corpus ---------------------------------------------------------------------------------
if [[ $CORPUS == auto && -n $(find data/brown/text/ -maxdepth 1 -name "*.txt" -print -quit 2>/dev/null) ]]; then
  CORPUS_DIR=$ROOT/data/brown/text; corpus_kind=brown
elif [[ $CORPUS == auto || $CORPUS == generate ]]; then
  CORPUS_DIR=$WORK/corpus
  report corpus "$CORPUS_DIR" 60 40000 || die "could not generate a corpus in $CORPUS_DIR"
  corpus_kind="generated (60 documents of 40 kB, lm/device_check_report.py)"
else
  CORPUS_DIR=$(cd "$CORPUS" && pwd); corpus_kind="$CORPUS_DIR"
fi
echo "== corpus: $corpus_kind ($(ls "$CORPUS_DIR" | wc -l) documents, $(du -sh "$CORPUS_DIR" | cut -f1))"

TP=$OUT_DIR/gpu_throughput.csv
AG=$OUT_DIR/cpu_gpu_agreement.csv
rm -f "$TP" "$AG"
echo "preset,variant,precision,device,hidden,layers,heads,length,vocab,batch,accum,steps,timed_steps,tokens_per_s,step_ms,first_train_loss,last_train_loss,val_loss,elapsed_s,status" >"$TP"
# The sidecar of gpu_throughput.csv and cpu_gpu_agreement.csv (docs/results-schema.md's fields:
# env.* under `environment`, config.* under `config`), written now and again with wall_s at the end.
sidecar=(program=lm/device-check.sh "command_line=STEPS='$STEPS' lm/device-check.sh"
  "code_version=$code_version" "started_utc=$(date -u +%FT%TZ)"
  "env.device=$DEVICE" "env.gpu=$gpu" "env.gpu_count=$ngpu" "env.driver=$driver"
  "env.compute_capability=$cap" "env.torch=$torch_version" "env.cuda=$torch_cuda"
  "env.nvcc=${nvcc_version:-none}" "env.cmake=$(cmake --version | head -1)"
  "env.cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | xargs)"
  "config.preset=configs/lm/small.conf configs/lm/paper.conf" "config.steps=$STEPS"
  "config.cpu_threads=$CPU_THREADS" "config.corpus=$corpus_kind" "config.small_steps=$SMALL_STEPS"
  "config.skip_steps=$SKIP_STEPS" "config.agree_steps=$AGREE_STEPS" "config.paper_steps=$PAPER_STEPS"
  "config.paper_args=--tokenizer bytes --vocab-size 256 --batch 8 --accum 1 $PAPER_ARGS"
  "config.dry_run=$([[ $DEVICE == cpu ]] && echo 1 || echo 0)")
report sidecar "$TP.json" "${sidecar[@]}"

# train NAME PRESET VARIANT PRECISION DEVICE STEPS LIMIT_S [lm-train options...]: one run in
# runs/NAME (log.csv), one line of gpu_throughput.csv when RECORD=1.
threads_for() { [[ $1 == cpu ]] && echo "$CPU_THREADS" || echo 1; }
train() {
  local name=$1 preset=$2 variant=$3 prec=$4 dev=$5 steps=$6 limit=$7; shift 7
  local dir=$WORK/runs/$name rc=0
  run_step "$name" "$limit" "$BIN/lm-train" --preset "$preset" --variant "$variant" --precision "$prec" \
    --device "$dev" --steps "$steps" --val-every "$steps" --checkpoint-every "$steps" --seed 0 \
    --threads "$(threads_for "$dev")" --corpus "$CORPUS_DIR" --out-dir "$dir" "$@" || rc=$?
  if [[ ${RECORD:-0} == 1 ]]; then
    local model="" m="" st=ok
    model=$(report model "$dir" "$ROOT/configs/lm/$preset.conf" 2>/dev/null || echo ",,,,,,")
    if (( rc == 0 )) && m=$(report throughput "$dir" "$SKIP_STEPS" 2>>"$WORK/logs/$name.log"); then
      python3 -c 'import json,sys; m=json.loads(sys.argv[1]); print(",".join(str(m[k]) for k in ("steps","timed_steps","tokens_per_s","step_ms","first_loss","last_loss","val_loss","elapsed_s")))' "$m" |
        sed "s|^|$preset,$variant,$prec,$dev,$model,|; s|\$|,$st|" >>"$TP"
      echo "    $(tail -n 1 "$TP" | cut -d, -f1-4,12-15)"
    else
      st=$( (( rc == 124 || rc == 137 )) && echo timeout || echo "failed rc=$rc")
      echo "$preset,$variant,$prec,$dev,$model,$steps,,,,,,,,$st" >>"$TP"
    fi
  fi
  return "$rc"
}

# --- (a) small preset: tokens/s on the device, fp32 and bf16 ----------------------------------
step_a() {
  echo "== (a) small preset, $SMALL_STEPS steps per variant on $DEVICE, fp32 and bf16 ($(elapsed) s)"
  for v in $VARIANTS; do
    for p in fp32 bf16; do
      RECORD=1 train "small-$v-$p" small "$v" "$p" "$DEVICE" "$SMALL_STEPS" 240 --val-windows 8 ||
        fail "(a) small $v $p on $DEVICE (logs/small-$v-$p.log)"
    done
  done
}

# --- (c) CPU against GPU from one seed, fp32 --------------------------------------------------
step_c() {
  echo "== (c) CPU and $DEVICE from seed 0: small preset, fp32, $AGREE_STEPS steps per variant ($(elapsed) s)"
  [[ $DEVICE == cpu ]] && echo "  (dry run: both sides on the CPU, so the differences must be 0)"
  for v in $VARIANTS; do
    ok=1
    train "agree-$v-cpu" small "$v" fp32 cpu "$AGREE_STEPS" 180 --val-windows 4 || { ok=0; fail "(c) $v on the CPU"; }
    train "agree-$v-dev" small "$v" fp32 "$DEVICE" "$AGREE_STEPS" 120 --val-windows 4 || { ok=0; fail "(c) $v on $DEVICE"; }
    if (( ok )); then
      report agree "$AG" "first-steps $v cpu vs $DEVICE" "$WORK/runs/agree-$v-cpu" "$WORK/runs/agree-$v-dev" |
        sed 's/^/  /' || fail "(c) comparing $v"
    fi
  done
  # The same seed on the same GPU again: deterministic mode (experiments/execution.cpp) must give
  # the same losses bit for bit (abs_diff 0 in the CSV; a difference is reported, not fatal).
  v=fpa
  if train "repeat-$v-dev" small "$v" fp32 "$DEVICE" "$AGREE_STEPS" 120 --val-windows 4 &&
     [[ -d $WORK/runs/agree-$v-dev ]]; then
    report agree "$AG" "repeat $v on $DEVICE" "$WORK/runs/agree-$v-dev" "$WORK/runs/repeat-$v-dev" |
      sed 's/^/  /' || fail "(c) comparing the repeat"
  else
    fail "(c) the repeated $v run on $DEVICE"
  fi
}

# --- (d) resuming on the other device; lm-eval of a GPU checkpoint on the CPU -----------------
step_d() {
  echo "== (d) resume across devices, 2 more steps; lm-eval on both devices ($(elapsed) s)"
  v=fpa
  more=$(( AGREE_STEPS + 2 ))
  if [[ -f $WORK/runs/agree-$v-cpu/checkpoint.pt && -f $WORK/runs/agree-$v-dev/checkpoint.pt ]]; then
    for src in cpu dev; do
      for dst in cpu dev; do
        cp -r "$WORK/runs/agree-$v-$src" "$WORK/runs/resume-$src-on-$dst"
        d=$([[ $dst == cpu ]] && echo cpu || echo "$DEVICE")
        train "resume-$src-on-$dst" small "$v" fp32 "$d" "$more" 180 --val-windows 4 --resume ||
          fail "(d) resuming the $src run of $v on $d (logs/resume-$src-on-$dst.log)"
      done
      if [[ -f $WORK/runs/resume-$src-on-cpu/log.csv && -f $WORK/runs/resume-$src-on-dev/log.csv ]]; then
        report agree "$AG" "resume of the $([[ $src == cpu ]] && echo cpu || echo "$DEVICE")-trained $v run: on cpu vs on $DEVICE" \
          "$WORK/runs/resume-$src-on-cpu" "$WORK/runs/resume-$src-on-dev" | sed 's/^/  /' || fail "(d) comparing resumed $src runs"
      fi
    done
    # The GPU-trained checkpoint evaluated on the CPU and on the GPU.
    ev_ok=1
    for tag in cpu dev; do
      d=$([[ $tag == cpu ]] && echo cpu || echo "$DEVICE")
      run_step "eval-on-$tag" 180 "$BIN/lm-eval" --checkpoint "$WORK/runs/agree-$v-dev" --corpus "$CORPUS_DIR" \
        --device "$d" --threads "$(threads_for "$d")" --max-tokens-per-doc "$EVAL_TOKENS" \
        --out "$WORK/runs/eval-on-$tag.csv" || { ev_ok=0; fail "(d) lm-eval on $d (logs/eval-on-$tag.log)"; }
    done
    if (( ev_ok )); then
      python3 - "$WORK/runs/eval-on-cpu.csv" "$WORK/runs/eval-on-dev.csv" "$AG" "$DEVICE" <<'EOF' || fail "(d) comparing lm-eval results"
import csv, sys
a, b = (list(csv.DictReader(open(p))) for p in sys.argv[1:3])
keys = [k for k in a[0] if any(s in k for s in ("nll", "loss", "bpb", "ppl"))]
worst = 0.0
with open(sys.argv[3], "a", newline="") as f:
    w = csv.writer(f)
    for ra, rb in zip(a, b):
        for k in keys:
            try:
                x, y = float(ra[k]), float(rb[k])
            except (ValueError, KeyError):
                continue
            d = abs(x - y)
            worst = max(worst, d / max(abs(x), 1e-12))
            w.writerow([f"lm-eval of the {sys.argv[4]}-trained fpa checkpoint on cpu vs {sys.argv[4]}: "
                        f"{ra.get('split', '')} {k}", "", ra[k], rb[k],
                        f"{d:.3g}", f"{d / max(abs(x), 1e-12):.3g}", "eval-on-cpu", "eval-on-dev"])
print(f"  lm-eval on cpu vs {sys.argv[4]}: {', '.join(keys)}; largest relative difference {worst:.3g}")
EOF
    fi
  else
    fail "(d) skipped: (c) left no fpa checkpoints"
  fi
  if [[ -f $AG ]]; then
    python3 - "$AG" <<'EOF'
import csv, sys
rows = [r for r in csv.DictReader(open(sys.argv[1])) if r["comparison"].startswith("first-steps")]
if rows:
    w = max(rows, key=lambda r: float(r["abs_diff"]))
    print(f"  largest first-steps train-loss difference, CPU vs device: {w['abs_diff']} "
          f"(relative {w['rel_diff']}; {w['comparison']}, step {w['step']})")
EOF
  fi
}

# --- (b) the paper preset in bf16 -------------------------------------------------------------
step_b() {
  echo "== (b) paper preset (bytes, vocab 256, batch 8, accum 1), bf16, $PAPER_STEPS steps per variant ($(elapsed) s)"
  paper_skip=$(( PAPER_STEPS > 4 ? 2 : 0 ))
  for v in $VARIANTS; do
    if over_budget; then
      echo "  skipped paper $v: past BUDGET_S=$BUDGET_S s"
      echo "paper,$v,bf16,$DEVICE,,,,,,,,,,,,,,,,skipped (budget)" >>"$TP"
      continue
    fi
    # shellcheck disable=SC2086  # PAPER_ARGS is split into options on purpose
    SKIP_STEPS=$paper_skip RECORD=1 train "paper-$v-bf16" paper "$v" bf16 "$DEVICE" "$PAPER_STEPS" 150 \
      --tokenizer bytes --vocab-size 256 --batch 8 --accum 1 --warmup 2 --val-windows 2 $PAPER_ARGS ||
      fail "(b) paper $v on $DEVICE (logs/paper-$v-bf16.log)"
    rm -f "$WORK/runs/paper-$v-bf16/checkpoint.pt"  # 0.9 GB each
  done
  # The same model in plain PyTorch at the same settings (issue 47, item 10's baseline): SDPA for
  # the Transformer, FlexAttention for FoX and FPA; then lm-train's tokens/s over it per variant.
  if ! over_budget; then
    # shellcheck disable=SC2086  # PAPER_ARGS is split into options on purpose
    if run_step plain-pytorch 150 python3 lm/python/train_speed.py --preset configs/lm/paper.conf \
         --vocab-size 256 --batch 8 --steps "$PAPER_STEPS" --warmup "$paper_skip" --precision bf16 \
         --device "$DEVICE" --runs transformer:sdpa,fox:flex,fpa:flex --code-version "$code_version" \
         --out "$OUT_DIR/plain_pytorch_throughput.csv" $PAPER_ARGS; then
      report speed "$TP" "$OUT_DIR/plain_pytorch_throughput.csv" | sed 's/^/  /'
    elif [[ $DEVICE == cuda* ]]; then
      fail "(b) the plain-PyTorch baseline (logs/plain-pytorch.log)"
    else
      echo "  plain-PyTorch baseline: no run succeeded on this PyTorch (dry run; logs/plain-pytorch.log)"
    fi
  else
    echo "  skipped the plain-PyTorch baseline: past BUDGET_S=$BUDGET_S s"
  fi
}

# --- (e) 2-rank data parallelism ---------------------------------------------------------------
step_e() {
  echo "== (e) 2-rank data parallelism ($(elapsed) s)"
  if [[ $DEVICE == cuda* ]] && (( ngpu >= 2 )) && ! over_budget; then
    train "ddp2-fpa" small fpa fp32 cuda 20 180 --nproc 2 --val-windows 4 || fail "(e) 2 ranks (logs/ddp2-fpa.log)"
    train "ddp1-fpa" small fpa fp32 cuda 20 120 --val-windows 4 || fail "(e) 1 rank"
    report agree "$AG" "2 ranks vs 1 (cuda, fpa)" "$WORK/runs/ddp1-fpa" "$WORK/runs/ddp2-fpa" | sed 's/^/  /' || fail "(e) comparing"
  else
    echo "  skipped: $ngpu GPU(s) visible$([[ $DEVICE == cpu ]] && echo ', dry run') (needs 2; the Gloo path is tested in CI)"
  fi
}

# --- (f) KV-cache decoding on the device (issue 47, item 3) -----------------------------------
# scripts/decode-device-check.sh: passkey-eval and lm-compress from the published weights with
# --device cpu and --device $DEVICE, cell by cell; its CSVs and comparison go into logs.tar.gz
# (decode/), the comparison is printed. Needs the five weights files it names and data/brown/text,
# carried (make weights; make data-brown); skipped without them.
DECODE_WEIGHTS="passkey/fpa-s0 passkey/fox-b5-s0 passkey/transformer-s0 lm/small-fpa lm/small-fox"
step_f() {
  echo "== (f) KV-cache decoding on $DEVICE against the CPU: scripts/decode-device-check.sh ($(elapsed) s)"
  local w missing=""
  for w in $DECODE_WEIGHTS; do [[ -f results/weights/$w.pt ]] || missing+=" $w.pt"; done
  if [[ -n $missing ]]; then echo "  skipped: not carried: results/weights/{$missing }"; return; fi
  if [[ -z $(find data/brown/text/ -maxdepth 1 -name "*.txt" -print -quit 2>/dev/null) ]]; then
    echo "  skipped: data/brown/text was not carried"; return
  fi
  if over_budget; then echo "  skipped: past BUDGET_S=$BUDGET_S s"; return; fi
  if [[ -z ${LM_BIN:-} ]]; then
    build_decoders || { fail "(f) building passkey-eval and lm-compress (logs/build-decode.log)"; return; }
  fi
  [[ -x $BIN/passkey-eval && -x $BIN/lm-compress ]] || { fail "(f) no passkey-eval and lm-compress in $BIN"; return; }
  run_step decode 300 env OUT="$WORK/logs/decode" DEVICE="$DEVICE" CORPUS=data/brown/text \
    scripts/decode-device-check.sh "$BIN" || fail "(f) decoding on $DEVICE against the CPU (logs/decode.log)"
  [[ -f $WORK/logs/decode/comparison.txt ]] && sed 's/^/  /' "$WORK/logs/decode/comparison.txt"
  [[ -f $WORK/logs/decode/timing.txt ]] && sed 's/^/  time: /' "$WORK/logs/decode/timing.txt"
  pack_logs
}

for s in $STEPS; do "step_$s"; done

report sidecar "$TP.json" "${sidecar[@]}" "wall_s=$(elapsed)"
[[ -f $AG ]] && cp "$TP.json" "$AG.json"  # the same run's agreement table
pack_logs
echo "== gpu_throughput.csv"
column -s, -t <"$TP" 2>/dev/null | cut -c1-220 || cat "$TP"
echo "lm device-check: $( ((status)) && echo FAILED || echo passed) in $(elapsed) s; results in $OUT_DIR"
exit "$status"
