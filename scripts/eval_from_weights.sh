#!/usr/bin/env bash
# make reproduce PROFILE=eval: re-runs every published C5 and C6 evaluation from the published
# weights (results/weights/, scripts/publish_weights.sh), trains nothing, and checks that the
# regenerated cells equal the published ones (accuracy, occupancy, perplexity, probe columns;
# timings are not compared, scripts/compare_cells.py). Studies: lm (C5, results/lm/), passkey
# (C6, results/passkey/c6/), passkey-scale (issue 30's shapes, results/passkey/scale/) and
# passkey-natural (issue 46's natural-filler recipe, results/passkey/natural-trained/: evaluated in
# both fillers, as lm/passkey/reproduce.sh does). Regenerated files go to runs/eval/, never over
# results/. Exits 1 when a checksum or a cell differs (beyond EVAL_ROUNDING).
#
#   scripts/eval_from_weights.sh <bin-dir>      EVAL_JOBS (default 2) evaluations at a time,
#                     EVAL_STUDIES (default "lm passkey passkey-scale passkey-natural"),
#                     EVAL_RUNS (a glob on the run's name, default "*": EVAL_RUNS='fpa-natural-s0'),
#                     EVAL_ROUNDING (default 1e-4; 0 demands equal text): a number within that
#                     relative difference of the published one is equal to rounding, as another
#                     kind of CPU computes it (compare_cells.py --rounding; each such file is named)
set -euo pipefail
BIN=${1:?usage: scripts/eval_from_weights.sh <bin-dir>}
WEIGHTS=results/weights
OUT=runs/eval
JOBS=${EVAL_JOBS:-2}
ROUNDING=${EVAL_ROUNDING:-1e-4}
STUDIES=${EVAL_STUDIES:-"lm passkey passkey-scale passkey-natural"}
RUNS_GLOB=${EVAL_RUNS:-*}
for s in $STUDIES; do
  case $s in lm|passkey|passkey-scale|passkey-natural) ;;
    *) echo "error: EVAL_STUDIES: unknown study '$s' (lm, passkey, passkey-scale or passkey-natural)" >&2; exit 1 ;;
  esac
done
/usr/bin/python3 -c 'import sys; sys.exit(not 0 <= float(sys.argv[1]) < 1)' "$ROUNDING" 2>/dev/null ||
  { echo "error: EVAL_ROUNDING='$ROUNDING' must be a number in [0, 1)" >&2; exit 1; }
[[ -s $WEIGHTS/SHA256SUMS ]] || { echo "error: no published weights ($WEIGHTS/SHA256SUMS)" >&2; exit 1; }
(cd "$WEIGHTS" && sha256sum --quiet -c SHA256SUMS) ||
  { echo "error: a published weights file does not match its SHA-256 ($WEIGHTS/SHA256SUMS)" >&2; exit 1; }
echo "eval: $(wc -l < $WEIGHTS/SHA256SUMS) weights files match their SHA-256"
mkdir -p "$OUT/lm" "$OUT/passkey" "$OUT/passkey/natural-filler"
COMPARED=$OUT/compare.log  # every pair's line, counted at the end
: > "$COMPARED"
compare() { /usr/bin/python3 scripts/compare_cells.py --rounding "$ROUNDING" "$@" | tee -a "$COMPARED"; }

conf_get() { sed -n "s/^$2[[:space:]]*=[[:space:]]*//p" "$1" | tail -n 1; }
EVAL_CONFIG=configs/passkey/eval-c6.conf
NATURAL_EVAL_CONFIG=configs/passkey/eval-c6-natural.conf  # the natural-filler recipe's second filler
published_folder() {
  case "$1" in
    passkey) echo results/passkey/c6 ;; passkey-scale) echo results/passkey/scale ;;
    passkey-natural) echo results/passkey/natural-trained ;;
  esac
}

