#!/usr/bin/env bash
# Passkey retrieval with a compressed KV cache (claim C6).
#
#   lm/passkey/reproduce.sh <bin-dir>      PROFILE=quick (default), full or passkey
#
# Trains passkey models on sequences of length L = 512 with the recipe in
# configs/passkey/c6-<variant>.conf (passkey prompts only, a short-prompt curriculum, train until
# 40 held-out prompts at L are retrieved with accuracy >= 0.95 or the step cap), then evaluates
# each at L, 2L, 4L, 8L under the cache policies and writes results/passkey/:
#   <folder>/train-<run>.csv    training log of each run (runs/passkey/<folder>/<run>, resumable)
#   <folder>/<run>.csv          per (length, depth, policy, budget) cell
#   <folder>/<run>.summary.csv  per (length, policy, budget) cell, averaged over depths
#   <folder>/probe-<run>.csv    FPA and FoX runs: per prompt, layer and head, the key's bias at the
#                               answer query against the eviction threshold and budget cut-offs
#   summary.csv, c6_table.md    the folder's runs merged by lm/passkey/summarize.py
# and, for folder c6, each trained run's weights (scripts/publish_weights.sh:
# results/weights/passkey/<run>.pt and its SHA-256; `make reproduce PROFILE=eval` re-runs the
# evaluation and probe from them, PROFILE=passkey-sweep the compression sweep).
#
#   quick   : folder quick; seed 0 of fpa, fox-b5, transformer, capped at PASSKEY_QUICK_STEPS
#             steps (default 200), evaluated as configs/passkey/eval-quick.conf says (5 keys per
#             cell, budget 0.25): a smoke run of the pipeline.
#   passkey : folder c6; seeds 0-4 of each variant, evaluated as configs/passkey/eval-c6.conf says
#             (20 keys per cell, budgets 0.25 and 0.5). The published C6 numbers come from this
#             profile (make reproduce PROFILE=passkey).
#   full    : folder c6 as well, seed 0 of each variant only (the full profile's share of the
#             passkey profile: the same runs, so a later PROFILE=passkey skips them).
#   passkey-scale : folder scale (issue 30); seeds 0-2 of fpa-h16 (16 heads) and fpa-l4 (4
#             layers), configs/passkey/c6-<variant>.conf, evaluated and probed as the passkey
#             profile, weights in results/weights/passkey-scale/.
#   passkey-natural : folder natural-trained (issue 46); seeds 0-4 of fpa-natural,
#             fox-b5-natural and transformer-natural (configs/passkey/c6-<variant>.conf: the C6
#             recipe with the filler a passage of the Brown training split per prompt),
#             evaluated in both fillers: as the passkey profile (<run>.csv) and with natural
#             filler from the test split (configs/passkey/eval-c6-natural.conf:
#             natural-filler/<run>.csv); weights in results/weights/passkey-natural/. Several
#             CPU-hours per run: meant for a GPU.
# PASSKEY_SEEDS and PASSKEY_VARIANTS override the seeds and variants. A run whose
# <run>.summary.csv exists with the same stamp (config file contents + evaluation settings) is
# skipped; an interrupted training resumes; a run folder trained with another recipe is moved
# aside, not resumed. Runs go PASSKEY_JOBS (default 3) at a time, in the order FPA seeds first.
set -euo pipefail

BIN=${1:?usage: lm/passkey/reproduce.sh <bin-dir>}
PROFILE=${PROFILE:-quick}
RESULTS=results/passkey
CONFIGS=configs/passkey
TRAIN_EXTRA=()
case "$PROFILE" in
  quick) FOLDER=quick; SEEDS=${PASSKEY_SEEDS:-"0"}; EVAL_CONFIG=$CONFIGS/eval-quick.conf
         TRAIN_EXTRA=(--steps "${PASSKEY_QUICK_STEPS:-200}") ;;
  passkey) FOLDER=c6; SEEDS=${PASSKEY_SEEDS:-"0 1 2 3 4"}; EVAL_CONFIG=$CONFIGS/eval-c6.conf ;;
  full) FOLDER=c6; SEEDS=${PASSKEY_SEEDS:-"0"}; EVAL_CONFIG=$CONFIGS/eval-c6.conf ;;
  passkey-scale) FOLDER=scale; SEEDS=${PASSKEY_SEEDS:-"0 1 2"}; EVAL_CONFIG=$CONFIGS/eval-c6.conf ;;
  passkey-natural) FOLDER=natural-trained; SEEDS=${PASSKEY_SEEDS:-"0 1 2 3 4"}; EVAL_CONFIG=$CONFIGS/eval-c6.conf
         NATURAL_EVAL_CONFIG=$CONFIGS/eval-c6-natural.conf ;;
  *) echo "error: PROFILE must be quick, full, passkey, passkey-scale or passkey-natural, got '$PROFILE'" >&2; exit 2 ;;
