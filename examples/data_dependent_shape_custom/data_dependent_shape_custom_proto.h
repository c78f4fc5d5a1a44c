// Prototype of WhereIndicesCustom: the coordinates of x's non-zero elements, int64
// [count, rank], row-major order (like numpy.argwhere). count depends on x's values.
#ifndef DATA_DEPENDENT_SHAPE_CUSTOM_PROTO_H_
#define DATA_DEPENDENT_SHAPE_CUSTOM_PROTO_H_

#include "weft/compat/ge.h"

namespace ge {
REG_OP(WhereIndicesCustom)
    .INPUT(x, TensorType({DT_FLOAT, DT_INT32, DT_BOOL}))
    .OUTPUT(y, TensorType({DT_INT64}))
    .OP_END_FACTORY_REG(WhereIndicesCustom);
}  // namespace ge

#endif  // DATA_DEPENDENT_SHAPE_CUSTOM_PROTO_H_
