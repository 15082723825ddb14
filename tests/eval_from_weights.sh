#!/usr/bin/env bash
# scripts/eval_from_weights.sh (make reproduce PROFILE=eval), with stub evaluators that write a
# cell naming their weights file and config: every published run of each study is evaluated and
# compared with its published CSVs; a natural-filler run (passkey-natural) in both fillers, a
# Transformer without a probe; EVAL_RUNS picks runs; a number off by float rounding passes and is
# named (fails with EVAL_ROUNDING=0); a differing cell, a number off by more, a weights file that
# does not match its SHA-256, an unknown study, an EVAL_RUNS naming nothing and a malformed
# EVAL_ROUNDING fail with exit 1; two whole numbers never match to rounding.
# Usage: eval_from_weights.sh <source-dir>
set -uo pipefail
src=$(cd "$1" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
repo=$tmp/repo bin=$tmp/bin
mkdir -p "$repo/scripts" "$repo/configs/passkey" "$bin"
cp "$src/scripts/eval_from_weights.sh" "$src/scripts/compare_cells.py" "$repo/scripts/"
cp "$src/configs/passkey/eval-c6.conf" "$src/configs/passkey/eval-c6-natural.conf" "$repo/configs/passkey/"

# Stubs: one row naming the weights file, the config (passkey-eval) and the variant label; every
# call is logged. `cell` is what a published CSV holds for the same call.
cat >"$bin/stub" <<'STUB'
#!/usr/bin/env bash
tool=$(basename "$0") prev="" ckpt="" config="-" variant="-" outs=()
for a in "$@"; do
  case $prev in
    --checkpoint) ckpt=$a ;; --config) config=$(basename "$a" .conf) ;; --variant) variant=$a ;;
    --out|--summary|--positions) outs+=("$a") ;;
  esac
  prev=$a
done
echo "$tool $(basename "$ckpt" .pt) $config" >>"$STUB_LOG"
for o in "${outs[@]}"; do printf 'weights,config,variant,value,wall_s\n%s,%s,%s,-525.4330444335938,%s\n' \
  "$(basename "$ckpt" .pt)" "$config" "$variant" "$RANDOM" >"$o"; done
STUB
chmod +x "$bin/stub"
for t in lm-eval passkey-eval passkey-probe; do ln -s stub "$bin/$t"; done
cell() {  # <weights> <config> <variant> <file> [value]
  printf 'weights,config,variant,value,wall_s\n%s,%s,%s,%s,0\n' "$1" "$2" "$3" "${5:--525.4330444335938}" >"$4"
}

cd "$repo"
W=results/weights
mkdir -p $W/lm $W/passkey $W/passkey-natural results/lm results/passkey/c6 \
  results/passkey/natural-trained/natural-filler
for f in lm/small-fpa passkey/fpa-s0 passkey-natural/fpa-natural-s0 passkey-natural/transformer-natural-s1; do
  echo "$f" >"$W/$f.pt"
