#!/usr/bin/env bash
# A preset is one file (issue 31): a new configs/lm/<name>.conf, with no C++ change and no rebuild,
# is a --preset value of lm-train, trains for two steps, and is named in the run's sidecar; an
# unknown name is refused with the names there are. FPA_PRESET_DIR points lm-train at a copy of
# configs/lm with one preset added.
set -euo pipefail
bin=$1 src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
mkdir -p "$tmp/presets" "$tmp/corpus"
cp "$src"/configs/lm/*.conf "$tmp/presets/"
cat > "$tmp/presets/mini.conf" <<'CONF'
# A preset added as a file by tests/preset_is_a_file.sh.
preset = mini
hidden = 32
layers = 1
heads = 2
length = 32
steps = 2
batch = 2
lr = 0.001
warmup = 1
val-every = 2
val-windows = 2
checkpoint-every = 2
CONF
for i in $(seq 0 9); do
  /usr/bin/python3 -c "import random; r=random.Random($i); print(' '.join(''.join(r.choice('abcdefgh') for _ in range(r.randint(1,7))) for _ in range(80)))" >"$tmp/corpus/doc$i.txt"
done
export FPA_PRESET_DIR="$tmp/presets"
"$bin/lm-train" --preset mini --variant fpa --corpus "$tmp/corpus" --out-dir "$tmp/run" --threads 1 \
  >"$tmp/out.txt" 2>&1 || { cat "$tmp/out.txt"; fail "lm-train --preset mini"; }
[[ $(tail -n +2 "$tmp/run/log.csv" | wc -l) -ge 2 ]] || fail "expected 2 logged steps in log.csv"
grep -q '"preset": "mini"' "$tmp/run/log.csv.json" || fail "the sidecar does not name preset mini"
set +e
err=$("$bin/lm-train" --preset nosuch --corpus "$tmp/corpus" --out-dir "$tmp/run2" 2>&1); rc=$?
set -e
[[ $rc -eq 2 ]] || fail "unknown preset: exit $rc, expected 2"
grep -q "mini" <<<"$err" || fail "unknown preset: the message does not list the presets there are: $err"
echo "PASS a preset added as one file trains, and an unknown one is refused: $err"
