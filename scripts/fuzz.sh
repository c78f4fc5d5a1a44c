#!/usr/bin/env bash
# Builds each untrusted-input parser with clang's libFuzzer + AddressSanitizer + UBSan (only the
# sources it needs, never the unsanitized CMake build) and runs a bounded fuzz pass on each.
#
#   scripts/fuzz.sh [seconds per target] [target...]     (default: 30 s, every target)
#   scripts/fuzz.sh 600 onnx_import                       # a longer pass on one target
#   FUZZ_ARGS="-runs=1000000" scripts/fuzz.sh 0 npy       # extra libFuzzer flags
#
# Targets: model_file (the .weft loader; its seeds need a release build in build/), onnx_import,
# litert_import (.tflite files; seeded from ../shared/corpora), graph_json, npy, plugin_table (plugin registration: an operator library's C tables). Prints each target's executions; exits 1 if any target found a crash, leak,
# timeout or sanitizer report, with the failing input saved as build-fuzz/<target>-crash-*
# (replay: build-fuzz/<target>_fuzz FILE). Corpora grow in build-fuzz/corpus-<target>/.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
SECONDS_PER_TARGET=${1:-30}
shift || true
TARGETS=("$@")
[ ${#TARGETS[@]} -eq 0 ] && TARGETS=(model_file onnx_import litert_import graph_json npy plugin_table)
OUT=build-fuzz
mkdir -p "$OUT"
# The targets make their scratch directories under $TMPDIR; a crashed run cannot remove its own.
export TMPDIR="$ROOT/$OUT/tmp"
rm -rf "$TMPDIR"
mkdir -p "$TMPDIR"
CXXFLAGS=(-std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
          -DWEFT_NO_PLUGIN_ENTRY -Iinclude -Isrc)
PY=.venv/bin/python
[ -x "$PY" ] || PY=python3

build() {  # build NAME SOURCES... [-- LIBS...]
  local name=$1; shift
  echo "-- building ${name}_fuzz"
  nice -n 10 clang++ "${CXXFLAGS[@]}" "$@" -o "$OUT/${name}_fuzz"
}

seed_model_file() {
  local dir=$1 weft=build/bin/weft pkgs=build/tests/packages
  if [ ! -x "$weft" ]; then
    echo "model_file seeds need a release build in build/ (cmake --build build)" >&2
    return 1
  fi
  export WEFT_CACHE_DIR="$ROOT/$OUT/kernel-cache"
  # A built-in CNN-like graph, and graphs with runtime-compiled kernels and keyed blobs.
  "$weft" compile tests/fuzz/seed_cnn.json -o "$dir/seed_cnn.weft" > /dev/null
  "$weft" compile examples/compilable_add_custom/graph.json -p "$pkgs/compilable_add_custom" \
    -o "$dir/seed_rtc.weft" > /dev/null
  "$weft" compile examples/data_dependent_shape_custom/graph.json -p "$pkgs/data_dependent_shape_custom" \
    -o "$dir/seed_dds.weft" > /dev/null
}

seed_onnx_import() {
  local dir=$1 f
  # Every third model of the ONNX backend node tests (a few hundred small models, every op
  # family), named after their test directory.
  if command -v dpkg > /dev/null && dpkg -L libonnx-testdata > /dev/null 2>&1; then
    dpkg -L libonnx-testdata | grep '/model\.onnx$' | sort | awk 'NR % 3 == 1' | while read -r f; do
      cp "$f" "$dir/$(basename "$(dirname "$f")").onnx"
    done
  else
    echo "libonnx-testdata is not installed: the ONNX corpus starts from bench models only" >&2
  fi
  # QDQ convolutions, which the importer fuses into QLinearConv; ONNX Runtime's fused operators,
  # which it rewrites.
  "$PY" tests/fuzz/make_seeds.py onnx_qdq "$dir" || true
  "$PY" tests/fuzz/make_seeds.py onnx_contrib "$dir" || true
  # Benchmark models, when exported; libFuzzer truncates seeds past -max_len, so only small ones.
  for f in bench/models/out/*.onnx; do
    [ -f "$f" ] && [ "$(stat -c %s "$f")" -le 1048576 ] && cp "$f" "$dir/bench_$(basename "$f")"
  done
  [ -n "$(ls -A "$dir")" ]
}

seed_litert_import() {
  local dir=$1 corpora=${WEFT_CORPORA_DIR:-$ROOT/../shared/corpora} f
  # The test corpora's models up to 1 MiB (libFuzzer truncates longer seeds past -max_len).
  if [ -d "$corpora" ]; then
    find "$corpora" -name '*.tflite' -size -1025k | sort | while read -r f; do
      cp "$f" "$dir/$(basename "$(dirname "$f")")_$(basename "$f")"
    done
  else
    echo "no test corpora at $corpora (WEFT_CORPORA_DIR): the LiteRT corpus starts empty" >&2
  fi
  "$PY" -c "import sys; sys.path.insert(0, 'examples/litert_custom_op'); import make_model; make_model.main()" "$dir" 2> /dev/null || true
  rm -f "$dir"/*.npy
  [ -n "$(ls -A "$dir")" ]
}

seed_graph_json() { "$PY" tests/fuzz/make_seeds.py json "$1"; }
seed_npy() { "$PY" tests/fuzz/make_seeds.py npy "$1"; }
seed_plugin_table() { "$PY" tests/fuzz/make_seeds.py plugin_table "$1"; }

build_target() {
  case $1 in
    model_file) build model_file src/model/model_format.cc tests/fuzz/model_file_fuzz.cc -lxxhash ;;
    onnx_import)
      build onnx_import -DONNX_NAMESPACE=onnx -DONNX_ML=1 src/frontends/onnx/onnx_importer.cc src/frontends/onnx/onnx_contrib.cc src/graph/graph.cc \
        src/aot/registry_parts.cc src/core/suggest.cc src/core/npy.cc src/core/host_tensor.cc src/core/sequence_value.cc src/core/file_io.cc \
        tests/fuzz/onnx_import_fuzz.cc -lonnx_proto -lprotobuf ;;
    litert_import)
      mkdir -p "$OUT/generated"
      flatc --cpp -o "$OUT/generated" src/frontends/litert/litert_subset.fbs
      build litert_import -DFLATBUFFERS_LOCALE_INDEPENDENT=0 -I"$OUT/generated" src/frontends/litert/litert_importer.cc \
        src/frontends/litert/custom_op_key.cc src/aot/registry_parts.cc src/core/suggest.cc \
        src/graph/graph.cc src/core/npy.cc src/core/host_tensor.cc src/core/file_io.cc tests/fuzz/litert_import_fuzz.cc ;;
    graph_json)
      build graph_json src/graph/graph.cc src/core/npy.cc src/core/host_tensor.cc src/core/file_io.cc \
        tests/fuzz/graph_json_fuzz.cc ;;
    npy) build npy src/core/npy.cc src/core/host_tensor.cc src/core/file_io.cc tests/fuzz/npy_fuzz.cc ;;
    plugin_table)
      build plugin_table src/registry/registry.cc src/frontends/litert/custom_op_key.cc src/core/suggest.cc src/core/host_tensor.cc \
        src/core/file_io.cc src/core/npy.cc tests/fuzz/plugin_table_fuzz.cc -lxxhash ;;
    *) echo "unknown fuzz target '$1' (model_file, onnx_import, litert_import, graph_json, npy, plugin_table)" >&2; return 1 ;;
  esac
}

failed=()
for t in "${TARGETS[@]}"; do
  build_target "$t"
  corpus="$OUT/corpus-$t"
  [ "$t" = model_file ] && corpus="$OUT/corpus"  # where scripts/fuzz_model_file.sh kept it
  mkdir -p "$corpus"
  "seed_$t" "$corpus"
  dict=()
  [ -f "tests/fuzz/$t.dict" ] && dict=(-dict="tests/fuzz/$t.dict")
  log="$OUT/$t.log"
  start=$SECONDS
  set +e
  # shellcheck disable=SC2086  # FUZZ_ARGS is a list of flags
  ASAN_OPTIONS=detect_leaks=1 "$OUT/${t}_fuzz" -max_total_time="$SECONDS_PER_TARGET" -rss_limit_mb=2048 \
    -timeout=10 -print_final_stats=1 -artifact_prefix="$OUT/$t-" "${dict[@]}" ${FUZZ_ARGS:-} "$corpus" \
    > "$log" 2>&1
  rc=$?
  set -e
  execs=$(grep -m1 '^stat::number_of_executed_units' "$log" | awk '{print $2}')
  rss=$(grep -m1 '^stat::peak_rss_mb' "$log" | awk '{print $2}')
  echo "$t: ${execs:-?} executions in $((SECONDS - start)) s (peak RSS ${rss:-?} MB)"
  if [ "$rc" -ne 0 ]; then
    tail -n 60 "$log"
    echo "$t: the fuzzer found a failing input: $(grep -o "$OUT/$t-[a-z-]*[0-9a-f]*" "$log" | tail -n 1)" \
         "(replay: $OUT/${t}_fuzz FILE; log $log)" >&2
    failed+=("$t")
  fi
done
if [ ${#failed[@]} -ne 0 ]; then
  echo "fuzzing found failing inputs in: ${failed[*]}" >&2
  exit 1
fi
echo "fuzzing ${TARGETS[*]} for ${SECONDS_PER_TARGET}s each found no crash"