done
(cd $W && sha256sum lm/*.pt passkey/*.pt passkey-natural/*.pt >SHA256SUMS)
for k in eval positions summary; do cell small-fpa - - "results/lm/$k-small-fpa.csv"; done
cell fpa-s0 eval-c6 fpa results/passkey/c6/fpa-s0.csv
cell fpa-s0 eval-c6 fpa results/passkey/c6/fpa-s0.summary.csv
cell fpa-s0 - fpa results/passkey/c6/probe-fpa-s0.csv
N=results/passkey/natural-trained
for r in fpa-natural-s0:fpa-natural transformer-natural-s1:transformer-natural; do
  for ext in csv summary.csv; do
    cell "${r%:*}" eval-c6 "${r#*:}" "$N/${r%:*}.$ext"
    cell "${r%:*}" eval-c6-natural "${r#*:}" "$N/natural-filler/${r%:*}.$ext"
  done
done
cell fpa-natural-s0 - fpa-natural "$N/probe-fpa-natural-s0.csv"
export STUB_LOG=$tmp/calls

# Every study: each run evaluated once per filler, probed unless a Transformer, and equal.
scripts/eval_from_weights.sh "$bin" >"$tmp/out" 2>&1 || { cat "$tmp/out"; fail "a clean evaluation failed"; }
grep -q "all 4 published evaluations regenerated from the weights match" "$tmp/out" || { cat "$tmp/out"; fail "summary line"; }
sort "$STUB_LOG" >"$tmp/calls.sorted"
cat >"$tmp/want" <<'EOF'
lm-eval small-fpa -
passkey-eval fpa-natural-s0 eval-c6
passkey-eval fpa-natural-s0 eval-c6-natural
passkey-eval fpa-s0 eval-c6
passkey-eval transformer-natural-s1 eval-c6
passkey-eval transformer-natural-s1 eval-c6-natural
passkey-probe fpa-natural-s0 -
passkey-probe fpa-s0 -
EOF
diff "$tmp/want" "$tmp/calls.sorted" || fail "the calls above differ from the expected ones"

# EVAL_RUNS picks runs by name.
: >"$STUB_LOG"
EVAL_STUDIES=passkey-natural EVAL_RUNS='transformer-*' scripts/eval_from_weights.sh "$bin" >"$tmp/out" 2>&1 ||
  { cat "$tmp/out"; fail "EVAL_RUNS evaluation failed"; }
[[ $(sort "$STUB_LOG" | tr '\n' ';') == "passkey-eval transformer-natural-s1 eval-c6;passkey-eval transformer-natural-s1 eval-c6-natural;" ]] ||
  { cat "$STUB_LOG"; fail "EVAL_RUNS='transformer-*' ran other calls"; }

# A number one float32 rounding away (as published by another kind of CPU) matches and is named.
cell fpa-natural-s0 - fpa-natural "$N/probe-fpa-natural-s0.csv" -525.4330749511719
EVAL_STUDIES=passkey-natural scripts/eval_from_weights.sh "$bin" >"$tmp/out" 2>&1 ||
  { cat "$tmp/out"; fail "a rounding difference failed"; }
grep -q "probe-fpa-natural-s0.csv: 4 cells equal, 1 of them to rounding only" "$tmp/out" &&
  grep -q "eval: 1 of 9 files match to float rounding only" "$tmp/out" || { cat "$tmp/out"; fail "rounding not named"; }

# Refusals, each a one-line error and exit 1.
refuses() {  # <message part> <command...>
  local want=$1; shift
  if "$@" >"$tmp/out" 2>&1; then cat "$tmp/out"; fail "accepted: $*"; fi
  grep -q -- "$want" "$tmp/out" || { cat "$tmp/out"; fail "no '$want' in the error"; }
}
refuses "unknown study 'passkey-nat'" env EVAL_STUDIES=passkey-nat scripts/eval_from_weights.sh "$bin"
refuses "EVAL_RUNS='nothing' names no published weights" env EVAL_RUNS=nothing scripts/eval_from_weights.sh "$bin"
refuses "EVAL_ROUNDING='1e-x' must be a number in \[0, 1)" env EVAL_ROUNDING=1e-x scripts/eval_from_weights.sh "$bin"
refuses "EVAL_ROUNDING='2' must be a number in \[0, 1)" env EVAL_ROUNDING=2 scripts/eval_from_weights.sh "$bin"
refuses "some regenerated cells differ" env EVAL_STUDIES=passkey-natural EVAL_ROUNDING=0 scripts/eval_from_weights.sh "$bin"
cell fpa-natural-s0 - fpa-natural "$N/probe-fpa-natural-s0.csv" -525.5
refuses "some regenerated cells differ" env EVAL_STUDIES=passkey-natural scripts/eval_from_weights.sh "$bin"
cell fpa-natural-s0 - fpa-natural "$N/probe-fpa-natural-s0.csv"
cell fpa-natural-s0 eval-c6-natural fpa-nat "$N/natural-filler/fpa-natural-s0.summary.csv"
refuses "some regenerated cells differ" env EVAL_STUDIES=passkey-natural scripts/eval_from_weights.sh "$bin"
grep -q "column variant: published 'fpa-nat', regenerated 'fpa-natural'" "$tmp/out" || { cat "$tmp/out"; fail "the differing cell is not named"; }
echo changed >"$W/passkey-natural/fpa-natural-s0.pt"
refuses "does not match its SHA-256" scripts/eval_from_weights.sh "$bin"
# compare_cells.py alone: whole numbers (offsets, counts, flags) never match to rounding.
printf 'filler_offset\n100000\n' >"$tmp/a.csv"; printf 'filler_offset\n100005\n' >"$tmp/b.csv"
refuses "DIFFERS" /usr/bin/python3 scripts/compare_cells.py --rounding 1e-4 "$tmp/a.csv" "$tmp/b.csv"
echo "PASS: eval_from_weights"
