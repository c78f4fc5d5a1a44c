#!/usr/bin/env bash
# Scenario 4 with the CLI: WhereIndicesCustom's output size depends on the data. Runs it on
# inputs with different numbers of non-zeros, directly and from a compiled model file, and checks
# the indices, their shape as seen by the downstream Shape node, and the built-in NonZero against
# NumPy. Usage: run_demo.sh <weft binary> <package root>
set -euo pipefail
WEFT=${1:?weft binary}
PKG=${2:?package root}
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
export WEFT_CUSTOM_OPP_PATH="$PKG${WEFT_CUSTOM_OPP_PATH:+:$WEFT_CUSTOM_OPP_PATH}"
"$WEFT" compile "$HERE/graph.json" -o "$WORK/where.weft"
for density in 0.0 0.3 0.8 1.0; do
  "${PYTHON:-python3}" - "$WORK" "$density" <<'PY'
import sys, numpy as np
rng = np.random.default_rng(int(float(sys.argv[2]) * 10))
x = rng.standard_normal((6, 5)).astype(np.float32)
x[rng.random((6, 5)) >= float(sys.argv[2])] = 0
np.save(f"{sys.argv[1]}/x.npy", x)
PY
  for model in "$HERE/graph.json" "$WORK/where.weft"; do
    "$WEFT" run "$model" -i x="$WORK/x.npy" -o "$WORK/out" > /dev/null
    "${PYTHON:-python3}" - "$WORK" "$density" <<'PY'
import sys, numpy as np
w = sys.argv[1]
x = np.load(f"{w}/x.npy")
idx, shp, nz = (np.load(f"{w}/out/{n}.npy") for n in ("idx", "idx_shape", "nz"))
ref = np.argwhere(x)
assert idx.dtype == np.int64 and np.array_equal(idx, ref), (idx.shape, ref.shape)
assert list(shp) == list(ref.shape), (shp, ref.shape)
assert np.array_equal(nz, np.array(np.nonzero(x))), nz.shape
print(f"density {sys.argv[2]}: {len(ref)} of {x.size} non-zero; indices, downstream shape and NonZero match NumPy")
PY
  done
done
