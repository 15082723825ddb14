#!/usr/bin/env bash
# Two writers on one run directory (issue 32): while a trainer runs, a second one on its
# --out-dir fails at once (exit non-zero) with one line naming the first one's pid (from
# <out-dir>/.lock); the first finishes unharmed. Both lm-train and passkey-train.
# Usage: run_lock.sh <bin-dir>
set -u
bin=$(cd "$1" && pwd)
py=/usr/bin/python3
tmp=$(mktemp -d)
first=""
trap '[[ -n $first ]] && kill "$first" 2>/dev/null; rm -rf "$tmp"' EXIT
export OMP_NUM_THREADS=1
status=0
mkdir -p "$tmp/corpus"
for i in 0 1 2 3 4 5 6 7 8 9; do
  "$py" -c "import random; r=random.Random($i); print(' '.join(''.join(r.choice('abcdefgh') for _ in range(r.randint(1,7))) for _ in range(150)))" >"$tmp/corpus/doc$i.txt"
done
lm=(--heads 2 --layers 1 --length 16 --batch 2 --warmup 1 --val-every 2 --val-windows 1
    --checkpoint-every 2 --threads 1 --hidden 16 --corpus "$tmp/corpus")
pk=(--hidden 16 --heads 2 --layers 1 --length 260 --batch 1 --warmup 1 --threads 1 --checkpoint-every 1)

# NAME TOOL ARGS...: the first writer runs many steps; the second (a --resume of the same run)
# starts once the first holds the lock.
two_writers() {
  local name=$1 tool=$2 out rc holder
  shift 2
  "$bin/$tool" "$@" --steps 100000 --out-dir "$tmp/$name" >/dev/null 2>"$tmp/$name.first" &
  first=$!
  for _ in $(seq 600); do  # up to a minute for the first one's start-up
    [[ -s $tmp/$name/checkpoint.pt && $(cat "$tmp/$name/.lock" 2>/dev/null) == "$first" ]] && break
    sleep 0.1
  done
  holder=$(cat "$tmp/$name/.lock" 2>/dev/null)
  out=$("$bin/$tool" "$@" --steps 100000 --out-dir "$tmp/$name" --resume 2>&1 >/dev/null); rc=$?
  local why=""
  [[ $holder == "$first" ]] || why+="lock holds '$holder', not the first writer's pid $first; "
  [[ $rc -ne 0 ]] || why+="second writer exit 0; "
  [[ $(grep -c '' <<<"$out") -eq 1 && $out == "error: "*"pid $first"* ]] || why+="no one-line error naming pid $first; "
  kill -0 "$first" 2>/dev/null || why+="the first writer is gone: $(tail -1 "$tmp/$name.first"); "
  kill "$first" 2>/dev/null; wait "$first" 2>/dev/null; first=""
  # The lock goes with its process: after the first is killed, a resume takes it.
  "$bin/$tool" "$@" --steps 2 --out-dir "$tmp/$name" --resume >/dev/null 2>"$tmp/$name.third" ||
    why+="no resume after the holder died: $(tail -1 "$tmp/$name.third"); "
  if [[ -n $why ]]; then echo "FAIL $name: ${why}output: $out"; status=1
  else echo "ok   $name -> $out"; fi
}
two_writers lm-train lm-train "${lm[@]}"
two_writers passkey-train passkey-train "${pk[@]}"
[[ $status -eq 0 ]] && echo PASS || echo FAIL
exit $status
