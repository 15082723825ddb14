#!/usr/bin/env bash
# scripts/publish-gpu-check.sh on a gpu-check output made from the figure fixtures' GPU CSVs
# (invented numbers): each CSV and sidecar lands under the GPU's name where REPORT.md's GPU
# sections look; a file the check did not write is skipped; an existing file, a dry run's
# sidecar, a bad GPU name and a folder without the archives are refused (exit 2).
set -uo pipefail
src=${1:?usage: publish_gpu_check.sh <repo>}
fixture=$src/tests/fixtures/figures/results
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
publish() { RESULTS="$dir/results" "$src/scripts/publish-gpu-check.sh" "$@"; }

mkdir -p "$dir/work/kernels" "$dir/work/lm" "$dir/from" "$dir/results/bench" "$dir/results/lm"
cp "$fixture/bench/attention_gpu_fixture.csv" "$dir/work/kernels/attention_gpu.csv"
cp "$fixture/bench/attention_gpu_fixture.csv.json" "$dir/work/kernels/attention_gpu.csv.json"
cp "$fixture/bench/attention_gpu_fixture_ratios.csv" "$dir/work/kernels/attention_gpu_ratios.csv"
cp "$fixture/bench/attention_gpu_fixture.csv.json" "$dir/work/kernels/attention_gpu_ratios.csv.json"
cp "$fixture/lm/gpu_throughput_fixture.csv" "$dir/work/lm/gpu_throughput.csv"
cp "$fixture/lm/gpu_throughput_fixture.csv.json" "$dir/work/lm/gpu_throughput.csv.json"
cp "$fixture/lm/plain_pytorch_throughput_fixture.csv" "$dir/work/lm/plain_pytorch_throughput.csv"
cp "$fixture/lm/gpu_throughput_fixture.csv.json" "$dir/work/lm/plain_pytorch_throughput.csv.json"
tar -czf "$dir/from/kernels.tar.gz" -C "$dir/work" kernels
tar -czf "$dir/from/lm.tar.gz" -C "$dir/work" lm

out=$(publish "$dir/from" h999 2>&1) || fail "publish exited $?: $out"
for f in bench/attention_gpu_h999.csv bench/attention_gpu_h999.csv.json bench/attention_gpu_h999_ratios.csv \
         bench/attention_gpu_h999_ratios.csv.json lm/gpu_throughput_h999.csv lm/gpu_throughput_h999.csv.json \
         lm/plain_pytorch_throughput_h999.csv lm/plain_pytorch_throughput_h999.csv.json; do
  [[ -f $dir/results/$f ]] || fail "$f not published: $out"
done
cmp -s "$dir/results/bench/attention_gpu_h999.csv" "$fixture/bench/attention_gpu_fixture.csv" || fail "the kernels CSV changed on the way"
grep -q "skipped: cpu_gpu_agreement.csv" <<<"$out" || fail "the missing agreement table is not reported: $out"
[[ $(find "$dir/results" -type f | wc -l) == 8 ]] || fail "published more or fewer than 8 files"

# refused, with exit 2 and a one-line error naming the problem
refused() {  # refused PATTERN ARGS...: the publication fails with status 2 and says PATTERN
  local pattern=$1; shift
  local err rc
  err=$(FORCE=${FORCE_IT:-0} publish "$@" 2>&1 >/dev/null); rc=$?
  [[ $rc == 2 && $err == *"$pattern"* ]] || fail "publish $* gave exit $rc, '$err' (wanted 2 and '$pattern')"
}
refused "exists (FORCE=1 replaces it)" "$dir/from" h999
refused "lower-case letters and digits" "$dir/from" H100
refused "neither kernels.tar.gz nor lm.tar.gz" "$dir/work" h998
refused "no folder" "$dir/nowhere" h998
sed -i 's/"dry_run": "0"/"dry_run": "1"/' "$dir/work/lm/gpu_throughput.csv.json"
tar -czf "$dir/from/lm.tar.gz" -C "$dir/work" lm
refused "records a dry run" "$dir/from" h998
sed -i 's/"device": "cuda"/"device": "cpu"/' "$dir/work/kernels/attention_gpu.csv.json"
tar -czf "$dir/from/kernels.tar.gz" -C "$dir/work" kernels
refused "does not record a GPU run" "$dir/from" h998
[[ ! -e $dir/results/lm/gpu_throughput_h998.csv && ! -e $dir/results/bench/attention_gpu_h998.csv ]] ||
  fail "a refused publication wrote files"
echo "PASS: publish-gpu-check.sh publishes 8 files under the GPU's name and refuses 6 bad inputs"
