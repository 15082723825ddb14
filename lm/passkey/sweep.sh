#!/usr/bin/env bash
# The compression sweep (make reproduce PROFILE=passkey-sweep): every cache policy of
# lm/cache/README.md on every published passkey model, one study at a time:
#   passkey       results/weights/passkey/*.pt (the C6 study) at kept fractions 0.1, 0.25, 0.5,
#                 4L and 8L (configs/passkey/eval-sweep.conf) -> results/passkey/sweep/
#   passkey-scale results/weights/passkey-scale/*.pt (issue 30's shapes) at 25% kept, 8L only
#                 (configs/passkey/eval-sweep-scale.conf: the column the occupancy-floor table
#                 needs, at a third of the cost) -> results/passkey/sweep-scale/
# Each writes <folder>/<run>.csv and <run>.summary.csv, then <folder>/summary.csv (every run, one
# row per cell). A run whose summary exists with the same stamp (weights checksum + config) is
# skipped, so an interrupted sweep resumes run by run. SWEEP_JOBS (default 2) evaluations at a
# time; SWEEP_STUDIES (default "passkey passkey-scale") picks studies; SWEEP_RUNS (e.g.
# "fpa-s0 fpa-s2") sweeps those runs' weights only.
#
#   natural       issue 46: the C6 study's evaluation (configs/passkey/eval-c6-natural.conf:
#                 eval-c6.conf's keys and depths) with natural filler, a passage of the Brown
#                 test split per prompt, on every C6 model -> results/passkey/c6-natural/
#   natural-sweep the compression sweep (configs/passkey/eval-sweep-natural.conf) with natural
#                 filler, on the C6 models that learned the task (lm/passkey/learned_runs.py)
#                 -> results/passkey/sweep-natural/
# The natural studies read data/brown/text (make data-brown); they run when SWEEP_STUDIES names
# them, as make reproduce PROFILE=passkey-sweep does.
#
# SWEEP_POLICIES (e.g. "duo-certified") re-runs only those policies, after a change to their code:
# each run's cells go to <run>@<policies>.csv and .summary.csv (an amendment, with its own
# sidecar and code version), and the merge takes that policy's cells from the amendment instead
# of <run>.summary.csv. A policy's cells do not depend on which other policies run beside it
# (same prompts, same seed), so an amendment equals a full re-sweep of that policy.
#
#   lm/passkey/sweep.sh <bin-dir>
set -euo pipefail
BIN=${1:?usage: lm/passkey/sweep.sh <bin-dir>}
JOBS=${SWEEP_JOBS:-2}
STUDIES=${SWEEP_STUDIES:-"passkey passkey-scale"}
shopt -s nullglob

study_config() { case "$1" in passkey) echo configs/passkey/eval-sweep.conf ;;
                              passkey-scale) echo configs/passkey/eval-sweep-scale.conf ;;
                              natural) echo configs/passkey/eval-c6-natural.conf ;;
                              natural-sweep) echo configs/passkey/eval-sweep-natural.conf ;;
                              *) echo "error: SWEEP_STUDIES: unknown study '$1' (passkey, passkey-scale, natural or natural-sweep)" >&2; exit 1 ;; esac; }
study_out() { case "$1" in passkey) echo results/passkey/sweep ;; passkey-scale) echo results/passkey/sweep-scale ;;
                           natural) echo results/passkey/c6-natural ;; natural-sweep) echo results/passkey/sweep-natural ;; esac; }
study_weights() { case "$1" in natural|natural-sweep) echo passkey ;; *) echo "$1" ;; esac; }

# The weights to sweep, as "<study> <file>" lines.
jobs=()
for study in $STUDIES; do
  study_config "$study" > /dev/null
  learned=""
  [[ $study == natural-sweep ]] && learned=" $(lm/passkey/learned_runs.py | tr '\n' ' ')"
  for w in results/weights/"$(study_weights "$study")"/*.pt; do
    run=$(basename "$w" .pt)
    if [[ -n "${SWEEP_RUNS:-}" && " $SWEEP_RUNS " != *" $run "* ]]; then continue; fi
    if [[ -n "$learned" && "$learned " != *" $run "* ]]; then continue; fi
    jobs+=("$study $w")
  done
done
if [[ -n "${SWEEP_RUNS:-}" ]]; then
  for r in $SWEEP_RUNS; do
    found=0
    for j in "${jobs[@]}"; do [[ $(basename "${j#* }" .pt) == "$r" ]] && found=1; done
    (( found )) || { echo "error: SWEEP_RUNS: no weights for '$r' in the studies $STUDIES" >&2; exit 1; }
  done
fi
(( ${#jobs[@]} )) || { echo "error: no published passkey weights under results/weights/{${STUDIES// /,}}/" >&2; exit 1; }

POLICIES=${SWEEP_POLICIES:-}
policy_args=() suffix=""
if [[ -n "$POLICIES" ]]; then
  [[ "$POLICIES" =~ ^[a-z0-9-]+(\ [a-z0-9-]+)*$ ]] || { echo "error: SWEEP_POLICIES: '$POLICIES' is not a list of policy names" >&2; exit 1; }
  policy_args=(--policies "${POLICIES// /,}") suffix="@${POLICIES// /+}"
fi

one() {  # <study> <weights file>
  local study=$1 w=$2 run variant stamp name config out
  config=$(study_config "$study") out=$(study_out "$study")
  run=$(basename "$w" .pt) variant=${run%-s[0-9]*} name=$(basename "$w" .pt)$suffix
  mkdir -p "$out"
  stamp="$(sha256sum < "$w" | cut -c1-16) $(md5sum < "$config" | cut -c1-12)"
  if [[ -s "$out/$name.summary.csv" && "$(cat "$out/.done-$name" 2>/dev/null)" == "$stamp" ]]; then
    echo "sweep: $study/$name done (skipping)"
    return 0
  fi
  echo "sweep: $study/$name $(date -u +%H:%M:%S)"
  # A full sweep of a run supersedes its amendments (same code for every policy).
  [[ -z "$suffix" ]] && rm -f "$out/$run@"* "$out/.done-$run@"*
  nice -n 5 "$BIN/passkey-eval" --config "$config" --checkpoint "$w" --variant "$variant" --threads 1 \
    "${policy_args[@]}" --out "$out/$name.csv" --summary "$out/$name.summary.csv"
  echo "$stamp" > "$out/.done-$name"
}

running=0 failed=0
for j in "${jobs[@]}"; do
  if (( running >= JOBS )); then wait -n || failed=1; running=$((running - 1)); fi
  one $j &
  running=$((running + 1))
done
while (( running > 0 )); do wait -n || failed=1; running=$((running - 1)); done
(( failed )) && { echo "error: a sweep evaluation failed (see above)" >&2; exit 1; }
for study in $STUDIES; do
  out=$(study_out "$study")
  [[ -d $out ]] && /usr/bin/python3 lm/passkey/merge_summaries.py "$out"
done
exit 0
