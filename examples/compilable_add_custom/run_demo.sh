#!/usr/bin/env bash
# Scenarios 2 and 3 with the CLI: compile the graph offline (its kernels are generated and built by
# the system compiler at graph-compile time, through the kernel cache), run the model file, check
# z = (x + y) + y against NumPy; then run a copy with the plugin embedded, with no package
# installed at all. Usage: run_demo.sh <weft binary> <package root>
set -euo pipefail
WEFT=${1:?weft binary}
PKG=${2:?package root}
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
export WEFT_CACHE_DIR="$WORK/cache"
"${PYTHON:-python3}" - "$WORK" <<'PY'
import sys, numpy as np
rng = np.random.default_rng(3)
for n in "xy":
    np.save(f"{sys.argv[1]}/{n}.npy", rng.standard_normal((4, 2048)).astype(np.float32))
PY
WEFT_CUSTOM_OPP_PATH="$PKG" "$WEFT" compile "$HERE/graph.json" -o "$WORK/model.weft"
ls "$WEFT_CACHE_DIR"/*.so > /dev/null  # the compiled kernel is cached on disk
WEFT_CUSTOM_OPP_PATH="$PKG" "$WEFT" compile "$HERE/graph.json" -o "$WORK/model_embedded.weft" --embed-plugins
"$WEFT" inspect "$WORK/model_embedded.weft"
# The file carries the kernel compiled for it: native code, so it runs on an explicit trust
# decision (--trust-embedded-code; docs/security.md), here for a file this script just wrote.
WEFT_CUSTOM_OPP_PATH="$PKG" "$WEFT" run "$WORK/model.weft" --trust-embedded-code -i x="$WORK/x.npy" -i y="$WORK/y.npy" -o "$WORK/out"
# Without the package the plain file names what to install; the embedded one runs its own copy
# of the plugin, also native code from the file, so again only with --trust-embedded-code.
if env -u WEFT_CUSTOM_OPP_PATH -u ASCEND_CUSTOM_OPP_PATH "$WEFT" run "$WORK/model.weft" -i x="$WORK/x.npy" -i y="$WORK/y.npy" -o "$WORK/none" 2> "$WORK/err"; then
  echo "expected a missing-package error" >&2; exit 1
fi
grep -q "compilable_add_custom" "$WORK/err" && cat "$WORK/err"
if env -u WEFT_CUSTOM_OPP_PATH -u ASCEND_CUSTOM_OPP_PATH "$WEFT" run "$WORK/model_embedded.weft" -i x="$WORK/x.npy" -i y="$WORK/y.npy" -o "$WORK/none" 2> "$WORK/err"; then
  echo "expected embedded native code to need --trust-embedded-code" >&2; exit 1
fi
grep -q "trust-embedded-code" "$WORK/err" && cat "$WORK/err"
env -u WEFT_CUSTOM_OPP_PATH -u ASCEND_CUSTOM_OPP_PATH "$WEFT" run "$WORK/model_embedded.weft" --trust-embedded-code \
  -i x="$WORK/x.npy" -i y="$WORK/y.npy" -o "$WORK/out_embedded"
"${PYTHON:-python3}" - "$WORK" <<'PY'
import sys, numpy as np
w = sys.argv[1]
x, y = np.load(f"{w}/x.npy"), np.load(f"{w}/y.npy")
ref = (x + y) + y  # float32, the same two roundings as the kernels
for d in ("out", "out_embedded"):
    z = np.load(f"{w}/{d}/z.npy")
    assert z.dtype == np.float32 and z.shape == x.shape, (z.dtype, z.shape)
    assert np.array_equal(z, ref), f"{d}: max abs diff {np.abs(z - ref).max()}"
print(f"CompilableAddCustom from model files: z == (x + y) + y (NumPy) for all {ref.size} elements")
PY
