#!/usr/bin/env bash
# Builds the model-file parser with clang's libFuzzer + AddressSanitizer + UBSan and runs a
# bounded fuzz pass seeded with real model files (written by `weft compile`).
# Usage: scripts/fuzz_model_file.sh [seconds] (needs a release build in build/)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
SECONDS_TO_RUN=${1:-60}
OUT=build-fuzz
mkdir -p "$OUT/corpus"
clang++ -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
  -DWEFT_NO_PLUGIN_ENTRY -Iinclude -Isrc src/model/model_format.cc tests/fuzz/model_file_fuzz.cc \
  -lxxhash -o "$OUT/model_file_fuzz"
# Seeds: a built-in CNN-like graph, and a graph with runtime-compiled kernels and keyed blobs.
WEFT=build/bin/weft
PKGS=build/tests/packages
export WEFT_CACHE_DIR="$ROOT/$OUT/kernel-cache"
"$WEFT" compile tests/fuzz/seed_cnn.json -o "$OUT/corpus/seed_cnn.weft" > /dev/null
"$WEFT" compile examples/compilable_add_custom/graph.json -p "$PKGS/compilable_add_custom" \
  -o "$OUT/corpus/seed_rtc.weft" > /dev/null
"$WEFT" compile examples/data_dependent_shape_custom/graph.json -p "$PKGS/data_dependent_shape_custom" \
  -o "$OUT/corpus/seed_dds.weft" > /dev/null
set +e
ASAN_OPTIONS=detect_leaks=1 "$OUT/model_file_fuzz" -max_total_time="$SECONDS_TO_RUN" -rss_limit_mb=2048 \
  -timeout=10 -print_final_stats=1 -artifact_prefix="$OUT/" "$OUT/corpus" > "$OUT/fuzz.log" 2>&1
rc=$?
set -e
grep -E "^stat::(number_of_executed_units|peak_rss_mb)" "$OUT/fuzz.log" || true
if [ "$rc" -ne 0 ]; then
  tail -n 60 "$OUT/fuzz.log"
  echo "the fuzzer found a failing input (saved under $OUT/)" >&2
  exit 1
fi
echo "fuzzing the model-file parser for ${SECONDS_TO_RUN}s found no crash"
