// Prototype of ArgsRefreshAddCustom: z = x + y, float32, same shapes.
#ifndef ARGS_REFRESH_ADD_CUSTOM_PROTO_H_
#define ARGS_REFRESH_ADD_CUSTOM_PROTO_H_

#include "weft/compat/ge.h"

namespace ge {
REG_OP(ArgsRefreshAddCustom)
    .INPUT(x, TensorType({DT_FLOAT}))
    .INPUT(y, TensorType({DT_FLOAT}))
    .OUTPUT(z, TensorType({DT_FLOAT})).SAME_AS_INPUT(x)
    .ATTR(tile, Int, 4096)
    .OP_END_FACTORY_REG(ArgsRefreshAddCustom);
}  // namespace ge

#endif  // ARGS_REFRESH_ADD_CUSTOM_PROTO_H_
