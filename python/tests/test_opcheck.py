"""torch.library.opcheck (schema, autograd registration, fake tensors, aot_dispatch_dynamic) on
torch.ops.weft.<op>: elementwise ops with generated inputs, the others with written cases, at
several shapes and dtypes."""
import pytest

torch = pytest.importorskip("torch")
import weft  # noqa: E402
import weft.torch as wt  # noqa: E402

r = torch.randn


def i64(*v):
    return torch.tensor(v, dtype=torch.int64)


# Ops opcheck cannot take: the rank of the output depends on input values (no fake tensor can
# hold that), or (LiteRT's ops) an input must be a constant in the graph.
NOT_CHECKABLE = {"Squeeze": "rank from values", "Unsqueeze": "rank from values",
                 "If": "subgraph attributes", "Loop": "subgraph attributes", "Scan": "subgraph attributes",
                 "MulCustomGrad": "checked through MulCustom's backward",
                 "TflMean": "constant axis", "TflPad": "constant paddings", "TflPadv2": "constant paddings",
                 "TflTranspose": "constant perm", "TflReshape": "constant shape", "TflStridedSlice": "constant bounds",
                 "SIGNALFILTERBANKSPECTRALSUBTRACTION": "keeps a noise estimate from call to call (not a function of its inputs)",
                 "ReadVariable": "reads the run context's variable (not a function of its inputs)",
                 "AssignVariable": "writes the run context's variable (an effect, not a function)",
                 "AffineGrid": "output dims from the values of size",
                 "Col2Im": "output dims from the values of image_shape"}
# Test packages' deliberately broken ops.
BROKEN_ON_PURPOSE = {"Faulty", "NoShape"}

def i16(*s):
    return torch.randint(-3000, 3000, s, dtype=torch.int16)


def u8(*s):
    return torch.randint(0, 256, s, dtype=torch.uint8)


def s8(*s):
    return torch.randint(-128, 128, s, dtype=torch.int8)


def u32(*s):
    return torch.randint(0, 2**20, s, dtype=torch.int64).to(torch.uint32)


def u64(*s):
    return torch.randint(0, 2**40, s, dtype=torch.int64).to(torch.uint64)


def s16(*v):
    return torch.tensor(v, dtype=torch.int16)


# TFLM's signal-library ops (int16, uint32 and uint64 tensors).
SIGNAL_CASES = {
    "SIGNALWINDOW": [((i16(2, 8), i16(8)), {"shift": 12})],
    "SIGNALFFTAUTOSCALE": [((i16(16),), {})],
    "SIGNALRFFT": [((i16(2, 16),), {"T": 7, "fft_length": 16}), ((i16(12),), {"T": 7, "fft_length": 24})],
    "SIGNALENERGY": [((i16(18),), {"start_index": 1, "end_index": 7})],
    "SIGNALFILTERBANK": [((u32(10), s16(100, 200, 300, 400), s16(300, 200, 100, 0), s16(0, 2, 4), s16(0, 1, 2), s16(1, 1, 2)),
                          {"num_channels": 2})],
    "SIGNALFILTERBANKSQUAREROOT": [((u64(6), torch.tensor(3, dtype=torch.int32)), {})],
    "SIGNALPCAN": [((u32(6), u32(6), torch.randint(1, 30000, (125,), dtype=torch.int16)), {"snr_shift": 6})],
    "SIGNALFILTERBANKLOG": [((u32(6),), {"input_correction_bits": 3, "output_scale": 64})],
}

