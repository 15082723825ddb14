#!/usr/bin/env bash
# A kill at every rename of both trainers (issue 32: a kill between lm-train's final checkpoint
# and its final log lost log rows for good, and the resume printed "final validation loss nan").
# FPA_TEST_STOP_AT_RENAME=k makes the k-th rename of a run a SIGKILL (experiments/atomic_file.h);
# for every k, the killed run resumed must end with the log (all but the wall-time column) and
# the checkpoint's tensors of an uninterrupted run, a log sidecar that is JSON, and no temporary
# left behind.
# Usage: kill_at_rename.sh <bin-dir>
set -u
bin=$(cd "$1" && pwd)
py=/usr/bin/python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OMP_NUM_THREADS=1
status=0
mkdir -p "$tmp/corpus"
for i in 0 1 2 3 4 5 6 7 8 9; do
  "$py" -c "import random; r=random.Random($i); print(' '.join(''.join(r.choice('abcdefgh') for _ in range(r.randint(1,7))) for _ in range(150)))" >"$tmp/corpus/doc$i.txt"
done
lm=(--heads 2 --layers 1 --length 16 --batch 2 --warmup 1 --val-every 2 --val-windows 1
    --checkpoint-every 2 --threads 1 --hidden 16 --steps 4 --seed 3 --corpus "$tmp/corpus")
pk=(--hidden 16 --heads 2 --layers 1 --length 260 --batch 1 --warmup 1 --threads 1 --steps 4
    --checkpoint-every 2 --seed 3)

# The checkpoint's tensor records (model and optimiser), without the pickled progress (wall time).
tensors() { "$py" - "$1" <<'PY'
import hashlib, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    # as a sorted list: the records' names follow the optimiser state's keys (tensor addresses)
    print(" ".join(sorted(hashlib.md5(z.read(n)).hexdigest() for n in z.namelist() if "/data/" in n)))
PY
}

# NAME LOG COLUMNS TOOL ARGS...
kill_everywhere() {
  local name=$1 log=$2 cols=$3 tool=$4 k rc why ref_log ref_tensors
  shift 4
  "$bin/$tool" "$@" --out-dir "$tmp/$name-ref" >/dev/null 2>&1 || { echo "FAIL $name: reference run"; status=1; return; }
  ref_log=$(cut -d, -f"$cols" "$tmp/$name-ref/$log"); ref_tensors=$(tensors "$tmp/$name-ref/checkpoint.pt")
  for k in $(seq 1 20); do
    local dir=$tmp/$name-$k
    (FPA_TEST_STOP_AT_RENAME=$k exec "$bin/$tool" "$@" --out-dir "$dir" >/dev/null 2>&1); rc=$?
    [[ $rc -eq 0 ]] && break  # fewer than k renames: the run completed
    why=""
    [[ $rc -eq 137 ]] || why+="killed run exit $rc; "
    "$bin/$tool" "$@" --out-dir "$dir" --resume >/dev/null 2>"$dir.err" || why+="resume failed: $(tail -1 "$dir.err"); "
    grep -q 'nan' "$dir.err" && why+="resume printed nan: $(grep nan "$dir.err" | head -1); "
    [[ $(cut -d, -f"$cols" "$dir/$log" 2>/dev/null) == "$ref_log" ]] || why+="log differs from the uninterrupted run's; "
    [[ $(tensors "$dir/checkpoint.pt") == "$ref_tensors" ]] || why+="checkpoint tensors differ; "
    [[ -f $dir/$log.json ]] || why+="no log sidecar; "
    # A resumed run's sidecar lists the invocations before it (resumed_from): still JSON.
    "$py" -c 'import json, sys; d = json.load(open(sys.argv[1])); assert all("code_version" in i for i in d.get("resumed_from", []))' \
      "$dir/$log.json" 2>/dev/null || why+="the log sidecar is not JSON with resumed_from's invocations; "
    [[ -z $(find "$dir" -name '*.tmp.*') ]] || why+="temporaries left: $(find "$dir" -name '*.tmp.*'); "
    if [[ -n $why ]]; then echo "FAIL $name killed at rename $k: $why"; status=1
    else echo "ok   $name killed at rename $k, resumed: log and checkpoint as uninterrupted"; fi
  done
  [[ $k -gt 3 ]] || { echo "FAIL $name: only $((k - 1)) renames (is the hook working?)"; status=1; }
}
kill_everywhere lm-train log.csv 1-5 lm-train "${lm[@]}"
kill_everywhere passkey-train train_log.csv 1-6,8,9 passkey-train "${pk[@]}"
[[ $status -eq 0 ]] && echo PASS || echo FAIL
exit $status
