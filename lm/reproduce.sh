#!/usr/bin/env bash
# Language models (SPEC section 5, claim C5): trains and evaluates attention variants on the Brown
# corpus from a preset file, configs/lm/<preset>.conf, and writes results/lm/.
#
#   lm/reproduce.sh <bin-dir>        PROFILE=quick (default), full, lm-small or lm-medium
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
#   lm-medium: the medium preset (10.7M parameters), FPA and FoX, seed 0: opt-in, hours per run
# LM_JOBS runs train at a time (default 2 for lm-small and lm-medium, whose runs are long; 1 for
# the others, which make reproduce already runs beside other studies).
# Runs live in runs/lm/<preset>-<profile>-steps<N>/<name> (checkpointed; an interrupted script
# resumes them); a run whose summary row exists for the same settings is skipped. Names: the
# variant for seed 0 ("fpa"), "<variant>-s<seed>" for other seeds, prefixed "small-" for the small
# preset. Outputs per run: train-<name>.csv (log), eval-<name>.csv, positions-<name>.csv,
# summary-<name>.csv; then summary.csv (every run, one row each). The full and lm-small profiles
# also publish each run's weights (scripts/publish_weights.sh: results/weights/lm/<name>.pt and its
# SHA-256), from which `make reproduce PROFILE=eval` re-runs the evaluation.
set -euo pipefail

BIN=${1:?usage: lm/reproduce.sh <bin-dir>}
PROFILE=${PROFILE:-quick}
OUT=results/lm
case "$PROFILE" in
  quick) PRESET=tiny; STEPS=${LM_QUICK_STEPS:-200}; SEEDS=0
         VARIANTS=${LM_VARIANTS:-"transformer softmax-nope fox fpa"}; ABLATIONS="softmax-nope" ;;
  full) PRESET=tiny; STEPS=${LM_FULL_STEPS:-0}; SEEDS=${LM_SEEDS:-"0 1 2"}  # 0: the preset's steps
        VARIANTS=${LM_VARIANTS:-"transformer softmax-nope fox fpa"}; ABLATIONS="softmax-nope" ;;
  lm-small) PRESET=small; STEPS=${LM_SMALL_STEPS:-0}; SEEDS=${LM_SEEDS:-"0 1 2"}
            VARIANTS=${LM_VARIANTS:-"fox fpa"}; ABLATIONS="" ;;
  lm-medium) PRESET=medium; STEPS=${LM_MEDIUM_STEPS:-0}; SEEDS=${LM_SEEDS:-0}
             VARIANTS=${LM_VARIANTS:-"fox fpa"}; ABLATIONS="" ;;
  *) echo "error: PROFILE must be quick, full, lm-small or lm-medium, got '$PROFILE'" >&2; exit 2 ;;
esac
CONFIG=configs/lm/$PRESET.conf
RUNS=runs/lm/$PRESET-$PROFILE-steps$STEPS
PREFIX=$([[ $PRESET == tiny ]] && echo "" || echo "$PRESET-")

# One run: <name> <variant> <seed> [extra lm-train flags]. Evaluation of the quick profile reads
# the first LM_EVAL_BYTES bytes of each validation and test document (the others: all of them).
EVAL_CAP=0
[[ "$PROFILE" == quick ]] && EVAL_CAP=${LM_EVAL_BYTES:-1024}
run_one() {
  local name=$1 v=$2 seed=$3; shift 3
  local stamp="$PRESET $PROFILE steps=$STEPS seed=$seed eval=$EVAL_CAP $*"
  # Beyond the quick profile a run is complete only with its weights published: one evaluated
  # before weights were published is retrained (its CSVs then change).
  if [[ -s "$OUT/summary-$name.csv" && "$(cat "$OUT/.done-$name" 2>/dev/null)" == "$stamp" ]] &&
     [[ "$PROFILE" == quick || -f "results/weights/lm/$name.pt" ]]; then
    echo "lm: $name done (skipping)"
    return
  fi
  echo "lm: training $name ($PRESET, profile $PROFILE, seed $seed) $(date -u +%H:%M:%S)"
  "$BIN/lm-train" --config "$CONFIG" --variant "$v" --steps "$STEPS" --seed "$seed" --threads 1 \
    --corpus data/brown/text --out-dir "$RUNS/$name" --resume --out "$OUT/train-$name.csv" "$@"
  "$BIN/lm-eval" --checkpoint "$RUNS/$name" --corpus data/brown/text --threads 1 \
    --max-tokens-per-doc "$EVAL_CAP" --out "$OUT/eval-$name.csv" \
    --positions "$OUT/positions-$name.csv" --summary "$OUT/summary-$name.csv"
  [[ "$PROFILE" != quick ]] && scripts/publish_weights.sh "$BIN" lm "$RUNS/$name" "$name"
  echo "$stamp" > "$OUT/.done-$name"
}
run_name() {  # <variant> <seed>
  [[ $2 == 0 ]] && echo "$PREFIX$1" || echo "$PREFIX$1-s$2"
}

lm/fetch_brown.sh "$BIN" data/brown
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
