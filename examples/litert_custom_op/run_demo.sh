#!/usr/bin/env bash
# A LiteRT model with a custom operator, run through the CLI: make_model.py writes a .tflite whose
# CUSTOM op has customCode "Convolution2DTransposeBias"; the package maps that code to its
# TransposeConvBias op (framework/litert/op_map.json) and runs it; the result is checked against a
# float64 re-computation. Without the package the error names the code and how to provide it.
# Usage: run_demo.sh <weft binary> <package root>
set -euo pipefail
WEFT=${1:?weft binary}
PKG=${2:?package root}
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
"${PYTHON:-python3}" "$HERE/make_model.py" "$WORK"
WEFT_CUSTOM_OPP_PATH="$PKG" "$WEFT" inspect "$WORK/model.tflite"
WEFT_CUSTOM_OPP_PATH="$PKG" "$WEFT" run "$WORK/model.tflite" -i x="$WORK/x.npy" -o "$WORK/out"
"${PYTHON:-python3}" - "$WORK" <<'PY'
import sys, numpy as np
w = sys.argv[1]
got, want = np.load(f"{w}/out/y.npy"), np.load(f"{w}/want.npy")
assert got.shape == want.shape, (got.shape, want.shape)
err = np.abs(got - want).max()
assert err <= 1e-5 * max(1.0, np.abs(want).max()), f"max abs diff {err}"
print(f"Convolution2DTransposeBias + RELU from a .tflite: matches the float64 re-computation (max abs diff {err:.1e})")
PY
if env -u WEFT_CUSTOM_OPP_PATH -u ASCEND_CUSTOM_OPP_PATH "$WEFT" run "$WORK/model.tflite" -i x="$WORK/x.npy" -o "$WORK/none" 2> "$WORK/err"; then
  echo "expected an error for the unimplemented custom operator" >&2; exit 1
fi
cat "$WORK/err"
grep -q "customCode 'Convolution2DTransposeBias' (canonical key 'CONVOLUTION2DTRANSPOSEBIAS')" "$WORK/err"
grep -q "framework/litert/op_map.json" "$WORK/err"
