// A package that replaces the built-in Conv and poolings with the very source the built-ins use
// (ops/conv_pool.cc), registered the way every package registers. With override allowed, the
// compiler must fuse into it and lay it out exactly as it does the built-ins: it decides only
// from what the ops declare (FusibleOp, LayoutAwareOp), never from where they come from.
#include <vector>

#include "weft/custom_op.h"

namespace weft::ops {
void WeftRegister_conv_pool(std::vector<OpEntry>& out);
}  // namespace weft::ops

namespace {

const bool kRegistered = [] {
  std::vector<weft::OpEntry> entries;
  weft::ops::WeftRegister_conv_pool(entries);
  auto& list = weft::detail::LibraryList::Get();
  for (auto& e : entries) {
    list.AddDef(std::move(e.def));
    list.AddImpl(e.impl);
  }
  return true;
}();

}  // namespace
