// GE source compatibility. A GE custom-operator source ports to Weft by replacing its GE
// includes ("graph/custom_op.h", "graph/operator_reg.h", "exe_graph/runtime/...") with this one:
// names stay in namespaces `ge` and `gert`, and graphStatus/GRAPH_SUCCESS/GRAPH_FAILED keep
// their meaning. The GE shapes of the SDK itself (RuntimeAttrs::GetAttrPointer<T>, GetListInt
// returning const TypedContinuousVector<int64_t>*, GetComputeNodeInfo, StorageFormat) are in
// weft/runtime_attrs.h, weft/custom_op.h and weft/types.h; only names GE alone uses live here.
#ifndef WEFT_COMPAT_GE_H_
#define WEFT_COMPAT_GE_H_

#include <cstdint>

#include "weft/custom_op.h"
#include "weft/op_def.h"
#include "weft/types.h"

namespace ge {
using namespace ::weft;  // NOLINT: the point of this header

// GE's general status codes. A callback fails on any value other than GRAPH_SUCCESS/SUCCESS.
using Status = uint32_t;
constexpr Status SUCCESS = 0;
constexpr Status FAILED = 0xFFFFFFFFu;
constexpr graphStatus GRAPH_PARAM_INVALID = 50331649u;
}  // namespace ge

namespace gert {
using namespace ::weft;  // NOLINT
}  // namespace gert

#endif  // WEFT_COMPAT_GE_H_
