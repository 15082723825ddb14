#!/usr/bin/env bash
# Puts what the GPU device checks need besides PyTorch, nvcc and CMake into third_party/ (ignored
# by git; the device tool carries it). Everything comes from the suite's Debian packages
# (scripts/install-deps.sh), so a GPU machine without apt or a network needs nothing else:
#   googletest/           GoogleTest's source (Debian's googletest, /usr/src/googletest), built there
#   fmt-include/          fmt's headers (libfmt-dev), used header-only
#   rapidcheck/           RapidCheck's headers and static library (librapidcheck-dev; built with
#                         the C++11 ABI) for test_tile_algorithm's properties
# and, for lm/device-check.sh (lm-train and lm-eval, cmake -DFPA_DEVICE_LM=ON, cmake/DeviceLm.cmake):
#   boost-include/        only the Boost headers that the suite's program_options users and
#                         program_options' own sources include (from the compiler's dependency
#                         output, g++ -M), not all of /usr/include/boost
#   boost-program-options/src/*.cpp   program_options' sources at the installed Boost's version, when
#                         BOOST_PO_SOURCE names a checkout or git directory of boostorg/program_options
#                         (a tag boost-<version>); the build compiles them with PyTorch's C++ ABI
#   boost-program-options/libboost_program_options.a   Debian's static library (libboost-program-
#                         options-dev; built with _GLIBCXX_USE_CXX11_ABI=1, position-independent),
#                         the build's fallback when the sources are absent
#   nlohmann-include/     nlohmann_json's headers (nlohmann-json3-dev)
#   fccp-include/         fast-cpp-csv-parser's header (libfccp-dev, libfccp/csv.h)
# No gloo headers: a one-GPU check needs no Gloo, and Debian's gloo headers need not match the gloo
# inside PyTorch's wheel; the device build uses gloo only where PyTorch ships its headers.
# FPA_THIRD_PARTY=<folder> puts them there instead (tests/device_lm_configure.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
TP=${FPA_THIRD_PARTY:-third_party}
mkdir -p "$TP"
TP=$(cd "$TP" && pwd)
need() { [[ -e $1 ]] || { echo "error: prepare-device-check needs $1 ($2; make deps)" >&2; exit 1; }; }
need /usr/src/googletest/CMakeLists.txt googletest
need /usr/include/fmt/format.h libfmt-dev
need /usr/include/boost/program_options.hpp libboost-program-options-dev
need /usr/include/nlohmann/json.hpp nlohmann-json3-dev
need /usr/include/libfccp/csv.h libfccp-dev
need /usr/include/rapidcheck.h librapidcheck-dev
rc_lib=/usr/lib/x86_64-linux-gnu/librapidcheck.a
need "$rc_lib" librapidcheck-dev
lib=$(g++ -print-file-name=libboost_program_options.a)
[[ $lib == /* && -f $lib ]] || lib=/usr/lib/x86_64-linux-gnu/libboost_program_options.a

rm -rf "$TP"/googletest "$TP"/fmt-include "$TP"/boost-include \
  "$TP"/boost-program-options "$TP"/nlohmann-include "$TP"/fccp-include "$TP"/rapidcheck
mkdir -p "$TP"/fmt-include "$TP"/boost-include "$TP"/boost-program-options \
  "$TP"/nlohmann-include "$TP"/fccp-include "$TP"/rapidcheck/include "$TP"/rapidcheck/lib
cp -r /usr/src/googletest "$TP"/googletest
cp -r /usr/include/fmt "$TP"/fmt-include/fmt
cp -r /usr/include/rapidcheck /usr/include/rapidcheck.h "$TP"/rapidcheck/include/
cp "$rc_lib" "$TP"/rapidcheck/lib/
cp -r /usr/include/nlohmann "$TP"/nlohmann-include/nlohmann
cp -r /usr/include/libfccp "$TP"/fccp-include/libfccp

# program_options' sources at the installed headers' version (1_74 -> tag boost-1.74.0).
boost_version=$(sed -n 's/^#define BOOST_LIB_VERSION "\(.*\)"/\1/p' /usr/include/boost/version.hpp | tr _ .)
po_src="$TP"/boost-program-options/src
if [[ -n ${BOOST_PO_SOURCE:-} ]]; then
  tag=boost-$boost_version.0
  if git -C "$BOOST_PO_SOURCE" rev-parse --verify -q "$tag^{commit}" >/dev/null; then
    mkdir -p "$po_src"
    git -C "$BOOST_PO_SOURCE" archive "$tag" src | tar -x -C "$TP"/boost-program-options
  elif [[ -f $BOOST_PO_SOURCE/src/cmdline.cpp ]]; then
    echo "prepare-device-check: note: $BOOST_PO_SOURCE is no git directory with tag $tag; copying its src/ as it is"
    cp -r "$BOOST_PO_SOURCE/src" "$po_src"
  else
    echo "error: BOOST_PO_SOURCE=$BOOST_PO_SOURCE holds neither tag $tag nor src/cmdline.cpp" >&2; exit 1
  fi
  rm -f "$po_src/winmain.cpp"  # Windows only
fi
# Debian's static library as well (1.1 MB): the fallback when the sources are absent.
need "$lib" libboost-program-options-dev
cp "$lib" "$TP"/boost-program-options/

# The Boost headers that are reached: from every suite header that includes program_options and
# from program_options' sources (when copied), as the compiler resolves them (g++ -M lists system
# headers too; -MM would leave out /usr/include/boost).
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
units=()
for h in $(grep -rl "#include <boost/" experiments lm kernels --include=*.h --include=*.cpp); do
  printf '#include "%s"\n' "$h" >"$probe/unit_$(echo "$h" | tr / _).cpp"
done
units+=("$probe"/unit_*.cpp)
[[ -d $po_src ]] && units+=("$po_src"/*.cpp)
# Only the suite's headers that include boost are read: each is compiled alone with -fsyntax-only
# style preprocessing; LibTorch is not needed (the boost users are the torch-free runtime).
for u in "${units[@]}"; do
  g++ -std=c++17 -M -I. -I/usr/include/fmt "$u" 2>"$probe/err" >"$probe/$(basename "$u").d" || {
    cat "$probe/err" >&2; echo "error: g++ -M $u failed" >&2; exit 1; }
done
cat "$probe"/*.d | tr ' \\' '\n\n' | grep -E '^/usr/include/boost/' | xargs -r realpath -m | sort -u |
  sed 's|^/usr/include/||' >"$probe/list"
(cd /usr/include && xargs -a "$probe/list" cp --parents -t "$TP/boost-include")
cp /usr/include/boost/version.hpp "$TP"/boost-include/boost/
printf '%s\n' "Boost $boost_version headers reached by the suite's program_options users and program_options'" \
  "sources (scripts/prepare-device-check.sh); copied from /usr/include/boost." >"$TP"/boost-include/README
[[ -f /usr/share/doc/libboost1.74-dev/copyright ]] && cp /usr/share/doc/libboost1.74-dev/copyright "$TP"/boost-include/ || true

echo "prepare-device-check: $TP $(du -sh "$TP" | cut -f1): googletest $(du -sh "$TP"/googletest | cut -f1)," \
  "fmt $(du -sh "$TP"/fmt-include | cut -f1), rapidcheck $(du -sh "$TP"/rapidcheck | cut -f1), boost headers $(wc -l <"$probe/list") files" \
  "$(du -sh "$TP"/boost-include | cut -f1), program_options $( [[ -d $po_src ]] && echo "sources (boost-$boost_version.0) and " )static library" \
  "$(du -sh "$TP"/boost-program-options | cut -f1), nlohmann_json $(du -sh "$TP"/nlohmann-include | cut -f1), fccp $(du -sh "$TP"/fccp-include | cut -f1)"
