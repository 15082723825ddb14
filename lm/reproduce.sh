#!/usr/bin/env bash
# Language models (SPEC section 5, claim C5): trains and evaluates attention variants on the Brown
# corpus from a preset file, configs/lm/<preset>.conf, and writes results/lm/.
#
#   lm/reproduce.sh <bin-dir>        PROFILE=quick (default), full, lm-small, lm-medium, paper-smoke
#                                    or paper
#
#   quick    : tiny, LM_QUICK_STEPS optimiser steps (default 200), seed 0, every variant
#   full     : tiny at its full budget (LM_FULL_STEPS overrides); seeds LM_SEEDS (default 0 1 2)
#              of FPA, FoX and the Transformer (C5 needs >= 3 per variant), seed 0 of softmax-nope
#              and of FPA's exact backward (ablations). Seed 0's runs took 4.5-8 minutes of training
#              plus about a minute of evaluation (results/lm/*.csv.json wall_s: Transformer
#              268+47 s, FoX 338+67 s, FPA 462+62 s), so seeds 1-2 add about 42 minutes on one core.
#   lm-small : the small preset (about 3.3M parameters), FPA and FoX, seeds LM_SEEDS (default
#              0 1 2, issue 30): opt-in; its measured time is in the runs' logs and sidecars
#              (lm/README.md says where)
#   lm-medium: the medium preset (10.7M parameters), FPA and FoX, seeds LM_SEEDS (default 0 1 2:
#              the trend with size is judged only with 3 seeds a preset): opt-in, hours per run
#   paper-smoke: the paper preset's path end to end on a CPU in about a minute: paper-smoke.conf
#              (paper.conf's structure, a SentencePiece tokenizer of 512 pieces trained on the
#              corpus's training split on first use, a few steps of a tiny model), FPA, FoX and the
#              Transformer, seed 0, then lm-eval (C5's evaluation, LM_EVAL_TOKENS tokens of each
#              document, default 1024) and passkey-eval (C6's passkey evaluation in the model's
#              tokens with the cache policies: configs/passkey/eval-paper-smoke.conf, a few keys at
#              2L and 4L), and lm-compress on the FPA run (perplexity decoded in its tokens with a
#              compressed cache: configs/compress/paper-smoke.conf, 2 test windows, 3 policies).
#              Its numbers mean nothing: they go to runs/, never results/lm/, and no weights are
#              published.
#   paper    : the paper preset (about 110M parameters, SentencePiece vocabulary 50,277, context
#              2048, 5000 steps of 256 sequences), FPA, FoX and the Transformer, seeds LM_SEEDS
#              (default 0 1 2), on every visible GPU (lm-train --nproc <GPUs>: NCCL, bf16 autocast),
#              then lm-eval on the GPU. Needs GPUs and LM_CORPUS: a corpus large enough for that
#              vocabulary (Brown's training split cannot: docs/notes/design-measurements.md). CSVs in
#              results/lm-paper/<GPU name>/ (GPU numbers stay apart from the CPU ones); weights stay
#              in the run directories (about 440 MB each: not published). Then C6's passkey
#              evaluation of every run in its tokens with the cache policies, on the GPU in float32
#              (configs/passkey/eval-paper.conf: eval-c6.conf's lengths, policies and budgets) into
#              results/lm-paper/<GPU name>/passkey/, and lm-compress of every run (test perplexity
#              decoded in its tokens with a compressed cache, configs/compress/paper.conf: lm.conf's
#              policies and kept fractions on 32 windows of 2048 tokens), on the GPU in float32,
#              into results/lm-paper/<GPU name>/compress/. Its time has not been measured (no GPU
#              was available): the device check's results/lm/gpu_throughput.csv gives tokens/s.
# LM_CORPUS: the corpus folder (default data/brown/text, fetched when missing; a folder of the
# user's text files, one document per file, is split as Brown is). LM_OUT and LM_RUNS: where the
# CSVs and the run directories go (defaults below).
# LM_JOBS runs train at a time (default 2 for lm-small and lm-medium, whose runs are long; 1 for
# the others, which make reproduce already runs beside other studies).
# Runs live in runs/lm/<preset>-<profile>-steps<N>/<name> (checkpointed; an interrupted script
# resumes them); a run whose summary row exists for the same settings is skipped. Names: the
# variant for seed 0 ("fpa"), "<variant>-s<seed>" for other seeds, prefixed "small-" for the small
# preset. Outputs per run: train-<name>.csv (log), eval-<name>.csv, positions-<name>.csv,
# summary-<name>.csv (paper-smoke and paper: passkey/<name>.csv and its .summary.csv, and
# compress/<name>.csv for the runs lm-compress evaluates); then
# summary.csv (every run, one row each). The full and lm-small profiles
# also publish each run's weights (scripts/publish_weights.sh: results/weights/lm/<name>.pt and its
# SHA-256), from which `make reproduce PROFILE=eval` re-runs the evaluation.
set -euo pipefail

