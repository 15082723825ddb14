#!/usr/bin/env bash
# Attention benchmark: kernels/reproduce.sh <bin-dir>, PROFILE=quick (default) or full.
#   quick: n in {256, 512, 1024, 2048}, 3 repeats (a few minutes on 2 shared cores)
#   full : n in {256, ..., 8192} (the issue's list), 3 repeats; the reference stops at n=4096
#          (--max-reference-n: its n x n matrices need ~2.5 GB there, ~10 GB at 8192) and is
#          timed once (it is the slow baseline; about 5 minutes of the ~10 here).
# Skips the run when results/bench/attention.csv is already complete for the profile.
# Also writes results/bench/decode.csv (the decoding step, attention-bench --passes decode).
set -euo pipefail
BIN=${1:?usage: kernels/reproduce.sh <bin-dir>}
PROFILE=${PROFILE:-quick}
OUT=results/bench/attention.csv
THREADS=${BENCH_THREADS:-1}

case "$PROFILE" in
  quick) ARGS=(--lengths 256,512,1024,2048 --repeats 3 --reference-repeats 1 --reference-warmup 0) ;;
  full)  ARGS=(--lengths 256,512,1024,2048,4096,8192 --repeats 3 --max-reference-n 4096
               --reference-repeats 1 --reference-warmup 0) ;;
  *) echo "error: PROFILE must be quick or full" >&2; exit 2 ;;
esac

# One step of the cached (decoding) operator against the cache length, for one layer of the C6
# passkey models (8 heads of width 16): ms per token and GFLOP/s beside the matmul rate. Skipped
# once written.
DECODE=results/bench/decode.csv
if [[ ! -f "$DECODE" || ! -f "$DECODE.json" ]]; then
  mkdir -p "$(dirname "$DECODE")"
  nice -n 5 "$BIN/attention-bench" --passes decode --lengths 512,1024,2048,4096,8192 \
    --head-dim 16 --heads 8 --impls reference,fused --repeats 20 --warmup 3 --threads "$THREADS" \
    --out "$DECODE"
fi

# Complete = the sidecar exists and records the same length list (the CSV is written atomically
# together with it, so a killed run leaves neither; sidecars before issue 19 say "n-list").
if [[ -f "$OUT" && -f "$OUT.json" ]] && grep -qE "\"(lengths|n-list)\": *\"${ARGS[1]}\"" "$OUT.json"; then
  echo "bench: $OUT is complete for PROFILE=$PROFILE, skipping"
  exit 0
fi
mkdir -p "$(dirname "$OUT")"
nice -n 5 "$BIN/attention-bench" "${ARGS[@]}" --threads "$THREADS" --out "$OUT"
