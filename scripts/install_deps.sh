#!/usr/bin/env bash
# Installs everything Weft's build, tests and benchmarks need, on Debian 12:
#   1. Debian packages (each named explicitly; Recommends are never relied on);
#   2. a Python virtual environment at .venv/ (from Debian's /usr/bin/python3) holding the
#      packages pinned in requirements.txt, PyTorch 2.13 (CPU) among them.
# Skips what is already there; safe to run again. Needs root or sudo for apt-get.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PKGS=(
  # compilers and build tools
  build-essential g++ cmake ninja-build pkg-config git ca-certificates
  # a compiler cache: the test suite's release build reuses the objects the install compiled
  ccache
  # clang with its runtime libraries: the libFuzzer pass over the model-file parser
  clang libclang-rt-14-dev
  # libraries the engine links
  nlohmann-json3-dev libcli11-dev libxxhash-dev libonnx-dev libprotobuf-dev protobuf-compiler
  # oneDNN; its CMake package also requires the OpenCL headers and an ICD loader
  libdnnl-dev opencl-c-headers opencl-clhpp-headers ocl-icd-opencl-dev
  # tests and benchmarks
  libgtest-dev libgmock-dev libbenchmark-dev libonnx-testdata
  # generated C modules (weft aot) are run under valgrind by the tests
  valgrind
  # the LiteRT (.tflite) importer: flatbuffers runtime headers and the schema compiler
  libflatbuffers-dev flatbuffers-compiler
  # weft aot's config files (YAML)
  libyaml-cpp-dev
  # the Python environment's interpreter
  python3 python3-dev python3-venv
)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO=sudo
  echo "Installing Debian packages: ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "All Debian packages are installed."
fi

# The Python environment. requirements.txt is the one list of Python packages and versions.
VENV="$ROOT/.venv"
if [ ! -x "$VENV/bin/python" ]; then
  echo "Creating the Python environment in $VENV"
  /usr/bin/python3 -m venv "$VENV"
fi
stamp="$VENV/.weft-requirements"
if ! cmp -s "$ROOT/requirements.txt" "$stamp"; then
  echo "Installing Python packages from requirements.txt into $VENV (PyTorch is the CPU build)"
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check -r "$ROOT/requirements.txt"
  cp "$ROOT/requirements.txt" "$stamp"
else
  echo "The Python environment is up to date."
fi