BIN=${1:?usage: lm/reproduce.sh <bin-dir>}
PROFILE=${PROFILE:-quick}
OUT=results/lm  # a profile may name another
EXECUTION=() EVAL_EXECUTION=()  # the CPU defaults; paper: GPUs and bf16
DECODE_EXECUTION=()  # the KV-cache decoders' (passkey-eval, lm-compress): float32 only
# C6's passkey evaluation of each run (paper-smoke, paper): sub-word prompts, lm/passkey/README.md.
PASSKEY_CONFIG=""
# lm-compress of the runs of COMPRESS_VARIANTS (paper-smoke, paper): perplexity with a compressed
# KV cache in the model's tokens, lm/compress/README.md.
COMPRESS_CONFIG="" COMPRESS_VARIANTS=""
case "$PROFILE" in
  quick) PRESET=tiny; STEPS=${LM_QUICK_STEPS:-200}; SEEDS=0
         VARIANTS=${LM_VARIANTS:-"transformer softmax-nope fox fpa"}; ABLATIONS="softmax-nope" ;;
  full) PRESET=tiny; STEPS=${LM_FULL_STEPS:-0}; SEEDS=${LM_SEEDS:-"0 1 2"}  # 0: the preset's steps
        VARIANTS=${LM_VARIANTS:-"transformer softmax-nope fox fpa"}; ABLATIONS="softmax-nope" ;;
  lm-small) PRESET=small; STEPS=${LM_SMALL_STEPS:-0}; SEEDS=${LM_SEEDS:-"0 1 2"}
            VARIANTS=${LM_VARIANTS:-"fox fpa"}; ABLATIONS="" ;;
  lm-medium) PRESET=medium; STEPS=${LM_MEDIUM_STEPS:-0}; SEEDS=${LM_SEEDS:-"0 1 2"}
             VARIANTS=${LM_VARIANTS:-"fox fpa"}; ABLATIONS="" ;;
  paper-smoke) PRESET=paper-smoke; STEPS=${LM_SMOKE_STEPS:-0}; SEEDS=${LM_SEEDS:-0}
               VARIANTS=${LM_VARIANTS:-"transformer fox fpa"}; ABLATIONS=""
               OUT=runs/lm/paper-smoke/results PASSKEY_CONFIG=configs/passkey/eval-paper-smoke.conf
               COMPRESS_CONFIG=configs/compress/paper-smoke.conf COMPRESS_VARIANTS=fpa ;;
  paper) PRESET=paper; STEPS=${LM_PAPER_STEPS:-0}; SEEDS=${LM_SEEDS:-"0 1 2"}
         VARIANTS=${LM_VARIANTS:-"transformer fox fpa"}; ABLATIONS=""
         GPUS=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
         if (( GPUS == 0 )); then
           echo "error: PROFILE=paper trains 110M-parameter models on GPUs and none is visible (nvidia-smi -L);" \
                "PROFILE=paper-smoke runs the same path on a CPU" >&2
           exit 2
         fi
         if [[ -z ${LM_CORPUS:-} ]]; then
           echo "error: PROFILE=paper needs LM_CORPUS=<folder of text files>: Brown is too small for its" \
                "vocabulary of 50,277 pieces (lm/README.md)" >&2
           exit 2
         fi
         GPU_NAME=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1 | tr -c 'A-Za-z0-9\n' '-')
         OUT=results/lm-paper/$GPU_NAME
         EXECUTION=(--device auto --precision bf16) EVAL_EXECUTION=(--device auto --precision bf16)
         # KV-cache decoding runs in float32 (bf16 decoding is refused), on the GPU.
         DECODE_EXECUTION=(--device auto) PASSKEY_CONFIG=configs/passkey/eval-paper.conf
         COMPRESS_CONFIG=configs/compress/paper.conf COMPRESS_VARIANTS=$VARIANTS
         if (( GPUS > 1 )); then EXECUTION+=(--nproc "$GPUS"); fi ;;
  *) echo "error: PROFILE must be quick, full, lm-small, lm-medium, paper-smoke or paper, got '$PROFILE'" >&2
     exit 2 ;;
esac
OUT=${LM_OUT:-$OUT}
CORPUS=${LM_CORPUS:-data/brown/text}
CONFIG=configs/lm/$PRESET.conf
RUNS=${LM_RUNS:-runs/lm/$PRESET-$PROFILE-steps$STEPS}
PREFIX=$([[ $PRESET == tiny ]] && echo "" || echo "$PRESET-")
# Profiles whose weights are published (results/weights/lm/): a run is complete only with them.
PUBLISH=$([[ $PROFILE == quick || $PROFILE == paper-smoke || $PROFILE == paper ]] && echo 0 || echo 1)

