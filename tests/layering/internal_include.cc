// Must not compile: a built-in op file sees the public SDK only (Weft::sdk), never the engine's
// own headers. tests/CMakeLists.txt builds this with the built-in ops' settings and expects the
// include below to be missing.
#include "registry/registry.h"
#include "weft/custom_op.h"
