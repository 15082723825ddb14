#!/usr/bin/env bash
# The compression sweep (make reproduce PROFILE=passkey-sweep): every cache policy of
# lm/cache/README.md at every kept fraction, on every published C6 model (results/weights/
# passkey/*.pt), as configs/passkey/eval-sweep.conf says. Writes results/passkey/sweep/<run>.csv
# and <run>.summary.csv, then results/passkey/sweep/summary.csv (every run, one row per cell).
# A run whose summary exists with the same stamp (weights checksum + config) is skipped, so an
# interrupted sweep resumes run by run. SWEEP_JOBS (default 2) evaluations at a time;
# SWEEP_RUNS (e.g. "fpa-s0 fpa-s2") sweeps those runs' weights only.
#
#   lm/passkey/sweep.sh <bin-dir>
set -euo pipefail
BIN=${1:?usage: lm/passkey/sweep.sh <bin-dir>}
CONFIG=configs/passkey/eval-sweep.conf
OUT=results/passkey/sweep
JOBS=${SWEEP_JOBS:-2}
mkdir -p "$OUT"
shopt -s nullglob
weights=(results/weights/passkey/*.pt)
if [[ -n "${SWEEP_RUNS:-}" ]]; then
  weights=()
  for r in $SWEEP_RUNS; do
    [[ -f "results/weights/passkey/$r.pt" ]] || { echo "error: SWEEP_RUNS: no weights results/weights/passkey/$r.pt" >&2; exit 1; }
    weights+=("results/weights/passkey/$r.pt")
  done
fi
(( ${#weights[@]} )) || { echo "error: no published passkey weights under results/weights/passkey" >&2; exit 1; }

one() {  # <weights file>
  local w=$1 run variant stamp
  run=$(basename "$w" .pt) variant=${run%-s[0-9]*}
  stamp="$(sha256sum < "$w" | cut -c1-16) $(md5sum < "$CONFIG" | cut -c1-12)"
  if [[ -s "$OUT/$run.summary.csv" && "$(cat "$OUT/.done-$run" 2>/dev/null)" == "$stamp" ]]; then
    echo "sweep: $run done (skipping)"
    return 0
  fi
  echo "sweep: $run $(date -u +%H:%M:%S)"
  nice -n 5 "$BIN/passkey-eval" --config "$CONFIG" --checkpoint "$w" --variant "$variant" --threads 1 \
    --out "$OUT/$run.csv" --summary "$OUT/$run.summary.csv"
  echo "$stamp" > "$OUT/.done-$run"
}

running=0 failed=0
for w in "${weights[@]}"; do
  if (( running >= JOBS )); then wait -n || failed=1; running=$((running - 1)); fi
  one "$w" &
  running=$((running + 1))
done
while (( running > 0 )); do wait -n || failed=1; running=$((running - 1)); done
(( failed )) && { echo "error: a sweep evaluation failed (see above)" >&2; exit 1; }
/usr/bin/python3 lm/passkey/merge_summaries.py "$OUT"
