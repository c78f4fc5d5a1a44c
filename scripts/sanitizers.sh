#!/usr/bin/env bash
# The sanitizer passes of the test suite (scripts/test.sh), each in a Debug build tree of its own:
#   scripts/sanitizers.sh asan   AddressSanitizer + UndefinedBehaviorSanitizer (build-asan/): the unit
#                                tests, the ONNX backend node suite, the op conformance harness
#                                (random shapes, size-0 dims, bad attributes) and the concurrency test
#   scripts/sanitizers.sh tsan   ThreadSanitizer (build-tsan/): many threads on one compiled model
# Needs what scripts/install_deps.sh installs (and .venv for the conformance cases).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
JOBS=${JOBS:-$(nproc)}
case ${1:-} in
  asan)
    cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DWEFT_SANITIZE=address,undefined \
      -DWEFT_BUILD_BENCH=OFF -DWEFT_BUILD_PYTHON=OFF > /dev/null
    cmake --build build-asan -j "$JOBS" --target weft_tests weft_concurrency_test weft_onnx_conformance
    export ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
    build-asan/tests/weft_tests --gtest_brief=1
    echo "-- the ONNX backend node suite under the sanitizers (every op's tests, each shape and attribute they use)"
    build-asan/tests/weft_onnx_conformance --expected tests/onnx/expected_pass.txt | tail -n 1
    echo "-- the op conformance harness under the sanitizers (random shapes, size-0 dims, bad attributes)"
    tests/ops/run_conformance.sh build-asan/tests/weft_onnx_conformance .venv/bin/python build-asan/op-cases | tail -n 1
    echo "-- the concurrency test under the sanitizers"
    build-asan/tests/weft_concurrency_test --gtest_brief=1
    ;;
  tsan)
    cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DWEFT_SANITIZE=thread \
      -DWEFT_BUILD_BENCH=OFF -DWEFT_BUILD_PYTHON=OFF > /dev/null
    cmake --build build-tsan -j "$JOBS" --target weft_concurrency_test
    TSAN_OPTIONS=halt_on_error=1 build-tsan/tests/weft_concurrency_test --gtest_repeat=3 --gtest_brief=1
    ;;
  *) echo "usage: scripts/sanitizers.sh asan|tsan" >&2; exit 2 ;;
esac
