#!/usr/bin/env bash
# The whole test suite: installs what is missing (scripts/install_deps.sh), then a release build
# + CTest (unit, numerics, CLI, the examples built out of tree, the ONNX node tests, pytest in
# .venv), `pip install` of the checkout into a fresh venv tested outside the tree, a bounded
# libFuzzer pass over every untrusted-input parser (.weft, ONNX, JSON graphs, .npy), then the
# suite again under AddressSanitizer+UBSan, and the concurrency test under ThreadSanitizer.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
JOBS=${JOBS:-$(nproc)}
START=$(date +%s)
# Each step's heading says when it starts, in minutes since the suite started.
step() { local t=$(( $(date +%s) - START )); printf '== [%d:%02d] %s\n' $(( t / 60 )) $(( t % 60 )) "$*"; }

scripts/install_deps.sh

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

step "AddressSanitizer + UndefinedBehaviorSanitizer"
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DWEFT_SANITIZE=address,undefined \
  -DWEFT_BUILD_BENCH=OFF -DWEFT_BUILD_PYTHON=OFF > /dev/null
cmake --build build-asan -j "$JOBS" --target weft_tests weft_concurrency_test weft_onnx_conformance
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
  build-asan/tests/weft_tests --gtest_brief=1
step "-- the ONNX backend node suite under the sanitizers (every op's tests, each shape and attribute they use)"
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
  build-asan/tests/weft_onnx_conformance --expected tests/onnx/expected_pass.txt | tail -n 1
step "-- the op conformance harness under the sanitizers (random shapes, size-0 dims, bad attributes)"
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
  tests/ops/run_conformance.sh build-asan/tests/weft_onnx_conformance .venv/bin/python build-asan/op-cases | tail -n 1
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1 build-asan/tests/weft_concurrency_test --gtest_brief=1

step "ThreadSanitizer: many threads on one compiled model"
cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DWEFT_SANITIZE=thread \
  -DWEFT_BUILD_BENCH=OFF -DWEFT_BUILD_PYTHON=OFF > /dev/null
cmake --build build-tsan -j "$JOBS" --target weft_concurrency_test
TSAN_OPTIONS=halt_on_error=1 build-tsan/tests/weft_concurrency_test --gtest_repeat=3 --gtest_brief=1

step "All tests passed."
