"""Col2Im, DeformConv and BitCast on random inputs: Col2Im against PyTorch's fold (2-D) and a
NumPy float64 re-computation (1-D to 3-D); DeformConv against a NumPy float64 re-computation of
its definition and against ONNX Runtime; BitCast against NumPy's view. Bad shapes and attributes
are errors naming the culprit."""
import itertools
import os
import tempfile

import numpy as np
import pytest

import weft

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402


def model(node, inputs, opset, inits=(), out_type=TensorProto.UNDEFINED):
    ins = [helper.make_tensor_value_info(n, numpy_helper.from_array(v).data_type, list(v.shape)) for n, v in inputs]
    g = helper.make_graph([node], "g", ins, [helper.make_tensor_value_info(o, out_type, None) for o in node.output],
                          initializer=list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=10)


def run(node, inputs, opset, inits=()):
    path = os.path.join(tempfile.mkdtemp(), "m.onnx")
    onnx.save(model(node, inputs, opset, inits), path)
    return weft.Session(use_env_path=False).compile(weft.import_onnx(path)).run([v for _, v in inputs])


# ---- Col2Im

def col2im_reference(x, image, block, strides, dilations, pads):
    nd = len(image)
    n, ck, L = x.shape
    taps = int(np.prod(block))
    c = ck // taps
    counts = [(image[d] + pads[d] + pads[d + nd] - dilations[d] * (block[d] - 1) - 1) // strides[d] + 1 for d in range(nd)]
    assert int(np.prod(counts)) == L
    out = np.zeros((n, c) + tuple(image), np.float64)
    xs = x.astype(np.float64).reshape(n, c, *block, *counts)
    for k in itertools.product(*[range(b) for b in block]):
        for pos in itertools.product(*[range(q) for q in counts]):
            at = [pos[d] * strides[d] - pads[d] + k[d] * dilations[d] for d in range(nd)]
            if all(0 <= at[d] < image[d] for d in range(nd)):
                out[(slice(None), slice(None)) + tuple(at)] += xs[(slice(None), slice(None)) + k + pos]
    return out


def col2im_inputs(image, block, strides, dilations, pads, n=2, c=3, dtype=np.float32, seed=0):
    nd = len(image)
    counts = [(image[d] + pads[d] + pads[d + nd] - dilations[d] * (block[d] - 1) - 1) // strides[d] + 1 for d in range(nd)]
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, c * int(np.prod(block)), int(np.prod(counts)))).astype(dtype)
    return x


