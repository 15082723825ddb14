#!/usr/bin/env bash
# Attention benchmark: kernels/reproduce.sh <bin-dir>, PROFILE=quick (default) or full, with the
# grid of configs/bench/attention-<profile>.conf. Skips the run when results/bench/attention.csv
# is already complete for the profile. Also writes results/bench/decode.csv (the decoding step,
# configs/bench/decode.conf).
set -euo pipefail
BIN=${1:?usage: kernels/reproduce.sh <bin-dir>}
PROFILE=${PROFILE:-quick}
OUT=results/bench/attention.csv
THREADS=${BENCH_THREADS:-1}

case "$PROFILE" in
  quick|full) CONFIG=configs/bench/attention-$PROFILE.conf ;;
  *) echo "error: PROFILE must be quick or full" >&2; exit 2 ;;
esac
LENGTHS=$(sed -n 's/^lengths[[:space:]]*=[[:space:]]*//p' "$CONFIG")

# One step of the cached (decoding) operator against the cache length. Skipped once written.
DECODE=results/bench/decode.csv
if [[ ! -f "$DECODE" || ! -f "$DECODE.json" ]]; then
  mkdir -p "$(dirname "$DECODE")"
  nice -n 5 "$BIN/attention-bench" --config configs/bench/decode.conf --threads "$THREADS" \
    --out "$DECODE"
fi

# Complete = the sidecar exists and records the same length list (the CSV is written atomically
# together with it, so a killed run leaves neither; sidecars before issue 19 say "n-list").
if [[ -f "$OUT" && -f "$OUT.json" ]] && grep -qE "\"(lengths|n-list)\": *\"$LENGTHS\"" "$OUT.json"; then
  echo "bench: $OUT is complete for PROFILE=$PROFILE, skipping"
  exit 0
fi
mkdir -p "$(dirname "$OUT")"
nice -n 5 "$BIN/attention-bench" --config "$CONFIG" --threads "$THREADS" --out "$OUT"
