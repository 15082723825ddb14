#!/usr/bin/env bash
# A full disk (issue 32: tools reported success and left 0-byte CSVs, a CSV's sidecar was left at
# 0 bytes, trainers aborted with a LibTorch backtrace). Every tool that writes must exit non-zero
# with one "error:" line, leave the old files (CSV and sidecar, checkpoint) as they were and no
# temporary. The disk is a small tmpfs when this runs as root with mount permission; otherwise a
# file-size limit (ulimit -f 0, SIGXFSZ ignored, so that every write fails with EFBIG).
# Usage: full_disk.sh <bin-dir>
set -u
bin=$(cd "$1" && pwd)
py=/usr/bin/python3
tmp=$(mktemp -d)
disk=$tmp/disk
mkdir -p "$disk" "$tmp/corpus" "$tmp/raw"
mounted=0
if [[ $(id -u) -eq 0 ]] && mount -t tmpfs -o size=2m tmpfs "$disk" 2>/dev/null; then mounted=1; fi
trap '[[ $mounted -eq 1 ]] && umount "$disk"; rm -rf "$tmp"' EXIT
export OMP_NUM_THREADS=1
status=0

for i in 0 1 2 3 4 5 6 7 8 9; do
  "$py" -c "import random; r=random.Random($i); print(' '.join(''.join(r.choice('abcdefgh') for _ in range(r.randint(1,7))) for _ in range(150)))" >"$tmp/corpus/doc$i.txt"
done
echo "The/at jury/nn said/vbd ./." >"$tmp/raw/ca01"
tiny=(--heads 2 --layers 1 --length 16 --batch 2 --warmup 1 --val-every 2 --val-windows 1
      --checkpoint-every 2 --threads 1 --hidden 16 --corpus "$tmp/corpus")
pk=(--hidden 16 --heads 2 --layers 1 --length 260 --batch 1 --warmup 1 --threads 1)
setup() { "$@" >"$tmp/setup.log" 2>&1 || { echo "FAIL setup: $*"; cat "$tmp/setup.log"; exit 1; }; }
setup "$bin/lm-train" "${tiny[@]}" --steps 2 --out-dir "$disk/run"
setup "$bin/passkey-train" "${pk[@]}" --steps 1 --out-dir "$disk/pk"
for f in old.csv old.pt; do echo "old $f" >"$disk/$f"; echo '{"old": 1}' >"$disk/$f.json"; done
mkdir -p "$disk/text"; echo old >"$disk/text/ca01.txt"
if [[ $mounted -eq 1 ]]; then
  dd if=/dev/zero of="$disk/fill" bs=4k 2>/dev/null  # ends when the disk is full
  limited() { "$@"; }
else
  limited() { (ulimit -f 0; trap '' XFSZ; exec "$@"); }
fi
sums() { (cd "$disk" && find . -type f ! -name fill ! -name .lock -print0 | sort -z | xargs -0 md5sum); }

# CASE NAME COMMAND...: must fail cleanly and leave every file on the disk as it was.
case_() {
  local name=$1 before after out rc why=""
  shift
  before=$(sums)
  out=$(limited "$@" 2>&1 >/dev/null </dev/null); rc=$?
  after=$(sums)
  [[ $rc -ne 0 && $rc -lt 128 ]] || why+="exit $rc; "
  [[ $(grep -c '^error: ' <<<"$out") -eq 1 ]] || why+="no single 'error:' line; "
  grep -qE 'terminate called|frame #|Exception raised from' <<<"$out" && why+="abort or backtrace; "
  [[ $before == "$after" ]] || why+="files changed: $(diff <(echo "$before") <(echo "$after") | grep '^[<>]' | head -2 | tr '\n' ' '); "
  [[ -z $(find "$disk" -name '*.tmp.*') ]] || why+="temporaries left: $(find "$disk" -name '*.tmp.*' | head -2); "
  if [[ -n $why ]]; then echo "FAIL $name: ${why}output: $(tail -3 <<<"$out")"; status=1
  else echo "ok   $name -> $(grep '^error: ' <<<"$out")"; fi
}
case_ theory-eviction "$bin/theory-eviction" --trials 1 --eps 1e-1 --out "$disk/old.csv"
case_ synthetic-run "$bin/synthetic-run" --steps 1 --length 8 --batch 2 --warmup 1 --eval-seqs 2 --out "$disk/old.csv"
case_ attention-bench "$bin/attention-bench" --quick --lengths 16 --repeats 1 --warmup 0 --out "$disk/old.csv"
case_ lm-eval "$bin/lm-eval" --checkpoint "$disk/run" --corpus "$tmp/corpus" --out "$disk/old.csv"
case_ passkey-eval "$bin/passkey-eval" --checkpoint "$disk/pk" --lengths 1 --keys 1 --depths 1 \
  --policies full --timed-tokens 1 --out "$disk/old.csv" --summary "$tmp/summary.csv"
case_ "passkey-train --out" "$bin/passkey-train" "${pk[@]}" --steps 1 --out-dir "$tmp/pk2" --out "$disk/old.csv"
case_ lm-export "$bin/lm-export" --checkpoint "$disk/run" --out "$disk/old.pt"
case_ lm-prepare-brown "$bin/lm-prepare-brown" --raw "$tmp/raw" --out-dir "$disk/text"
case_ "lm-train checkpoint" "$bin/lm-train" "${tiny[@]}" --steps 4 --out-dir "$disk/run" --resume
case_ "passkey-train checkpoint" "$bin/passkey-train" "${pk[@]}" --steps 2 --checkpoint-every 1 --out-dir "$disk/pk" --resume
echo "disk: $([[ $mounted -eq 1 ]] && echo "2 MiB tmpfs" || echo "ulimit -f 0")"
[[ $status -eq 0 ]] && echo PASS || echo FAIL
exit $status