CASES = {
    **SIGNAL_CASES,
    # A tensor is a present value (ONNX 18); sequences and optionals have no torch form.
    "OptionalHasElement": [((r(3),), {}), ((torch.arange(4, dtype=torch.int64).reshape(2, 2),), {})],
    "TFLITE_DETECTION_POSTPROCESS": [((r(1, 12, 4), torch.rand(1, 12, 4), torch.rand(12, 4) * 0.4 + 0.1),
                                      {"max_detections": 3, "max_classes_per_detection": 1, "nms_score_threshold": 0.2,
                                       "nms_iou_threshold": 0.5, "num_classes": 3, "y_scale": 10.0, "x_scale": 10.0,
                                       "h_scale": 5.0, "w_scale": 5.0})],
    "GroupNormalization": [((r(2, 4, 3, 3), r(4), r(4)), {"num_groups": 2}), ((r(1, 6, 5), r(6), r(6)), {"num_groups": 3})],
    "BitwiseAnd": [((torch.randint(-50, 50, (3, 4)), torch.randint(-50, 50, (4,))), {})],
    "BitwiseOr": [((torch.randint(-50, 50, (3, 4), dtype=torch.int32), torch.randint(-50, 50, (3, 4), dtype=torch.int32)), {})],
    "BitwiseXor": [((torch.randint(0, 200, (2, 5), dtype=torch.uint8), torch.randint(0, 200, (2, 5), dtype=torch.uint8)), {})],
    "BitwiseNot": [((torch.randint(-50, 50, (3, 4), dtype=torch.int32),), {})],
 "Conv": [((r(1, 2, 5, 5), r(3, 2, 3, 3), r(3)), {"pads": [1, 1, 1, 1]}), ((r(2, 4, 6, 6), r(4, 1, 3, 3)), {"group": 4, "strides": [2, 2]})],
    "ConvTranspose": [((r(1, 2, 4, 4), r(2, 3, 2, 2)), {"strides": [2, 2]})],
    "MaxPool": [((r(1, 2, 6, 6),), {"kernel_shape": [2, 2], "strides": [2, 2]}),
                ((r(2, 3, 5, 5),), {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "num_Indices": 1})],
    "AveragePool": [((r(1, 2, 6, 6),), {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]})],
    "GlobalAveragePool": [((r(2, 3, 4, 4),), {})], "GlobalMaxPool": [((r(2, 3, 4, 4),), {})],
    "Concat": [(([r(2, 3), r(2, 5)],), {"axis": 1})],
    "Gemm": [((r(3, 4), r(5, 4), r(5)), {"transB": 1})], "MatMul": [((r(2, 3, 4), r(4, 5)), {})],
    "BatchNormalization": [((r(2, 3, 4, 4), r(3), r(3), r(3), torch.rand(3) + 0.5), {}),
                           ((r(2, 3, 4, 4), r(3), r(3), r(3), torch.rand(3) + 0.5), {"training_mode": 1, "num_running": 2})],
    "LayerNormalization": [((r(2, 5, 8), r(8), r(8)), {})],
    "SimplifiedLayerNormalization": [((r(2, 5, 8), r(8)), {}), ((r(3, 4, 6), r(4, 6)), {"axis": 1, "epsilon": 1e-6})],
    "InstanceNormalization": [((r(2, 3, 4, 4), r(3), r(3)), {})],
    "Where": [((r(3, 4) > 0, r(3, 4), r(3, 4)), {})],
    # ONNX quantization: uint8/int8 tensors, float32 scales (scalars, or one per channel)
    "QuantizeLinear": [((r(2, 3, 4), torch.tensor(0.05), torch.tensor(3, dtype=torch.uint8)), {}),
                       ((r(2, 3, 4), torch.rand(3) + 0.01, torch.tensor([1, -2, 0], dtype=torch.int8)), {"axis": 1})],
    "DequantizeLinear": [((torch.randint(0, 256, (2, 3, 4), dtype=torch.uint8), torch.tensor(0.05), torch.tensor(3, dtype=torch.uint8)), {}),
                         ((torch.randint(-128, 128, (2, 3, 4), dtype=torch.int8), torch.rand(4) + 0.01,
                           torch.tensor([1, -2, 0, 5], dtype=torch.int8)), {"axis": -1})],
    "MatMulInteger": [((torch.randint(0, 256, (2, 3, 5), dtype=torch.uint8), torch.randint(-128, 128, (5, 4), dtype=torch.int8),
                        torch.tensor(7, dtype=torch.uint8), torch.tensor(0, dtype=torch.int8)), {})],
    "QLinearMatMul": [((torch.randint(0, 256, (3, 5), dtype=torch.uint8), torch.tensor(0.02), torch.tensor(128, dtype=torch.uint8),
                        torch.randint(-128, 128, (5, 4), dtype=torch.int8), torch.tensor(0.01), torch.tensor(0, dtype=torch.int8),
                        torch.tensor(0.1), torch.tensor(120, dtype=torch.uint8)), {})],
    "ConvInteger": [((torch.randint(0, 256, (1, 2, 5, 5), dtype=torch.uint8), torch.randint(0, 256, (3, 2, 3, 3), dtype=torch.uint8),
                      torch.tensor(100, dtype=torch.uint8), torch.tensor(128, dtype=torch.uint8)), {"pads": [1, 1, 1, 1]})],
    "QLinearConv": [((torch.randint(0, 256, (1, 2, 5, 5), dtype=torch.uint8), torch.tensor(0.03), torch.tensor(5, dtype=torch.uint8),
                      torch.randint(-127, 128, (3, 2, 3, 3), dtype=torch.int8), torch.rand(3) * 0.01 + 0.001, torch.zeros(3, dtype=torch.int8),
                      torch.tensor(0.2), torch.tensor(7, dtype=torch.uint8), torch.randint(-1000, 1000, (3,), dtype=torch.int32)),
                     {"pads": [1, 1, 1, 1], "strides": [2, 1]})],
    # com.microsoft's quantized ops (ONNX Runtime's QOperator format)
    "QLinearAdd": [((u8(2, 3, 4), torch.tensor(0.02), torch.tensor(128, dtype=torch.uint8), u8(3, 1), torch.tensor(0.03),
                     torch.tensor(120, dtype=torch.uint8), torch.tensor(0.05), torch.tensor(100, dtype=torch.uint8)), {}),
                   ((s8(5, 6), torch.tensor(0.02), None, s8(5, 6), torch.tensor(0.03), None, torch.tensor(0.04)), {})],
    "QLinearMul": [((u8(2, 3, 4), torch.tensor(0.02), torch.tensor(128, dtype=torch.uint8), u8(2, 3, 4), torch.tensor(0.03),
                     torch.tensor(120, dtype=torch.uint8), torch.tensor(0.05), torch.tensor(100, dtype=torch.uint8)), {})],
    "QLinearSigmoid": [((s8(3, 8), torch.tensor(0.05), torch.tensor(3, dtype=torch.int8), torch.tensor(1 / 256),
                         torch.tensor(-128, dtype=torch.int8)), {})],
    "QLinearLeakyRelu": [((u8(2, 5), torch.tensor(0.05), torch.tensor(100, dtype=torch.uint8), torch.tensor(0.04),
                           torch.tensor(90, dtype=torch.uint8)), {"alpha": 0.2})],
    "QLinearGlobalAveragePool": [((u8(2, 3, 4, 5), torch.tensor(0.05), torch.tensor(100, dtype=torch.uint8), torch.tensor(0.02),
                                   torch.tensor(90, dtype=torch.uint8)), {})],
    "QLinearAveragePool": [((u8(1, 2, 7, 6), torch.tensor(0.05), torch.tensor(100, dtype=torch.uint8), torch.tensor(0.02),
                             torch.tensor(90, dtype=torch.uint8)), {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]})],
    "QLinearConcat": [(([torch.tensor(0.05), torch.tensor(100, dtype=torch.uint8), u8(2, 3), torch.tensor(0.05),
                         torch.tensor(100, dtype=torch.uint8), u8(2, 4), torch.tensor(0.02), torch.tensor(90, dtype=torch.uint8)],),
                       {"axis": 1})],
    "QGemm": [((u8(3, 5), torch.tensor(0.02), torch.tensor(128, dtype=torch.uint8), s8(4, 5), torch.rand(4) * 0.01 + 0.001,
                torch.zeros(4, dtype=torch.int8), torch.randint(-500, 500, (4,), dtype=torch.int32), torch.tensor(0.1),
                torch.tensor(120, dtype=torch.uint8)), {"transB": 1}),
              ((u8(3, 5), torch.tensor(0.02), torch.tensor(128, dtype=torch.uint8), s8(5, 4), torch.tensor(0.01),
                torch.tensor(0, dtype=torch.int8)), {"alpha": 0.5})],
    "QLinearSoftmax": [((u8(2, 3, 10), torch.tensor(0.05), torch.tensor(100, dtype=torch.uint8), torch.tensor(1 / 256),
                         torch.tensor(0, dtype=torch.uint8)), {"opset": 13}),
                       ((s8(4, 20), torch.tensor(0.1), None, torch.tensor(1 / 256), torch.tensor(-128, dtype=torch.int8)), {"opset": 12, "axis": 1})],
    "MatMulIntegerToFloat": [((u8(2, 3, 5), s8(5, 4), torch.tensor(0.02), torch.rand(4) * 0.01 + 0.001, torch.tensor(128, dtype=torch.uint8),
                               torch.zeros(4, dtype=torch.int8), r(4)), {})],
    "MatMulNBits": [((r(3, 64), u8(16, 2, 16), torch.rand(32) * 0.01 + 0.001, u8(16), None, r(16)),
                     {"K": 64, "N": 16, "bits": 4, "block_size": 32}),
                    ((r(2, 20, 40), u8(24, 3, 8), torch.rand(72) * 0.01 + 0.001, torch.rand(72) * 3), {"K": 40, "N": 24, "bits": 4, "block_size": 16}),
                    ((r(1, 32), u8(8, 1, 32), torch.rand(8) * 0.01 + 0.001), {"K": 32, "N": 8, "bits": 8, "block_size": 32})],
    "GatherBlockQuantized": [((u8(10, 32), torch.tensor([[1, 9], [-2, 0]]), torch.rand(10, 2) * 0.1),
                              {"bits": 4, "block_size": 32, "quantize_axis": 1}),
                             ((u8(6, 3, 16), torch.tensor([4, 0], dtype=torch.int32), torch.rand(6, 3, 1) * 0.1, u8(6, 3, 1)),
                              {"bits": 8, "block_size": 16, "quantize_axis": 2})],
    "GroupQueryAttention": [((r(1, 3, 64), r(1, 3, 32), r(1, 3, 32), r(1, 2, 2, 16), r(1, 2, 2, 16), torch.tensor([4], dtype=torch.int32),
                              torch.tensor(5, dtype=torch.int32)), {"num_heads": 4, "kv_num_heads": 2})],
    "DynamicQuantizeLSTM": [((r(3, 2, 4), s8(1, 4, 8), s8(1, 2, 8), r(1, 16), None, r(1, 2, 2), r(1, 2, 2), None, torch.tensor([0.01]),
                              torch.zeros(1, dtype=torch.int8), torch.tensor([0.02]), torch.zeros(1, dtype=torch.int8)), {"hidden_size": 2})],
    "Clip": [((r(3, 4), torch.tensor(-0.5), torch.tensor(0.5)), {})],
    "Cast": [((r(3, 4),), {"to": torch.int64}), ((r(2, 3),), {"to": torch.float16})],
    "Gather": [((r(5, 4), i64(0, 3, 1)), {"axis": 0})],
    "GatherElements": [((r(3, 4), i64([0, 1], [2, 3], [1, 1])), {"axis": 1})],
    "CumSum": [((r(3, 4), i64(1)), {})],
    "CumProd": [((r(3, 4), i64(1)), {}), ((r(2, 5), i64(0)), {"exclusive": 1, "reverse": 1})],
    "Attention": [((r(1, 2, 3, 8), r(1, 2, 5, 8), r(1, 2, 5, 8)), {"is_causal": 1}),
                  ((r(2, 3, 16), r(2, 4, 8), r(2, 4, 8), torch.rand(3, 4) < 0.8), {"q_num_heads": 2, "kv_num_heads": 1}),
                  ((r(1, 4, 2, 8), r(1, 2, 3, 8), r(1, 2, 3, 6), r(2, 5), r(1, 2, 2, 8), r(1, 2, 2, 6)), {"softcap": 2.0})],
    "TensorScatter": [((r(2, 6, 3), r(2, 2, 3), i64(0, 4)), {"axis": 1}), ((r(2, 3, 4, 2), r(2, 3, 3, 2), i64(3, 1)), {"mode": "circular"})],
    "CausalConvWithState": [((r(2, 3, 5), r(3, 1, 3), r(3), r(2, 3, 2)), {"activation": "silu"}), ((r(1, 4, 6), r(4, 1, 2)), {})],
    "LinearAttention": [((r(1, 4, 8), r(1, 4, 8), r(1, 4, 6), r(1, 2, 4, 3), -torch.rand(1, 4, 2), torch.rand(1, 4, 2)),
                         {"q_num_heads": 2, "kv_num_heads": 2}),
                        ((r(2, 3, 8), r(2, 3, 4), r(2, 3, 4)), {"q_num_heads": 2, "kv_num_heads": 1, "update_rule": "linear"})],
    "MeanVarianceNormalization": [((r(2, 3, 4, 4),), {})],
    "Mod": [((r(3, 4), torch.rand(3, 4) + 1), {"fmod": 1}), ((torch.randint(1, 9, (5,)), torch.randint(1, 4, (5,))), {})],
    "ArgMax": [((r(3, 4),), {"axis": 1})], "ArgMin": [((r(3, 4),), {"axis": 0})],
    "Softmax": [((r(3, 4),), {"axis": 0})],
    # Stateful in a model (its state lives in the run context); each call from PyTorch starts fresh
    # (test_stateful_ops_start_fresh_on_every_call).
    "TflSvdf": [((r(2, 4), r(6, 4), r(6, 3), r(3)), {"rank": 2})],
    # float LSTM with and without the input gate (CIFG: its weights and bias absent)
    "TflUnidirectionalSequenceLstm": [((r(2, 3, 4), r(5, 4), r(5, 4), r(5, 4), r(5, 4), r(5, 5), r(5, 5), r(5, 5), r(5, 5), None, None, None,
                                        r(5), r(5), r(5), r(5)), {}),
                                      ((r(3, 2, 4), None, r(5, 4), r(5, 4), r(5, 4), None, r(5, 5), r(5, 5), r(5, 5), None, None, None,
                                        None, r(5), r(5), r(5)), {"time_major": True})],
    "Transpose": [((r(2, 3, 4),), {"perm": [2, 0, 1]})],
    "DepthToSpace": [((r(1, 8, 2, 2),), {"blocksize": 2})], "SpaceToDepth": [((r(1, 2, 4, 4),), {"blocksize": 2})],
    "Flatten": [((r(2, 3, 4),), {"axis": 2})], "LRN": [((r(1, 4, 3, 3),), {"size": 3})],
    "Trilu": [((r(4, 4),), {})], "Sum": [(([r(3), r(3), r(3)],), {})], "Mean": [(([r(3), r(3)],), {})],
    "Max": [(([r(3), r(3)],), {})], "Min": [(([r(3), r(3)],), {})],
    "ScatterElements": [((r(3, 4), i64([0, 1], [2, 0], [1, 1]), r(3, 2)), {"axis": 1})],
    "ScatterND": [((r(4, 3), i64([1], [3]), r(2, 3)), {})], "GatherND": [((r(4, 3), i64([1], [3])), {})],
    "Hardmax": [((r(3, 4),), {})],
    "TflAveragePool2D": [((r(1, 6, 6, 2),), {"filter_height": 2, "filter_width": 2, "stride_h": 2, "stride_w": 2})],
    "TflMaxPool2D": [((r(1, 6, 6, 2),), {"filter_height": 2, "filter_width": 2, "stride_h": 2, "stride_w": 2})],
    "TflFullyConnected": [((r(2, 8), r(4, 8), r(4)), {})],
    "TflBatchMatmul": [((r(2, 3, 5), r(2, 5, 4)), {}), ((r(3, 1, 2, 5), r(2, 4, 5)), {"adj_y": True})],
    "TflConv2D": [((r(1, 5, 5, 2), r(3, 3, 3, 2), r(3)), {"stride_h": 1, "stride_w": 1})],
    "TflEmbeddingLookup": [((torch.tensor([2, 0, 2], dtype=torch.int32), r(4, 3)), {}),
                           ((torch.tensor([1, 3], dtype=torch.int32), torch.randint(-128, 127, (4, 2, 3), dtype=torch.int8)),
                            {"output_type": torch.float32, "input_scale": [0.0, 0.05]})],
    "TflQuantize": [((r(2, 8),), {"output_type": torch.int8, "output_scale": [0.05], "output_zero_point": [3]})],
    "TflDequantize": [((torch.randint(-128, 127, (2, 8), dtype=torch.int8),), {"input_scale": [0.05],
                                                                              "input_zero_point": [3]})],
    # output sizes from input values: fake kernels give new dynamic sizes
    "Reshape": [((r(6, 4), i64(3, 8)), {}), ((r(2, 3, 4), i64(-1, 4)), {})], "Expand": [((r(3, 1), i64(3, 4)), {})],
    "Split": [((r(6, 4), i64(2, 4)), {"axis": 0}), ((r(3, 6),), {"axis": 1, "num_outputs": 3})],
    "Tile": [((r(2, 3), i64(2, 1)), {})], "Pad": [((r(2, 3), i64(0, 1, 1, 2)), {})],
    "Slice": [((r(6, 4), i64(1), i64(5), i64(0)), {})], "TopK": [((r(3, 6), i64(2)), {}), ((r(4, 5), i64(3)), {"axis": 0})],
    "Range": [((torch.tensor(0.0), torch.tensor(5.0), torch.tensor(1.0)), {})],
    "ConstantOfShape": [((i64(2, 3),), {})], "NonZero": [((r(3, 4) > 0,), {}), ((r(2, 3, 2) > 0,), {})],
    "Einsum": [(([r(2, 3, 4), r(2, 4, 5)],), {"equation": "bij,bjk->bik"}), (([r(3, 3)],), {"equation": "ii->i"}),
               (([r(2, 3), r(3)],), {"equation": "ij,j"})],
    "OneHot": [((i64(0, 2, -1), i64(4), torch.tensor([0.0, 1.0])), {}), ((i64([1, 0], [3, 2]), i64(3), torch.tensor([-1.0, 2.0])), {"axis": 0})],
    "EyeLike": [((r(3, 4),), {}), ((r(4, 3),), {"k": -1, "dtype": torch.int32})],
    "Compress": [((r(4, 3), r(3) > 0), {"axis": 1}), ((r(2, 3), r(5) > 0), {})],
    "ReverseSequence": [((r(4, 3, 2), i64(4, 2, 1)), {}), ((r(2, 5), i64(3, 5)), {"batch_axis": 0, "time_axis": 1})],
    "Shrink": [((r(3, 4),), {"lambd": 0.3, "bias": 0.1})],
    "MaxUnpool": [((r(1, 2, 2, 2), torch.tensor([[[[0, 3], [9, 15]], [[16, 18], [27, 31]]]])), {"kernel_shape": [2, 2], "strides": [2, 2]})],
    "Det": [((r(3, 3),), {}), ((r(2, 4, 4),), {})],
    "TfIdfVectorizer": [((i64([1, 2, 3, 1, 2], [3, 3, 1, 2, 0]),), {"min_gram_length": 1, "max_gram_length": 2, "max_skip_count": 1,
                                                                   "mode": "TFIDF", "ngram_counts": [0, 3], "ngram_indexes": [2, 0, 1, 3],
                                                                   "pool_int64s": [1, 2, 3, 1, 2], "weights": [0.5, 1.0, 2.0, 3.0]})],
    # The optimizers: R, T and the weight groups; as many outputs as their shape inference accepts.
    "Adagrad": [((torch.tensor(0.1), i64(3), [r(3), r(3), r(3).abs()]), {"decay_factor": 0.1}),
                ((torch.tensor(0.1).double(), i64(0), [r(2, 2).double(), r(4), r(2, 2).double(), r(4), r(2, 2).double().abs(), r(4).abs()]), {})],
    "Momentum": [((torch.tensor(0.1), i64(3), [r(3), r(2, 2), r(3), r(2, 2), r(3), r(2, 2)]),
                  {"alpha": 0.9, "beta": 0.5, "mode": "nesterov", "norm_coefficient": 0.01})],
    "Adam": [((torch.tensor(0.1), i64(3), [r(3), r(3), r(3), r(3).abs()]), {}),
             ((torch.tensor(0.05), i64(0), [r(2), r(5), r(2), r(5), r(2), r(5), r(2).abs(), r(5).abs()]), {"norm_coefficient": 0.1})],
    # The samplers with a seed: a function of their inputs (each call starts the seeded stream anew).
    # No tensor input: registered for every backend, as torch's factory functions are.
    "RandomUniform": [((), {"shape": [3, 4], "seed": 3.0}), ((), {"shape": [2, 5], "seed": 1.0, "low": -2.0, "high": 5.0, "dtype": torch.float64})],
    "RandomNormal": [((), {"shape": [3, 4], "seed": 2.0, "mean": 1.0, "scale": 0.5})],
    "RandomUniformLike": [((r(3, 4),), {"seed": 3.0, "dtype": torch.float64}), ((r(2, 5).double(),), {"seed": 1.0, "low": -2.0, "high": 5.0})],
    "RandomNormalLike": [((r(3, 4),), {"seed": 3.0, "mean": 2.0, "scale": 0.5})],
    "Bernoulli": [((torch.rand(3, 4),), {"seed": 1.0}), ((torch.rand(5).double(),), {"seed": 2.0})],
    "Multinomial": [((r(2, 5),), {"seed": 1.0, "sample_size": 4})],
    "NegativeLogLikelihoodLoss": [((r(4, 3), i64(0, 2, 1, 2)), {}), ((r(2, 3, 5), i64([0, 1, 2, 1, 0], [2, 2, 1, 0, 1]), torch.rand(3) + 0.5),
                                                                   {"reduction": "none", "ignore_index": 1})],
    "RoiAlign": [((r(2, 3, 6, 6), torch.tensor([[0.5, 0.5, 4.0, 3.0], [1.0, 0.0, 5.5, 5.5], [0.0, 2.0, 2.5, 6.0]]), i64(0, 1, 1)),
                  {"output_height": 2, "output_width": 3, "sampling_ratio": 2}),
                 ((r(1, 2, 8, 8), torch.tensor([[0.0, 0.0, 16.0, 12.0]]), i64(0)), {"mode": "max", "spatial_scale": 0.5})],
    "SoftmaxCrossEntropyLoss": [((r(4, 3), i64(0, 2, 1, 2)), {"reduction": "sum"}), ((r(2, 3, 2, 2), i64([[0, 1], [2, 1]], [[2, 2], [1, 0]])), {})],
    "DFT": [((r(2, 8, 1),), {}), ((r(1, 6, 5, 2),), {"axis": 2, "inverse": 1}), ((r(2, 10, 1), i64(12)), {"onesided": 1})],
    "STFT": [((r(1, 40, 1), i64(8), torch.rand(16)), {}), ((r(2, 30, 1), i64(5), None, i64(10)), {"onesided": 0})],
    "HannWindow": [((i64(10),), {})], "HammingWindow": [((i64(9),), {"periodic": 0})], "BlackmanWindow": [((i64(12),), {})],
    "MelWeightMatrix": [((i64(8), i64(64), i64(16000), torch.tensor(0.0), torch.tensor(8000.0)), {})],
    "Unique": [((torch.tensor([3.0, 1.0, 3.0, 2.0, 1.0]),), {}), ((torch.tensor([[1, 2], [1, 2], [0, 5]]),), {"axis": 0, "sorted": 0})],
    "GridSample": [((r(1, 2, 4, 5), torch.rand(1, 3, 2, 2) * 2 - 1), {}),
                   ((r(2, 1, 3, 3), torch.rand(2, 2, 4, 2) * 2.4 - 1.2), {"mode": "nearest", "padding_mode": "border"})],
    "NonMaxSuppression": [((torch.rand(1, 6, 4) * 4, torch.rand(1, 2, 6), i64(3), torch.tensor([0.4])), {}),
                          ((torch.rand(2, 5, 4) * 4, torch.rand(2, 1, 5), i64(5)), {"center_point_box": 1})],
    "ReduceMean": [((r(3, 4, 5), i64(1)), {"keepdims": 0}), ((r(3, 4, 5), i64(0, 2)), {})],
    "ReduceSum": [((r(3, 4, 5), i64(0, 2)), {})], "ReduceMax": [((r(3, 4, 5), i64(2)), {"keepdims": 0})],
    "ReduceMin": [((r(3, 4, 5), i64(2)), {})], "ReduceL1": [((r(3, 4), i64(1)), {})],
    "ReduceL2": [((r(3, 4), i64(1)), {})], "ReduceProd": [((r(3, 4), i64(1)), {})],
    "ReduceLogSum": [((torch.rand(3, 4) + 0.5, i64(1)), {})], "ReduceLogSumExp": [((r(3, 4), i64(1)), {})],
    "ReduceSumSquare": [((r(3, 4), i64(1)), {})],
    "And": [((r(3, 4) > 0, r(3, 4) > 0), {})], "Or": [((r(3, 4) > 0, r(3, 4) > 0), {})],
    "Xor": [((r(3, 4) > 0, r(3, 4) > 0), {})], "Not": [((r(3, 4) > 0,), {}), ((r(2, 5) > 0,), {})],
    "BitShift": [((torch.randint(0, 64, (3, 4), dtype=torch.uint8), torch.randint(0, 4, (3, 4), dtype=torch.uint8)),
                  {"direction": "LEFT"})],
    "Dropout": [((r(3, 4),), {}), ((r(3, 4), torch.tensor(0.25), torch.tensor(True)), {"seed": 4, "num_mask": 1})],
    "BitCast": [((r(3, 4),), {"to": torch.int32}), ((r(2, 5).double(),), {"to": torch.int64})],
    "DeformConv": [((r(1, 2, 5, 5), r(3, 2, 3, 3), r(1, 18, 3, 3)), {}),
                   ((r(2, 4, 6, 6), r(4, 2, 3, 3), r(2, 36, 6, 6), r(4), torch.rand(2, 18, 6, 6)),
                    {"pads": [1, 1, 1, 1], "group": 2, "offset_group": 2})],
    "Scatter": [((r(3, 4), i64([0, 1], [2, 0], [1, 1]), r(3, 2)), {"axis": 1})],
    "Resize": [((r(1, 2, 3, 3), None, torch.tensor([1.0, 1.0, 2.0, 2.0])), {"mode": "nearest"}),
               ((r(1, 2, 4, 4), None, None, i64(1, 2, 6, 6)), {"mode": "linear"})],
    "LSTM": [((r(5, 2, 3), r(1, 16, 3), r(1, 16, 4)), {"hidden_size": 4})],
    "GRU": [((r(5, 2, 3), r(1, 12, 3), r(1, 12, 4)), {"hidden_size": 4})],
    "RNN": [((r(5, 2, 3), r(1, 4, 3), r(1, 4, 4)), {"hidden_size": 4})],
    "TflDepthwiseConv2D": [((r(1, 5, 5, 3), r(1, 3, 3, 3), r(3)), {"stride_h": 1, "stride_w": 1, "depth_multiplier": 1})],
    "TflTransposeConv": [((i64(1, 6, 6, 2), r(2, 3, 3, 3), r(1, 3, 3, 3)), {"stride_h": 2, "stride_w": 2})],
    "TflResizeBilinear": [((torch.randint(-128, 127, (1, 4, 4, 2), dtype=torch.int8), torch.tensor([6, 5], dtype=torch.int32)),
                           {"half_pixel_centers": True})],
    "PRelu": [((r(2, 3, 4), r(3, 1)), {})],
}


