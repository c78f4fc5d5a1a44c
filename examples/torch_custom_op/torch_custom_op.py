"""The op-plugin guide's add_custom sample, the Weft way: the AddCustom operator package
(examples/add_custom, found through WEFT_CUSTOM_OPP_PATH) used from PyTorch with no binding code.

  1. eagerly, as torch.ops.weft.AddCustom, checked against torch.add (float32 and float16);
  2. on meta tensors (shape inference for tracing), and through weft.torch.check_op;
  3. inside a module compiled with torch.compile(backend="weft"), and through torch.export into a
     .weft model file, both checked against the same module written with torch.add;
  4. exported to ONNX as a weft::AddCustom node and run back through Weft's ONNX importer.
"""
import os
import sys
import tempfile
import warnings

import torch

import weft
import weft.torch as wt


def main():
    if "AddCustom" not in wt.registered_ops():
        sys.exit("AddCustom is not registered: put the add_custom package on WEFT_CUSTOM_OPP_PATH")
    print("schema:", wt.registered_ops()["AddCustom"], "(C++ kernels)" if wt.is_native("AddCustom") else "(Python kernels)")

    # 1. Eager.
    torch.manual_seed(0)
    for dtype in (torch.float32, torch.float16):
        x, y = torch.randn(8, 2048, dtype=dtype), torch.randn(8, 2048, dtype=dtype)
        z = torch.ops.weft.AddCustom(x, y)
        assert torch.equal(z, torch.add(x, y)), dtype
    print("eager: torch.ops.weft.AddCustom == torch.add for float32 and float16")

    # 2. Meta and check_op.
    m = torch.ops.weft.AddCustom(torch.empty(3, 5, device="meta"), torch.empty(3, 5, device="meta"))
    assert m.device.type == "meta" and list(m.shape) == [3, 5]
    report = wt.check_op("AddCustom", (torch.randn(4, 16), torch.randn(4, 16)))
    print("check_op:", ", ".join(f"{k}: {v}" for k, v in report.items() if k != "schema"))

    # 3. Inside a compiled module.
    class WithAddCustom(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(64, 64)

        def forward(self, x, y):
            return torch.relu(self.fc(torch.ops.weft.AddCustom(x, y)))

    class WithTorchAdd(WithAddCustom):
        def forward(self, x, y):
            return torch.relu(self.fc(torch.add(x, y)))

    net, ref_net = WithAddCustom().eval(), WithTorchAdd().eval()
    ref_net.load_state_dict(net.state_dict())
    x, y = torch.randn(16, 64), torch.randn(16, 64)
    print(wt.explain(net, x, y))  # graph breaks, and which nodes run in Weft or in PyTorch
    compiled = torch.compile(net, backend="weft")
    with torch.no_grad():
        for _ in range(2):  # the first call builds the plan, the second runs it
            torch.testing.assert_close(compiled(x, y), ref_net(x, y), rtol=1e-5, atol=1e-6)
    print('torch.compile(backend="weft"): the module with AddCustom matches the module with torch.add')

    # 3b. Through torch.export: the program, with AddCustom in it, becomes a Weft model file.
    program = torch.export.export(net, (x, y))
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "add_custom.weft")
        wt.from_exported(program).save(path)
        (z,) = weft.run(weft.default_session().load_model(path), x, y)
    with torch.no_grad():
        torch.testing.assert_close(z, ref_net(x, y), rtol=1e-5, atol=1e-6)
    print("torch.export -> weft.torch.from_exported -> add_custom.weft: matches the module with torch.add")

    # 4. ONNX round trip.
    with tempfile.TemporaryDirectory() as d, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        path = os.path.join(d, "add_custom.onnx")
        torch.onnx.export(net, (x, y), path, input_names=["x", "y"], output_names=["z"], opset_version=13,
                          custom_opsets={"weft": 1}, dynamo=False)
        model = weft.default_session().compile(weft.import_onnx(path))
        (z,) = weft.run(model, x, y)
    with torch.no_grad():
        torch.testing.assert_close(z, ref_net(x, y), rtol=1e-5, atol=1e-6)
    print("ONNX: exported as weft::AddCustom, imported and run by Weft, matches torch.add")


if __name__ == "__main__":
    main()
