#!/usr/bin/env bash
# Theory suite (T1-T5, see theory/THEORY.md): runs the four executables and writes their CSVs
# under results/theory/. PROFILE=quick (default: under a minute each on an idle core) or
# PROFILE=full (longer sequences and more trials); each tool's settings are in
# configs/theory/<tool>-<profile>.conf. A study whose CSV and provenance sidecar exist is
# skipped; delete them to rerun. Exits non-zero if any verdict is FAIL.
set -euo pipefail
bin_dir=${1:?usage: theory/reproduce.sh <bin-dir>}
profile=${PROFILE:-quick}
out=results/theory
mkdir -p "$out"
[[ $profile == quick || $profile == full ]] ||
  { echo "error: PROFILE must be quick or full, got '$profile'" >&2; exit 2; }

status=0
run() {  # run <tool> <csv>: skips a study whose results are complete
  local name=$1 csv=$2
  local config=configs/theory/${name#theory-}-$profile.conf
  if [[ -s $csv && -s $csv.json ]]; then
    echo "theory: $name: $csv exists, skipping"
    return
  fi
  echo "theory: $name ($config)"
  nice -n 5 "$bin_dir/$name" --config "$config" --threads 1 --out "$csv" | tee "$csv.log" | tail -n 1 ||
    status=1
}

run theory-fox-special-case "$out/fox_special_case.csv"
run theory-realization      "$out/realization.csv"
run theory-lower-bound      "$out/lower_bound.csv"
run theory-eviction         "$out/eviction.csv"
exit $status
