#!/usr/bin/env bash
# Every executable in build/bin answers --help (exit 0) and rejects an unknown flag and a bad
# value with exactly one line on stderr and exit code 2.
# Usage: cli_contract.sh <bin-dir> <tool,tool,...>  (the executables that must be there)
set -u
bin_dir=$1
IFS=, read -r -a tools <<<"${2:-}"
status=0
[[ ${#tools[@]} -gt 0 ]] || { echo "FAIL no executables named"; exit 1; }
for name in "${tools[@]}"; do
  exe=$bin_dir/$name
  [[ -x $exe && -f $exe ]] || { echo "FAIL $name: not in $bin_dir"; status=1; continue; }
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
