#!/usr/bin/env bash
# Quick start: install every dependency (Debian packages and the Python environment .venv/),
# build Weft and install it into .venv/ (`pip install .`: the engine, the `weft` Python package
# and PyTorch ops, the `weft` command and the C++ SDK), then build the examples/add_custom
# operator package out of tree against that installation and run a graph that uses it (float32,
# float16; checked against NumPy), and the same for examples/compilable_add_custom, compiled
# offline into a model file and run from it; last, the PyTorch route on add_custom.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
scripts/install_deps.sh
VENV="$ROOT/.venv"
export PYTHON="$VENV/bin/python"
# Compiles go through ccache, so scripts/test.sh's release build reuses this install's objects.
. "$ROOT/scripts/build_env.sh"

echo "== Building and installing Weft into $VENV (pip install .; a few minutes on 2 cores)"
# The build directory (build-wheel/) is kept, so running this again rebuilds only what changed.
"$PYTHON" -m pip install --disable-pip-version-check --no-build-isolation --no-deps -v \
  --config-settings=build-dir="$ROOT/build-wheel" "$ROOT" 2>&1 | grep -E '^\[[0-9]+/[0-9]+\]|Successfully|rror' || true
"$PYTHON" -c 'import weft' 2>/dev/null || { echo "the Weft build failed; run: $PYTHON -m pip install -v ." >&2; exit 1; }
WEFT="$VENV/bin/weft"
"$WEFT" --help > /dev/null
"$PYTHON" -c 'import weft, weft.torch; print("installed:", weft.__file__)'
PREFIX=$("$PYTHON" -c 'import weft; print(weft.cmake_prefix_path)')

echo "== An operator package built out of tree against the installed SDK"
cmake -S examples/add_custom -B build/add_custom -G Ninja -DCMAKE_PREFIX_PATH="$PREFIX" > /dev/null
cmake --build build/add_custom
examples/add_custom/run_demo.sh "$WEFT" "$ROOT/build/add_custom/package"

echo "== Compile once, ship, run: a kernel generated at graph-compile time, saved in a model file"
cmake -S examples/compilable_add_custom -B build/compilable_add_custom -G Ninja -DCMAKE_PREFIX_PATH="$PREFIX" > /dev/null
cmake --build build/compilable_add_custom
examples/compilable_add_custom/run_demo.sh "$WEFT" "$ROOT/build/compilable_add_custom/package"

echo "== The same operator in PyTorch: torch.ops.weft.AddCustom"
WEFT_CUSTOM_OPP_PATH="$ROOT/build/add_custom/package" "$PYTHON" examples/torch_custom_op/torch_custom_op.py

echo
echo "Done. Weft is installed in $VENV. Try:"
echo "  . .venv/bin/activate"
echo "  WEFT_CUSTOM_OPP_PATH=$ROOT/build/add_custom/package weft plugins"
echo "  python -c 'import weft, weft.torch; print(weft.default_session().ops()[:8])'"
