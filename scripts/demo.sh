#!/usr/bin/env bash
# Quick start: install dependencies, build and install Weft into ./_install, build the
# examples/add_custom operator package out of tree against that installation and run a graph
# that uses it (float32 and float16), checked against NumPy; then the same for
# examples/compilable_add_custom, compiled offline into a model file and run from it.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
scripts/install_deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DWEFT_BUILD_TESTS=OFF -DWEFT_BUILD_BENCH=OFF
cmake --build build
cmake --install build --prefix "$ROOT/_install"
cmake -S examples/add_custom -B build/add_custom -G Ninja -DCMAKE_PREFIX_PATH="$ROOT/_install"
cmake --build build/add_custom
examples/add_custom/run_demo.sh "$ROOT/_install/bin/weft" "$ROOT/build/add_custom/package"
# Compile once, ship, run: a kernel generated and compiled at graph-compile time, saved in a
# model file (optionally with the plugin inside) and run from it.
cmake -S examples/compilable_add_custom -B build/compilable_add_custom -G Ninja -DCMAKE_PREFIX_PATH="$ROOT/_install"
cmake --build build/compilable_add_custom
examples/compilable_add_custom/run_demo.sh "$ROOT/_install/bin/weft" "$ROOT/build/compilable_add_custom/package"
echo
echo "Done. Try:  WEFT_CUSTOM_OPP_PATH=$ROOT/build/add_custom/package $ROOT/_install/bin/weft plugins"
