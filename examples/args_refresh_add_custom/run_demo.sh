#!/usr/bin/env bash
# Builds nothing: runs the rebinding demo next to the package (the out-of-tree build puts
# args_refresh_demo one level above the package). Usage: run_demo.sh <weft binary> <package root>
set -euo pipefail
PKG=${2:?package root}
DEMO="$(dirname "$PKG")/args_refresh_demo"
CACHE=$(mktemp -d)
trap 'rm -rf "$CACHE"' EXIT
WEFT_CACHE_DIR="$CACHE" "$DEMO" "$PKG" 4096 5000
