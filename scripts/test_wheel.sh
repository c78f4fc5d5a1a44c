#!/usr/bin/env bash
# Builds the `weft` wheel offline from the release build in build/, installs it into a fresh venv
# made from /usr/bin/python3 with --system-site-packages, and runs the Python tests and the
# PyTorch example from a directory outside the source tree against the installed package.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
BUILD="$ROOT/build"
OUT="$BUILD/wheel"
rm -rf "$OUT" "$BUILD/venv" python/build python/*.egg-info
WEFT_CMAKE_BUILD_DIR="$BUILD" /usr/bin/python3 -m pip wheel --no-build-isolation --no-deps --no-index -q -w "$OUT" python/
WHEEL=$(ls "$OUT"/weft-*.whl)
echo "built $(basename "$WHEEL")"
/usr/bin/python3 -m venv --system-site-packages "$BUILD/venv"
"$BUILD/venv/bin/python" -m pip install -q --no-deps --no-index "$WHEEL"
rm -rf python/build python/*.egg-info
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cp -r python/tests "$WORK/tests"
cp examples/torch_custom_op/torch_custom_op.py "$WORK/"
cd "$WORK"
PKGS="$BUILD/tests/packages"
export WEFT_TEST_PACKAGES="$PKGS" WEFT_CACHE_DIR="$WORK/cache"
export WEFT_CUSTOM_OPP_PATH="$PKGS/test_ops:$PKGS/add_custom"
"$BUILD/venv/bin/python" - "$ROOT" <<'PY'
import sys, weft, weft.torch
root = sys.argv[1]
assert "/site-packages/weft/" in weft.__file__, f"weft is not the installed wheel: {weft.__file__}"
print("using", weft.__file__, "native torch kernels:", weft.torch.is_native("Add"))
PY
"$BUILD/venv/bin/python" -m pytest -q -p no:cacheprovider tests
WEFT_CUSTOM_OPP_PATH="$PKGS/add_custom" "$BUILD/venv/bin/python" torch_custom_op.py
echo "wheel test passed outside the source tree"
