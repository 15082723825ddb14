#!/usr/bin/env bash
# GPU check of KV-cache decoding (issue 47, item 3; kernels/README.md, "KV-cache decoding on a
# device"), for a machine with a GPU and passkey-eval and lm-compress built against a LibTorch
# with CUDA (the whole suite, or the device build of cmake/DeviceLm.cmake, which step (f) of
# lm/device-check.sh builds and runs this with: STEPS=f lm/device-check.sh):
#   scripts/decode-device-check.sh [BIN]      (BIN: the built tools, default build/bin)
# Decodes a small evaluation twice, with --device cpu (the published raw-pointer path) and with
# --device $DEVICE (default cuda: the tensor path), from the published weights: passkey-eval on
# the C6 FPA, FoX and Transformer checkpoints (seed 0; lengths 1 and 2 x L, 2 keys, 2 depths,
# eight policies) and lm-compress on the small FPA and FoX models (one Brown test window, every
# default policy at 0.25, an eviction every 8 tokens). Then compares the CSVs cell by cell,
# timings aside: passkey cells (accuracy, occupancy) must be equal, lm-compress occupancies equal
# and losses within 1e-5 relative (float32 rounding; on the CPU the forced tensor path gave
# 6.5e-8). Writes $OUT (default build/decode-device-check/): the CSVs, the comparison, and
# timing.txt with each run's wall time. Exit status non-zero when a tool or a comparison fails.
# DEVICE=cpu runs the mechanics on a machine without a GPU (both runs take the CPU path).
# The weights it reads are filled by `make weights` (results/weights/README.md); through the device
# tool, carry the five files it names
# (results/weights/passkey/{fpa,fox-b5,transformer}-s0.pt,
# results/weights/lm/small-{fpa,fox}.pt), never the whole folder.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-build/bin}
DEVICE=${DEVICE:-cuda}
OUT_DIR=${OUT:-build/decode-device-check}
mkdir -p "$OUT_DIR"
W=results/weights
CORPUS=${CORPUS:-data/brown/text}
: > "$OUT_DIR/timing.txt"

timed() {  # label, command...
  local label=$1 t0 t1
  shift
  t0=$EPOCHREALTIME
  "$@" > "$OUT_DIR/$label.log" 2>&1
  t1=$EPOCHREALTIME
  awk -v a="$t0" -v b="$t1" -v l="$label" 'BEGIN { printf "%s %.2f s\n", l, b - a }' >> "$OUT_DIR/timing.txt"
}

tag_of_device=${DEVICE//:/}
for dev in cpu "$DEVICE"; do
  [[ -n ${ref_done:-} ]] && tag=$tag_of_device || tag=cpu-ref
  for run in fpa-s0 fox-b5-s0 transformer-s0; do
    timed "passkey-$run-$tag" "$BIN/passkey-eval" --checkpoint "$W/passkey/$run.pt" --device "$dev" \
      --lengths 1,2 --keys 2 --depths 2 --timed-tokens 40 \
      --policies full,fpa-certified,budget,window,h2o,snapkv,knorm,tova \
      --out "$OUT_DIR/passkey-$run-$tag.csv"
  done
  for run in small-fpa small-fox; do
    timed "compress-$run-$tag" "$BIN/lm-compress" --checkpoint "$W/lm/$run.pt" --device "$dev" \
      --corpus "$CORPUS" --max-windows 1 --budgets 0.25 --evict-every 8 \
      --out "$OUT_DIR/compress-$run-$tag.csv"
  done
  ref_done=1
done

python3 - "$OUT_DIR" "$tag_of_device" <<'EOF' | tee "$OUT_DIR/comparison.txt"
import csv, glob, os, sys
out, tag = sys.argv[1], sys.argv[2]
TIMING = {"decode_ms_per_token", "decode_cpu_ms_per_token", "prefill_ms"}
LOSS = {"nll_per_token", "ppl", "bpb", "ppl_increase"}
ok = True
for ref in sorted(glob.glob(os.path.join(out, "*-cpu-ref.csv"))):
    other = ref.replace("-cpu-ref.csv", "-%s.csv" % tag)
    a = list(csv.DictReader(open(ref))); b = list(csv.DictReader(open(other)))
    bad = [] if len(a) == len(b) else ["%d rows vs %d" % (len(a), len(b))]
    worst = 0.0
    for i, (ra, rb) in enumerate(zip(a, b)):
        for c in ra:
            if c in TIMING or ra[c] == rb.get(c): continue
            if c in LOSS:
                x, y = float(ra[c]), float(rb[c])
                d = abs(x - y) if c == "ppl_increase" else abs(x - y) / max(abs(x), 1e-30)
                worst = max(worst, d)
                if d <= 1e-5: continue
            bad.append("row %d %s: %s vs %s" % (i, c, ra[c], rb.get(c)))
    print("%s: %s (largest loss difference %.3g)" % (os.path.basename(other),
          "ok" if not bad else "DIFFERS: " + "; ".join(bad[:5]), worst))
    ok = ok and not bad
sys.exit(0 if ok else 1)
EOF