def _generated_cases(proto):
    """Inputs for an op of 1-2 required float tensors and no required attributes."""
    ins = proto["inputs"]
    if not (1 <= len(ins) <= 2) or any(i["kind"] != "required" for i in ins):
        return None
    if any(a["required"] for a in proto["attrs"]) or any("float32" not in i["dtypes"] for i in ins):
        return None
    dtypes = [torch.float32] + ([torch.float64] if all("float64" in i["dtypes"] for i in ins) else [])
    return [(dt, shape) for dt in dtypes for shape in ((4, 8), (2, 3, 5))]


def _in_domain(op, args):
    """Some inputs put an op outside its domain (acosh below 1): try ranges until outputs are finite."""
    out = getattr(torch.ops.weft, op)(*args)
    outs = out if isinstance(out, (tuple, list)) else [out]
    return not any(o.is_floating_point() and torch.isnan(o).any() for o in outs)


def test_opcheck_generated_elementwise_cases():
    session = weft.default_session()
    checked, failures = [], []
    for op in sorted(wt.registered_ops()):
        if op in CASES or op in NOT_CHECKABLE or op in BROKEN_ON_PURPOSE:
            continue
        cases = _generated_cases(session.schema(op))
        if cases is None:
            continue
        try:
            for dtype, shape in cases:
                g = torch.Generator().manual_seed(len(op))
                for lo, hi in ((1.1, 2.0), (-0.9, 0.9), (0.1, 0.9)):
                    args = tuple((torch.rand(*shape, generator=g, dtype=torch.float64) * (hi - lo) + lo).to(dtype)
                                 for _ in session.schema(op)["inputs"])
                    if _in_domain(op, args):
                        break
                torch.library.opcheck(getattr(torch.ops.weft, op).default, args)
            checked.append(op)
        except Exception as e:  # noqa: BLE001 - collect every failing op, then fail once
            failures.append(f"{op}: {str(e).splitlines()[0]}")
    assert not failures, "\n".join(failures)
    assert len(checked) >= 60, checked
    print(f"opcheck passed for {len(checked)} generated elementwise ops")


