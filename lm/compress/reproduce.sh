#!/usr/bin/env bash
# Language-model compression (make reproduce PROFILE=lm-compress; issue 29, item 5): test
# perplexity of claim C5's published models (results/weights/lm/: FPA, FoX and the Transformer,
# seeds 0-2) decoded with a compressed KV cache, under every online cache policy at kept
# fractions 0.1, 0.25 and 0.5, as configs/compress/lm.conf says. Writes
# results/lm/compress/runs/<run>.csv (one row per policy and kept fraction) and
# results/lm/compress/summary.csv (every run). A run whose CSV exists with the same stamp
# (weights checksum + config) is skipped, so an interrupted study resumes run by run.
# COMPRESS_JOBS (default 2) evaluations at a time; COMPRESS_RUNS overrides the runs.
#
#   lm/compress/reproduce.sh <bin-dir>
set -euo pipefail
BIN=${1:?usage: lm/compress/reproduce.sh <bin-dir>}
CONFIG=configs/compress/lm.conf
OUT=results/lm/compress
JOBS=${COMPRESS_JOBS:-2}
RUNS=${COMPRESS_RUNS:-"transformer transformer-s1 transformer-s2 fox fox-s1 fox-s2 fpa fpa-s1 fpa-s2"}
mkdir -p "$OUT/runs"

one() {  # <run>
  local run=$1 w="results/weights/lm/$1.pt" stamp
  [[ -f "$w" ]] || { echo "error: no published weights $w" >&2; return 1; }
  stamp="$(sha256sum < "$w" | cut -c1-16) $(md5sum < "$CONFIG" | cut -c1-12)"
  if [[ -s "$OUT/runs/$run.csv" && "$(cat "$OUT/runs/.done-$run" 2>/dev/null)" == "$stamp" ]]; then
    echo "lm-compress: $run done (skipping)"
    return 0
  fi
  echo "lm-compress: $run $(date -u +%H:%M:%S)"
  nice -n 5 "$BIN/lm-compress" --config "$CONFIG" --checkpoint "$w" --threads 1 --out "$OUT/runs/$run.csv"
  echo "$stamp" > "$OUT/runs/.done-$run"
}

running=0 failed=0
for run in $RUNS; do
  if (( running >= JOBS )); then wait -n || failed=1; running=$((running - 1)); fi
  one "$run" &
  running=$((running + 1))
done
while (( running > 0 )); do wait -n || failed=1; running=$((running - 1)); done
(( failed )) && { echo "error: an lm-compress evaluation failed (see above)" >&2; exit 1; }
/usr/bin/python3 lm/passkey/merge_summaries.py "$OUT" 'runs/*.csv'
