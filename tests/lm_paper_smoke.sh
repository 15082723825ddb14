#!/usr/bin/env bash
# PROFILE=paper-smoke end to end (issue 47, items 5, 6 and 8): lm/reproduce.sh trains FPA, FoX and
# the Transformer from configs/lm/paper-smoke.conf on a generated corpus of the user's kind (a
# folder of text files) with a SentencePiece tokenizer trained on its training split, evaluates
# them with lm-eval, and skips them when run again. Then the refusals, one line and exit 2 each:
# lm-eval given a corpus whose model is another, a resume with another tokenizer, the paper
# preset's vocabulary on a corpus that cannot fill it, lm-train without the SentencePiece module.
set -euo pipefail
bin=$1 src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
# <dir> <seed>: 30 documents of about 4 KB of words made of syllables (enough for 512 pieces).
corpus() {
  /usr/bin/python3 - "$1" "$2" <<'PY'
import os, random, sys
d, r = sys.argv[1], random.Random(int(sys.argv[2]))
syl = "ka ro mi te sun lo par ve di on bre tu shi ga nel po and the ing er qua fe".split()
words = ["".join(r.choice(syl) for _ in range(r.randint(1, 4))) for _ in range(800)]
os.makedirs(d)
for i in range(30):
    lines, n = [], 0
    while n < 4000:
        line = " ".join(r.choice(words) for _ in range(r.randint(5, 14))) + " ."
        lines.append(line)
        n += len(line) + 1
    open(os.path.join(d, f"doc{10 + i}.txt"), "w").write("\n".join(lines) + "\n")
PY
}
# <expected message part> <command...>: exit 2 with one line naming it.
refused() {
  local want=$1; shift
  set +e
  local err
  err=$("$@" 2>&1 >/dev/null); local rc=$?
  set -e
  [[ $rc -eq 2 ]] || fail "exit $rc, expected 2: $* ($err)"
  [[ $(grep -c . <<<"$err") -eq 1 ]] || fail "not one line: $*: $err"
  grep -q -- "$want" <<<"$err" || fail "the message does not say '$want': $err"
  echo "refused as expected: $err"
}

corpus "$tmp/corpus" 1
cd "$src"  # lm/reproduce.sh reads configs/ and lm/ from the source tree
export PROFILE=paper-smoke LM_CORPUS="$tmp/corpus" LM_OUT="$tmp/out" LM_RUNS="$tmp/runs"
lm/reproduce.sh "$bin" >"$tmp/log.txt" 2>&1 || { cat "$tmp/log.txt"; fail "lm/reproduce.sh"; }
model="$tmp/corpus.spm-512.model"
[[ -f $model && -f $model.sha256 ]] || fail "no tokenizer model beside the corpus"
sum=$(cut -d' ' -f1 "$model.sha256")
[[ $(sha256sum "$model" | cut -d' ' -f1) == "$sum" ]] || fail "the model's .sha256 is not its checksum"
identity="sentencepiece vocab=512 sha256=$sum"
for v in transformer fox fpa; do
  name=paper-smoke-$v
  [[ $(tail -n +2 "$tmp/out/train-$name.csv" | wc -l) -eq 4 ]] || fail "$name: expected 4 logged steps"
  grep -q "\"tokenizer\": \"$identity\"" "$tmp/runs/$name/log.csv.json" ||
    fail "$name: the training sidecar does not record the tokenizer"
  grep -q "\"tokenizer\": \"$identity\"" "$tmp/out/eval-$name.csv.json" ||
    fail "$name: the evaluation sidecar does not record the tokenizer"
  grep -q "$identity" "$tmp/runs/$name/checkpoint.pt" || fail "$name: the checkpoint does not record the tokenizer"
done
[[ $(tail -n +2 "$tmp/out/summary.csv" | wc -l) -eq 3 ]] || fail "summary.csv: expected 3 runs"
# Sub-word tokens are not bytes: bits per byte is below the loss in bits per token.
/usr/bin/python3 - "$tmp/out/eval-paper-smoke-fpa.csv" <<'PY' || fail "bits per byte"
import csv, math, sys
for row in csv.DictReader(open(sys.argv[1])):
    bits_per_token = float(row["nll_per_token"]) / math.log(2)
    assert 0 < float(row["bpb"]) < bits_per_token, row
PY
lm/reproduce.sh "$bin" >"$tmp/log2.txt" 2>&1 || { cat "$tmp/log2.txt"; fail "second run"; }
[[ $(grep -c "done (skipping)" "$tmp/log2.txt") -eq 3 ]] || { cat "$tmp/log2.txt"; fail "a complete run was not skipped"; }
echo "PASS paper-smoke: 3 variants trained with $identity, evaluated, skipped when complete"

# Another corpus has another model of 512 pieces: the checkpoint's tokenizer is refused with it.
corpus "$tmp/other" 2
"$bin/lm-train" --preset paper-smoke --corpus "$tmp/other" --out-dir "$tmp/other-run" --steps 1 \
  --threads 1 >/dev/null 2>&1 || fail "lm-train on the second corpus"
refused "SHA-256" "$bin/lm-eval" --checkpoint "$tmp/runs/paper-smoke-fpa" --corpus "$tmp/other" \
  --out "$tmp/x.csv" --threads 1
refused "was trained with tokenizer" "$bin/lm-train" --preset paper-smoke --variant fpa \
  --corpus "$tmp/other" --out-dir "$tmp/runs/paper-smoke-fpa" --resume --steps 6 --threads 1
# The paper preset's 50277 pieces: more than the corpus's training split can fill.
refused "Vocabulary size too high" "$bin/lm-train" --preset paper --corpus "$tmp/corpus" \
  --out-dir "$tmp/paper" --threads 1
# lm-compress reads text as bytes.
[[ -x $bin/lm-compress ]] && refused "reads text as bytes" "$bin/lm-compress" \
  --checkpoint "$tmp/runs/paper-smoke-fpa" --corpus "$tmp/corpus" --out "$tmp/c.csv" --threads 1
# Without the module beside it (../lib), lm-train says so in one line.
mkdir -p "$tmp/alone/bin"
cp "$bin/lm-train" "$tmp/alone/bin/"
refused "SentencePiece module" "$tmp/alone/bin/lm-train" --preset paper-smoke --corpus "$tmp/corpus" \
  --out-dir "$tmp/alone-run" --threads 1
echo "PASS refusals"
