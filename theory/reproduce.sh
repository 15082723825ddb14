#!/usr/bin/env bash
# Theory suite (T1-T5, see theory/THEORY.md): runs the four executables and writes their CSVs
# under results/theory/. PROFILE=quick (default: each executable's defaults, under a minute each
# on an idle core) or PROFILE=full (longer sequences and more trials). A study whose CSV and
# provenance sidecar exist is skipped; delete them to rerun. Exits non-zero if any verdict is FAIL.
set -euo pipefail
bin_dir=${1:?usage: theory/reproduce.sh <bin-dir>}
profile=${PROFILE:-quick}
out=results/theory
mkdir -p "$out"

case $profile in
  quick) fox=() real=() lower=() evict=() ;;
  full)  fox=(--trials 20 --long-trials 3 --lengths 1,2,3,8,64,512,2048,4096)
         real=(--trials 3 --lengths 128,1024,8192)
         lower=(--trials 5)
         evict=(--trials 200) ;;
  *) echo "error: PROFILE must be quick or full, got '$profile'" >&2; exit 2 ;;
esac

status=0
run() {  # run <name> <csv> <args...>: skips a study whose results are complete
  local name=$1 csv=$2; shift 2
  if [[ -s $csv && -s $csv.json ]]; then
    echo "theory: $name: $csv exists, skipping"
    return
  fi
  echo "theory: $name ($profile)"
  nice -n 5 "$bin_dir/$name" --threads 1 --out "$csv" "$@" | tee "$csv.log" | tail -n 1 || status=1
}

run theory-fox-special-case "$out/fox_special_case.csv" ${fox[@]+"${fox[@]}"}
run theory-realization      "$out/realization.csv"      ${real[@]+"${real[@]}"}
run theory-lower-bound      "$out/lower_bound.csv"      ${lower[@]+"${lower[@]}"}
run theory-eviction         "$out/eviction.csv"         ${evict[@]+"${evict[@]}"}
exit $status
