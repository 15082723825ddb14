#!/usr/bin/env bash
# The compression sweep (make reproduce PROFILE=passkey-sweep): every cache policy of
# lm/cache/README.md at every kept fraction, on every published C6 model (results/weights/
# passkey/*.pt), as configs/passkey/eval-sweep.conf says. Writes results/passkey/sweep/<run>.csv
# and <run>.summary.csv, then results/passkey/sweep/summary.csv (every run, one row per cell).
# A run whose summary exists with the same stamp (weights checksum + config) is skipped, so an
# interrupted sweep resumes run by run. SWEEP_JOBS (default 2) evaluations at a time;
# SWEEP_RUNS (e.g. "fpa-s0 fpa-s2") sweeps those runs' weights only.
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

POLICIES=${SWEEP_POLICIES:-}
policy_args=() suffix=""
if [[ -n "$POLICIES" ]]; then
  [[ "$POLICIES" =~ ^[a-z0-9-]+(\ [a-z0-9-]+)*$ ]] || { echo "error: SWEEP_POLICIES: '$POLICIES' is not a list of policy names" >&2; exit 1; }
  policy_args=(--policies "${POLICIES// /,}") suffix="@${POLICIES// /+}"
fi

one() {  # <weights file>
  local w=$1 run variant stamp name
  run=$(basename "$w" .pt) variant=${run%-s[0-9]*} name=$(basename "$w" .pt)$suffix
  stamp="$(sha256sum < "$w" | cut -c1-16) $(md5sum < "$CONFIG" | cut -c1-12)"
  if [[ -s "$OUT/$name.summary.csv" && "$(cat "$OUT/.done-$name" 2>/dev/null)" == "$stamp" ]]; then
    echo "sweep: $name done (skipping)"
    return 0
  fi
  echo "sweep: $name $(date -u +%H:%M:%S)"
  # A full sweep of a run supersedes its amendments (same code for every policy).
  [[ -z "$suffix" ]] && rm -f "$OUT/$run@"* "$OUT/.done-$run@"*
  nice -n 5 "$BIN/passkey-eval" --config "$CONFIG" --checkpoint "$w" --variant "$variant" --threads 1 \
    "${policy_args[@]}" --out "$OUT/$name.csv" --summary "$OUT/$name.summary.csv"
  echo "$stamp" > "$OUT/.done-$name"
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
