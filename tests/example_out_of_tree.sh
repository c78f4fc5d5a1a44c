#!/usr/bin/env bash
# Installs the built engine into a scratch prefix, builds an example package against that
# installation only (find_package(Weft)), then runs the example's demo with the installed CLI.
# Usage: example_out_of_tree.sh <weft build dir> <example source dir>
set -euo pipefail
BUILD=${1:?build dir}
EXAMPLE=${2:?example dir}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cmake --install "$BUILD" --prefix "$WORK/prefix" > /dev/null
cmake -S "$EXAMPLE" -B "$WORK/build" -G Ninja -DCMAKE_PREFIX_PATH="$WORK/prefix" > /dev/null
cmake --build "$WORK/build"
test -f "$WORK/build/package/weft_manifest.json"
ls "$WORK"/build/package/op_graph/include/*_proto.h > /dev/null
"$EXAMPLE/run_demo.sh" "$WORK/prefix/bin/weft" "$WORK/build/package"
