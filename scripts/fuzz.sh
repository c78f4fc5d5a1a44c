#!/usr/bin/env bash
# Builds each untrusted-input parser with clang's libFuzzer + AddressSanitizer + UBSan (only the
# sources it needs, never the unsanitized CMake build; a source two targets share is compiled once)
# and runs a bounded fuzz pass on each, $JOBS (default: the machine's cores) at a time.
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

# Each target's sources and libraries. A source two targets share is compiled once.
declare -A SRCS LIBS
SRCS[model_file]="src/model/model_format.cc tests/fuzz/model_file_fuzz.cc"
LIBS[model_file]="-lxxhash"
SRCS[onnx_import]="src/frontends/onnx/onnx_importer.cc src/frontends/onnx/onnx_contrib.cc src/graph/graph.cc
  src/aot/registry_parts.cc src/core/suggest.cc src/core/npy.cc src/core/host_tensor.cc src/core/sequence_value.cc
  src/core/file_io.cc tests/fuzz/onnx_import_fuzz.cc"
LIBS[onnx_import]="-lonnx_proto -lprotobuf"
SRCS[litert_import]="src/frontends/litert/litert_importer.cc src/frontends/litert/custom_op_key.cc src/aot/registry_parts.cc
  src/core/suggest.cc src/graph/graph.cc src/core/npy.cc src/core/host_tensor.cc src/core/file_io.cc
  tests/fuzz/litert_import_fuzz.cc"
LIBS[litert_import]=""
SRCS[graph_json]="src/graph/graph.cc src/core/npy.cc src/core/host_tensor.cc src/core/file_io.cc tests/fuzz/graph_json_fuzz.cc"
LIBS[graph_json]=""
SRCS[npy]="src/core/npy.cc src/core/host_tensor.cc src/core/file_io.cc tests/fuzz/npy_fuzz.cc"
LIBS[npy]=""
SRCS[plugin_table]="src/registry/registry.cc src/frontends/litert/custom_op_key.cc src/core/suggest.cc src/core/host_tensor.cc
  src/core/file_io.cc src/core/npy.cc tests/fuzz/plugin_table_fuzz.cc"
LIBS[plugin_table]="-lxxhash"
for t in "${TARGETS[@]}"; do
  [ -n "${SRCS[$t]+set}" ] || { echo "unknown fuzz target '$t' (model_file, onnx_import, litert_import, graph_json, npy, plugin_table)" >&2; exit 2; }
done

# Build: each source the chosen targets need, once, $JOBS at a time (an object newer than its
# source and every header it includes is kept), then one link per target.
JOBS=${JOBS:-$(nproc)}
[ "$JOBS" -ge 1 ] 2> /dev/null || JOBS=1
# A failure stops the compiles and fuzzers still running in the background.
trap 'rc=$?; [ $rc -ne 0 ] && kill $(jobs -p) 2> /dev/null; exit $rc' EXIT
mkdir -p "$OUT/generated" "$OUT/obj"
if [[ " ${TARGETS[*]} " == *" litert_import "* ]]; then
  # The schema's header, replaced only when it changes (so the importer is not compiled again).
  flatc --cpp -o "$OUT/generated/new" src/frontends/litert/litert_subset.fbs
  cmp -s "$OUT/generated/new/litert_subset_generated.h" "$OUT/generated/litert_subset_generated.h" ||
    mv "$OUT/generated/new/litert_subset_generated.h" "$OUT/generated/"
  rm -rf "$OUT/generated/new"
