"""The two registration routes: libweft_torch.so alone (no Python in the call path, loaded with
torch.ops.load_library, no `import weft`), and the pure-Python kernels (WEFT_TORCH_NATIVE=0)."""
import os
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")
import weft.torch as wt  # noqa: E402

NATIVE = os.path.join(os.path.dirname(wt.__file__), "libweft_torch.so")


def run(code, **env):
    e = dict(os.environ)
    e.update(env)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=e)
    assert r.returncode == 0, r.stderr
    return r.stdout


@pytest.mark.skipif(not os.path.exists(NATIVE), reason="built without libtorch")
def test_the_cpp_library_alone_registers_every_op():
    out = run(f"""
import torch
torch.ops.load_library({NATIVE!r})
x, y = torch.randn(3, 4), torch.randn(3, 4)
assert torch.equal(torch.ops.weft.AddCustom(x, y), x + y)
m = torch.ops.weft.Conv(torch.empty(1, 2, 8, 8, device="meta"), torch.empty(4, 2, 3, 3, device="meta"), pads=[1, 1, 1, 1])
assert m.device.type == "meta" and list(m.shape) == [1, 4, 8, 8]
try:
    torch.ops.weft.Relu(torch.randn(2, requires_grad=True))
    raise SystemExit("expected the no-backward error")
except RuntimeError as e:
    assert "has no backward" in str(e)
assert "weft" not in __import__("sys").modules
print("ok")
""")
    assert out.strip() == "ok"


def test_python_kernels_when_native_is_off():
    out = run("""
import torch, weft.torch as wt
assert not wt.is_native("AddCustom")
x, y = torch.randn(5), torch.randn(5)
assert torch.equal(torch.ops.weft.AddCustom(x, y), x + y)
assert list(torch.ops.weft.AddCustom(torch.empty(2, 3, device="meta"), torch.empty(2, 3, device="meta")).shape) == [2, 3]
print("ok")
""", WEFT_TORCH_NATIVE="0")
    assert out.strip() == "ok"


def test_native_and_python_schemas_agree():
    for op in ("Conv", "ScaleAttrs", "SumN", "LSTM", "Resize"):
        if op not in wt.registered_ops():
            continue
        torch_schema = str(getattr(torch.ops.weft, op).default._schema)
        assert torch_schema == str(torch._C.parse_schema("weft::" + wt.registered_ops()[op])), op


@pytest.mark.skipif(not os.path.exists(NATIVE), reason="built without libtorch")
def test_one_engine_per_process_a_sessions_package_reaches_torch_ops():
    # The package is on no search path: torch.ops.weft can only know it through the session.
    out = run("""
import os, torch, weft, weft.torch as wt
pkg = os.path.join(os.environ["WEFT_TEST_PACKAGES"], "compilable_add_custom")
s = weft.Session(packages=[pkg], use_env_path=False)
assert "CompilableAddCustom" not in weft.default_session().ops()
assert not hasattr(torch.ops.weft, "CompilableAddCustom")
hits = lambda: sum(weft.kernel_cache_stats()[k] for k in ("compiles", "memory_hits", "disk_hits"))
before = hits()
assert "CompilableAddCustom" in wt.register(s)
assert wt.is_native("CompilableAddCustom") and wt.op_session("CompilableAddCustom")[0] is s
x, y = torch.randn(4, 8), torch.randn(4, 8)
torch.testing.assert_close(torch.ops.weft.CompilableAddCustom(x, y), x + y, rtol=0, atol=0)
# The kernel the torch op's Compile built went through the Python module's kernel cache.
assert hits() > before, (before, hits())
maps = open("/proc/self/maps").read().split()
engines = {p for p in maps if os.path.basename(p).startswith("libweft.so")}
assert len(engines) == 1, engines
print("ok")
""")
    assert out.strip() == "ok"


@pytest.mark.skipif(not os.path.exists(NATIVE), reason="built without libtorch")
def test_the_default_session_set_before_import_is_the_one_torch_sees():
    out = run("""
import os, torch, weft
pkg = os.path.join(os.environ["WEFT_TEST_PACKAGES"], "compilable_add_custom")
s = weft.Session(packages=[pkg], use_env_path=False)
weft.set_default_session(s)
assert weft.default_session() is s
import weft.torch as wt
assert wt.is_native("CompilableAddCustom") and wt.op_session("CompilableAddCustom")[0] is s
x, y = torch.randn(3), torch.randn(3)
torch.testing.assert_close(torch.ops.weft.CompilableAddCustom(x, y), x + y, rtol=0, atol=0)
print("ok")
""")
    assert out.strip() == "ok"
