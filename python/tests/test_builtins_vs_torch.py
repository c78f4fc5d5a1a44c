"""Built-in operators on random inputs against PyTorch's own implementations (an independent
reference), called as torch.ops.weft.<op>."""
import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402

import weft.torch  # noqa: E402,F401

ops = torch.ops.weft
g = torch.Generator().manual_seed(1234)


def rand(*shape, lo=-2.0, hi=2.0):
    return torch.rand(*shape, generator=g) * (hi - lo) + lo


def close(a, b, rtol=1e-5, atol=1e-6):
    torch.testing.assert_close(a, b, rtol=rtol, atol=atol)


UNARY = [
    ("Relu", torch.relu, {}), ("Sigmoid", torch.sigmoid, {}), ("Tanh", torch.tanh, {}), ("Exp", torch.exp, {}),
    ("Neg", torch.neg, {}), ("Abs", torch.abs, {}), ("Erf", torch.erf, {}), ("Softplus", F.softplus, {}),
    ("HardSwish", F.hardswish, {}), ("Gelu", F.gelu, {}),
    ("LeakyRelu", lambda x: F.leaky_relu(x, 0.1), {"alpha": 0.1}), ("Elu", lambda x: F.elu(x, 0.7), {"alpha": 0.7}),
    ("HardSigmoid", lambda x: torch.clamp(0.3 * x + 0.4, 0, 1), {"alpha": 0.3, "beta": 0.4}),
]


@pytest.mark.parametrize("op,ref,attrs", UNARY, ids=[u[0] for u in UNARY])
def test_unary(op, ref, attrs):
    x = rand(3, 17, 5)
    close(getattr(ops, op)(x, **attrs), ref(x), rtol=1e-5, atol=1e-5)


def test_positive_domain_unary():
    x = rand(64, lo=0.1, hi=5.0)
    close(ops.Sqrt(x), torch.sqrt(x))
    close(ops.Log(x), torch.log(x))
    close(ops.Reciprocal(x), torch.reciprocal(x))


@pytest.mark.parametrize("op,ref", [("Add", torch.add), ("Sub", torch.sub), ("Mul", torch.mul), ("Div", torch.div),
                                    ("Min", None), ("Max", None)])
def test_binary_with_broadcasting(op, ref):
    a, b = rand(4, 1, 6), rand(5, 1)
    if op in ("Min", "Max"):
        close(getattr(ops, op)([a, b]), (torch.minimum if op == "Min" else torch.maximum)(a, b))
    else:
        close(getattr(ops, op)(a, b), ref(a, b))


def test_pow_prelu_clip_where():
    a, b = rand(3, 4, lo=0.5, hi=2.0), rand(3, 4)
    close(ops.Pow(a, b), torch.pow(a, b), rtol=1e-5, atol=1e-5)
    slope = rand(4, lo=0.0, hi=0.5)
    close(ops.PRelu(b, slope), torch.where(b > 0, b, b * slope))
    close(ops.Clip(b, torch.tensor(-0.5), torch.tensor(0.7)), torch.clamp(b, -0.5, 0.7))
    cond = rand(3, 4) > 0
    close(ops.Where(cond, a, b), torch.where(cond, a, b))