fi
CXXFLAGS+=(-DONNX_NAMESPACE=onnx -DONNX_ML=1 -DFLATBUFFERS_LOCALE_INDEPENDENT=0 -I"$OUT/generated")
obj_of() { echo "$OUT/obj/$(echo "${1%.cc}" | tr / _).o"; }
stale() {  # stale SRC OBJ: true when OBJ must be rebuilt
  local dep="${2%.o}.d" f
  [ -f "$2" ] && [ -f "$dep" ] || return 0
  for f in $(sed -e 's/^[^:]*://' -e 's/\\$//' "$dep"); do [ "$f" -nt "$2" ] && return 0; done
  return 1
}
mapfile -t sources < <(for t in "${TARGETS[@]}"; do printf '%s\n' ${SRCS[$t]}; done | sort -u)
pids=()
for src in "${sources[@]}"; do
  obj=$(obj_of "$src")
  stale "$src" "$obj" || continue
  while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n || true; done
  echo "-- compiling $src"
  nice -n 10 clang++ "${CXXFLAGS[@]}" -MMD -c "$src" -o "$obj" &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || { echo "fuzz build failed (see the compiler's output above)" >&2; exit 1; }; done
for t in "${TARGETS[@]}"; do
  objs=()
  for src in ${SRCS[$t]}; do objs+=("$(obj_of "$src")"); done
  # shellcheck disable=SC2086  # LIBS holds a list of flags
  clang++ "${CXXFLAGS[@]}" "${objs[@]}" ${LIBS[$t]} -o "$OUT/${t}_fuzz"
done

# Seeds, then the fuzzers themselves, $JOBS at a time, each bounded in time and memory.
fuzz_one() {  # fuzz_one TARGET CORPUS: writes $OUT/TARGET.log and $OUT/TARGET.result, returns libFuzzer's status
  local t=$1 corpus=$2 dict=() start=$SECONDS rc execs rss
  [ -f "tests/fuzz/$t.dict" ] && dict=(-dict="tests/fuzz/$t.dict")
  set +e
  # shellcheck disable=SC2086  # FUZZ_ARGS is a list of flags
  ASAN_OPTIONS=detect_leaks=1 "$OUT/${t}_fuzz" -max_total_time="$SECONDS_PER_TARGET" -rss_limit_mb=2048 \
    -timeout=10 -print_final_stats=1 -artifact_prefix="$OUT/$t-" "${dict[@]}" ${FUZZ_ARGS:-} "$corpus" \
    > "$OUT/$t.log" 2>&1
  rc=$?
  set -e
  execs=$(grep -m1 '^stat::number_of_executed_units' "$OUT/$t.log" | awk '{print $2}' || true)
  rss=$(grep -m1 '^stat::peak_rss_mb' "$OUT/$t.log" | awk '{print $2}' || true)
  echo "$t: ${execs:-?} executions in $((SECONDS - start)) s (peak RSS ${rss:-?} MB)" > "$OUT/$t.result"
  return $rc
}
declare -A fuzz_pid
for t in "${TARGETS[@]}"; do
  corpus="$OUT/corpus-$t"
  [ "$t" = model_file ] && corpus="$OUT/corpus"  # where scripts/fuzz_model_file.sh kept it
  mkdir -p "$corpus"
  "seed_$t" "$corpus"
  rm -f "$OUT/$t.result"
  while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n || true; done
  fuzz_one "$t" "$corpus" &
  fuzz_pid[$t]=$!
done
failed=()
for t in "${TARGETS[@]}"; do
  if wait "${fuzz_pid[$t]}"; then
    cat "$OUT/$t.result"
  else
    cat "$OUT/$t.result" 2> /dev/null || true
    tail -n 60 "$OUT/$t.log"
    echo "$t: the fuzzer found a failing input: $(grep -o "$OUT/$t-[a-z-]*[0-9a-f]*" "$OUT/$t.log" | tail -n 1)" \
         "(replay: $OUT/${t}_fuzz FILE; log $OUT/$t.log)" >&2
    failed+=("$t")
  fi
done
if [ ${#failed[@]} -ne 0 ]; then
  echo "fuzzing found failing inputs in: ${failed[*]}" >&2
  exit 1
fi
echo "fuzzing ${TARGETS[*]} for ${SECONDS_PER_TARGET}s each found no crash"
