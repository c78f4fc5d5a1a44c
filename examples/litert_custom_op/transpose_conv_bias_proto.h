// Prototype of TransposeConvBias: a transposed convolution with a fused bias on NHWC float32
// tensors, the LiteRT custom operator MediaPipe's segmentation models use (customCode
// "Convolution2DTransposeBias"). Its options arrive from the .tflite file as raw bytes: three
// little-endian int32 {padding (1 SAME, 2 VALID), stride_w, stride_h}.
#ifndef TRANSPOSE_CONV_BIAS_PROTO_H_
#define TRANSPOSE_CONV_BIAS_PROTO_H_

#include "weft/compat/ge.h"

namespace ge {
REG_OP(TransposeConvBias)
    .INPUT(input, TensorType({DT_FLOAT}))     // [N, H, W, IC]
    .INPUT(weights, TensorType({DT_FLOAT}))   // [OC, KH, KW, IC]
    .INPUT(bias, TensorType({DT_FLOAT}))      // [OC]
    .OUTPUT(output, TensorType({DT_FLOAT}))   // [N, OH, OW, OC]
    .REQUIRED_ATTR(custom_options, Tensor)
    .OP_END_FACTORY_REG(TransposeConvBias);
}  // namespace ge

#endif  // TRANSPOSE_CONV_BIAS_PROTO_H_
