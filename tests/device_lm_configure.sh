#!/usr/bin/env bash
# The GPU device build of the language-model tools (cmake/DeviceLm.cmake, -DFPA_DEVICE_LM=ON;
# lm/device-check.sh, scripts/decode-device-check.sh) configures from LibTorch and a folder filled by
# scripts/prepare-device-check.sh alone: the system's fmt, Boost and nlohmann_json packages are
# hidden from CMake (the mode never asks for them), and lm-train, lm-eval, passkey-eval and
# lm-compress must be targets, no test, benchmark or SentencePiece module. Configuring only (seconds);
# lm/device-check.sh builds and runs it (DEVICE=cpu: a dry run of the whole check here).
set -euo pipefail
# shellcheck source=tests/prepared_third_party.sh
source "$(dirname "$0")/prepared_third_party.sh"  # src, dir, dir/tp
cmake -S "$src" -B "$dir/build" -DFPA_DEVICE_LM=ON -DFPA_THIRD_PARTY="$dir/tp" \
  -DCMAKE_DISABLE_FIND_PACKAGE_fmt=ON -DCMAKE_DISABLE_FIND_PACKAGE_Boost=ON \
  -DCMAKE_DISABLE_FIND_PACKAGE_nlohmann_json=ON >"$dir/configure.log" 2>&1 ||
  { cat "$dir/configure.log"; echo "FAIL: the device build of lm does not configure"; exit 1; }
grep -q "FPA: device build of lm-train, lm-eval, passkey-eval and lm-compress" "$dir/configure.log" ||
  { cat "$dir/configure.log"; echo "FAIL: no FPA_DEVICE_LM banner"; exit 1; }
targets=$(cmake --build "$dir/build" --target help)
for t in lm-train lm-eval passkey-eval lm-compress fpa_lm fpa_runtime; do
  grep -Eq "(^|\.\.\. )$t(:|$)" <<<"$targets" || { echo "FAIL: no target $t"; exit 1; }
done
for t in attention-bench test_runtime test_passkey_decode fpa_sentencepiece_module; do
  if grep -Eq "(^|\.\.\. )$t(:|$)" <<<"$targets"; then echo "FAIL: target $t in the device build"; exit 1; fi
done
# No include folder of the system's fmt, Boost or nlohmann_json in any compile command.
if grep -E '"command"' "$dir/build/compile_commands.json" | grep -Eq -- '-I/usr/include/(boost|nlohmann|fmt)'; then
  echo "FAIL: a compile command names a system include folder of the vendored packages"; exit 1
fi
echo "device build of lm configures from $(du -sh "$dir/tp" | cut -f1) of vendored packages: $(grep -c '' <<<"$targets") targets"
