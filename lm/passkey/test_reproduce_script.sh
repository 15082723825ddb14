#!/usr/bin/env bash
# lm/passkey/reproduce.sh's orchestration, with stub passkey-train/passkey-eval (a second):
# every (seed, variant) run is trained, evaluated and merged; a rerun skips finished runs; a run
# folder trained with another recipe is moved aside, not resumed; a failing run fails the script;
# in a published folder (passkey-scale here, c6 alike) a run is done only with its weights.
set -euo pipefail
src=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
mkdir -p "$dir/bin" "$dir/repo/lm/passkey"
cp "$src/reproduce.sh" "$src/summarize.py" "$src/merge_summaries.py" "$dir/repo/lm/passkey/"
mkdir -p "$dir/repo/scripts" && cp "$src/../../scripts/publish_weights.sh" "$src/../../scripts/weights_published.sh" "$dir/repo/scripts/"
mkdir -p "$dir/repo/configs" && cp -r "$src/../../configs/passkey" "$dir/repo/configs/"
# Stub trainer: records its flags; fails for the run named in $FAIL_RUN.
cat >"$dir/bin/passkey-train" <<'STUB'
#!/usr/bin/env bash
out_dir=""; prev=""
for a in "$@"; do [[ $prev == --out-dir ]] && out_dir=$a; prev=$a; done
echo "$*" >>"$out_dir/stub-train-calls"
[[ -n "${FAIL_RUN:-}" && "$out_dir" == *"/$FAIL_RUN" ]] && { echo "stub: failing" >&2; exit 3; }
exit 0
STUB
# Stub evaluator: one summary row per call.
cat >"$dir/bin/passkey-eval" <<'STUB'
#!/usr/bin/env bash
prev=""; ckpt=""; variant=""; summary=""
for a in "$@"; do
  case $prev in --checkpoint) ckpt=$a ;; --variant) variant=$a ;; --summary) summary=$a ;; esac; prev=$a
done
{ echo "run,variant,train_len,eval_len,policy,budget,per_head,occupancy,accuracy,n_keys,decode_ms_per_token"
  echo "$(basename "$ckpt"),$variant,512,4096,full,,0,1,0.5,2,1.0"; } >"$summary"
STUB
# Stub probe: writes its --out.
cat >"$dir/bin/passkey-probe" <<'STUB'
#!/usr/bin/env bash
prev=""; out=""
for a in "$@"; do [[ $prev == --out ]] && out=$a; prev=$a; done
echo "variant,run" >"$out"
STUB
# Stub exporter: writes its --out.
cat >"$dir/bin/lm-export" <<'STUB'
#!/usr/bin/env bash
prev=""; out=""
for a in "$@"; do [[ $prev == --out ]] && out=$a; prev=$a; done
echo "weights" >"$out"
STUB
chmod +x "$dir/bin/"*
cd "$dir/repo"
export PROFILE=quick PASSKEY_QUICK_STEPS=3 PASSKEY_SEEDS="0 1" PASSKEY_VARIANTS="fpa transformer" PASSKEY_JOBS=3
fail() { echo "FAIL: $*"; exit 1; }

lm/passkey/reproduce.sh "$dir/bin" >"$dir/log1" 2>&1 || { cat "$dir/log1"; fail "first run"; }
for r in fpa-s0 fpa-s1 transformer-s0 transformer-s1; do
  [[ -s results/passkey/quick/$r.summary.csv ]] || fail "$r not evaluated"
  grep -q -- "--config configs/passkey/c6-${r%-s*}.conf --steps 3 " "runs/passkey/quick/$r/stub-train-calls" ||
    fail "$r not trained from its config file with the quick profile's step cap"
done
[[ $(grep -c ',full,' results/passkey/summary.csv) -eq 4 ]] || fail "summary.csv should merge the 4 runs"
[[ -s results/passkey/quick/probe-fpa-s0.csv && ! -e results/passkey/quick/probe-transformer-s0.csv ]] ||
  fail "FPA runs are probed, Transformer runs (no bias) are not"

lm/passkey/reproduce.sh "$dir/bin" >"$dir/log2" 2>&1 || fail "second run"
[[ $(grep -c "done (skipping)" "$dir/log2") -eq 4 ]] || { cat "$dir/log2"; fail "finished runs not skipped"; }

# Another recipe in a run folder: moved aside, retrained; the stamp no longer matches either.
echo "steps=1 something else" >runs/passkey/quick/fpa-s0/recipe
rm results/passkey/quick/.done-fpa-s0
lm/passkey/reproduce.sh "$dir/bin" >"$dir/log3" 2>&1 || fail "third run"
grep -q "fpa-s0 was trained with another recipe" "$dir/log3" || { cat "$dir/log3"; fail "stale run folder not moved aside"; }
ls -d runs/passkey/quick/fpa-s0.old-* >/dev/null || fail "no folder moved aside"

# A failing run fails the script (after the others finished).
rm results/passkey/quick/.done-transformer-s1
if FAIL_RUN=transformer-s1 lm/passkey/reproduce.sh "$dir/bin" >"$dir/log4" 2>&1; then fail "a failed run should fail the script"; fi
grep -q "a passkey run failed" "$dir/log4" || { cat "$dir/log4"; fail "no error line"; }
# A published folder: each run's weights published; a run without them is retrained.
scale=(env PROFILE=passkey-scale PASSKEY_SEEDS=0 PASSKEY_VARIANTS="fpa-h16 fpa-l4")
"${scale[@]}" lm/passkey/reproduce.sh "$dir/bin" >"$dir/log5" 2>&1 || { cat "$dir/log5"; fail "scale run"; }
for r in fpa-h16-s0 fpa-l4-s0; do
  [[ -s results/weights/passkey-scale/$r.pt ]] || fail "$r: weights not published"
  grep -q "passkey-scale/$r.pt" results/weights/SHA256SUMS || fail "$r: no checksum"
done
[[ $(grep -c ',full,' results/passkey/scale/summary.csv) -eq 2 ]] || fail "scale summary should have its 2 runs"
[[ $(grep -c ',full,' results/passkey/summary.csv) -eq 4 ]] || fail "the scale runs must stay out of C6's summary"
rm results/weights/passkey-scale/fpa-h16-s0.pt  # publication is the SHA256SUMS line, not the file
sed -i '/  passkey-scale\/fpa-l4-s0\.pt$/d' results/weights/SHA256SUMS
"${scale[@]}" lm/passkey/reproduce.sh "$dir/bin" >"$dir/log6" 2>&1 || fail "scale rerun"
grep -q "fpa-h16-s0 done (skipping)" "$dir/log6" || { cat "$dir/log6"; fail "a published run not skipped"; }
grep -q "training fpa-l4-s0" "$dir/log6" || { cat "$dir/log6"; fail "a run without weights not retrained"; }
echo "PASS passkey reproduce.sh orchestration"
