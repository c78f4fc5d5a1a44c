// GE source compatibility. A GE custom-operator source ports to Weft by replacing its GE
// includes ("graph/custom_op.h", "graph/operator_reg.h", "exe_graph/runtime/...") with this one:
// names stay in namespaces `ge` and `gert`, and graphStatus/GRAPH_SUCCESS/GRAPH_FAILED keep
// their meaning.
#ifndef WEFT_COMPAT_GE_H_
#define WEFT_COMPAT_GE_H_

#include "weft/custom_op.h"
#include "weft/op_def.h"
#include "weft/types.h"

namespace ge {
using namespace ::weft;  // NOLINT: the point of this header
}  // namespace ge

namespace gert {
using namespace ::weft;  // NOLINT
}  // namespace gert

#endif  // WEFT_COMPAT_GE_H_
