#!/usr/bin/env bash
# Every executable in build/bin answers --help (exit 0) and rejects an unknown flag and a bad
# value with exactly one line on stderr and exit code 2.
set -u
bin_dir=$1
status=0
shopt -s nullglob
for exe in "$bin_dir"/*; do
  [[ -x $exe && -f $exe ]] || continue
  name=$(basename "$exe")
  "$exe" --help >/dev/null 2>&1 || { echo "FAIL $name --help exit $?"; status=1; }
  err=$("$exe" --no-such-flag 2>&1 >/dev/null); rc=$?
  lines=$(printf '%s' "$err" | grep -c '' || true)
  [[ $rc -eq 2 && $lines -eq 1 ]] || { echo "FAIL $name unknown flag: rc=$rc, $lines lines: $err"; status=1; }
  err=$("$exe" --threads 0 2>&1 >/dev/null); rc=$?
  lines=$(printf '%s' "$err" | grep -c '' || true)
  [[ $rc -eq 2 && $lines -eq 1 ]] || { echo "FAIL $name --threads 0: rc=$rc, $lines lines: $err"; status=1; }
  err=$("$exe" --seed banana 2>&1 >/dev/null); rc=$?
  [[ $rc -eq 2 ]] || { echo "FAIL $name --seed banana: rc=$rc"; status=1; }
  echo "ok   $name"
done
exit $status
