#!/usr/bin/env bash
# scripts/fetch_weights.py (issue 48, item 10): the published weights live in the repository's
# history, out of main's working tree, and `make weights` fills results/weights/ from it. In a
# scratch repository: files removed from the tree come back with their checksums (the newest
# matching blob, one brought in by a merge included); a present file that differs is refused and
# left alone; a listed file no commit holds, a malformed SHA256SUMS line, a shallow clone and a
# folder outside git are one-line errors with exit 1; --check writes nothing.
# Usage: weights_store.sh <source-dir>
set -u
src=$(cd "$1" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
export GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@t GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@t
repo=$tmp/repo
mkdir -p "$repo/scripts" "$repo/experiments" "$repo/results/weights/lm" "$repo/results/weights/passkey"
cp "$src/scripts/fetch_weights.py" "$repo/scripts/"
cp "$src/experiments/script_io.py" "$repo/experiments/"
cd "$repo"
git init -q -b main .
W=results/weights
sums() { (cd $W && sha256sum lm/*.pt passkey/*.pt > SHA256SUMS); }
head -c 100000 /dev/urandom > $W/lm/a.pt
head -c 5000 /dev/urandom > $W/passkey/b.pt
sums; git add -A; git commit -qm "publish a and b"
head -c 120000 /dev/urandom > $W/lm/a.pt  # a retrained: the newest blob is the published one
sums; git commit -qam "retrain a"
git checkout -q -b side
echo side > side.txt; git add side.txt; git commit -qm side
git checkout -q main
git merge -q --no-ff --no-commit side >/dev/null 2>&1
head -c 7000 /dev/urandom > $W/passkey/c.pt
sums; git add -A; git commit -qm "merge side, publishing c in the merge itself"
want_a=$(sha256sum $W/lm/a.pt | cut -d' ' -f1)
printf '%s\n' '/results/weights/**/*.pt' '__pycache__/' > .gitignore  # as main's
git rm -q --cached $W/lm/a.pt $W/passkey/b.pt $W/passkey/c.pt
git add .gitignore; git commit -qm "weights out of the tree"
rm $W/lm/a.pt $W/passkey/b.pt $W/passkey/c.pt
[[ -z $(git ls-files '*.pt') ]] || fail "scratch repo still tracks weights"

py=/usr/bin/python3
out=$("$py" scripts/fetch_weights.py --check 2>&1) || fail "--check on a good history: $out"
[[ ! -e $W/lm/a.pt ]] || fail "--check wrote a file"
out=$("$py" scripts/fetch_weights.py 2>&1) || fail "fill: $out"
[[ $out == *"3 files match"*"3 filled from history"* ]] || fail "fill summary: $out"
[[ $(sha256sum $W/lm/a.pt | cut -d' ' -f1) == "$want_a" ]] || fail "a.pt is not the retrained blob"
(cd $W && sha256sum --quiet -c SHA256SUMS) || fail "filled files do not match SHA256SUMS"
[[ -z $(git status --porcelain) ]] || fail "filling left the tree dirty: $(git status --porcelain)"
out=$("$py" scripts/fetch_weights.py 2>&1) || fail "second fill: $out"
[[ $out == *"3 present, 0 filled"* ]] || fail "second fill should find everything present: $out"

echo garbage > $W/passkey/b.pt
if out=$("$py" scripts/fetch_weights.py 2>&1); then fail "a differing file was accepted"; fi
[[ $out == *"passkey/b.pt: present but does not match"* ]] || fail "no error for a differing file: $out"
[[ $(cat $W/passkey/b.pt) == garbage ]] || fail "a differing file was overwritten"
rm $W/passkey/b.pt

cp $W/SHA256SUMS "$tmp/sums"
# A file published here but never committed: the fill accepts it, --check (which reads history
# alone) refuses it, and once it is gone nothing can bring it back.
head -c 3000 /dev/urandom > $W/lm/never.pt
(cd $W && sha256sum lm/never.pt) >> $W/SHA256SUMS
out=$("$py" scripts/fetch_weights.py 2>&1) || fail "a present, matching file was refused: $out"
if out=$("$py" scripts/fetch_weights.py --check 2>&1); then fail "an uncommitted file passed --check"; fi
[[ $out == *"lm/never.pt: no commit in this clone's history holds it"* ]] || fail "no error for a lost file: $out"
rm $W/lm/never.pt
if out=$("$py" scripts/fetch_weights.py 2>&1); then fail "a lost file was filled"; fi
echo "not a checksum line" >> $W/SHA256SUMS
if out=$("$py" scripts/fetch_weights.py 2>&1); then fail "a malformed SHA256SUMS was accepted"; fi
[[ $out == *"SHA256SUMS:5: not a"* && $(wc -l <<<"$out") == 1 ]] || fail "malformed line: $out"
cp "$tmp/sums" $W/SHA256SUMS

git clone -q --depth 1 "file://$repo" "$tmp/shallow" 2>/dev/null
if out=$("$py" "$tmp/shallow/scripts/fetch_weights.py" 2>&1); then fail "a shallow clone filled everything"; fi
[[ $out == *"shallow clone"* ]] || fail "no hint for a shallow clone: $out"

mkdir "$tmp/nogit" && cp -r scripts experiments results "$tmp/nogit/"
rm -f "$tmp/nogit/$W/lm/a.pt"
if out=$("$py" "$tmp/nogit/scripts/fetch_weights.py" 2>&1); then fail "filled outside git"; fi
[[ $(wc -l <<<"$out") == 1 && $out == error:* ]] || fail "outside git, not one error line: $out"
echo "PASS weights store"
