#!/usr/bin/env bash
# Synthetic target-set tasks (claim C4): one-layer softmax vs FoX vs FPA over many seeds.
#   synthetic/reproduce.sh <bin-dir>        PROFILE=quick (default) or PROFILE=full
# Runs whose CSV is already complete for the same configuration are skipped, so an interrupted
# call resumes. The quick profile's runs are a subset of the full profile's (same settings,
# seeds 0-1), so running full after quick only adds the missing seeds.
set -euo pipefail
bin_dir=${1:?usage: synthetic/reproduce.sh <bin-dir>}
profile=${PROFILE:-quick}
out_dir=${OUT_DIR:-results/synthetic}
jobs=${JOBS:-1}
impl=${IMPL:-fused}   # fused CPU kernels: same results as reference, 1.5-3.5x faster here

case $profile in
  quick) seeds=3 ;;   # 3 tasks x (softmax, fox, fpa exact, fpa straight-through) x d8 x 3 seeds = 36 runs
  full)  seeds=10 ;;  # the same grid with 10 seeds = 120 runs
  *) echo "error: PROFILE must be quick or full, got '$profile'" >&2; exit 2 ;;
esac

nice -n 5 "$bin_dir/synthetic-sweep" \
  --tasks dips,brackets,erase --models softmax,fox,fpa --fpa-grads exact,straight-through \
  --head-dims 8 --seeds "$seeds" --steps 1000 --n 64 --impl "$impl" --threads 1 -j "$jobs" \
  --dump-first-seed --out-dir "$out_dir" --out "$out_dir/summary.csv"