@pytest.mark.parametrize("op", sorted(CASES))
def test_opcheck_written_cases(op):
    if op not in wt.registered_ops():
        pytest.fail(f"weft::{op} is not registered")
    for args, kwargs in CASES[op]:
        torch.library.opcheck(getattr(torch.ops.weft, op).default, args, kwargs)


EXAMPLE_OPS = {"AddCustom", "MulCustom", "ScaleAttrs", "SumN"}


def test_opcheck_example_package_ops():
    ops = torch.ops.weft
    cases = [("AddCustom", (r(4, 8), r(4, 8)), {}), ("AddCustom", (r(3, 5).half(), r(3, 5).half()), {}),
             ("MulCustom", (r(3, requires_grad=True), r(3, requires_grad=True)), {}),
             ("MulCustom", (r(2, 4), r(2, 4)), {}),
             ("ScaleAttrs", (r(2, 3),), {"scale": 3.0, "bias": 1.0}),
             ("SumN", ([r(3), r(3)],), {}), ("SumN", ([r(2, 2), r(2, 2), r(2, 2)], r(2, 2)), {})]
    for op, args, kwargs in cases:
        torch.library.opcheck(getattr(ops, op).default, args, kwargs)


def test_fake_kernels_give_data_dependent_sizes_and_refuse_unknown_ranks():
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.symbolic_shapes import ShapeEnv

    env = ShapeEnv()
    with FakeTensorMode(shape_env=env):
        idx = torch.ops.weft.NonZero(torch.empty(3, 4) > 0)
        assert idx.shape[0] == 2 and isinstance(idx.shape[1], torch.SymInt)
        # The new size has the range the op declares (NonZero: at most every element).
        rng = env.var_to_range[idx.shape[1].node.expr]
        assert (int(rng.lower), int(rng.upper)) == (0, 12)
        with pytest.raises(RuntimeError, match="rank of output .* depends on the values"):
            torch.ops.weft.Squeeze(torch.empty(3, 1, 4), torch.tensor([1]))
    # The bound as shape inference reports it.
    g = weft.Graph("nz")
    g.add_input("x", "float32", [5, 2]).add_node("NonZero", "nz", ["x"], ["y"]).add_output("y")
    assert weft.default_session().infer(g) == [("y", "int64", [2, -1])]
    assert weft.default_session().infer(g, bounds=True) == [("y", "int64", [2, -1], [2, 10])]


