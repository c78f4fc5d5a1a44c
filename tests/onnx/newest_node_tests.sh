#!/usr/bin/env bash
# The ONNX backend node tests of the onnx package in the project's environment (newer than
# Debian's libonnx-testdata: opsets up to the package's newest), written out from the package's
# own test cases and run through Weft; every test in EXPECTED must pass.
#
#   tests/onnx/newest_node_tests.sh RUNNER PYTHON OUT_DIR EXPECTED [--write-expected FILE]
set -euo pipefail
if [ $# -lt 4 ]; then
  echo "usage: $0 RUNNER PYTHON OUT_DIR EXPECTED [--write-expected FILE]" >&2
  exit 2
fi
runner=$1 python=$2 out=$3 expected=$4
shift 4
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$out"
"$python" "$here/write_node_tests.py" "$out"
if [ "${1:-}" = "--write-expected" ]; then
  "$runner" --data "$out" --write-expected "$2" | tail -n 1
else
  "$runner" --data "$out" --expected "$expected" | tail -n 40
fi
