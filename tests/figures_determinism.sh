#!/usr/bin/env bash
# Determinism of the reporting pipeline (issue 8): the figure script run twice on the same CSVs
# writes identical tables (timing columns excepted) and identical figures; a tiny synthetic sweep
# run twice gives identical tables; the verdict rules give the expected verdicts on the fixture;
# and a results/ tree with no CSVs reports every study as "not run" without crashing.
# Usage: figures_determinism.sh <repo-root> [<bin-dir>]
set -euo pipefail
repo=$1
bin=${2:-}
py=/usr/bin/python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
make_all() { "$py" "$repo/paper_figures/make_all.py" --results "$1" >"$1.log" 2>&1 || { cat "$1.log"; exit 1; }; }
fail() { echo "FAIL: $*"; exit 1; }

# 1. Fixture CSVs (every study's format), twice.
for run in a b; do
  cp -r "$repo/tests/fixtures/figures/results" "$tmp/$run"
  make_all "$tmp/$run"
done
"$py" "$repo/paper_figures/compare_tables.py" "$tmp/a/figures" "$tmp/b/figures" || fail "tables differ between two runs"
for png in "$tmp"/a/figures/*.png; do
  cmp -s "$png" "$tmp/b/figures/$(basename "$png")" || fail "figure $(basename "$png") differs between two runs"
  pdf=${png%.png}.pdf
  [[ -s $pdf ]] || fail "no PDF next to $(basename "$png")"
  cmp -s "$pdf" "$tmp/b/figures/$(basename "$pdf")" || fail "figure $(basename "$pdf") differs between two runs"
done
n_png=$(ls "$tmp"/a/figures/*.png | wc -l)
[[ $n_png -ge 8 ]] || fail "expected at least 8 figures from the fixture, got $n_png"
echo "ok   fixture: tables and $n_png figures (PNG and PDF) identical across two runs"

# 2. Verdict rules on the fixture: C1, C2, C4, C6 hold there; C3's theorem has a failing row; C5
# has one run per variant, fewer than its 3 seeds. (tests/verdict_rules.py drives C1-C6 to every
# verdict.)
claims="$tmp/a/figures/claims.md"
for c in C1 C2 C4 C6; do
  grep -q "^| $c |.*| \*\*reproduced\*\* |$" "$claims" || fail "$c: expected 'reproduced' on the fixture"
done
grep -q "^| C3 |.*| \*\*not reproduced\*\* |$" "$claims" || fail "C3: expected 'not reproduced' on the fixture"
grep -q "^| C5 |.*| \*\*not tested at this scale\*\* |$" "$claims" || fail "C5: expected 'not tested' on the fixture"
echo "ok   fixture: verdicts follow the documented rules"

# 2a. The GPU benchmark's rows (issue 48, item 9): the fixture's GPU CSV gives a TFLOP/s table, the
# targets from its _ratios.csv and a figure; the same CSV marked as a CPU run (the benchmark's
# --smoke mode) gives none, and a note says how to get one.
grep -q "^\*\*Attention kernels on Fixture GPU (bf16, causal): TFLOP/s (median ms)\*\*" "$tmp/a/REPORT.md" ||
  fail "no GPU kernel table in the report"
grep -q "^| 2, 16, 4096, 64 | fwd_bwd | 150.0 (1.6 ms) | 120.0 (2 ms) | 170.0 (1.41 ms) | 200.0 (1.2 ms) | 320.0 (0.752 ms) | 175.0 (1.37 ms) | 35.0 (6.87 ms) | - |$" \
  "$tmp/a/figures/kernels_gpu_fixture.md" || fail "GPU kernel table: the fwd_bwd row at 2, 16, 4096, 64 is not the CSV's"
grep -q "^| fpa_vs_flash | 2, 16, 4096, 64 | fwd_bwd | exact | 0.469 | 0.5 | no |$" \
  "$tmp/a/figures/kernels_gpu_targets_fixture.md" || fail "GPU targets table: fpa_vs_flash is not the ratios CSV's"
[[ -s $tmp/a/figures/kernels_gpu_fixture.png ]] || fail "no GPU kernel figure"
rm -rf "$tmp/cpu-bench" && cp -r "$repo/tests/fixtures/figures/results" "$tmp/cpu-bench"
sed -i 's/"device": "cuda"/"device": "cpu"/' "$tmp/cpu-bench/bench/attention_gpu_fixture.csv.json"
make_all "$tmp/cpu-bench"
[[ ! -e $tmp/cpu-bench/figures/kernels_gpu_fixture.md ]] || fail "a CPU run of the GPU benchmark made a GPU table"
grep -q "no GPU benchmark yet" "$tmp/cpu-bench/REPORT.md" || fail "no note that the GPU benchmark has not run"
echo "ok   fixture: the GPU benchmark's table, targets and figure; a CPU (smoke) run left out"

# 2a'. The LM device check's training speed on a GPU (issue 47, items 6, 9, 10): tokens/s, the hours of
# one PROFILE=paper run (2621440000 tokens / 131072 tokens/s = 5.6 h) and lm-train over plain PyTorch
# (131072 / 163840 = 0.80); a dry run on the CPU is left out.
grep -q "^| paper | fpa | bf16 | 768, 12, 12, 2048, 256 | 8 | 131072 | 125.0 | 5.6 | 163840 | 0.80 |$" \
  "$tmp/a/figures/lm_gpu_fixture.md" || fail "GPU training table: the paper preset's FPA row is not the CSVs'"
grep -q "^| paper | fox | bf16 | 768, 12, 12, 2048, 256 | 8 | timeout | - | - | 170000 | - |$" \
  "$tmp/a/figures/lm_gpu_fixture.md" || fail "GPU training table: a timed-out run should show its status"
sed -i 's/"dry_run": "0"/"dry_run": "1"/' "$tmp/cpu-bench/lm/gpu_throughput_fixture.csv.json"
make_all "$tmp/cpu-bench"
[[ ! -e $tmp/cpu-bench/figures/lm_gpu_fixture.md ]] || fail "a dry run of the LM device check made a GPU table"
grep -q "no GPU training speed yet" "$tmp/cpu-bench/REPORT.md" || fail "no note that the LM device check has not run"
echo "ok   fixture: the GPU training speed table; a dry run left out"

# 2b. C6 driven to its other verdicts by editing the fixture's passkey summary: one learned FPA
# run short of 1.0 at 8L under every compressed policy -> not reproduced; two of the three
# learned runs removed -> not tested (the never-learned fpa-s3 must not count either way).
c6_verdict() {  # <name> <awk filter over summary.csv rows>
  rm -rf "$tmp/$1" && cp -r "$repo/tests/fixtures/figures/results" "$tmp/$1"
  awk -F, -v OFS=, "$2" "$repo/tests/fixtures/figures/results/passkey/summary.csv" >"$tmp/$1/passkey/summary.csv"
  make_all "$tmp/$1"
  grep "^| C6 |" "$tmp/$1/figures/claims.md"
}
c6_verdict c6-not '$NF == "fpa-s1" && $3 == 512 && $4 == "budget" { $7 = 0.95 } { print }' |
  grep -q '| \*\*not reproduced\*\* |$' || fail "C6: a learned FPA run at 0.95 should make it 'not reproduced'"
c6_verdict c6-untested '$NF != "fpa-s1" && $NF != "fpa-s2" { print }' |
  grep -q '| \*\*not tested at this scale\*\* |$' || fail "C6: one learned FPA run should leave it 'not tested'"
echo "ok   fixture: C6 gives each of its three verdicts"

# 3. No CSVs at all: every study "not run", every claim "not tested", no crash.
mkdir -p "$tmp/empty"
make_all "$tmp/empty"
[[ $(grep -cE '^\| [^|]+ \| not run \| - \|$' "$tmp/empty/REPORT.md") -eq 5 ]] || fail "empty results: studies not all 'not run'"
[[ $(grep -c "not tested at this scale\*\* |" "$tmp/empty/REPORT.md") -eq 6 ]] || fail "empty results: claims not all 'not tested'"
echo "ok   empty results: 5 studies not run, 6 claims not tested"

# 4. A tiny real synthetic sweep, twice (when the executables are built).
if [[ -n $bin && -x $bin/synthetic-sweep && -x $bin/synthetic-run ]]; then
  for run in sa sb; do
    mkdir -p "$tmp/$run/synthetic"
    "$bin/synthetic-sweep" --tasks erase --variants fox,fpa --fpa-backward exact --seeds 1 \
      --steps 4 --length 8 --batch 4 --eval-every 2 --eval-seqs 4 --threads 1 \
      --out-dir "$tmp/$run/synthetic" --out "$tmp/$run/synthetic/summary.csv" >"$tmp/$run.sweep.log" 2>&1 \
      || { cat "$tmp/$run.sweep.log"; fail "synthetic-sweep failed"; }
    make_all "$tmp/$run"
  done
  "$py" "$repo/paper_figures/compare_tables.py" "$tmp/sa/figures" "$tmp/sb/figures" || fail "sweep tables differ"
  echo "ok   tiny synthetic sweep: tables identical across two runs"
else
  echo "skip tiny synthetic sweep: no synthetic-sweep in '${bin:-<none>}'"
fi
echo PASS
