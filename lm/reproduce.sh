#!/usr/bin/env bash
# Language models (SPEC section 5, claim C5): trains and evaluates the four attention variants on
# the Brown corpus and writes results/lm/.
#
#   lm/reproduce.sh <bin-dir>        PROFILE=quick (default) or full
#
#   quick : tiny preset, LM_QUICK_STEPS optimiser steps (default 200) per variant
#   full  : tiny preset at its full budget (lm/presets.cpp: 1200 steps; LM_FULL_STEPS overrides).
#           In the quick profile's clean-clone run 200 steps took 49-60 s per variant while the
#           synthetic study shared the 2 cores, so the four full runs take about 20-25 minutes.
# Runs live in runs/lm/<profile>/<variant> (checkpointed; an interrupted script resumes them);
# a variant whose summary row exists is skipped. Outputs per variant: train-<variant>.csv (log),
# eval-<variant>.csv, positions-<variant>.csv, summary-<variant>.csv; and summary.csv.
set -euo pipefail

BIN=${1:?usage: lm/reproduce.sh <bin-dir>}
PROFILE=${PROFILE:-quick}
PRESET=${LM_PRESET:-tiny}
SEED=${LM_SEED:-0}
VARIANTS=${LM_VARIANTS:-"transformer softmax-nope fox fpa"}
OUT=results/lm
case "$PROFILE" in
  quick) STEPS=${LM_QUICK_STEPS:-200} ;;
  full) STEPS=${LM_FULL_STEPS:-0} ;;  # 0: the preset's own step count
  *) echo "error: PROFILE must be quick or full, got '$PROFILE'" >&2; exit 2 ;;
esac
RUNS=runs/lm/$PRESET-$PROFILE-steps$STEPS

# One run: <name> <variant> [extra lm-train flags]. Evaluation of the quick profile reads the
# first LM_EVAL_BYTES bytes of each validation and test document (all of them in full).
EVAL_CAP=0
[[ "$PROFILE" == quick ]] && EVAL_CAP=${LM_EVAL_BYTES:-1024}
run_one() {
  local name=$1 v=$2; shift 2
  local stamp="$PRESET $PROFILE steps=$STEPS seed=$SEED eval=$EVAL_CAP $*"
  if [[ -s "$OUT/summary-$name.csv" && "$(cat "$OUT/.done-$name" 2>/dev/null)" == "$stamp" ]]; then
    echo "lm: $name done (skipping)"
    return
  fi
  echo "lm: training $name ($PRESET, profile $PROFILE) $(date -u +%H:%M:%S)"
  "$BIN/lm-train" --preset "$PRESET" --variant "$v" --steps "$STEPS" --seed "$SEED" --threads 1 \
    --corpus data/brown/text --out-dir "$RUNS/$name" --resume --out "$OUT/train-$name.csv" "$@"
  "$BIN/lm-eval" --checkpoint "$RUNS/$name" --corpus data/brown/text --threads 1 \
    --max-tokens-per-doc "$EVAL_CAP" --out "$OUT/eval-$name.csv" \
    --positions "$OUT/positions-$name.csv" --summary "$OUT/summary-$name.csv"
  echo "$stamp" > "$OUT/.done-$name"
}

# Rows of several summary-<name>.csv under one header, written atomically.
combine() {
  local target=$1 first=1 tmp="$1.tmp.$$"; shift
  for name in "$@"; do
    if [[ $first == 1 ]]; then head -n 1 "$OUT/summary-$name.csv" > "$tmp"; first=0; fi
    tail -n +2 "$OUT/summary-$name.csv" >> "$tmp"
  done
  mv "$tmp" "$target"
}

lm/fetch_brown.sh "$BIN" data/brown
mkdir -p "$OUT" "$RUNS"
for v in $VARIANTS; do run_one "$v" "$v"; done
combine "$OUT/summary.csv" $VARIANTS
echo "lm: wrote $OUT/summary.csv"
column -s, -t < "$OUT/summary.csv" || cat "$OUT/summary.csv"

# FPA's backward mode: the default (straight-through) against the exact subgradient.
if [[ "${LM_SKIP_MIN_GRAD:-0}" != 1 ]]; then
  run_one fpa-exact fpa --fpa-backward exact
  combine "$OUT/min_grad.csv" fpa fpa-exact
  echo "lm: wrote $OUT/min_grad.csv"
  column -s, -t < "$OUT/min_grad.csv" || cat "$OUT/min_grad.csv"
fi
