#!/usr/bin/env bash
# Synthetic target-set tasks (claim C4): one-layer softmax vs FoX vs FPA over many seeds.
#   synthetic/reproduce.sh <bin-dir>        PROFILE=quick (default) or PROFILE=full
# Settings: configs/synthetic/c4-<profile>.conf. Runs whose CSV is already complete for the same configuration are skipped, so an interrupted
# call resumes. The quick profile's runs are a subset of the full profile's (same settings,
# seeds 0-1), so running full after quick only adds the missing seeds.
set -euo pipefail
bin_dir=${1:?usage: synthetic/reproduce.sh <bin-dir>}
profile=${PROFILE:-quick}
out_dir=${OUT_DIR:-results/synthetic}
jobs=${JOBS:-1}
config=configs/synthetic/c4-$profile.conf   # the study's settings
[[ -f $config ]] || { echo "error: PROFILE must be quick or full (no $config)" >&2; exit 2; }

# IMPL overrides the config's implementation (e.g. IMPL=reference); the command line wins.
nice -n 5 "$bin_dir/synthetic-sweep" --config "$config" ${IMPL:+--impl "$IMPL"} --threads 1 -j "$jobs" \
  --out-dir "$out_dir" --out "$out_dir/summary.csv"
