#!/usr/bin/env bash
# lm/passkey/sweep.sh's orchestration, with a stub passkey-eval: each published study's weights
# are evaluated with that study's config into that study's folder and merged; a rerun skips
# swept runs; SWEEP_STUDIES and SWEEP_RUNS pick; unknown studies or runs are refused; a changed
# config re-sweeps; a failing evaluation fails the script.
set -euo pipefail
src=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
mkdir -p "$dir/bin" "$dir/repo/lm/passkey" "$dir/repo/configs"
cp "$src/sweep.sh" "$src/merge_summaries.py" "$dir/repo/lm/passkey/"
cp -r "$src/../../configs/passkey" "$dir/repo/configs/"
# Stub evaluator: records its call; one summary row; fails for the weights named in $FAIL_RUN.
cat >"$dir/bin/passkey-eval" <<'STUB'
#!/usr/bin/env bash
prev=""; ckpt=""; config=""; summary=""; out=""
for a in "$@"; do
  case $prev in --checkpoint) ckpt=$a ;; --config) config=$a ;; --summary) summary=$a ;; --out) out=$a ;; esac; prev=$a
done
run=$(basename "$ckpt" .pt)
echo "$run $config" >>"$(dirname "$summary")/../stub-calls"
[[ -n "${FAIL_RUN:-}" && $run == "$FAIL_RUN" ]] && { echo "stub: failing" >&2; exit 1; }
echo "run,policy,budget,per_head,accuracy" >"$out"
{ echo "run,policy,budget,per_head,accuracy"; echo "$run,full,,0,1"; } >"$summary"
STUB
chmod +x "$dir/bin/passkey-eval"
cd "$dir/repo"
mkdir -p results/weights/passkey results/weights/passkey-scale
for r in fpa-s0 fox-b5-s1; do echo "$r" >results/weights/passkey/$r.pt; done
for r in fpa-h16-s0 fpa-l4-s2; do echo "$r" >results/weights/passkey-scale/$r.pt; done
fail() { echo "FAIL: $*"; exit 1; }
calls() { cat results/passkey/stub-calls 2>/dev/null | wc -l; }

lm/passkey/sweep.sh "$dir/bin" >"$dir/log" 2>&1 || { cat "$dir/log"; fail "first sweep"; }
for r in fpa-s0 fox-b5-s1; do
  [[ -s results/passkey/sweep/$r.summary.csv ]] || fail "$r not swept into results/passkey/sweep/"
  grep -qx "$r configs/passkey/eval-sweep.conf" results/passkey/stub-calls || fail "$r not swept with eval-sweep.conf"
done
for r in fpa-h16-s0 fpa-l4-s2; do
  [[ -s results/passkey/sweep-scale/$r.summary.csv ]] || fail "$r not swept into results/passkey/sweep-scale/"
  grep -qx "$r configs/passkey/eval-sweep-scale.conf" results/passkey/stub-calls || fail "$r not swept with eval-sweep-scale.conf"
done
[[ $(grep -c ',full,' results/passkey/sweep/summary.csv) -eq 2 && $(grep -c ',full,' results/passkey/sweep-scale/summary.csv) -eq 2 ]] ||
  fail "each study's summary.csv should merge its own 2 runs"
[[ $(calls) -eq 4 ]] || fail "4 evaluations expected, got $(calls)"

lm/passkey/sweep.sh "$dir/bin" >"$dir/log" 2>&1 || { cat "$dir/log"; fail "rerun"; }
[[ $(calls) -eq 4 ]] || fail "a rerun should skip swept runs"

# The C6 study in natural filler (issue 46): every C6 model, with eval-c6-natural.conf, into its
# own folder; the published folders untouched.
SWEEP_STUDIES=natural lm/passkey/sweep.sh "$dir/bin" >"$dir/log" 2>&1 || { cat "$dir/log"; fail "natural"; }
for r in fpa-s0 fox-b5-s1; do
  [[ -s results/passkey/c6-natural/$r.summary.csv ]] || fail "$r not evaluated into results/passkey/c6-natural/"
  grep -qx "$r configs/passkey/eval-c6-natural.conf" results/passkey/stub-calls || fail "$r not evaluated with eval-c6-natural.conf"
done
[[ $(calls) -eq 6 ]] || fail "6 evaluations expected after the natural study, got $(calls)"

echo "# changed" >>configs/passkey/eval-sweep-scale.conf
SWEEP_STUDIES=passkey-scale SWEEP_RUNS=fpa-l4-s2 lm/passkey/sweep.sh "$dir/bin" >"$dir/log" 2>&1 || { cat "$dir/log"; fail "one run"; }
[[ $(calls) -eq 7 ]] && [[ $(tail -n 1 results/passkey/stub-calls) == "fpa-l4-s2 configs/passkey/eval-sweep-scale.conf" ]] ||
  fail "SWEEP_RUNS=fpa-l4-s2 after a config change should re-sweep that run only"

for bad in "SWEEP_STUDIES=nope" "SWEEP_RUNS=fpa-s9" "SWEEP_STUDIES=passkey SWEEP_RUNS=fpa-h16-s0" "SWEEP_POLICIES=Bad!"; do
  if env $bad lm/passkey/sweep.sh "$dir/bin" >"$dir/log" 2>&1; then fail "$bad should be refused"; fi
  grep -q "^error: " "$dir/log" || fail "$bad: no one-line error"
done

rm -f results/passkey/sweep/.done-fpa-s0
if FAIL_RUN=fpa-s0 lm/passkey/sweep.sh "$dir/bin" >"$dir/log" 2>&1; then fail "a failing evaluation should fail the sweep"; fi
grep -q "a sweep evaluation failed" "$dir/log" || fail "the failure is not reported"
echo "sweep.sh orchestration: ok"
