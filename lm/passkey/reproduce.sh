#!/usr/bin/env bash
# Passkey retrieval with a compressed KV cache (SPEC section 6, claim C6).
#
#   lm/passkey/reproduce.sh <bin-dir>      PROFILE=quick (default) or full
#
# Trains passkey models on sequences of length L = 512 only (passkey prompts mixed with Brown
# corpus windows when data/brown/text exists, else passkey prompts only; see README.md), then
# evaluates each at L, 2L, 4L, 8L under the cache policies and writes results/passkey/:
#   train-<run>.csv          training log of each run (runs/passkey/<profile>/<run>, resumable)
#   <run>.csv                per (length, depth, policy, budget) cell
#   <run>.summary.csv        per (length, policy, budget) cell, averaged over depths
#   summary.csv, c6_table.md merged by lm/passkey/summarize.py
#
#   quick : 1 seed per variant (fpa, fox, fox-b5, transformer), PASSKEY_QUICK_STEPS steps
#           (default 900, the prototype's budget), 20 keys per cell; about 15 minutes of one
#           free core per model (4x that on a machine shared by 5 agents) plus the evaluation
#   full  : 3 seeds per variant, 900 steps (the prototype's budget), 20 keys per cell
# A run whose <run>.summary.csv exists is skipped; an interrupted training run resumes.
set -euo pipefail

BIN=${1:?usage: lm/passkey/reproduce.sh <bin-dir>}
PROFILE=${PROFILE:-quick}
OUT=results/passkey
RUNS=runs/passkey/$PROFILE
L=512
case "$PROFILE" in
  quick) STEPS=${PASSKEY_QUICK_STEPS:-900}; SEEDS=${PASSKEY_SEEDS:-"0"}; KEYS=20 ;;
  full) STEPS=900; SEEDS=${PASSKEY_SEEDS:-"0 1 2"}; KEYS=20 ;;
  *) echo "error: PROFILE must be quick or full, got '$PROFILE'" >&2; exit 2 ;;
esac
VARIANTS=${PASSKEY_VARIANTS:-"fpa fox fox-b5 transformer"}

# The mixture: 25% corpus windows when the Brown corpus is prepared (lm/reproduce.sh does that).
MIX=()
if [[ -d data/brown/text ]]; then MIX=(--corpus-dir data/brown/text --corpus-fraction 0.25); fi

# variant label -> trainer flags
train_flags() {
  case "$1" in
    fpa) echo "--variant fpa --gate-bias 0,0,0,0" ;;         # increments start near 0 (prototype-like)
    fpa-lminit) echo "--variant fpa" ;;                       # lm's FoX-matching init (-log 2 per token)
    fox) echo "--variant fox" ;;                              # lm's FoX init: gate bias 0
    fox-b5) echo "--variant fox --gate-bias 0,0,5,5" ;;      # forget gates near 1 on half the heads
    transformer) echo "--variant transformer" ;;
    *) echo "error: unknown passkey variant '$1'" >&2; exit 2 ;;
  esac
}

mkdir -p "$OUT" "$RUNS"
for seed in $SEEDS; do
  for v in $VARIANTS; do
    run="$v-s$seed"
    if [[ -s "$OUT/$run.summary.csv" ]]; then echo "passkey: $run done (skipping)"; continue; fi
    echo "passkey: training $run ($STEPS steps, profile $PROFILE)"
    # shellcheck disable=SC2046
    nice -n 5 "$BIN/passkey-train" $(train_flags "$v") "${MIX[@]}" --length $L --steps "$STEPS" \
      --seed "$seed" --threads 1 --out-dir "$RUNS/$run" --resume --out "$OUT/train-$run.csv"
    # Budgets: 0.25 (the claim), 0.5 (where does retrieval come back?) for budget and window.
    echo "passkey: evaluating $run"
    nice -n 5 "$BIN/passkey-eval" --checkpoint "$RUNS/$run" --variant "$v" --lengths 1,2,4,8 \
      --policies full,fpa-certified,budget,window --budgets 0.25,0.5 --keys "$KEYS" \
      --seed 1000 --threads 1 --out "$OUT/$run.csv" --summary "$OUT/$run.summary.csv"
  done
done
/usr/bin/python3 lm/passkey/summarize.py "$OUT"
