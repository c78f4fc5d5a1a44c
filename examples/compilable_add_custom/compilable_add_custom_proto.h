// Prototype of CompilableAddCustom: z = x + y, elementwise, same shapes, float32 or float16.
#ifndef COMPILABLE_ADD_CUSTOM_PROTO_H_
#define COMPILABLE_ADD_CUSTOM_PROTO_H_

#include "weft/compat/ge.h"

namespace ge {
REG_OP(CompilableAddCustom)
    .INPUT(x, "T")
    .INPUT(y, "T")
    .OUTPUT(z, "T")
    .DATATYPE(T, TensorType({DT_FLOAT, DT_FLOAT16}))
    .OP_END_FACTORY_REG(CompilableAddCustom);
}  // namespace ge

#endif  // COMPILABLE_ADD_CUSTOM_PROTO_H_
