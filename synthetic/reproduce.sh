#!/usr/bin/env bash
# Synthetic target-set tasks (claim C4): one-layer softmax vs FoX vs FPA over many seeds.
#   synthetic/reproduce.sh <bin-dir>        PROFILE=quick (default), full or c4-sweep
# Settings: configs/synthetic/c4-<profile>.conf; PROFILE=c4-sweep (the head-dimension sweep, its
# own profile because it takes many hours, see synthetic/README.md) runs c4-sweep-n64.conf and
# c4-sweep-n128.conf, each into its own folder. Runs whose CSV is already complete for the same
# configuration are skipped, so an interrupted call resumes (a run cut off mid-way is run again:
# one run takes about a minute). The quick profile's runs are a subset of the full profile's
# (same settings, seeds 0-2), so running full after quick only adds the missing seeds.
set -euo pipefail
bin_dir=${1:?usage: synthetic/reproduce.sh <bin-dir>}
profile=${PROFILE:-quick}
out_dir=${OUT_DIR:-results/synthetic}
jobs=${JOBS:-1}

# sweep <config name> <output folder>; IMPL overrides the config's implementation (e.g.
# IMPL=reference); the command line wins.
sweep() {
  local config=configs/synthetic/$1.conf dir=$2
  nice -n 5 "$bin_dir/synthetic-sweep" --config "$config" ${IMPL:+--impl "$IMPL"} --threads 1 -j "$jobs" \
    --out-dir "$dir" --out "$dir/summary.csv"
}

case "$profile" in
  quick|full) sweep "c4-$profile" "$out_dir" ;;
  c4-sweep) sweep c4-sweep-n64 "$out_dir/sweep-n64"; sweep c4-sweep-n128 "$out_dir/sweep-n128" ;;
  *) echo "error: PROFILE must be quick, full or c4-sweep, got '$profile'" >&2; exit 2 ;;
esac
