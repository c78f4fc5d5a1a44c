// Prototype of AddCustom: z = x + y, elementwise, same shapes, float32 or float16.
#ifndef ADD_CUSTOM_PROTO_H_
#define ADD_CUSTOM_PROTO_H_

#include "weft/compat/ge.h"

namespace ge {
REG_OP(AddCustom)
    .INPUT(x, "T")
    .INPUT(y, "T")
    .OUTPUT(z, "T").SAME_AS_INPUT(x)  // shape and type follow x: no ShapeInferOp needed
    .DATATYPE(T, TensorType({DT_FLOAT, DT_FLOAT16}))
    .OP_END_FACTORY_REG(AddCustom);
}  // namespace ge

#endif  // ADD_CUSTOM_PROTO_H_