def test_every_registered_op_is_checked_or_named():
    """The count: every op on torch.ops.weft has opcheck cases here, or a reason it has none."""
    session = weft.default_session()
    generated = {op for op in wt.registered_ops() if _generated_cases(session.schema(op)) is not None}
    covered = set(CASES) | generated | set(NOT_CHECKABLE) | BROKEN_ON_PURPOSE | EXAMPLE_OPS
    missing = sorted(set(wt.registered_ops()) - covered)
    assert not missing, f"ops with no opcheck cases: {missing}"
    print(f"{len(wt.registered_ops())} ops: {len(set(CASES) | generated | EXAMPLE_OPS)} opchecked, "
          f"{len(NOT_CHECKABLE)} not checkable, {len(BROKEN_ON_PURPOSE)} broken on purpose")


def test_stateful_ops_start_fresh_on_every_call():
    """SVDF and the sequence LSTM keep state between runs of one model (LiteRT's variable
    tensors); as torch ops they are functions of their arguments: two calls, two equal results."""
    torch.manual_seed(3)
    svdf = (r(2, 4), r(6, 4), r(6, 3), r(3))
    lstm = (r(2, 3, 4), r(5, 4), r(5, 4), r(5, 4), r(5, 4), r(5, 5), r(5, 5), r(5, 5), r(5, 5), None, None, None, r(5), r(5), r(5), r(5))
    for op, args, kw in [(torch.ops.weft.TflSvdf, svdf, {"rank": 2}), (torch.ops.weft.TflUnidirectionalSequenceLstm, lstm, {})]:
        first = op(*args, **kw)
        assert torch.equal(first, op(*args, **kw))
        assert first.abs().sum() > 0


