#!/usr/bin/env bash
# Publishes what scripts/gpu-check.sh brought back from a GPU under results/, named for the GPU:
#   scripts/publish-gpu-check.sh <folder with kernels.tar.gz and/or lm.tar.gz> <gpu>
# <gpu> is a short lower-case name (h100, h200): it becomes the files' suffix and the slug of
# REPORT.md's GPU tables (paper_figures/common.py's gpu_runs).
#   kernels: attention_gpu.csv (+ .json) -> results/bench/attention_gpu_<gpu>.csv (+ .json),
#            attention_gpu_ratios.csv (+ .json) -> results/bench/attention_gpu_<gpu>_ratios.csv
#   lm:      gpu_throughput, cpu_gpu_agreement, plain_pytorch_throughput .csv (+ .json)
#            -> results/lm/<name>_<gpu>.csv (+ .json)
# A file the check did not write is reported and skipped. It refuses a CSV whose sidecar says it
# ran on the CPU (a dry run) and files already published for that GPU (FORCE=1 replaces them).
# Then: /usr/bin/python3 tests/results_schema.py . (the columns and sidecars are documented),
# make figures, and commit results/ with the check's gpu-check.log summary in the message.
# RESULTS=<folder> publishes into another results/ tree (tests/publish_gpu_check.sh).
set -euo pipefail
die() { echo "error: $1" >&2; exit 2; }
(( $# == 2 )) || die "usage: scripts/publish-gpu-check.sh <folder from gpu-check> <gpu, e.g. h100>"
from=$1 gpu=$2
[[ -d $from ]] || die "no folder '$from'"
[[ $gpu =~ ^[a-z0-9]+$ ]] || die "the GPU's name must be lower-case letters and digits (h100, h200), not '$gpu'"
from=$(cd "$from" && pwd)
cd "$(dirname "$0")/.."
RESULTS=${RESULTS:-results}
[[ -d $RESULTS/bench && -d $RESULTS/lm ]] || die "'$RESULTS' has no bench/ and lm/ folders (a results/ tree)"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
found=0
for part in kernels lm; do
  if [[ -f $from/$part.tar.gz ]]; then
    tar -xzf "$from/$part.tar.gz" -C "$tmp" || die "$from/$part.tar.gz is not a readable archive"
    found=1
  fi
done
(( found )) || die "'$from' has neither kernels.tar.gz nor lm.tar.gz (scripts/gpu-check.sh's output)"

# on_gpu MODULE CSV: the sidecar of CSV records a GPU's run, by the rule REPORT.md applies
# (paper_figures/MODULE.py's measured_on_gpu); a dry run on the CPU is refused.
on_gpu() {
  PYTHONPATH=paper_figures /usr/bin/python3 -c "import sys, common, $1 as m; \
sys.exit(0 if m.measured_on_gpu(common.read_sidecar(sys.argv[1]) or {}) else 1)" "$2"
}
# publish SRC DEST: the CSV and its sidecar.
published=0
publish() {
  local src=$1 dest=$2
  if [[ ! -f $src ]]; then echo "skipped: $(basename "$src") (not written by the check)"; return; fi
  [[ -f $src.json ]] || die "$(basename "$src") has no sidecar ($(basename "$src").json)"
  [[ ! -e $dest || ${FORCE:-0} == 1 ]] || die "$dest exists (FORCE=1 replaces it)"
  cp "$src" "$dest" && cp "$src.json" "$dest.json"
  echo "published: $dest (+ .json)"
  published=$((published + 1))
}
if [[ -f $tmp/kernels/attention_gpu.csv ]] && ! on_gpu kernels_gpu "$tmp/kernels/attention_gpu.csv"; then
  die "kernels: attention_gpu.csv's sidecar does not record a GPU run (a --smoke run on the CPU?)"
fi
if [[ -f $tmp/lm/gpu_throughput.csv ]] && ! on_gpu lm_gpu "$tmp/lm/gpu_throughput.csv"; then
  die "lm: gpu_throughput.csv's sidecar records a dry run (DEVICE=cpu), not a GPU's"
fi
publish "$tmp/kernels/attention_gpu.csv" "$RESULTS/bench/attention_gpu_$gpu.csv"
publish "$tmp/kernels/attention_gpu_ratios.csv" "$RESULTS/bench/attention_gpu_${gpu}_ratios.csv"
for name in gpu_throughput cpu_gpu_agreement plain_pytorch_throughput; do
  publish "$tmp/lm/$name.csv" "$RESULTS/lm/${name}_$gpu.csv"
done
(( published )) || die "nothing to publish: the checks wrote none of their CSVs (see gpu-check.log)"
echo "next: /usr/bin/python3 tests/results_schema.py . && make figures"