@pytest.mark.parametrize("image,block,strides,dilations,pads", [
    ([5, 5], [2, 2], [1, 1], [1, 1], [0, 0, 0, 0]),
    ([9, 7], [3, 2], [2, 1], [1, 2], [1, 0, 2, 1]),
    ([6, 8], [1, 3], [3, 2], [2, 1], [0, 1, 0, 1]),
])
def test_col2im_matches_torch_fold(image, block, strides, dilations, pads):
    torch = pytest.importorskip("torch")
    x = col2im_inputs(image, block, strides, dilations, pads)
    node = helper.make_node("Col2Im", ["x", "image", "block"], ["y"], strides=strides, dilations=dilations, pads=pads)
    (y,) = run(node, [("x", x)], 18, [numpy_helper.from_array(np.array(image, np.int64), "image"),
                                       numpy_helper.from_array(np.array(block, np.int64), "block")])
    ref = col2im_reference(x, image, block, strides, dilations, pads)
    np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-5)
    if pads[:2] == pads[2:]:  # torch's fold pads symmetrically
        t = torch.nn.functional.fold(torch.from_numpy(x), image, block, dilation=dilations, padding=pads[:2], stride=strides)
        np.testing.assert_allclose(y, t.numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("image,block,strides,dilations,pads,dtype", [
    ([11], [3], [2], [1], [1, 2], np.float32),
    ([4, 5, 6], [2, 2, 3], [1, 2, 1], [1, 1, 2], [0, 1, 1, 1, 0, 0], np.float64),
    ([6, 6], [3, 3], [1, 1], [1, 1], [1, 1, 1, 1], np.float16),
    ([7, 5], [2, 3], [2, 1], [1, 1], [0, 0, 1, 1], np.int32),
])
def test_col2im_nd_and_types(image, block, strides, dilations, pads, dtype):
    x = col2im_inputs(image, block, strides, dilations, pads, dtype=np.float32, seed=len(image))
    x = (x * 10).astype(dtype) if dtype == np.int32 else x.astype(dtype)
    node = helper.make_node("Col2Im", ["x", "image", "block"], ["y"], strides=strides, dilations=dilations, pads=pads)
    (y,) = run(node, [("x", x)], 18, [numpy_helper.from_array(np.array(image, np.int64), "image"),
                                       numpy_helper.from_array(np.array(block, np.int64), "block")])
    assert y.dtype == dtype
    ref = col2im_reference(x, image, block, strides, dilations, pads)
    tol = 2e-2 if dtype == np.float16 else 1e-6
    np.testing.assert_allclose(y.astype(np.float64), ref, rtol=tol, atol=tol)


def test_col2im_image_shape_known_only_when_it_runs():
    image, block = [5, 6], [2, 3]
    x = col2im_inputs(image, block, [1, 1], [1, 1], [0, 0, 0, 0])
    node = helper.make_node("Col2Im", ["x", "image", "block"], ["y"])
    (y,) = run(node, [("x", x), ("image", np.array(image, np.int64)), ("block", np.array(block, np.int64))], 18)
    np.testing.assert_allclose(y, col2im_reference(x, image, block, [1, 1], [1, 1], [0, 0, 0, 0]), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("x_shape,image,block,attrs,match", [
    ((1, 12, 15), [5, 5], [2, 2], {}, "input has 15 columns; image \\[5, 5\\] with block \\[2, 2\\] and these strides, dilations and pads has 16"),
    ((1, 10, 16), [5, 5], [2, 2], {}, "not a multiple of prod\\(block_shape\\) = 4"),
    ((1, 4, 16), [5, 5], [2, 2], {"strides": [1]}, "strides/dilations need 2 values"),
    ((1, 4, 16), [5, 5], [2, 0], {}, "blocks, strides and dilations must be positive"),
    ((1, 4, 16), [2, 2], [4, 4], {}, "the block of 4 with dilation 1 does not fit the padded image \\(2\\)"),
    ((1, 4, 16), [5, 5, 5], [2, 2], {}, "image_shape has 3 dims, block_shape 2"),
])
def test_col2im_refuses_bad_geometry(x_shape, image, block, attrs, match):
    x = np.zeros(x_shape, np.float32)
    node = helper.make_node("Col2Im", ["x", "image", "block"], ["y"], **attrs)
    with pytest.raises(ValueError, match=match):
        run(node, [("x", x)], 18, [numpy_helper.from_array(np.array(image, np.int64), "image"),
                                    numpy_helper.from_array(np.array(block, np.int64), "block")])


# ---- DeformConv

def bilinear(plane, y, x):
    h, w = plane.shape
    if not (np.isfinite(y) and np.isfinite(x)) or y <= -1 or y >= h or x <= -1 or x >= w:
        return 0.0
    y0, x0 = int(np.floor(y)), int(np.floor(x))
    ly, lx = y - y0, x - x0
    def at(a, b):
        return plane[a, b] if 0 <= a < h and 0 <= b < w else 0.0
    return (1 - ly) * ((1 - lx) * at(y0, x0) + lx * at(y0, x0 + 1)) + ly * ((1 - lx) * at(y0 + 1, x0) + lx * at(y0 + 1, x0 + 1))


def deform_conv_reference(x, w, offset, b, mask, strides, dilations, pads, group, offset_group):
    x, w, offset = x.astype(np.float64), w.astype(np.float64), offset.astype(np.float64)
    n, c, h, wd = x.shape
    m, cg, kh, kw = w.shape
    oh = (h + pads[0] + pads[2] - dilations[0] * (kh - 1) - 1) // strides[0] + 1
    ow = (wd + pads[1] + pads[3] - dilations[1] * (kw - 1) - 1) // strides[1] + 1
    taps = kh * kw
    mg = m // group
    cols = np.zeros((n, c, taps, oh, ow))
    for bi, ci, i, j, oy, ox in itertools.product(range(n), range(c), range(kh), range(kw), range(oh), range(ow)):
        g = ci // (c // offset_group)
        t = i * kw + j
        py = oy * strides[0] - pads[0] + i * dilations[0] + offset[bi, g * 2 * taps + 2 * t, oy, ox]
        px = ox * strides[1] - pads[1] + j * dilations[1] + offset[bi, g * 2 * taps + 2 * t + 1, oy, ox]
        v = bilinear(x[bi, ci], py, px)
        if mask is not None:
            v *= float(mask[bi, g * taps + t, oy, ox])
        cols[bi, ci, t, oy, ox] = v
    y = np.zeros((n, m, oh, ow))
    for g in range(group):
        wg = w[g * mg:(g + 1) * mg].reshape(mg, cg * taps)
        cg_cols = cols[:, g * cg:(g + 1) * cg].reshape(n, cg * taps, oh * ow)
        y[:, g * mg:(g + 1) * mg] = np.einsum("mk,nkp->nmp", wg, cg_cols).reshape(n, mg, oh, ow)
    if b is not None:
        y += b.astype(np.float64).reshape(1, -1, 1, 1)
    return y


def deform_case(seed, n, c, h, wd, m, kh, kw, strides, dilations, pads, group, offset_group, with_bias, with_mask, dtype=np.float32):
    rng = np.random.default_rng(seed)
    oh = (h + pads[0] + pads[2] - dilations[0] * (kh - 1) - 1) // strides[0] + 1
    ow = (wd + pads[1] + pads[3] - dilations[1] * (kw - 1) - 1) // strides[1] + 1
    x = rng.standard_normal((n, c, h, wd)).astype(dtype)
    w = rng.standard_normal((m, c // group, kh, kw)).astype(dtype)
    offset = (rng.standard_normal((n, offset_group * 2 * kh * kw, oh, ow)) * 1.5).astype(dtype)
    inputs = [("X", x), ("W", w), ("offset", offset)]
    names = ["X", "W", "offset"]
    b = mask = None
    if with_bias or with_mask:
        b = rng.standard_normal(m).astype(dtype) if with_bias else None
        names.append("B" if with_bias else "")
        if with_bias:
            inputs.append(("B", b))
    if with_mask:
        mask = rng.uniform(0, 1, (n, offset_group * kh * kw, oh, ow)).astype(dtype)
        names.append("mask")
        inputs.append(("mask", mask))
    attrs = dict(strides=strides, dilations=dilations, pads=pads, group=group, offset_group=offset_group, kernel_shape=[kh, kw])
    node = helper.make_node("DeformConv", names, ["Y"], **attrs)
    ref = deform_conv_reference(x, w, offset, b, mask, strides, dilations, pads, group, offset_group)
    return node, inputs, ref


DEFORM_CASES = [
    # seed, n, c, h, w, m, kh, kw, strides, dilations, pads, group, offset_group, bias, mask
    (0, 1, 3, 6, 7, 4, 3, 3, [1, 1], [1, 1], [1, 1, 1, 1], 1, 1, True, True),
    (1, 2, 4, 7, 5, 6, 2, 3, [2, 1], [1, 2], [0, 1, 1, 0], 2, 2, False, True),
    (2, 1, 6, 5, 5, 6, 3, 3, [1, 2], [2, 1], [2, 2, 2, 2], 3, 3, True, False),
    (3, 2, 2, 4, 6, 3, 1, 1, [1, 1], [1, 1], [0, 0, 0, 0], 1, 2, False, False),
    (11, 2, 8, 7, 6, 8, 3, 3, [1, 2], [1, 1], [1, 0, 2, 1], 4, 2, True, True),  # two groups per offset group
    (12, 1, 8, 5, 9, 4, 2, 2, [2, 2], [2, 1], [0, 0, 0, 0], 2, 4, False, True),  # two offset groups per group
]


@pytest.mark.parametrize("case", DEFORM_CASES)
def test_deform_conv_matches_float64_reference(case):
    node, inputs, ref = deform_case(*case)
    (y,) = run(node, inputs, 22)
    np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("case", DEFORM_CASES)
def test_deform_conv_matches_onnxruntime(case):
    ort = pytest.importorskip("onnxruntime")
    node, inputs, _ = deform_case(*case)
    (y,) = run(node, inputs, 22)
    sess = ort.InferenceSession(model(node, inputs, 22, out_type=TensorProto.FLOAT).SerializeToString(), providers=["CPUExecutionProvider"])
    (want,) = sess.run(None, dict(inputs))
    np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("dtype,tol", [(np.float64, 1e-10), (np.float16, 3e-2)])
def test_deform_conv_other_types(dtype, tol):
    node, inputs, ref = deform_case(7, 1, 2, 5, 5, 3, 3, 3, [1, 1], [1, 1], [1, 1, 1, 1], 1, 1, True, True, dtype=dtype)
    (y,) = run(node, inputs, 22)
    assert y.dtype == dtype
    np.testing.assert_allclose(y.astype(np.float64), ref, rtol=tol, atol=tol * max(1.0, np.abs(ref).max()))


def test_deform_conv_non_finite_offsets_read_zero():
    node, inputs, _ = deform_case(9, 1, 2, 4, 4, 2, 2, 2, [1, 1], [1, 1], [0, 0, 0, 0], 1, 1, True, False)
    offset = inputs[2][1].copy()
    offset[0, 0, 0, 0] = np.nan
    offset[0, 3, 1, 2] = np.inf
    offset[0, 4, 2, 1] = -1e30
    inputs[2] = ("offset", offset)
    (y,) = run(node, inputs, 22)
    ref = deform_conv_reference(inputs[0][1], inputs[1][1], offset, inputs[3][1], None, [1, 1], [1, 1], [0, 0, 0, 0], 1, 1)
    assert np.isfinite(y).all()
    np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("change,match", [
    ({"offset": (1, 17, 4, 4)}, "offset \\[1,17,4,4\\] should be \\[1,18,4,4\\]"),
    ({"offset": (1, 18, 5, 4)}, "offset \\[1,18,5,4\\] should be \\[1,18,4,4\\]"),
    ({"W": (4, 3, 3, 3)}, "X has 2 channels; W \\[4,3,3,3\\] with group 1 takes 3"),
    ({"B": (3,)}, "B must be \\[4\\]"),
    ({"mask": (1, 8, 4, 4)}, "mask \\[1,8,4,4\\] should be \\[1,9,4,4\\]"),
    ({"X": (1, 2, 6)}, "DeformConv is 2-D here"),
    ({"attrs": {"group": 3}}, "X has 2 channels; W \\[4,2,3,3\\] with group 3"),
    ({"attrs": {"offset_group": 3}}, "not a multiple of offset_group 3"),
    ({"attrs": {"kernel_shape": [2, 2]}}, "kernel_shape \\[2, 2\\] differs from W's"),
    ({"attrs": {"strides": [0, 1]}}, "strides\\[0\\] is 0; it must be positive"),
    ({"attrs": {"pads": [1, 1]}}, "pads 4 for a 2-D DeformConv"),
])
def test_deform_conv_refuses_mismatched_inputs(change, match):
    shapes = {"X": (1, 2, 6, 6), "W": (4, 2, 3, 3), "offset": (1, 18, 4, 4), "B": (4,), "mask": (1, 9, 4, 4)}
    shapes.update({k: v for k, v in change.items() if k != "attrs"})
    inputs = [(k, np.zeros(v, np.float32)) for k, v in shapes.items()]
    node = helper.make_node("DeformConv", list(shapes), ["Y"], **change.get("attrs", {}))
    with pytest.raises(ValueError, match=match):
        run(node, inputs, 22)


# ---- BitCast

@pytest.mark.parametrize("src,dst", [(np.float32, np.int32), (np.int64, np.float64), (np.uint16, np.float16), (np.int8, np.uint8),
                                     (np.float64, np.uint64), (np.bool_, np.uint8)])
def test_bitcast_is_numpy_view(src, dst):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 4)) * 1000
    x = (x > 0) if src == np.bool_ else x.astype(src)
    node = helper.make_node("BitCast", ["x"], ["y"], to=int(helper.np_dtype_to_tensor_dtype(np.dtype(dst))))
    (y,) = run(node, [("x", x)], 26)
    assert y.dtype == dst and y.shape == x.shape
    np.testing.assert_array_equal(y.view(np.uint8), np.ascontiguousarray(x).view(np.uint8))


def test_bitcast_refuses_a_different_width():
    node = helper.make_node("BitCast", ["x"], ["y"], to=TensorProto.INT64)
    with pytest.raises(ValueError, match="cannot reinterpret float32 \\(32 bits\\) as int64 \\(64 bits\\)"):
        run(node, [("x", np.zeros(3, np.float32))], 26)


# ---- hostile geometry and large sizes

def test_col2im_refuses_a_dilated_block_that_would_overflow():
    k = (1 << 24) + 1
    node = helper.make_node("Col2Im", ["x", "image", "block"], ["y"], dilations=[1 << 40])
    with pytest.raises(ValueError, match="block of 16777217 with dilation 1099511627776 does not fit the padded image"):
        run(node, [("x", np.zeros((1, k, 1), np.float32))], 18,
            [numpy_helper.from_array(np.array([1], np.int64), "image"), numpy_helper.from_array(np.array([k], np.int64), "block")])


def test_col2im_names_the_input_that_is_too_large():
    node = helper.make_node("Col2Im", ["x", "image", "block"], ["y"], pads=[1 << 41, 0])
    with pytest.raises(ValueError, match="pads in spatial dim 0 is above 2\\^40"):
        run(node, [("x", np.zeros((1, 1, 1), np.float32))], 18,
            [numpy_helper.from_array(np.array([1], np.int64), "image"), numpy_helper.from_array(np.array([1], np.int64), "block")])
    node = helper.make_node("Col2Im", ["x", "image", "block"], ["y"], strides=[1 << 40] * 3)
    with pytest.raises(ValueError, match="holds more than 2\\^62 pixels"):
        run(node, [("x", np.zeros((0, 1, 1), np.float32))], 18,
            [numpy_helper.from_array(np.array([1 << 40] * 3, np.int64), "image"), numpy_helper.from_array(np.array([1, 1, 1], np.int64), "block")])


def test_col2im_empty_input_with_a_large_block_gives_an_empty_image():
    node = helper.make_node("Col2Im", ["x", "image", "block"], ["y"])
    g_in = [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["a", "b", "c"]),
            helper.make_tensor_value_info("image", TensorProto.INT64, [1]), helper.make_tensor_value_info("block", TensorProto.INT64, [1])]
    g = helper.make_graph([node], "g", g_in, [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    path = os.path.join(tempfile.mkdtemp(), "m.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)], ir_version=10), path)
    m = weft.Session(use_env_path=False).compile(weft.import_onnx(path))
    (y,) = m.run([np.zeros((0, 20000, 20001), np.float32), np.array([40000], np.int64), np.array([20000], np.int64)])
    assert y.shape == (0, 1, 40000)


def test_deform_conv_refuses_bad_kernel_shape_and_names_attributes():
    x, w, off = np.zeros((1, 2, 6, 6), np.float32), np.zeros((4, 2, 3, 3), np.float32), np.zeros((1, 18, 4, 4), np.float32)
    for attrs, match in [({"kernel_shape": [-3, 3]}, "kernel_shape\\[0\\] is -3; it must be 1 to 32768"),
                         ({"kernel_shape": [3, 0]}, "kernel_shape\\[1\\] is 0"),
                         ({"dilations": [1, 0]}, "dilations\\[1\\] is 0; it must be positive"),
                         ({"pads": [0, -1, 0, 0]}, "pads\\[1\\] is -1; it must be at least 0"),
                         ({"offset_group": 1 << 62}, "offset_group is 4611686018427387904")]:
        node = helper.make_node("DeformConv", ["X", "W", "offset"], ["Y"], **attrs)
        g_in = [helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, 2, 6, 6]), helper.make_tensor_value_info("W", TensorProto.FLOAT, ["m", "c", "h", "w"]),
                helper.make_tensor_value_info("offset", TensorProto.FLOAT, ["n", "k", "oh", "ow"])]
        g = helper.make_graph([node], "g", g_in, [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)])
        path = os.path.join(tempfile.mkdtemp(), "m.onnx")
        onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 22)], ir_version=10), path)
        with pytest.raises(ValueError, match=match):
            weft.Session(use_env_path=False).compile(weft.import_onnx(path)).run([x, w, off])


