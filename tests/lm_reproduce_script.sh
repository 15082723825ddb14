#!/usr/bin/env bash
# lm/reproduce.sh's orchestration with stub lm-train/lm-eval/lm-export: every (seed, variant) run
# of a profile is trained, evaluated, published and merged; a rerun skips finished runs; beyond
# the quick profile a run is complete only with its weights (one without is retrained); LM_JOBS
# runs at a time; a failing run fails the script after the others.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
mkdir -p "$dir/bin" "$dir/repo/lm" "$dir/repo/scripts" "$dir/repo/configs"
cp "$src/lm/reproduce.sh" "$src/lm/combine_summaries.py" "$dir/repo/lm/"
cp "$src/scripts/publish_weights.sh" "$src/scripts/weights_published.sh" "$dir/repo/scripts/"
cp -r "$src/configs/lm" "$dir/repo/configs/"
printf '#!/usr/bin/env bash\nexit 0\n' >"$dir/repo/lm/fetch_brown.sh"  # no corpus needed by the stubs
arg() {  # the stubs' flag reader: arg <flag> <args...>
  cat <<'FN'
val() { local want=$1 prev=""; shift; for a in "$@"; do [[ $prev == "$want" ]] && { echo "$a"; return; }; prev=$a; done; }
FN
}
{ echo '#!/usr/bin/env bash'; arg; cat <<'STUB'
out_dir=$(val --out-dir "$@"); mkdir -p "$out_dir"; echo "$*" >>"$out_dir/calls"
[[ -n "${FAIL_RUN:-}" && "$out_dir" == *"/$FAIL_RUN" ]] && { echo "stub: failing" >&2; exit 3; }
echo "step,tokens,train_loss,val_loss,lr,elapsed_s" >"$(val --out "$@")"
STUB
} >"$dir/bin/lm-train"
{ echo '#!/usr/bin/env bash'; arg; cat <<'STUB'
ck=$(val --checkpoint "$@")
echo "variant,split" >"$(val --out "$@")"; echo "variant,position" >"$(val --positions "$@")"
{ echo "preset,variant,seed,params,train_tokens,tokens_per_s,val_ppl,test_ppl,test_bpb,val_bpb,steps,impl,fpa_backward,gate_params,config"
  echo "tiny,$(basename "$ck"),0,1,1,1,1,1,1,1,1,fused,,0,"; } >"$(val --summary "$@")"
STUB
} >"$dir/bin/lm-eval"
{ echo '#!/usr/bin/env bash'; arg; echo 'echo weights >"$(val --out "$@")"'; } >"$dir/bin/lm-export"
chmod +x "$dir/bin/"* "$dir/repo/lm/fetch_brown.sh"
cd "$dir/repo"
export PROFILE=lm-small LM_SEEDS="0 1" LM_VARIANTS="fox fpa"

lm/reproduce.sh "$dir/bin" >"$dir/log1" 2>&1 || { cat "$dir/log1"; fail "first run"; }
for r in small-fox small-fpa small-fox-s1 small-fpa-s1; do
  [[ -s results/lm/summary-$r.csv ]] || fail "$r not evaluated"
  [[ -s results/weights/lm/$r.pt ]] || fail "$r: weights not published"
done
[[ $(grep -c '^tiny,' results/lm/summary.csv) -eq 4 ]] || fail "summary.csv should merge the 4 runs"

lm/reproduce.sh "$dir/bin" >"$dir/log2" 2>&1 || fail "second run"
[[ $(grep -c "done (skipping)" "$dir/log2") -eq 4 ]] || { cat "$dir/log2"; fail "finished runs not skipped"; }

# Publication is the SHA256SUMS line, not the file (which `make weights` fills from history).
rm results/weights/lm/small-fox.pt
sed -i '/  lm\/small-fpa-s1\.pt$/d' results/weights/SHA256SUMS
lm/reproduce.sh "$dir/bin" >"$dir/log3" 2>&1 || fail "third run"
grep -q "training small-fpa-s1" "$dir/log3" || { cat "$dir/log3"; fail "a run without weights not retrained"; }
grep -q "small-fox done (skipping)" "$dir/log3" || { cat "$dir/log3"; fail "a published run not in the tree retrained"; }
[[ $(grep -c "done (skipping)" "$dir/log3") -eq 3 ]] || { cat "$dir/log3"; fail "the published runs not skipped"; }

rm results/lm/.done-small-fox-s1
if FAIL_RUN=small-fox-s1 lm/reproduce.sh "$dir/bin" >"$dir/log4" 2>&1; then fail "a failed run should fail the script"; fi
grep -q "an lm run failed" "$dir/log4" || { cat "$dir/log4"; fail "no error line"; }
echo "PASS lm reproduce.sh orchestration"