def test_ops_without_tensor_inputs_run_eagerly_and_under_torch_compile(tmp_path):
    """RandomUniform and RandomNormal take only attributes: seeded, they give the values Weft's
    runtime gives for the same ONNX node, in the range and type asked for, eagerly and inside a
    compiled function."""
    np = pytest.importorskip("numpy")
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper
    wt.register()
    u = torch.ops.weft.RandomUniform(shape=[4, 6], seed=5.0, low=-1.0, high=3.0, dtype=torch.float64)
    assert u.shape == (4, 6) and u.dtype == torch.float64 and float(u.min()) >= -1.0 and float(u.max()) < 3.0
    node = helper.make_node("RandomUniform", [], ["y"], shape=[4, 6], seed=5.0, low=-1.0, high=3.0, dtype=TensorProto.DOUBLE)
    g = helper.make_graph([node], "g", [], [helper.make_tensor_value_info("y", TensorProto.DOUBLE, [4, 6])])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), str(tmp_path / "u.onnx"))
    (want,) = weft.Session(use_env_path=False).compile(weft.import_onnx(str(tmp_path / "u.onnx"))).run([])
    np.testing.assert_array_equal(u.numpy(), want)
    n = torch.compile(lambda: torch.ops.weft.RandomNormal(shape=[2, 3], seed=7.0, mean=2.0) * 2, fullgraph=True)()
    torch.testing.assert_close(n, torch.ops.weft.RandomNormal(shape=[2, 3], seed=7.0, mean=2.0) * 2, rtol=0, atol=0)
    # RuntimeError from the C++ kernels, ValueError from the Python route (WEFT_TORCH_NATIVE=0)
    with pytest.raises((RuntimeError, ValueError), match="shape has 9 dims; tensors have at most 8"):
        torch.ops.weft.RandomUniform(shape=[2] * 9, seed=1.0)


