#!/usr/bin/env bash
# The Python package as a user installs it: a fresh venv holding only PyTorch 2.13, then
# `pip install <checkout>` (pip builds the engine from source in an isolated build environment),
# then the Python tests and the PyTorch example run from a directory outside the source tree
# against the installed package; also checks that the installed libweft.so exports only the
# public API. Needs the test packages of the release build in build/ (scripts/test.sh).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD="$ROOT/build"
PKGS="$BUILD/tests/packages"
[ -d "$PKGS" ] || { echo "no test packages in $PKGS: build with tests first (scripts/test.sh)" >&2; exit 1; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
VENV="$WORK/venv"
/usr/bin/python3 -m venv "$VENV"
PIP=("$VENV/bin/python" -m pip --disable-pip-version-check -q)
# requirements.txt's pins as pip constraints (which cannot name extras such as ray[serve]).
sed -E 's/\[[^]]*\]//' "$ROOT/requirements.txt" > "$WORK/constraints.txt"
"${PIP[@]}" install -c "$WORK/constraints.txt" torch
echo "fresh venv: $("$VENV/bin/python" -m pip list --format=freeze 2>/dev/null | grep -ci '^[a-z]') packages, torch $("$VENV/bin/python" -c 'import torch; print(torch.__version__)')"
# pip builds in an isolated environment of pyproject.toml's build requirements, in the build
# directory scripts/demo.sh's install uses (compiles through ccache, where installed), so little
# is compiled again.
. "$ROOT/scripts/build_env.sh"
echo "pip install $ROOT (build directory $ROOT/build-wheel)"
"${PIP[@]}" install --config-settings=build-dir="$ROOT/build-wheel" "$ROOT"
"${PIP[@]}" install -c "$WORK/constraints.txt" pytest onnx flatbuffers ai-edge-litert "ray[serve]"  # ray: weft.serve's extra

mkdir -p "$WORK/run" && cd "$WORK/run"
cp -r "$ROOT/python/tests" tests
cp "$ROOT/examples/torch_custom_op/torch_custom_op.py" .
cp "$ROOT/examples/litert_custom_op/tflite_writer.py" tests/  # the LiteRT tests write their models with it
cp "$ROOT/bench/litert/make_hybrid.py" tests/  # and the dynamic-range networks with this
cp "$ROOT/bench/zoo/zoo_models.py" tests/  # the torch.compile tests run the zoo's models
cp "$ROOT/examples/serving/serve.yaml" tests/  # the serve tests run the example config
export WEFT_TEST_PACKAGES="$PKGS" WEFT_CACHE_DIR="$WORK/cache" WEFT_CORPORA_DIR="${WEFT_CORPORA_DIR:-$ROOT/../shared/corpora}"
export WEFT_CUSTOM_OPP_PATH="$PKGS/test_ops:$PKGS/add_custom"
"$VENV/bin/python" - <<'PY'
import os, weft, weft.torch
assert "/site-packages/weft/" in weft.__file__, f"weft is not the installed package: {weft.__file__}"
print("using", weft.__file__, "native torch kernels:", weft.torch.is_native("Add"))
PY
LIB=$("$VENV/bin/python" -c 'import os, weft; print(os.path.join(os.path.dirname(weft.__file__), "lib", "libweft.so"))')
leaked=$(nm -D --defined-only "$LIB" | c++filt | grep -c 'weft::internal' || true)
[ "$leaked" -eq 0 ] || { echo "$LIB exports $leaked weft::internal symbols" >&2; exit 1; }
echo "$(basename "$LIB") exports $(nm -D --defined-only "$LIB" | wc -l) symbols, none of weft::internal"
"$VENV/bin/weft" --help > /dev/null
"$VENV/bin/weft" serve --help > /dev/null
"$VENV/bin/python" - <<'PY'
import sys, torch
f = torch.compile(lambda x: torch.relu(x) * 2 + 1, backend="weft")  # no `import weft`
x = torch.randn(16)
for _ in range(2):
    assert torch.equal(f(x), torch.relu(x) * 2 + 1)
assert "weft.torch" in sys.modules, "backend 'weft' did not come from the package"
print("torch.compile(backend='weft') found through the torch_dynamo_backends entry point")
PY
# The Python tests against the installed package, but for the torch.compile and Ray Serve
# suites, which CTest runs from the build tree with the same sources (python_tests_torch_compile_
# and_serve); the installed `weft serve` command's tests run here too.
CTEST_ONLY=(tests/test_torch_compile.py tests/test_serve_cluster.py tests/test_serve_engine.py tests/test_serve_ray.py)
"$VENV/bin/python" -m pytest -q -p no:cacheprovider tests $(printf -- '--ignore=%s ' "${CTEST_ONLY[@]}") \
  > "$WORK/pytest.log" 2>&1 || { cat "$WORK/pytest.log"; exit 1; }
tail -n 1 "$WORK/pytest.log"
WEFT_CUSTOM_OPP_PATH="$PKGS/add_custom" "$VENV/bin/python" torch_custom_op.py
echo "the installed package passed its tests outside the source tree"
