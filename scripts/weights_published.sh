#!/usr/bin/env bash
# Exits 0 when <study>/<name>.pt is published, that is listed in results/weights/SHA256SUMS: the
# record of publication (scripts/publish_weights.sh). The file itself need not be in the working
# tree: published weights live in the repository's history and `make weights` fills them in
# (results/weights/README.md).
#
#   scripts/weights_published.sh <study> <name>
set -euo pipefail
STUDY=${1:?usage: weights_published.sh <study> <name>} NAME=${2:?name}
grep -q "^[0-9a-f]\{64\}  $STUDY/$NAME\.pt\$" results/weights/SHA256SUMS 2>/dev/null
