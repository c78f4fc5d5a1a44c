# Sourced by scripts/demo.sh, test.sh and test_wheel.sh (with ROOT set): compiles go through ccache
# where it is installed, so the suite's release build and the installed-package check reuse the
# objects the install compiled in build-wheel/ (build directories side by side, so their relative
# paths agree).
if command -v ccache > /dev/null; then
  export CCACHE_BASEDIR="$ROOT" CMAKE_C_COMPILER_LAUNCHER=ccache CMAKE_CXX_COMPILER_LAUNCHER=ccache
  # One name for the compiler in every build (ccache hashes it): pip's builds would otherwise
  # take Python's own, x86_64-linux-gnu-g++, for the same g++.
  export CC=${CC:-cc} CXX=${CXX:-c++}
fi
