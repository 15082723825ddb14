#!/usr/bin/env bash
# Decode time before and after, on the same checkpoints and prompts (see README.md):
#   results/passkey/decode_speed/measure.sh BEFORE_BIN_DIR AFTER_BIN_DIR RUN_DIR...
# For each run directory (a passkey-train output, named <variant>-s<seed>), runs passkey-eval of
# BEFORE then AFTER with the same arguments, REPEATS times (default 3) in turn, and writes
# <before|after>-<run>-<k>.csv and .summary.csv here (k = 1..REPEATS); compare.py prints the
# table of medians. One thread each, one process at a time: run it on an otherwise idle machine.
set -euo pipefail
[[ $# -ge 3 ]] || { echo "usage: $0 BEFORE_BIN_DIR AFTER_BIN_DIR RUN_DIR..." >&2; exit 2; }
HERE=$(cd "$(dirname "$0")" && pwd)
BEFORE=$1 AFTER=$2
REPEATS=${REPEATS:-3}
shift 2
for dir in "$@"; do
  run=$(basename "$dir")
  variant=${run%-s*}
  for k in $(seq 1 "$REPEATS"); do
    for which in before after; do
      bin=$BEFORE; [[ $which == after ]] && bin=$AFTER
      "$bin/passkey-eval" --checkpoint "$dir" --variant "$variant" --lengths 1,8 \
        --policies full,fpa-certified,budget,budget-per-head,window --budgets 0.25 \
        --keys 5 --seed 1000 --threads 1 --out "$HERE/$which-$run-$k.csv" \
        --summary "$HERE/$which-$run-$k.summary.csv"
    done
  done
done
/usr/bin/python3 "$HERE/compare.py"