def test_extra_results_are_returned_when_asked_for():
    """Dropout's mask, MaxPool's Indices and BatchNormalization's running statistics: [] by
    default, the tensors with num_<output>=n, equal to an independent computation."""
    torch.manual_seed(11)
    x = r(2, 3, 6, 6)
    y, none = torch.ops.weft.MaxPool(x, kernel_shape=[2, 2], strides=[2, 2])
    assert none == []
    y, (idx,) = torch.ops.weft.MaxPool(x, kernel_shape=[2, 2], strides=[2, 2], num_Indices=1)
    ref, ref_idx = torch.nn.functional.max_pool2d(x, 2, return_indices=True)
    torch.testing.assert_close(y, ref, rtol=0, atol=0)
    # ONNX counts over the whole tensor; torch within each (n, c) plane.
    plane = torch.arange(2 * 3).reshape(2, 3, 1, 1) * 36
    assert idx.dtype == torch.int64 and torch.equal(idx, ref_idx + plane)

    out, (mask,) = torch.ops.weft.Dropout(x, torch.tensor(0.25), torch.tensor(True), seed=9, num_mask=1)
    assert mask.dtype == torch.bool and mask.shape == x.shape and 0 < int(mask.sum()) < x.numel()
    torch.testing.assert_close(out, torch.where(mask, x / 0.75, torch.zeros_like(x)))

    scale, bias, mean, var = r(3), r(3), r(3), torch.rand(3) + 0.5
    yb, (run_mean, run_var) = torch.ops.weft.BatchNormalization(x, scale, bias, mean, var, training_mode=1, momentum=0.8,
                                                              num_running=2)
    xd = x.double()
    m, v = xd.mean((0, 2, 3)), xd.var((0, 2, 3), unbiased=False)
    torch.testing.assert_close(run_mean.double(), mean.double() * 0.8 + m * 0.2)
    torch.testing.assert_close(run_var.double(), var.double() * 0.8 + v * 0.2)
    want = (xd - m.view(1, 3, 1, 1)) / torch.sqrt(v.view(1, 3, 1, 1) + 1e-5) * scale.double().view(1, 3, 1, 1)
    torch.testing.assert_close(yb.double(), want + bias.double().view(1, 3, 1, 1), rtol=1e-5, atol=1e-5)

    meta = torch.ops.weft.MaxPool(x.to("meta"), kernel_shape=[2, 2], strides=[2, 2], num_Indices=1)
    assert meta[1][0].device.type == "meta" and meta[1][0].shape == idx.shape
    with pytest.raises(Exception, match="num_Indices=-1 is out of range"):
        torch.ops.weft.MaxPool(x, kernel_shape=[2, 2], num_Indices=-1)
