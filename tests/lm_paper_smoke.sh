#!/usr/bin/env bash
# PROFILE=paper-smoke end to end (issue 47, items 5, 6 and 8): lm/reproduce.sh trains FPA, FoX and
# the Transformer from configs/lm/paper-smoke.conf on a generated corpus of the user's kind (a
# folder of text files) with a SentencePiece tokenizer trained on its training split, evaluates
# them with lm-eval and with passkey-eval (C6's task in their tokens, with cache policies), FPA with
# lm-compress (perplexity with a compressed cache, in its tokens), and skips them when run again.
# Then the refusals, one line and exit 2 each: lm-eval, the passkey evaluators and lm-compress given
# a corpus whose model is another, the passkey evaluators and lm-compress without --corpus,
# lm-compress with a corpus folder without the model, a resume with another tokenizer, the paper
# preset's vocabulary on a corpus that cannot fill it, lm-train without the SentencePiece module.
set -euo pipefail
bin=$1 src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
# <dir> <seed>: 30 documents of about 4 KB of words made of syllables (enough for 512 pieces), with
# English words (the passkey prompt's among them), capitals and numbers, so that a passkey prompt's
# fixed parts fit the model's 128 tokens.
corpus() {
  /usr/bin/python3 - "$1" "$2" <<'PY'
import os, random, sys
d, r = sys.argv[1], random.Random(int(sys.argv[2]))
syl = "ka ro mi te sun lo par ve di on bre tu shi ga nel po and the ing er qua fe".split()
words = ["".join(r.choice(syl) for _ in range(r.randint(1, 4))) for _ in range(800)]
english = ("there is an important info hidden inside a lot of irrelevant text find it and memorize "
           "i will quiz you about the information what pass key remember grass green sky blue sun "
           "yellow here we go back again").split()
def word():
    w = r.choice(english) if r.random() < 0.4 else r.choice(words)
    return str(r.randint(0, 99999)) if r.random() < 0.05 else w
os.makedirs(d)
for i in range(30):
    lines, n = [], 0
    while n < 4000:
        line = " ".join(word() for _ in range(r.randint(5, 14)))
        line = line[0].upper() + line[1:] + r.choice([".", ".", "?"])
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
# C6's passkey evaluation in the models' tokens: 2L and 4L (256 and 512 tokens), the policies of
# eval-paper-smoke.conf, the tokenizer on every row and in the sidecar.
/usr/bin/python3 - "$tmp/out/passkey" "$identity" <<'PY' || fail "passkey-eval's tables"
import csv, json, sys
folder, identity = sys.argv[1], sys.argv[2]
for v in ("transformer", "fox", "fpa"):
    policies = {"full", "fpa-certified", "window"}
    rows = list(csv.DictReader(open(f"{folder}/paper-smoke-{v}.summary.csv")))
    assert {(r["eval_len"], r["policy"]) for r in rows} == {(n, p) for n in ("256", "512") for p in policies}, rows
    for r in rows:
        assert r["tokenizer"] == identity and r["train_len"] == "128" and r["n_keys"] == "2", r
        assert 0 <= float(r["accuracy"]) <= 1 and 0 < float(r["occupancy"]) <= 1, r
    cells = list(csv.DictReader(open(f"{folder}/paper-smoke-{v}.csv")))
    assert len(cells) == 2 * len(rows) and all(c["tokenizer"] == identity for c in cells), cells
    assert json.load(open(f"{folder}/paper-smoke-{v}.csv.json"))["config"]["tokenizer"] == identity
PY
# lm-compress on the FPA run (configs/compress/paper-smoke.conf): a row per policy over 2 test windows
# of at most 128 tokens, the tokenizer on every row and in the sidecar, bits per byte below the
# loss in bits per token (a sub-word token stands for more than a byte).
/usr/bin/python3 - "$tmp/out/compress" "$identity" <<'PY' || fail "lm-compress's table"
import csv, json, math, os, sys
folder, identity = sys.argv[1], sys.argv[2]
assert sorted(os.listdir(folder)) == ["paper-smoke-fpa.csv", "paper-smoke-fpa.csv.json"], os.listdir(folder)
rows = list(csv.DictReader(open(f"{folder}/paper-smoke-fpa.csv")))
assert [(r["policy"], r["budget"]) for r in rows] == [("full", "1"), ("fpa-certified", ""), ("window", "0.25")], rows
for r in rows:
    assert r["tokenizer"] == identity and r["variant"] == "fpa" and r["windows"] == "2", r
    assert 128 < int(r["tokens"]) <= 2 * 128 and r["tokens"] == rows[0]["tokens"], r
    assert 0 < float(r["bpb"]) < float(r["nll_per_token"]) / math.log(2), r
    assert 0 < float(r["occupancy"]) <= 1, r
assert rows[0]["ppl_increase"] == "0" and float(rows[2]["occupancy"]) < 1, rows
assert json.load(open(f"{folder}/paper-smoke-fpa.csv.json"))["config"]["tokenizer"] == identity
PY
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
# The passkey evaluators read the tokenizer from beside --corpus: another corpus's model is refused,
# and without --corpus the default (data/brown/text, not in this folder) is not a folder.
for t in passkey-eval passkey-probe; do
  refused "SHA-256" "$bin/$t" --checkpoint "$tmp/runs/paper-smoke-fpa" --corpus "$tmp/other" \
    --lengths 1 --keys 1 --out "$tmp/pk.csv" --threads 1
  (cd "$tmp" && refused "is not a folder" "$bin/$t" --checkpoint "$tmp/runs/paper-smoke-fpa" \
    --lengths 1 --keys 1 --out "$tmp/pk.csv" --threads 1)
done
# The paper preset's 50277 pieces: more than the corpus's training split can fill.
refused "Vocabulary size too high" "$bin/lm-train" --preset paper --corpus "$tmp/corpus" \
  --out-dir "$tmp/paper" --threads 1
# lm-compress reads the tokenizer from beside --corpus as well: another corpus's model, a folder
# without one and the default corpus (not in this folder) are refused before any work.
mkdir -p "$tmp/bare"; cp "$tmp/corpus/"*.txt "$tmp/bare/"
refused "SHA-256" "$bin/lm-compress" --checkpoint "$tmp/runs/paper-smoke-fpa" --corpus "$tmp/other" \
  --out "$tmp/c.csv" --threads 1
refused "bare.spm-512.model" "$bin/lm-compress" --checkpoint "$tmp/runs/paper-smoke-fpa" \
  --corpus "$tmp/bare" --out "$tmp/c.csv" --threads 1
(cd "$tmp" && refused "'data/brown/text' does not exist" "$bin/lm-compress" --checkpoint "$tmp/runs/paper-smoke-fpa" \
  --out "$tmp/c.csv" --threads 1)
[[ ! -e $tmp/c.csv ]] || fail "a refused lm-compress wrote its table"
# Without the module beside it (../lib), lm-train says so in one line.
mkdir -p "$tmp/alone/bin"
cp "$bin/lm-train" "$tmp/alone/bin/"
refused "SentencePiece module" "$tmp/alone/bin/lm-train" --preset paper-smoke --corpus "$tmp/corpus" \
  --out-dir "$tmp/alone-run" --threads 1
echo "PASS refusals"