one() {  # <study> <name>: evaluate one weights file, then compare its cells
  local study=$1 name=$2 w="$WEIGHTS/$1/$2.pt"
  if [[ $study == lm ]]; then
    "$BIN/lm-eval" --checkpoint "$w" --corpus data/brown/text --threads 1 --max-tokens-per-doc 0 \
      --out "$OUT/lm/eval-$name.csv" --positions "$OUT/lm/positions-$name.csv" \
      --summary "$OUT/lm/summary-$name.csv" 2> "$OUT/lm/$name.log"
    compare \
      "results/lm/eval-$name.csv" "$OUT/lm/eval-$name.csv" \
      "results/lm/positions-$name.csv" "$OUT/lm/positions-$name.csv" \
      "results/lm/summary-$name.csv" "$OUT/lm/summary-$name.csv"
  else
    local variant=${name%-s[0-9]*} published; published=$(published_folder "$study")
    "$BIN/passkey-eval" --config "$EVAL_CONFIG" --checkpoint "$w" --variant "$variant" --threads 1 \
      --out "$OUT/passkey/$name.csv" --summary "$OUT/passkey/$name.summary.csv" 2> "$OUT/passkey/$name.log"
    local pairs=("$published/$name.csv" "$OUT/passkey/$name.csv"
                 "$published/$name.summary.csv" "$OUT/passkey/$name.summary.csv")
    if [[ $study == passkey-natural ]]; then
      local nat="$OUT/passkey/natural-filler/$name"
      "$BIN/passkey-eval" --config "$NATURAL_EVAL_CONFIG" --checkpoint "$w" --variant "$variant" --threads 1 \
        --out "$nat.csv" --summary "$nat.summary.csv" 2>> "$OUT/passkey/$name.log"
      pairs+=("$published/natural-filler/$name.csv" "$nat.csv"
              "$published/natural-filler/$name.summary.csv" "$nat.summary.csv")
    fi
    if [[ $variant != transformer* ]]; then
      local budgets; budgets=$(conf_get "$EVAL_CONFIG" budgets)
      "$BIN/passkey-probe" --checkpoint "$w" --variant "$variant" --lengths "$(conf_get "$EVAL_CONFIG" lengths)" \
        --keys "$(conf_get "$EVAL_CONFIG" keys)" --budget "${budgets%%,*}" --seed "$(conf_get "$EVAL_CONFIG" seed)" \
        --threads 1 --study-config "$EVAL_CONFIG" --out "$OUT/passkey/probe-$name.csv" 2>> "$OUT/passkey/$name.log"
      pairs+=("$published/probe-$name.csv" "$OUT/passkey/probe-$name.csv")
    fi
    compare "${pairs[@]}"
  fi
}

running=0 failed=0 n=0
for w in $(for s in $STUDIES; do echo "$WEIGHTS/$s/"$RUNS_GLOB.pt; done); do
  [[ -f $w ]] || continue
  study=$(basename "$(dirname "$w")") name=$(basename "$w" .pt)
  if (( running >= JOBS )); then wait -n || failed=1; running=$((running - 1)); fi
  echo "eval: $study/$name $(date -u +%H:%M:%S)"
  one "$study" "$name" &
  running=$((running + 1)) n=$((n + 1))
done
while (( running > 0 )); do wait -n || failed=1; running=$((running - 1)); done
(( n )) || { echo "error: EVAL_RUNS='$RUNS_GLOB' names no published weights in $STUDIES" >&2; exit 1; }
if (( failed )); then
  echo "error: eval: some regenerated cells differ from the published ones (see above)" >&2
  exit 1
fi
missing=()
for s in $STUDIES; do
  if [[ $s == lm ]]; then
    for f in results/lm/summary-*.csv; do
      r=$(basename "$f" .csv); r=${r#summary-}
      if [[ $r == $RUNS_GLOB && ! -f $WEIGHTS/lm/$r.pt ]]; then missing+=("lm/$r"); fi
    done
  else
    for f in "$(published_folder "$s")"/*.summary.csv; do
      [[ -f $f ]] || continue
      r=$(basename "$f" .summary.csv)
      if [[ $r == $RUNS_GLOB && ! -f $WEIGHTS/$s/$r.pt ]]; then missing+=("$s/$r"); fi
    done
  fi
done
echo "eval: all $n published evaluations regenerated from the weights match (timings not compared; $SECONDS s wall, $JOBS at a time)"
rounded=$(grep -c "to rounding only" "$COMPARED" || true)
if (( rounded )); then
  echo "eval: $rounded of $(wc -l < "$COMPARED") files match to float rounding only (relative $ROUNDING, named" \
    "above): computed on another kind of CPU than the published ones (the sidecars' machine), or the code's arithmetic changed"
fi
(( ${#missing[@]} )) && echo "eval: not checked, no published weights yet (trained before weights were published): ${missing[*]}"
exit 0
