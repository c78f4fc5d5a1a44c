#!/usr/bin/env bash
# Runs AddCustom on random float32 and float16 inputs through `weft run` and checks z == x + y
# with NumPy. Usage: run_demo.sh <weft binary> <package root>
set -euo pipefail
WEFT=${1:?weft binary}
PKG=${2:?package root}
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
export WEFT_CUSTOM_OPP_PATH="$PKG${WEFT_CUSTOM_OPP_PATH:+:$WEFT_CUSTOM_OPP_PATH}"
"$WEFT" plugins
for dt in f32 f16; do
  "${PYTHON:-python3}" - "$WORK" "$dt" <<'PY'
import sys, numpy as np
work, dt = sys.argv[1], sys.argv[2]
rng = np.random.default_rng(7 if dt == "f32" else 11)
t = np.float32 if dt == "f32" else np.float16
np.save(f"{work}/x_{dt}.npy", rng.standard_normal((4, 2048)).astype(t))
np.save(f"{work}/y_{dt}.npy", rng.standard_normal((4, 2048)).astype(t))
PY
  "$WEFT" run "$HERE/graph_$dt.json" --input x="$WORK/x_$dt.npy" --input y="$WORK/y_$dt.npy" --output-dir "$WORK/out_$dt"
  "${PYTHON:-python3}" - "$WORK" "$dt" <<'PY'
import sys, numpy as np
work, dt = sys.argv[1], sys.argv[2]
x, y = np.load(f"{work}/x_{dt}.npy"), np.load(f"{work}/y_{dt}.npy")
z = np.load(f"{work}/out_{dt}/z.npy")
ref = (x.astype(np.float64) + y.astype(np.float64)).astype(x.dtype)  # round once, like the kernel
assert z.dtype == x.dtype and z.shape == x.shape, (z.dtype, z.shape)
assert np.array_equal(z, ref), f"max abs diff {np.abs(z.astype(np.float64) - ref).max()}"
print(f"AddCustom {z.dtype}{list(z.shape)}: z == x + y (NumPy) for all {z.size} elements")
PY
done
