#!/usr/bin/env bash
# Installs Weft's build and test dependencies from Debian 12's archive (skips what is present).
set -euo pipefail
PKGS=(build-essential cmake ninja-build pkg-config libgtest-dev libgmock-dev libbenchmark-dev
      nlohmann-json3-dev libcli11-dev libxxhash-dev python3-numpy libonnx-dev libprotobuf-dev
      protobuf-compiler libonnx-testdata libdnnl-dev clang
      pybind11-dev python3-pytest python3-torch libtorch-dev python3-onnx python3-venv python3-pip
      python3-setuptools python3-wheel)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "All build dependencies are installed."
  exit 0
fi
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
echo "Installing: ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