def test_matmul_and_gemm():
    a, b = rand(2, 3, 7, 33), rand(33, 9)
    close(ops.MatMul(a, b), torch.matmul(a, b), rtol=1e-4, atol=1e-5)
    a, b, c = rand(40, 50), rand(60, 50), rand(60)
    close(ops.Gemm(a, b, c, alpha=0.5, beta=2.0, transB=1), 0.5 * a @ b.T + 2.0 * c, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("group,dilation,stride,pad", [(1, 1, 1, 1), (2, 1, 2, 0), (4, 2, 1, 2), (1, 1, 2, 3)])
def test_conv(group, dilation, stride, pad):
    x, w, b = rand(2, 8, 13, 11), rand(12, 8 // group, 3, 3), rand(12)
    y = ops.Conv(x, w, b, group=group, dilations=[dilation] * 2, strides=[stride] * 2, pads=[pad] * 4)
    close(y, F.conv2d(x, w, b, stride=stride, padding=pad, dilation=dilation, groups=group), rtol=1e-4, atol=1e-4)


def test_conv_transpose():
    x, w, b = rand(1, 6, 7, 5), rand(6, 4, 3, 3), rand(4)
    y = ops.ConvTranspose(x, w, b, strides=[2, 2], pads=[1, 1, 1, 1], output_padding=[1, 1])
    close(y, F.conv_transpose2d(x, w, b, stride=2, padding=1, output_padding=1), rtol=1e-4, atol=1e-4)


def test_pooling():
    x = rand(2, 5, 12, 9)
    y, indices = ops.MaxPool(x, kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    assert indices == []
    close(y, F.max_pool2d(x, 3, 2, 1))
    close(ops.AveragePool(x, kernel_shape=[2, 3], strides=[2, 1]), F.avg_pool2d(x, (2, 3), (2, 1)))
    close(ops.AveragePool(x, kernel_shape=[3, 3], pads=[1, 1, 1, 1], count_include_pad=1),
          F.avg_pool2d(x, 3, 1, 1, count_include_pad=True))
    close(ops.GlobalAveragePool(x), x.mean(dim=(2, 3), keepdim=True))


def test_normalizations():
    x = rand(3, 6, 5, 4)
    scale, bias, mean, var = rand(6), rand(6), rand(6), rand(6, lo=0.5, hi=2.0)
    y, extra = ops.BatchNormalization(x, scale, bias, mean, var, epsilon=1e-3)
    assert extra == []
    close(y, F.batch_norm(x, mean, var, scale, bias, False, 0.0, 1e-3), rtol=1e-4, atol=1e-5)
    close(ops.InstanceNormalization(x, scale, bias, epsilon=1e-4), F.instance_norm(x, weight=scale, bias=bias, eps=1e-4),
          rtol=1e-4, atol=1e-4)
    g2, b2 = rand(4), rand(4)
    y, _ = ops.LayerNormalization(x, g2, b2, axis=-1, epsilon=1e-5)
    close(y, F.layer_norm(x, (4,), g2, b2, 1e-5), rtol=1e-4, atol=1e-5)


def test_softmax_family_and_reductions():
    x = rand(4, 7, 9)
    close(ops.Softmax(x, axis=1), torch.softmax(x, 1))
    close(ops.LogSoftmax(x, axis=-1), torch.log_softmax(x, -1), rtol=1e-5, atol=1e-5)
    axes = torch.tensor([0, 2])
    close(ops.ReduceMean(x, axes, keepdims=0), x.mean(dim=(0, 2)))
    close(ops.ReduceSum(x, axes, keepdims=1), x.sum(dim=(0, 2), keepdim=True), rtol=1e-5, atol=1e-5)
    close(ops.ReduceMax(x, torch.tensor([1]), keepdims=0), x.amax(dim=1))
    assert torch.equal(ops.ArgMax(x, axis=2, keepdims=0), x.argmax(dim=2))
    close(ops.CumSum(x, torch.tensor(1)), torch.cumsum(x, 1), rtol=1e-5, atol=1e-5)
    values, indices = ops.TopK(x, torch.tensor([3]), axis=-1)
    ref = torch.topk(x, 3, dim=-1)
    close(values, ref.values)
    assert torch.equal(indices, ref.indices)


def test_data_movement():
    x = rand(2, 3, 4, 5)
    close(ops.Transpose(x, perm=[0, 2, 3, 1]), x.permute(0, 2, 3, 1))
    close(ops.Transpose(x, perm=[3, 1, 0, 2]), x.permute(3, 1, 0, 2))
    close(ops.Concat([x, x * 2], axis=2), torch.cat([x, x * 2], 2))
    idx = torch.tensor([[2, 0], [1, 1]])
    close(ops.Gather(x, idx, axis=2), x[:, :, idx])
    gi = torch.randint(0, 5, (2, 3, 4, 5), generator=g)
    close(ops.GatherElements(x, gi, axis=3), torch.gather(x, 3, gi))
    close(ops.Slice(x, torch.tensor([1, 0]), torch.tensor([4, 5]), torch.tensor([2, 3]), torch.tensor([2, 2])),
          x[:, :, 1:4:2, 0:5:2])
    e = rand(3, 1)
    close(ops.Expand(e, torch.tensor([2, 3, 4])), e.expand(2, 3, 4))
    close(ops.Tile(x, torch.tensor([1, 2, 1, 3])), x.repeat(1, 2, 1, 3))
    close(ops.Pad(x, torch.tensor([0, 0, 1, 2, 0, 0, 2, 1]), torch.tensor(0.5)), F.pad(x, (2, 1, 1, 2), value=0.5))
    close(ops.Cast(x, to=torch.int32), x.to(torch.int32))
    assert torch.equal(ops.Equal(x, x.clone()), torch.ones_like(x, dtype=torch.bool))


def test_resize_and_recurrent():
    x = rand(1, 2, 5, 7)
    y = ops.Resize(x, None, torch.tensor([1.0, 1.0, 2.0, 2.0]), mode="linear")
    close(y, F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=False), rtol=1e-5, atol=1e-5)
    # GRU/LSTM vs torch.nn with the same weights (ONNX gate order: LSTM iofc, GRU zrh).
    seq, batch, inp, hid = 6, 3, 5, 4
    xs = rand(seq, batch, inp)
    lstm = torch.nn.LSTM(inp, hid)
    wi, wh, bi, bh = lstm.weight_ih_l0, lstm.weight_hh_l0, lstm.bias_ih_l0, lstm.bias_hh_l0
    order = [0, 3, 1, 2]  # torch ifgo -> onnx iofc

    def reorder(t):
        return torch.cat([t.chunk(4)[k] for k in order])

    W, R = reorder(wi).unsqueeze(0).detach(), reorder(wh).unsqueeze(0).detach()
    B = torch.cat([reorder(bi), reorder(bh)]).unsqueeze(0).detach()
    y, yh, yc = ops.LSTM(xs, W, R, B, hidden_size=hid)
    with torch.no_grad():
        ref, (h, c) = lstm(xs)
    close(y[:, 0], ref, rtol=1e-4, atol=1e-5)
    close(yh[0], h[0], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("sizes,dim", [([2, 4], 0), ([1, 1, 3], 1), ([5] * 10, 2)])
def test_split_returns_a_list(sizes, dim):
    # The list's length comes from the split tensor's; more than 8 pieces take the general path.
    shape = [6, 5, 50]
    shape[dim] = sum(sizes)
    x = rand(*shape)
    got = ops.Split(x, torch.tensor(sizes), axis=dim)
    want = torch.split(x, sizes, dim)
    assert isinstance(got, list) and len(got) == len(want)
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b, rtol=0, atol=0)


def test_split_by_count_and_the_error_without_one():
    x = rand(4, 9)
    got = ops.Split(x, axis=1, num_outputs=3)
    for a, b in zip(got, torch.chunk(x, 3, 1)):
        torch.testing.assert_close(a, b, rtol=0, atol=0)
    with pytest.raises(Exception, match="num_outputs= or a split tensor"):
        ops.Split(x, axis=1)
    # Under torch.compile with the default backend: the fake kernel gives the list too.
    f = torch.compile(lambda t: [p * 2 for p in ops.Split(t, axis=1, num_outputs=3)], fullgraph=True)
    for a, b in zip(f(x), torch.chunk(x, 3, 1)):
        torch.testing.assert_close(a, b * 2)
