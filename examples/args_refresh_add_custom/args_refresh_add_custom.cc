// ArgsUpdater: an operator that prepares its launch arguments once and only patches addresses
// when the caller hands the compiled model new buffers.
//
//   Compile         builds the kernel (runtime compilation, through the kernel cache) and plans
//                   the launch: splits the elements into tiles (the tiling data a device kernel
//                   would receive).
//   UpdateHostArgs  called by the runtime before Execute whenever this node's input or output
//                   addresses differ from the previous run in the same run context; writes the
//                   argument block (addresses + tiling) into memory the runtime keeps per node
//                   and run context.
//   Execute         launches with the argument block as is: no lookups, no re-planning.
#include <algorithm>
#include <vector>

#include "args_refresh_add_custom_proto.h"

namespace {

struct Tile {
  int64_t begin, end;
};

using TileKernel = void (*)(const float* x, const float* y, float* z, int64_t begin, int64_t end);

const char* kKernelSource = R"(
#include <stdint.h>
void add_tile(const float* restrict x, const float* restrict y, float* restrict z, int64_t begin, int64_t end) {
  for (int64_t i = begin; i < end; ++i) z[i] = x[i] + y[i];
}
)";

// What a launch needs; lives in the runtime's per-node, per-run-context argument memory.
struct LaunchArgs {
  const float* x;
  const float* y;
  float* z;
  const Tile* tiles;
  int64_t num_tiles;
  TileKernel kernel;
};

}  // namespace

class ArgsRefreshAddCustom : public ge::EagerExecuteOp, public ge::CompilableOp, public ge::ArgsUpdater {
 public:
  ge::graphStatus Compile(gert::OpCompileContext* ctx) override {
    const gert::Tensor* x = ctx->GetInputTensor(0);
    const gert::Tensor* y = ctx->GetInputTensor(1);
    if (x->GetShape() != y->GetShape()) {
      ctx->SetError("x " + x->GetShape().ToString() + " and y " + y->GetShape().ToString() + " must have the same shape");
      return ge::GRAPH_FAILED;
    }
    if (x->GetShape().IsUnknown()) {
      ctx->SetError("needs static shapes (its launch plan is made at compile time)");
      return ge::GRAPH_FAILED;
    }
    const int64_t* tile = ctx->GetAttrs()->GetInt("tile");
    if (tile == nullptr || *tile <= 0) {
      ctx->SetError("attribute 'tile' must be positive");
      return ge::GRAPH_FAILED;
    }
    auto k = ctx->CompileKernel(kKernelSource, "add_tile", "c", "-O3", "ArgsRefreshAddCustom/add_tile");
    if (k.symbol == nullptr) return ge::GRAPH_FAILED;
    kernel_ = reinterpret_cast<TileKernel>(k.symbol);
    int64_t n = x->GetShapeSize();
    tiles_.clear();
    for (int64_t b = 0; b < n; b += *tile) tiles_.push_back({b, std::min(n, b + *tile)});
    return ge::GRAPH_SUCCESS;
  }

  ge::graphStatus UpdateHostArgs(gert::UpdateArgsContext* ctx) override {
    auto* args = ctx->GetHostArgs<LaunchArgs>();
    if (args == nullptr) return ge::GRAPH_FAILED;
    args->x = ctx->GetInputTensor(0)->GetData<float>();
    args->y = ctx->GetInputTensor(1)->GetData<float>();
    args->z = const_cast<gert::Tensor*>(ctx->GetOutputTensor(0))->GetData<float>();
    args->tiles = tiles_.data();
    args->num_tiles = static_cast<int64_t>(tiles_.size());
    args->kernel = kernel_;
    return ge::GRAPH_SUCCESS;
  }

  ge::graphStatus Execute(gert::EagerOpExecutionContext* ctx) override {
    const LaunchArgs* a = ctx->GetHostArgs<LaunchArgs>();
    if (a == nullptr || a->z == nullptr) {
      ctx->SetError("launch arguments were never set: this op runs only in a compiled model");
      return ge::GRAPH_FAILED;
    }
    return ctx->ParallelFor(a->num_tiles, 1, [a](int64_t tb, int64_t te) {
      for (int64_t t = tb; t < te; ++t) a->kernel(a->x, a->y, a->z, a->tiles[t].begin, a->tiles[t].end);
    });
  }

 private:
  std::vector<Tile> tiles_;
  TileKernel kernel_ = nullptr;
};

REG_AUTO_MAPPING_OP(ArgsRefreshAddCustom);
