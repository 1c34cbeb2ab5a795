#!/usr/bin/env bash
# Writes docs/OPS.md, the supported-op list, from aotc's op registry:
#   scripts/gen_ops_doc.sh [BUILD_DIR]      (default: build)
# Run it after adding or merging ops; the ops_doc test fails while docs/OPS.md is stale.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
ninja -C "$build" compiler/aotc >/dev/null
tmp=$(mktemp "$root/docs/.OPS.md.XXXXXX")
trap 'rm -f "$tmp"' EXIT
"$build/compiler/aotc" --list-ops --markdown >"$tmp"
mv "$tmp" "$root/docs/OPS.md"
trap - EXIT
echo "wrote docs/OPS.md ($(grep -c '^| `' "$root/docs/OPS.md") ops)"
