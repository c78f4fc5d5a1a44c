#!/usr/bin/env bash
# Runs the PyTorch demo with the add_custom package. The `weft` Python package must be importable
# by $PYTHON (default: python3 on PATH): installed from the wheel, or PYTHONPATH=<build>/python.
# Usage: run_demo.sh <weft binary (unused)> <package root>
set -euo pipefail
PKG=${2:?package root}
HERE=$(cd "$(dirname "$0")" && pwd)
WEFT_CUSTOM_OPP_PATH="$PKG" "${PYTHON:-python3}" "$HERE/torch_custom_op.py"