# One run: <name> <variant> <seed> [extra lm-train flags]. Evaluation of the quick profile reads
# the first LM_EVAL_BYTES bytes of each validation and test document, paper-smoke's the first
# LM_EVAL_TOKENS tokens (the others: all of them).
EVAL_CAP=0
[[ "$PROFILE" == quick ]] && EVAL_CAP=${LM_EVAL_BYTES:-1024}
[[ "$PROFILE" == paper-smoke ]] && EVAL_CAP=${LM_EVAL_TOKENS:-1024}
run_one() {
  local name=$1 v=$2 seed=$3; shift 3
  local stamp="$PRESET $PROFILE steps=$STEPS seed=$seed eval=$EVAL_CAP $*"
  [[ $CORPUS != data/brown/text ]] && stamp+=" corpus=$CORPUS"  # the published stamps stay as they were
  [[ -n $PASSKEY_CONFIG ]] && stamp+=" passkey=$PASSKEY_CONFIG"
  local compress=0
  [[ -n $COMPRESS_CONFIG && " $COMPRESS_VARIANTS " == *" $v "* ]] && compress=1
  if (( compress )); then stamp+=" compress=$COMPRESS_CONFIG"; fi
  # A published profile's run is complete only with its weights published (listed in
  # results/weights/SHA256SUMS): one evaluated before weights were published is retrained (its
  # CSVs then change).
  if [[ -s "$OUT/summary-$name.csv" && "$(cat "$OUT/.done-$name" 2>/dev/null)" == "$stamp" ]] &&
     { [[ $PUBLISH == 0 ]] || scripts/weights_published.sh lm "$name"; }; then
    echo "lm: $name done (skipping)"
    return
  fi
  echo "lm: training $name ($PRESET, profile $PROFILE, seed $seed) $(date -u +%H:%M:%S)"
  "$BIN/lm-train" --config "$CONFIG" --variant "$v" --steps "$STEPS" --seed "$seed" --threads 1 \
    --corpus "$CORPUS" --out-dir "$RUNS/$name" --resume --out "$OUT/train-$name.csv" \
    "${EXECUTION[@]}" "$@"
  "$BIN/lm-eval" --checkpoint "$RUNS/$name" --corpus "$CORPUS" --threads 1 \
    "${EVAL_EXECUTION[@]}" \
    --max-tokens-per-doc "$EVAL_CAP" --out "$OUT/eval-$name.csv" \
    --positions "$OUT/positions-$name.csv" --summary "$OUT/summary-$name.csv"
  if [[ -n $PASSKEY_CONFIG ]]; then  # the tokenizer is read from beside --corpus, as lm-eval reads it
    mkdir -p "$OUT/passkey"
    "$BIN/passkey-eval" --config "$PASSKEY_CONFIG" --checkpoint "$RUNS/$name" --corpus "$CORPUS" \
      --threads 1 "${DECODE_EXECUTION[@]}" --out "$OUT/passkey/$name.csv"
  fi
  if (( compress )); then  # its tokenizer from beside --corpus too
    mkdir -p "$OUT/compress"
    "$BIN/lm-compress" --config "$COMPRESS_CONFIG" --checkpoint "$RUNS/$name" --corpus "$CORPUS" \
      --threads 1 "${DECODE_EXECUTION[@]}" --out "$OUT/compress/$name.csv"
  fi
  [[ $PUBLISH == 1 ]] && scripts/publish_weights.sh "$BIN" lm "$RUNS/$name" "$name"
  echo "$stamp" > "$OUT/.done-$name"
}
run_name() {  # <variant> <seed>
  [[ $2 == 0 ]] && echo "$PREFIX$1" || echo "$PREFIX$1-s$2"
}

if [[ $CORPUS == data/brown/text ]]; then lm/fetch_brown.sh "$BIN" data/brown; fi
mkdir -p "$OUT" "$RUNS"
# Seed-major: an interrupted profile leaves every variant with the same seeds.
JOBS=${LM_JOBS:-$([[ $PROFILE == lm-small || $PROFILE == lm-medium ]] && echo 2 || echo 1)}
running=0 failed=0
for seed in $SEEDS; do
  for v in $VARIANTS; do
    [[ $seed != 0 && " $ABLATIONS " == *" $v "* ]] && continue
    if (( running >= JOBS )); then wait -n || failed=1; running=$((running - 1)); fi
    run_one "$(run_name "$v" "$seed")" "$v" "$seed" &
    running=$((running + 1))
  done
done
while (( running > 0 )); do wait -n || failed=1; running=$((running - 1)); done
(( failed )) && { echo "error: an lm run failed (see above)" >&2; exit 1; }
# FPA's backward mode: the default (straight-through) against the exact subgradient (tiny only).
if [[ $PRESET == tiny && "${LM_SKIP_MIN_GRAD:-0}" != 1 ]]; then
  run_one fpa-exact fpa 0 --fpa-backward exact
fi
# summary.csv: one row per run of every profile and preset (lm/combine_summaries.py).
/usr/bin/python3 lm/combine_summaries.py "$OUT"
column -s, -t < "$OUT/summary.csv" || cat "$OUT/summary.csv"
[[ $PROFILE == paper-smoke ]] && echo "lm: paper-smoke done: $OUT (C5's evaluation; C6's passkey evaluation in $OUT/passkey; lm-compress in $OUT/compress)"
exit 0
