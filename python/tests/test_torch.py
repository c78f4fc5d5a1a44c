"""weft.torch: torch.ops.weft.<op>, Meta, autograd, FX offload, ONNX round trip, check_op."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")
import weft  # noqa: E402
import weft.torch as wt  # noqa: E402

ops = torch.ops.weft


def test_builtins_and_packages_are_registered():
    names = wt.registered_ops()
    for op in ("Add", "Conv", "Relu", "MatMul", "AddCustom", "ScaleAttrs", "SumN", "MulCustom"):
        assert op in names, op
    assert names["SumN"] == "SumN(Tensor[] xs, Tensor? bias=None) -> Tensor"
    assert names["ScaleAttrs"].startswith("ScaleAttrs(Tensor x, *, float scale, float bias=0.0, int repeat=1, bool enabled=True")


def test_add_custom_matches_torch_add():
    for dtype in (torch.float32, torch.float16):
        x, y = torch.randn(4, 2048).to(dtype), torch.randn(4, 2048).to(dtype)
        torch.testing.assert_close(ops.AddCustom(x, y), torch.add(x, y), rtol=0, atol=0)


def test_builtin_conv_matches_torch():
    x, w, b = torch.randn(2, 3, 9, 9), torch.randn(5, 3, 3, 3), torch.randn(5)
    y = ops.Conv(x, w, b, strides=[2, 2], pads=[1, 1, 1, 1])
    torch.testing.assert_close(y, torch.nn.functional.conv2d(x, w, b, stride=2, padding=1), rtol=1e-4, atol=1e-5)


def test_optional_dynamic_inputs_and_attributes():
    a, b, c = torch.randn(3), torch.randn(3), torch.randn(3)
    torch.testing.assert_close(ops.SumN([a, b]), a + b)
    torch.testing.assert_close(ops.SumN([a, b], c), a + b + c)
    x = torch.randn(2, 3)
    torch.testing.assert_close(ops.ScaleAttrs(x, scale=3.0, bias=1.0), x * 3 + 1, rtol=1e-6, atol=1e-6)
    with pytest.raises(RuntimeError):
        ops.ScaleAttrs(x)  # the required attribute is missing


def test_meta_tensors_give_shapes_without_running():
    x = torch.empty(2, 3, 16, 16, device="meta")
    w = torch.empty(8, 3, 3, 3, device="meta")
    y = ops.Conv(x, w, pads=[1, 1, 1, 1], strides=[2, 2])
    assert y.device.type == "meta" and list(y.shape) == [2, 8, 8, 8]
    assert ops.Cast(torch.empty(4, device="meta"), to=torch.int64).dtype == torch.int64


def test_no_backward_is_a_clear_error():
    x = torch.randn(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="has no backward"):
        ops.Relu(x)
    with torch.no_grad():
        ops.Relu(x)  # fine without grad


def test_an_op_with_a_grad_op_differentiates():
    x = torch.randn(5, requires_grad=True)
    y = torch.randn(5, requires_grad=True)
    ops.MulCustom(x, y).sum().backward()
    torch.testing.assert_close(x.grad, y.detach())
    torch.testing.assert_close(y.grad, x.detach())


def test_check_op():
    report = wt.check_op("AddCustom", (torch.randn(4, 8), torch.randn(4, 8)))
    assert report["meta"] == [("torch.float32", [4, 8])]
    assert report["model_file"] == "round trip matches"
    assert "no backward" in report["autograd"]
    assert report["native"] == "weft check-op passed"
    assert wt.check_op("MulCustom", (torch.randn(3), torch.randn(3)))["autograd"] == "differentiable"
    wt.check_op("Conv", (torch.randn(1, 2, 5, 5), torch.randn(3, 2, 3, 3)), {"pads": [1, 1, 1, 1]})


class SmallCnn(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(8)
        self.pool = torch.nn.MaxPool2d(2)
        self.fc = torch.nn.Linear(8 * 8 * 8, 10)

    def forward(self, x):
        x = self.pool(torch.relu(self.bn(self.conv(x))))
        return self.fc(torch.flatten(x, 1))


def test_compile_offloads_a_whole_cnn():
    torch.manual_seed(0)
    net = SmallCnn().eval()
    with torch.no_grad():
        net.bn.running_mean.uniform_(-0.5, 0.5)
        net.bn.running_var.uniform_(0.5, 1.5)
    x = torch.randn(2, 3, 16, 16)
    ex = wt.explain(net, x)
    assert ex.graphs[0]["weft_segments"] == 1 and ex.torch_nodes == [], str(ex)
    torch._dynamo.reset()
    c = torch.compile(net, backend="weft")
    with torch.no_grad():
        for _ in range(2):
            torch.testing.assert_close(c(x), net(x), rtol=1e-4, atol=1e-5)


class WithCustomAndFallback(torch.nn.Module):
    def forward(self, x, y):
        z = torch.ops.weft.AddCustom(x, y) * 2
        z = torch.sort(z, dim=-1).values  # no Weft lowering: runs in PyTorch
        return torch.relu(z + 1)


def test_compile_falls_back_and_reports():
    x, y = torch.randn(3, 8), torch.randn(3, 8)
    net = WithCustomAndFallback()
    ex = wt.explain(net, x, y)
    assert [t[1] for t in ex.torch_nodes] == ["aten.sort.default"], str(ex)
    assert ex.graphs[0]["weft_segments"] == 2
    torch._dynamo.reset()
    c = torch.compile(net, backend="weft")
    for _ in range(2):
        torch.testing.assert_close(c(x, y), net(x, y))


def test_compile_lowers_a_transformer_encoder_layer():
    torch.manual_seed(1)
    layer = torch.nn.TransformerEncoderLayer(32, 4, dim_feedforward=64, batch_first=True).eval()
    x = torch.randn(2, 10, 32)
    with torch.no_grad():
        ex = wt.explain(layer, x)
        assert ex.torch_nodes == [], str(ex)
        torch._dynamo.reset()
        c = torch.compile(layer, backend="weft")
        for _ in range(2):
            torch.testing.assert_close(c(x), layer(x), rtol=1e-4, atol=1e-5)


@pytest.mark.filterwarnings("ignore:The shape inference of weft")
def test_onnx_export_round_trip(tmp_path):
    import onnx

    class Net(torch.nn.Module):
        def forward(self, x, y):
            return torch.relu(torch.ops.weft.AddCustom(x, y)) + torch.ops.weft.ScaleAttrs(x, scale=2.0, bias=0.25)

    x, y = torch.randn(2, 5), torch.randn(2, 5)
    path = str(tmp_path / "custom.onnx")
    torch.onnx.export(Net(), (x, y), path, input_names=["x", "y"], output_names=["z"], opset_version=13,
                      custom_opsets={"weft": 1}, dynamo=False)
    model = onnx.load(path)
    domains = {(n.domain, n.op_type) for n in model.graph.node}
    assert ("weft", "AddCustom") in domains and ("weft", "ScaleAttrs") in domains
    m = weft.default_session().compile(weft.import_onnx(path))
    (z,) = weft.run(m, x, y)
    torch.testing.assert_close(z, Net()(x, y), rtol=1e-6, atol=1e-6)


def test_dtype_attributes_take_torch_dtypes(tmp_path):
    # A Type attribute is a ScalarType in the schema: a torch.dtype in, the tensor of that dtype out,
    # on the C++ kernels, the Python ones and through an ONNX export read back by Weft.
    assert "ScalarType to" in wt.registered_ops()["Cast"]
    x = torch.randn(2, 5) * 100
    for dtype in (torch.int32, torch.float64, torch.int8, torch.float16, torch.bool):
        y = ops.Cast(x, to=dtype)
        assert y.dtype == dtype
        torch.testing.assert_close(y, x.to(dtype), rtol=0, atol=0)
    e = ops.EyeLike(torch.zeros(3, 4), k=1, dtype=torch.int64)
    assert e.dtype == torch.int64
    torch.testing.assert_close(e, torch.diag(torch.ones(3, dtype=torch.int64), 1)[:3, :4], rtol=0, atol=0)
    with pytest.raises((RuntimeError, TypeError), match="unsupported tensor dtype|no Weft element type"):
        ops.Cast(x, to=torch.complex64)

    class M(torch.nn.Module):
        def forward(self, x):
            return ops.Cast(x, to=torch.float64) * 2

    path = str(tmp_path / "cast.onnx")
    torch.onnx.export(M(), (x,), path, dynamo=False, custom_opsets={"weft": 1})
    (got,) = weft.Session().compile(weft.import_onnx(path)).run([x.numpy()])
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got, x.numpy().astype(np.float64) * 2)