def test_deform_conv_in_blocks_of_positions_matches_onnxruntime():
    # 576 rows x 16,900 positions of float32 columns exceed one 32 MiB block: two blocks.
    ort = pytest.importorskip("onnxruntime")
    rng = np.random.default_rng(5)
    x = rng.standard_normal((1, 64, 130, 130)).astype(np.float32)
    w = (rng.standard_normal((8, 64, 3, 3)) * 0.1).astype(np.float32)
    off = (rng.standard_normal((1, 18, 130, 130)) * 2).astype(np.float32)
    b = rng.standard_normal(8).astype(np.float32)
    node = helper.make_node("DeformConv", ["X", "W", "offset", "B"], ["Y"], pads=[1, 1, 1, 1])
    inputs = [("X", x), ("W", w), ("offset", off), ("B", b)]
    (y,) = run(node, inputs, 22)
    sess = ort.InferenceSession(model(node, inputs, 22, out_type=TensorProto.FLOAT).SerializeToString(), providers=["CPUExecutionProvider"])
    (want,) = sess.run(None, dict(inputs))
    np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-4)


def test_deform_conv_samples_exactly_on_a_very_wide_image():
    # Positions past 2^24 are not representable in float32; the integer part is kept apart.
    wd = (1 << 24) + 8
    x = np.arange(wd, dtype=np.float64).astype(np.float32).reshape(1, 1, 1, wd)
    node = helper.make_node("DeformConv", ["X", "W", "offset"], ["Y"])
    (y,) = run(node, [("X", x), ("W", np.ones((1, 1, 1, 1), np.float32)), ("offset", np.zeros((1, 2, 1, wd), np.float32))], 22)
    np.testing.assert_array_equal(y, x)


