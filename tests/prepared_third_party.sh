# Sourced by the tests of the GPU machines' builds (kernels_only_build.sh, device_lm_configure.sh):
# sets src (the repository) and dir (a temporary folder, removed at exit), and fills dir/tp with
# scripts/prepare-device-check.sh, as a GPU machine gets third_party/.
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
FPA_THIRD_PARTY="$dir/tp" "$src/scripts/prepare-device-check.sh" >"$dir/prepare.log" 2>&1 ||
  { cat "$dir/prepare.log"; echo "FAIL: scripts/prepare-device-check.sh"; exit 1; }
