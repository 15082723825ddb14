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

# The same with a length curriculum and held-out checks: the resumed run's losses, lengths and
# check results equal the uninterrupted run's (the log drops only the elapsed-time column).
cur=(--curriculum 255:3 --check-every 2 --check-keys 3)
"$bin/passkey-train" "${common[@]}" "${cur[@]}" --out-dir "$dir/c" >/dev/null 2>&1
"$bin/passkey-train" "${common[@]}" "${cur[@]}" --out-dir "$dir/d" --stop-after 3 >/dev/null 2>&1
"$bin/passkey-train" "${common[@]}" "${cur[@]}" --out-dir "$dir/d" --resume >/dev/null 2>&1
c=$(cut -d, -f1-6,8,9 "$dir/c/train_log.csv"); d=$(cut -d, -f1-6,8,9 "$dir/d/train_log.csv")
[[ $(cut -d, -f7 <<<"$c" | tr '\n' ' ') == "length 255 255 255 260 " ]] || { echo "FAIL: curriculum lengths: $c"; exit 1; }
[[ $(cut -d, -f8 <<<"$c" | grep -c '^[01]\.') -eq 2 ]] || { echo "FAIL: expected checks at steps 2 and 4: $c"; exit 1; }
if [[ "$c" != "$d" ]]; then echo "FAIL: resumed curriculum run differs"; diff <(echo "$c") <(echo "$d"); exit 1; fi

# Stop when learned (a threshold of 0 passes the first check), then a resume has nothing to do.
"$bin/passkey-train" "${common[@]}" "${cur[@]}" --learned-accuracy 0 --stop-when-learned --out-dir "$dir/e" 2>"$dir/e.err" >/dev/null
grep -q "learned the task at step 2" "$dir/e.err" || { echo "FAIL: no stop at the first check"; cat "$dir/e.err"; exit 1; }
sidecar=$(cat "$dir/e/train_log.csv.json")
"$bin/passkey-train" "${common[@]}" "${cur[@]}" --learned-accuracy 0 --stop-when-learned --out-dir "$dir/e" --resume 2>"$dir/e.err" >/dev/null
grep -q "learned the task at step 2; nothing to do" "$dir/e.err" || { echo "FAIL: resume after learning trained on"; cat "$dir/e.err"; exit 1; }
[[ $(wc -l <"$dir/e/train_log.csv") -eq 3 ]] || { echo "FAIL: a learned run's log should keep its 2 steps"; exit 1; }
[[ "$(cat "$dir/e/train_log.csv.json")" == "$sidecar" ]] || { echo "FAIL: a run with nothing to do rewrote its log's provenance"; exit 1; }
# Asked for a copy (--out) it has not written yet, it copies the training's log and sidecar.
"$bin/passkey-train" "${common[@]}" "${cur[@]}" --learned-accuracy 0 --stop-when-learned --out-dir "$dir/e" --resume --out "$dir/copy.csv" 2>/dev/null >/dev/null
cmp -s "$dir/copy.csv" "$dir/e/train_log.csv" || { echo "FAIL: --out of a finished run is not its log"; exit 1; }
[[ "$(cat "$dir/copy.csv.json")" == "$sidecar" ]] || { echo "FAIL: --out of a finished run does not carry the training's sidecar"; exit 1; }
# A run resumed at its step cap has nothing to do either, and leaves its log's provenance.
sidecar=$(cat "$dir/a/train_log.csv.json")
"$bin/passkey-train" "${common[@]}" --out-dir "$dir/a" --resume 2>"$dir/a.err" >/dev/null
grep -q "reached the step cap (4); nothing to do" "$dir/a.err" || { echo "FAIL: resume at the cap"; cat "$dir/a.err"; exit 1; }
[[ "$(cat "$dir/a/train_log.csv.json")" == "$sidecar" ]] || { echo "FAIL: a run at its cap rewrote its log's provenance"; exit 1; }
echo "PASS resume equals uninterrupted (also with a curriculum and held-out checks); stop when learned"
