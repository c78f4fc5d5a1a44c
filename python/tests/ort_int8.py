"""Whether ONNX Runtime's uint8 x int8 products are exact on this CPU.

Without VNNI (AVX2 only), ONNX Runtime's uint8 x int8 kernels add pairs of products in saturating
16-bit lanes, so a pair above 32767 (255 * 127 * 2 is 64770) comes out clipped and its results are
not the exact sums ONNX defines. Tests that take ONNX Runtime's bytes as the reference for such
products run where they are exact; elsewhere exact NumPy re-computations
(test_int8_exact_sums.py) check the same operators."""
import functools

import numpy as np


@functools.lru_cache(maxsize=None)
def ort_u8s8_exact():
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper
    a = np.full((4, 64), 255, np.uint8)
    b = np.full((64, 16), 127, np.int8)
    node = helper.make_node("MatMulInteger", ["a", "b"], ["y"])
    g = helper.make_graph([node], "probe", [helper.make_tensor_value_info("a", TensorProto.UINT8, [4, 64])],
                          [helper.make_tensor_value_info("y", TensorProto.INT32, None)], [numpy_helper.from_array(b, "b")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    (y,) = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"a": a})
    return bool(np.all(y == 64 * 255 * 127))


def skip_unless_ort_u8s8_exact():
    import pytest
    if not ort_u8s8_exact():
        pytest.skip("ONNX Runtime's uint8 x int8 sums saturate on this CPU (no VNNI); test_int8_exact_sums.py checks against NumPy")
