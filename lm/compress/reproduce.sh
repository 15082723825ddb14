#!/usr/bin/env bash
# Language-model compression (make reproduce PROFILE=lm-compress; issue 29, item 5): test
# perplexity of claim C5's published models (results/weights/lm/: FPA, FoX and the Transformer,
# seeds 0-2) decoded with a compressed KV cache, under every online cache policy at kept
# fractions 0.1, 0.25 and 0.5, as configs/compress/lm.conf says. Writes
# results/lm/compress/runs/<run>.csv (one row per policy and kept fraction) and
# results/lm/compress/summary.csv (every run). A run whose CSV exists with the same stamp
# (weights checksum + config) is skipped, so an interrupted study resumes run by run.
# COMPRESS_JOBS (default 2) evaluations at a time; COMPRESS_RUNS overrides the runs.
# COMPRESS_POLICIES (e.g. "duo-certified") re-runs only those policies after a change to their
# code, into amendments runs/<run>@<policies>.csv that the merge prefers for those policies'
# rows (as lm/passkey/sweep.sh's SWEEP_POLICIES; lm/passkey/merge_summaries.py).
#
#   lm/compress/reproduce.sh <bin-dir>
set -euo pipefail
BIN=${1:?usage: lm/compress/reproduce.sh <bin-dir>}
CONFIG=configs/compress/lm.conf
OUT=results/lm/compress
JOBS=${COMPRESS_JOBS:-2}
RUNS=${COMPRESS_RUNS:-"transformer transformer-s1 transformer-s2 fox fox-s1 fox-s2 fpa fpa-s1 fpa-s2"}
mkdir -p "$OUT/runs"

POLICIES=${COMPRESS_POLICIES:-}
policy_args=() suffix=""
if [[ -n "$POLICIES" ]]; then
  [[ "$POLICIES" =~ ^[a-z0-9-]+(\ [a-z0-9-]+)*$ ]] || { echo "error: COMPRESS_POLICIES: '$POLICIES' is not a list of policy names" >&2; exit 1; }
  # With `full` beside them: ppl_increase is against the full cache of the same evaluation.
  list=${POLICIES// /,}
  [[ ",$list," == *,full,* ]] || list="full,$list"
  policy_args=(--policies "$list") suffix="@${POLICIES// /+}"
fi

one() {  # <run>
  local run=$1 w="results/weights/lm/$1.pt" stamp name=$1$suffix
  [[ -f "$w" ]] || { echo "error: no published weights $w" >&2; return 1; }
  stamp="$(sha256sum < "$w" | cut -c1-16) $(md5sum < "$CONFIG" | cut -c1-12)"
  if [[ -s "$OUT/runs/$name.csv" && "$(cat "$OUT/runs/.done-$name" 2>/dev/null)" == "$stamp" ]]; then
    echo "lm-compress: $name done (skipping)"
    return 0
  fi
  echo "lm-compress: $name $(date -u +%H:%M:%S)"
  # A full evaluation of a run supersedes its amendments (same code for every policy).
  [[ -z "$suffix" ]] && rm -f "$OUT/runs/$run@"* "$OUT/runs/.done-$run@"*
  nice -n 5 "$BIN/lm-compress" --config "$CONFIG" --checkpoint "$w" --threads 1 "${policy_args[@]}" \
    --out "$OUT/runs/$name.csv"
  echo "$stamp" > "$OUT/runs/.done-$name"
}

running=0 failed=0
for run in $RUNS; do
  if (( running >= JOBS )); then wait -n || failed=1; running=$((running - 1)); fi
  one "$run" &
  running=$((running + 1))
done
while (( running > 0 )); do wait -n || failed=1; running=$((running - 1)); done
(( failed )) && { echo "error: an lm-compress evaluation failed (see above)" >&2; exit 1; }
/usr/bin/python3 lm/passkey/merge_summaries.py "$OUT" 'runs/*.csv'
