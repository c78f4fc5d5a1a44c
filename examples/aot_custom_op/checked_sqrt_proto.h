// Prototype of CheckedSqrt: the element-wise square root of a float32 tensor that refuses negative
// (and NaN) inputs instead of producing NaN. LiteRT models carry it as a CUSTOM operator with
// customCode "checked-sqrt" (framework/litert/op_map.json maps the code to this op type).
#ifndef CHECKED_SQRT_PROTO_H_
#define CHECKED_SQRT_PROTO_H_

#include "weft/compat/ge.h"

namespace ge {
REG_OP(CheckedSqrt)
    .INPUT(x, TensorType({DT_FLOAT}))
    .OUTPUT(y, TensorType({DT_FLOAT}))
    .OP_END_FACTORY_REG(CheckedSqrt);
}  // namespace ge

#endif  // CHECKED_SQRT_PROTO_H_
