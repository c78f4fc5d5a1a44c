#!/usr/bin/env bash
# One operator, three routes. make_model.py writes a .tflite whose CUSTOM op has customCode
# "checked-sqrt"; the package maps it to its CheckedSqrt op, which
#   1. runs in Weft's runtime (checked against a float64 re-computation), and refuses a negative
#      input with an error naming the element;
#   2. emits its own C: `weft aot` turns the model into a C99 module, which builds with
#      -std=c99 -pedantic -Werror and runs its generated test case;
#   3. in that module, fails a negative input with its own status 1001, which the caller sees.
# Usage: run_demo.sh <weft binary> <package root>
set -euo pipefail
WEFT=${1:?weft binary}
PKG=${2:?package root}
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
CC=${CC:-cc}
"${PYTHON:-python3}" "$HERE/make_model.py" "$WORK"
export WEFT_CUSTOM_OPP_PATH="$PKG"

# 1. The runtime.
"$WEFT" run "$WORK/model.tflite" -i x="$WORK/x.npy" -o "$WORK/out"
"${PYTHON:-python3}" - "$WORK" <<'PY'
import sys, numpy as np
w = sys.argv[1]
got, want = np.load(f"{w}/out/y.npy"), np.load(f"{w}/want.npy")
err = np.abs(got - want).max()
assert got.shape == want.shape and err <= 1e-5 * max(1.0, np.abs(want).max()), (got, want)
print(f"runtime: matches the float64 re-computation (max abs diff {err:.1e})")
PY
if "$WEFT" run "$WORK/model.tflite" -i x="$WORK/bad_x.npy" -o "$WORK/bad" 2> "$WORK/err"; then
  echo "expected the runtime to refuse a negative input" >&2; exit 1
fi
grep -q "input element 5 is -0.250000" "$WORK/err"
echo "runtime: a negative input fails: $(cat "$WORK/err")"

# 2. The C module, with the runtime's outputs on x.npy as its test case.
"$WEFT" aot "$WORK/model.tflite" --prefix demo -o "$WORK/c" --test --test-input x="$WORK/x.npy"
FLAGS=(-std=c99 -Wall -Wextra -Werror -pedantic -O2 -I"$WORK/c/includes-api" -I"$WORK/c/src" -I"$WORK/c/test")
"$CC" "${FLAGS[@]}" "$WORK"/c/src/*.c "$WORK"/c/test/*.c -o "$WORK/demo_test" -lm
"$WORK/demo_test"

# 3. The failure path through the module.
"$CC" "${FLAGS[@]}" "$WORK"/c/src/*.c "$HERE/bad_input_main.c" -o "$WORK/bad_input" -lm
"$WORK/bad_input"
