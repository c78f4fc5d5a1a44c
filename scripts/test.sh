#!/usr/bin/env bash
# The whole test suite: installs what is missing (scripts/install_deps.sh), then a release build
# + CTest (unit, numerics, CLI, the examples built out of tree, the ONNX node tests, pytest in
# .venv), `pip install` of the checkout into a fresh venv tested outside the tree, a bounded
# libFuzzer pass over every untrusted-input parser (.weft, ONNX, JSON graphs, .npy), then the
# suite again under AddressSanitizer+UBSan, and the concurrency test under ThreadSanitizer
# (scripts/sanitizers.sh).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
JOBS=${JOBS:-$(nproc)}
START=$(date +%s)
# Each step's heading says when it starts, in minutes since the suite started.
step() { local t=$(( $(date +%s) - START )); printf '== [%d:%02d] %s\n' $(( t / 60 )) $(( t % 60 )) "$*"; }

scripts/install_deps.sh
# Compiles go through ccache: the release build below reuses what scripts/demo.sh's install
# compiled in build-wheel/ (build directories side by side, so their relative paths agree).
. "$ROOT/scripts/build_env.sh"

step "release build + tests"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DWEFT_BUILD_TESTS=ON -DWEFT_BUILD_BENCH=ON > /dev/null
cmake --build build -j "$JOBS"
ctest --test-dir build -j "$JOBS" --output-on-failure
step "ONNX backend node tests (the pass list is enforced by CTest above)"
build/tests/weft_onnx_conformance --expected tests/onnx/expected_pass.txt | tail -n 3

step "pip install of the checkout into a fresh venv, tested outside the source tree"
scripts/test_wheel.sh

step "the parsers of untrusted input under libFuzzer (bounded pass per target)"
scripts/fuzz.sh "${WEFT_FUZZ_SECONDS:-30}"

# The sanitizer passes build a Debug tree each, the suite's longest steps. Under a deadline
# (WEFT_CI_DEADLINE, seconds since the epoch, which .ci/run sets from its time limit) each starts
# only if about its usual time is left, and stops at the deadline; a pass skipped or cut short says
# so here.
NOT_RUN=()
budgeted() {  # budgeted MINUTES NAME COMMAND...
  local need=$1 name=$2 left rc; shift 2
  [ -n "${WEFT_CI_DEADLINE:-}" ] || { step "$name"; "$@"; return; }
  left=$(( WEFT_CI_DEADLINE - $(date +%s) ))
  if [ "$left" -lt $(( need * 60 )) ]; then
    step "SKIPPED: $name: $(( left / 60 )) min left before the deadline, and it takes about $need"
    NOT_RUN+=("$name (skipped)")
    return 0
  fi
  step "$name (deadline in $(( left / 60 )) min)"
  set +e
  timeout -k 30 "$left" "$@"
  rc=$?
  set -e
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    step "CUT SHORT: $name reached the deadline"
    NOT_RUN+=("$name (cut short)")
    return 0
  fi
  return "$rc"
}
budgeted 20 "AddressSanitizer + UndefinedBehaviorSanitizer" scripts/sanitizers.sh asan
budgeted 8 "ThreadSanitizer: many threads on one compiled model" scripts/sanitizers.sh tsan

if [ ${#NOT_RUN[@]} -eq 0 ]; then
  step "All tests passed."
else
  step "Every test that ran passed. Not run to the end within the deadline: ${NOT_RUN[*]}"
fi