def test_bitcast_to_bool_stores_zero_or_one():
    x = np.array([0, 1, 2, 255, 128], np.uint8)
    nodes = [helper.make_node("BitCast", ["x"], ["b"], to=TensorProto.BOOL),
             helper.make_node("Equal", ["b", "t"], ["y"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.UINT8, [5])],
                          [helper.make_tensor_value_info("b", TensorProto.BOOL, [5]), helper.make_tensor_value_info("y", TensorProto.BOOL, [5])],
                          initializer=[numpy_helper.from_array(np.array(True), "t")])
    path = os.path.join(tempfile.mkdtemp(), "m.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 26)], ir_version=10), path)
    b, y = weft.Session(use_env_path=False).compile(weft.import_onnx(path)).run([x])
    np.testing.assert_array_equal(b.view(np.uint8), [0, 1, 1, 1, 1])
    np.testing.assert_array_equal(y, [False, True, True, True, True])


def test_bitcast_names_an_element_type_weft_does_not_hold():
    node = helper.make_node("BitCast", ["x"], ["y"], to=22)
    with pytest.raises(ValueError, match="attribute 'to' names ONNX type INT4 \\(22\\), which Weft does not hold"):
        run(node, [("x", np.zeros(3, np.int8))], 26)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_deform_conv_with_no_input_channels_gives_the_bias(dtype):
    # X [1, 0, 4, 4]: no channel to sample, so each output is its bias (an offset group of no
    # channels once divided by zero).
    rng = np.random.default_rng(3)
    x, w = np.zeros((1, 0, 4, 4), dtype), np.zeros((3, 0, 2, 2), dtype)
    offset, b = rng.standard_normal((1, 8, 3, 3)).astype(dtype), rng.standard_normal(3).astype(dtype)
    node = helper.make_node("DeformConv", ["X", "W", "offset", "B"], ["Y"])
    (y,) = run(node, [("X", x), ("W", w), ("offset", offset), ("B", b)], 19)
    np.testing.assert_array_equal(y, np.broadcast_to(b[None, :, None, None], (1, 3, 3, 3)))
