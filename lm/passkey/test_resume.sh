#!/usr/bin/env bash
# passkey-train: a run stopped after 2 steps and resumed ends with the same losses (hence the same
# parameters and data position) as an uninterrupted 4-step run. Tiny model, a few seconds.
set -euo pipefail
bin=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
common=(--variant fpa --hidden 16 --heads 2 --layers 1 --length 260 --batch 2 --steps 4 --warmup 1 --seed 3 --threads 1)
"$bin/passkey-train" "${common[@]}" --out-dir "$dir/a" >/dev/null 2>&1
"$bin/passkey-train" "${common[@]}" --out-dir "$dir/b" --stop-after 2 >/dev/null 2>&1
# A stopped run leaves the log of the steps it made (header + 2 rows), replaced when it resumes.
[[ $(wc -l <"$dir/b/train_log.csv") -eq 3 ]] || { echo "FAIL: stopped run should log its 2 steps"; exit 1; }
"$bin/passkey-train" "${common[@]}" --out-dir "$dir/b" --resume >/dev/null 2>&1
a=$(cut -d, -f1-6 "$dir/a/train_log.csv"); b=$(cut -d, -f1-6 "$dir/b/train_log.csv")
[[ $(wc -l <<<"$a") -eq 5 ]] || { echo "FAIL: expected 4 logged steps"; exit 1; }
if [[ "$a" != "$b" ]]; then echo "FAIL: resumed run differs"; diff <(echo "$a") <(echo "$b"); exit 1; fi
echo "PASS resume equals uninterrupted"
