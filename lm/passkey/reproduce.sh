#!/usr/bin/env bash
# Passkey retrieval with a compressed KV cache (SPEC section 6, claim C6).
#
#   lm/passkey/reproduce.sh <bin-dir>      PROFILE=quick (default) or full
#
# Trains passkey models on sequences of length L = 512 only (passkey prompts mixed with Brown
# corpus windows when data/brown/text exists, else passkey prompts only; see README.md), then
# evaluates each at L, 2L, 4L, 8L under the cache policies and writes results/passkey/:
#   <profile>/train-<run>.csv    training log of each run (runs/passkey/<profile>/<run>, resumable)
#   <profile>/<run>.csv          per (length, depth, policy, budget) cell
#   <profile>/<run>.summary.csv  per (length, policy, budget) cell, averaged over depths
#   summary.csv, c6_table.md     this profile's runs merged by lm/passkey/summarize.py
#
#   quick : 1 seed of fpa, fox-b5, transformer, PASSKEY_QUICK_STEPS steps (default 200), 5 keys
#           per cell, budget 0.25: a smoke run of the whole pipeline that fits the quick
#           profile's hour (about 3 minutes of training and 1 of evaluation per model)
#   full  : seed 0 of fpa, fox-b5, transformer; 2000 steps, then resumed to 3500 (STEPS is a list
#           of stages: each resumes the last checkpoint with the learning-rate schedule of its
#           own length, so stage 2 continues the 3500-step cosine from step 2000, a warm
#           restart to 0.46 of the peak; FPA had only begun to retrieve at 2000); 20 keys per
#           cell, budgets 0.25 and 0.5. The 3-seed C6 table is opt-in (about 45 minutes of one
#           core per model): PASSKEY_SEEDS="0 1 2"
#           PASSKEY_VARIANTS="fpa fox fox-b5 transformer" make reproduce-passkey PROFILE=full
# A run whose <run>.summary.csv exists is skipped; an interrupted training run resumes.
set -euo pipefail

BIN=${1:?usage: lm/passkey/reproduce.sh <bin-dir>}
PROFILE=${PROFILE:-quick}
RESULTS=results/passkey
OUT=$RESULTS/$PROFILE     # per-run CSVs of this profile; summary.csv and c6_table.md in $RESULTS
RUNS=runs/passkey/$PROFILE
L=512
case "$PROFILE" in
  quick) STEPS=${PASSKEY_QUICK_STEPS:-200}; SEEDS=${PASSKEY_SEEDS:-"0"}; KEYS=5; BUDGETS=0.25
         VARIANTS=${PASSKEY_VARIANTS:-"fpa fox-b5 transformer"} ;;
  full) STEPS="2000 3500"; SEEDS=${PASSKEY_SEEDS:-"0"}; KEYS=20; BUDGETS=0.25,0.5
        VARIANTS=${PASSKEY_VARIANTS:-"fpa fox-b5 transformer"} ;;
  *) echo "error: PROFILE must be quick or full, got '$PROFILE'" >&2; exit 2 ;;
esac

# The mixture: 1 of every 8 rows a corpus window when the Brown corpus is prepared (lm/reproduce.sh
# does that). A quarter of corpus rows delayed FPA's retrieval from ~400 to ~1100 steps (README.md).
MIX=()
if [[ -d data/brown/text ]]; then MIX=(--corpus-dir data/brown/text --corpus-fraction 0.125); fi

# variant label -> trainer flags
train_flags() {
  case "$1" in
    fpa) echo "--variant fpa --gate-bias 0,0,0,0 --min-grad exact" ;;  # increments near 0, hard subgradient (prototype)
    fpa-lminit) echo "--variant fpa" ;;                       # lm's FoX-matching init (-log 2 per token)
    fox) echo "--variant fox" ;;                              # lm's FoX init: gate bias 0
    fox-b5) echo "--variant fox --gate-bias 0,0,5,5" ;;      # forget gates near 1 on half the heads
    transformer) echo "--variant transformer" ;;
    *) echo "error: unknown passkey variant '$1'" >&2; exit 2 ;;
  esac
}

# Policies: budget shares one pool across heads and layers; budget-per-head gives every head the
# same capacity (equal cache widths: what decode time rewards, see README.md).
POLICIES=full,fpa-certified,budget,budget-per-head,window

mkdir -p "$OUT" "$RUNS"
for seed in $SEEDS; do
  for v in $VARIANTS; do
    run="$v-s$seed"
    stamp="steps=$STEPS keys=$KEYS budgets=$BUDGETS policies=$POLICIES flags=$(train_flags "$v") mix=${MIX[*]}"
    if [[ -s "$OUT/$run.summary.csv" && "$(cat "$OUT/.done-$run" 2>/dev/null)" == "$stamp" ]]; then
      echo "passkey: $run done (skipping)"; continue
    fi
    echo "passkey: training $run (steps $STEPS, profile $PROFILE)"
    for steps in $STEPS; do  # stages; a finished stage's checkpoint is already at its step count
      # shellcheck disable=SC2046
      nice -n 5 "$BIN/passkey-train" $(train_flags "$v") "${MIX[@]}" --length $L --steps "$steps" \
        --seed "$seed" --threads 1 --out-dir "$RUNS/$run" --resume --out "$OUT/train-$run.csv"
    done
    # Budgets: 0.25 (the claim), 0.5 (where does retrieval come back?) for budget and window.
    echo "passkey: evaluating $run"
    nice -n 5 "$BIN/passkey-eval" --checkpoint "$RUNS/$run" --variant "$v" --lengths 1,2,4,8 \
      --policies "$POLICIES" --budgets "$BUDGETS" --keys "$KEYS" \
      --seed 1000 --threads 1 --out "$OUT/$run.csv" --summary "$OUT/$run.summary.csv"
    echo "$stamp" > "$OUT/.done-$run"
  done
done
/usr/bin/python3 lm/passkey/summarize.py "$RESULTS" "$OUT"
