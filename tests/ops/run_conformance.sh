#!/usr/bin/env bash
# The op conformance harness: writes the cases (conformance_cases.py; ONNX Runtime gives the
# expected outputs) and runs every one through Weft in strict mode (each must pass; a must-fail
# case must be refused with the expected text).
#
#   tests/ops/run_conformance.sh RUNNER PYTHON OUT_DIR [generator flags...]
#   e.g. tests/ops/run_conformance.sh build/tests/weft_onnx_conformance .venv/bin/python build/op-cases
set -euo pipefail
if [ $# -lt 3 ]; then
  echo "usage: $0 RUNNER PYTHON OUT_DIR [--seed N] [--ops A,B]" >&2
  exit 2
fi
runner=$1 python=$2 out=$3
shift 3
here=$(cd "$(dirname "$0")" && pwd)
"$python" "$here/conformance_cases.py" "$out" "$@" 2> >(grep -v "onnxruntime:" >&2)
"$runner" --data "$out" --strict | tail -n 40
