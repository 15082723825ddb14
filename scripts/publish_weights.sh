#!/usr/bin/env bash
# Publishes a trained run's weights: exports its checkpoint as a weights file (lm-export --format
# weights: parameters, configuration, training record; no optimiser state) to
# results/weights/<study>/<name>.pt and records its SHA-256 in results/weights/SHA256SUMS
# (`sha256sum -c` format, paths relative to results/weights). Safe to run from parallel jobs.
#
#   scripts/publish_weights.sh <bin-dir> <study> <run-dir> <name>
set -euo pipefail
BIN=${1:?usage: publish_weights.sh <bin-dir> <study> <run-dir> <name>}
STUDY=${2:?study (lm or passkey)} RUN=${3:?run directory} NAME=${4:?name}
ROOT=results/weights
mkdir -p "$ROOT/$STUDY"
"$BIN/lm-export" --format weights --checkpoint "$RUN" --out "$ROOT/$STUDY/$NAME.pt"
(
  flock 9
  sum=$(cd "$ROOT" && sha256sum "$STUDY/$NAME.pt")
  { grep -v "  $STUDY/$NAME.pt\$" "$ROOT/SHA256SUMS" 2>/dev/null || true; echo "$sum"; } \
    | sort -k2 > "$ROOT/SHA256SUMS.tmp.$$"
  mv "$ROOT/SHA256SUMS.tmp.$$" "$ROOT/SHA256SUMS"
) 9> "$ROOT/.SHA256SUMS.lock"
echo "weights: $ROOT/$STUDY/$NAME.pt ($(du -h "$ROOT/$STUDY/$NAME.pt" | cut -f1))"
