#!/usr/bin/env bash
# make reproduce PROFILE=eval: re-runs every published C5 and C6 evaluation from the published
# weights (results/weights/, scripts/publish_weights.sh), trains nothing, and checks that the
# regenerated cells equal the published ones (accuracy, occupancy, perplexity, probe columns;
# timings are not compared, scripts/compare_cells.py). Studies: lm (C5, results/lm/), passkey
# (C6, results/passkey/c6/) and passkey-scale (issue 30's shapes, results/passkey/scale/).
# Regenerated files go to runs/eval/, never over results/. Exits 1 when a checksum or a cell
# differs.
#
#   scripts/eval_from_weights.sh <bin-dir>      EVAL_JOBS (default 2) evaluations at a time,
#                                               EVAL_STUDIES (default "lm passkey passkey-scale")
set -euo pipefail
BIN=${1:?usage: scripts/eval_from_weights.sh <bin-dir>}
WEIGHTS=results/weights
OUT=runs/eval
JOBS=${EVAL_JOBS:-2}
STUDIES=${EVAL_STUDIES:-"lm passkey passkey-scale"}
for s in $STUDIES; do
  case $s in lm|passkey|passkey-scale) ;; *) echo "error: EVAL_STUDIES: unknown study '$s' (lm, passkey or passkey-scale)" >&2; exit 1 ;; esac
done
[[ -s $WEIGHTS/SHA256SUMS ]] || { echo "error: no published weights ($WEIGHTS/SHA256SUMS)" >&2; exit 1; }
(cd "$WEIGHTS" && sha256sum --quiet -c SHA256SUMS) ||
  { echo "error: a published weights file does not match its SHA-256 ($WEIGHTS/SHA256SUMS)" >&2; exit 1; }
echo "eval: $(wc -l < $WEIGHTS/SHA256SUMS) weights files match their SHA-256"
mkdir -p "$OUT/lm" "$OUT/passkey"

conf_get() { sed -n "s/^$2[[:space:]]*=[[:space:]]*//p" "$1" | tail -n 1; }
EVAL_CONFIG=configs/passkey/eval-c6.conf
published_folder() { case "$1" in passkey) echo results/passkey/c6 ;; passkey-scale) echo results/passkey/scale ;; esac; }

one() {  # <study> <name>: evaluate one weights file, then compare its cells
  local study=$1 name=$2 w="$WEIGHTS/$1/$2.pt"
  if [[ $study == lm ]]; then
    "$BIN/lm-eval" --checkpoint "$w" --corpus data/brown/text --threads 1 --max-tokens-per-doc 0 \
      --out "$OUT/lm/eval-$name.csv" --positions "$OUT/lm/positions-$name.csv" \
      --summary "$OUT/lm/summary-$name.csv" 2> "$OUT/lm/$name.log"
    /usr/bin/python3 scripts/compare_cells.py \
      "results/lm/eval-$name.csv" "$OUT/lm/eval-$name.csv" \
      "results/lm/positions-$name.csv" "$OUT/lm/positions-$name.csv" \
      "results/lm/summary-$name.csv" "$OUT/lm/summary-$name.csv"
  else
    local variant=${name%-s[0-9]*} published; published=$(published_folder "$study")
    "$BIN/passkey-eval" --config "$EVAL_CONFIG" --checkpoint "$w" --variant "$variant" --threads 1 \
      --out "$OUT/passkey/$name.csv" --summary "$OUT/passkey/$name.summary.csv" 2> "$OUT/passkey/$name.log"
    local pairs=("$published/$name.csv" "$OUT/passkey/$name.csv"
                 "$published/$name.summary.csv" "$OUT/passkey/$name.summary.csv")
    if [[ $variant != transformer ]]; then
      local budgets; budgets=$(conf_get "$EVAL_CONFIG" budgets)
      "$BIN/passkey-probe" --checkpoint "$w" --variant "$variant" --lengths "$(conf_get "$EVAL_CONFIG" lengths)" \
        --keys "$(conf_get "$EVAL_CONFIG" keys)" --budget "${budgets%%,*}" --seed "$(conf_get "$EVAL_CONFIG" seed)" \
        --threads 1 --study-config "$EVAL_CONFIG" --out "$OUT/passkey/probe-$name.csv" 2>> "$OUT/passkey/$name.log"
      pairs+=("$published/probe-$name.csv" "$OUT/passkey/probe-$name.csv")
    fi
    /usr/bin/python3 scripts/compare_cells.py "${pairs[@]}"
  fi
}

running=0 failed=0 n=0
for w in $(for s in $STUDIES; do echo "$WEIGHTS/$s/"*.pt; done); do
  [[ -f $w ]] || continue
  study=$(basename "$(dirname "$w")") name=$(basename "$w" .pt)
  if (( running >= JOBS )); then wait -n || failed=1; running=$((running - 1)); fi
  echo "eval: $study/$name $(date -u +%H:%M:%S)"
  one "$study" "$name" &
  running=$((running + 1)) n=$((n + 1))
done
while (( running > 0 )); do wait -n || failed=1; running=$((running - 1)); done
if (( failed )); then
  echo "error: eval: some regenerated cells differ from the published ones (see above)" >&2
  exit 1
fi
missing=()
for s in $STUDIES; do
  if [[ $s == lm ]]; then
    for f in results/lm/summary-*.csv; do r=$(basename "$f" .csv); r=${r#summary-}; [[ -f $WEIGHTS/lm/$r.pt ]] || missing+=("lm/$r"); done
  else
    for f in "$(published_folder "$s")"/*.summary.csv; do
      [[ -f $f ]] || continue
      r=$(basename "$f" .summary.csv); [[ -f $WEIGHTS/$s/$r.pt ]] || missing+=("$s/$r")
    done
  fi
done
echo "eval: all $n published evaluations regenerated from the weights match (timings not compared; $SECONDS s wall, $JOBS at a time)"
(( ${#missing[@]} )) && echo "eval: not checked, no published weights yet (trained before weights were published): ${missing[*]}"
exit 0