esac
case "$FOLDER" in
  scale) DEFAULT_VARIANTS="fpa-h16 fpa-l4" ;;
  natural-trained) DEFAULT_VARIANTS="fpa-natural fox-b5-natural transformer-natural" ;;
  *) DEFAULT_VARIANTS="fpa fox-b5 transformer" ;;
esac
VARIANTS=${PASSKEY_VARIANTS:-$DEFAULT_VARIANTS}
# The folders whose trained models are published (results/weights/<study>/<run>.pt).
case "$FOLDER" in c6) WEIGHTS=passkey ;; scale) WEIGHTS=passkey-scale ;; natural-trained) WEIGHTS=passkey-natural ;; *) WEIGHTS="" ;; esac
OUT=$RESULTS/$FOLDER      # per-run CSVs; summary.csv and c6_table.md in $RESULTS
RUNS=runs/passkey/$FOLDER

# The evaluation settings (lengths, policies, budgets, keys, prompt seed) live in $EVAL_CONFIG;
# the probe and the skip stamp read them from it.
conf_get() {  # <config file> <name>: the value of its `name = value` line
  sed -n "s/^$2[[:space:]]*=[[:space:]]*//p" "$1" | tail -n 1
}
LENGTHS=$(conf_get "$EVAL_CONFIG" lengths); POLICIES=$(conf_get "$EVAL_CONFIG" policies)
BUDGETS=$(conf_get "$EVAL_CONFIG" budgets); KEYS=$(conf_get "$EVAL_CONFIG" keys)
EVAL_SEED=$(conf_get "$EVAL_CONFIG" seed)

config_of() {
  local c="$CONFIGS/c6-$1.conf"
  [[ -f "$c" ]] || { echo "error: unknown passkey variant '$1' (no $c)" >&2; exit 2; }
  echo "$c"
}

# A recipe as its config file was spelled before the flag renames of issue 19 (docs/flags.md:
# fpa-backward was min-grad, corpus was corpus-dir): run folders and stamps written before the
# rename still match, so their trainings are resumed or skipped, not redone.
recipe_text() { sed -e 's/^fpa-backward\([ =]\)/min-grad\1/' -e 's/^corpus\([ =]\)/corpus-dir\1/' "$1"; }

# One run: train (until learned or the cap), evaluate, stamp. Single-threaded processes.
run_one() {
  local v=$1 seed=$2 stamp=$3 run="$1-s$2" config
  config=$(config_of "$v")
  local recipe
  recipe="$(recipe_text "$config") ${TRAIN_EXTRA[*]}"
  if [[ -f "$RUNS/$run/recipe" && "$(cat "$RUNS/$run/recipe")" != "$recipe" ]] ||
     [[ -d "$RUNS/$run" && ! -f "$RUNS/$run/recipe" ]]; then
    local aside="$RUNS/$run.old-$(date -u +%Y%m%d%H%M%S)"
    echo "passkey: $run was trained with another recipe; moved to $aside, training from scratch"
    mv "$RUNS/$run" "$aside"
  fi
  mkdir -p "$RUNS/$run" && echo "$recipe" > "$RUNS/$run/recipe"
  echo "passkey: training $run ($config ${TRAIN_EXTRA[*]}) $(date -u +%H:%M:%S)"
  nice -n 5 "$BIN/passkey-train" --config "$config" "${TRAIN_EXTRA[@]}" --seed "$seed" --threads 1 \
    --out-dir "$RUNS/$run" --resume --out "$OUT/train-$run.csv"
  echo "passkey: evaluating $run $(date -u +%H:%M:%S)"
  nice -n 5 "$BIN/passkey-eval" --config "$EVAL_CONFIG" --checkpoint "$RUNS/$run" --variant "$v" \
    --threads 1 --out "$OUT/$run.csv" --summary "$OUT/$run.summary.csv"
  if [[ -n "${NATURAL_EVAL_CONFIG:-}" ]]; then  # the same keys and depths in natural text
    mkdir -p "$OUT/natural-filler"
    nice -n 5 "$BIN/passkey-eval" --config "$NATURAL_EVAL_CONFIG" --checkpoint "$RUNS/$run" --variant "$v" \
      --threads 1 --out "$OUT/natural-filler/$run.csv" --summary "$OUT/natural-filler/$run.summary.csv"
  fi
  [[ -n "$WEIGHTS" ]] && scripts/publish_weights.sh "$BIN" "$WEIGHTS" "$RUNS/$run" "$run"
  echo "$stamp" > "$OUT/.done-$run"
  rm -f "$OUT/probe-$run.csv"  # a retrained run's probe is redone, not kept from its old weights
  probe_one "$v" "$seed"
  echo "passkey: $run done $(date -u +%H:%M:%S)"
}

# Where the key sits at the answer query (passkey-probe): the same prompts as passkey-eval (the
# eval config's seed, lengths and keys); models with a bias only (the Transformer has none).
probe_one() {
  local v=$1 seed=$2 run="$1-s$2"
  [[ "$v" == transformer* ]] && return 0
  [[ -s "$OUT/probe-$run.csv" ]] && return 0
  nice -n 5 "$BIN/passkey-probe" --checkpoint "$RUNS/$run" --variant "$v" --lengths "$LENGTHS" \
    --keys "$KEYS" --budget "${BUDGETS%%,*}" --seed "$EVAL_SEED" --threads 1 \
    --study-config "$EVAL_CONFIG" --out "$OUT/probe-$run.csv"
}

JOBS_MAX=${PASSKEY_JOBS:-3}
mkdir -p "$OUT" "$RUNS"
running=0 failed=0
for v in $VARIANTS; do
  config=$(config_of "$v")  # an unknown variant stops here, before anything runs
  for seed in $SEEDS; do
    run="$v-s$seed"
    stamp="config=$(recipe_text "$config" | md5sum | cut -c1-12) ${TRAIN_EXTRA[*]} keys=$KEYS budgets=$BUDGETS policies=$POLICIES"
    # In a published folder a run is complete only with its weights published (listed in
    # results/weights/SHA256SUMS): a run evaluated before weights were published is retrained
    # (its CSVs then change; see docs/notes/retraining-2026-12-02.md).
    if [[ -s "$OUT/$run.summary.csv" && "$(cat "$OUT/.done-$run" 2>/dev/null)" == "$stamp" ]] &&
       { [[ -z "$WEIGHTS" ]] || scripts/weights_published.sh "$WEIGHTS" "$run"; }; then
      echo "passkey: $run done (skipping)"
      [[ -d "$RUNS/$run" ]] && probe_one "$v" "$seed"  # runs evaluated before the probe existed
      continue
    fi
    if (( running >= JOBS_MAX )); then wait -n || failed=1; running=$((running - 1)); fi
    run_one "$v" "$seed" "$stamp" &
    running=$((running + 1))
  done
done
while (( running > 0 )); do wait -n || failed=1; running=$((running - 1)); done
if (( failed )); then echo "error: a passkey run failed (see above)" >&2; exit 1; fi
# The C6 study's folders make results/passkey/summary.csv and the C6 table; the scale runs keep
# theirs in their folder (results/passkey/scale/summary.csv), out of C6's verdict.
if [[ $FOLDER == scale || $FOLDER == natural-trained ]]; then
  /usr/bin/python3 lm/passkey/merge_summaries.py "$OUT"
  if [[ -d $OUT/natural-filler ]]; then /usr/bin/python3 lm/passkey/merge_summaries.py "$OUT/natural-filler"; fi
else
  /usr/bin/python3 lm/passkey/summarize.py "$RESULTS" "$OUT"
fi
