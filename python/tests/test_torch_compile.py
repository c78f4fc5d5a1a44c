"""torch.compile(backend="weft"), weft.torch.explain, weft.torch.from_exported and `weft compile
PROGRAM.pt2`, against eager PyTorch on the zoo's models (random weights, small inputs)."""
import os
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")
import weft  # noqa: E402
import weft.torch as wt  # noqa: E402

_here = os.path.dirname(os.path.abspath(__file__))
for _d in (_here, os.path.join(_here, "..", "..", "bench", "zoo")):
    if os.path.isfile(os.path.join(_d, "zoo_models.py")):
        sys.path.insert(0, _d)
        break
zm = pytest.importorskip("zoo_models")

MODELS = ["resnet18", "resnet50", "mobilenet_v3_large", "bert_base", "gpt2"]


def _inputs(name, batch, seed=0):
    g = torch.Generator().manual_seed(seed)
    out = []
    for i in _specs(name, batch):
        if i.dtype == "int64":
            out.append(torch.randint(int(i.low), int(i.high), i.shape, generator=g))
        else:
            out.append(torch.randn(*i.shape, generator=g))
    return out


_spec_cache = {}


def _specs(name, batch):
    if (name, batch) not in _spec_cache:
        _spec_cache[(name, batch)] = zm.build(name, "small", batch).inputs
    return _spec_cache[(name, batch)]


def _flat(x):
    return list(x) if isinstance(x, (tuple, list)) else [x]


def _assert_close(got, want):
    got, want = _flat(got), _flat(want)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, rtol=1e-4, atol=1e-4)


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


@pytest.mark.parametrize("name", MODELS)
def test_static_shapes_batch_1_and_8(name):
    module = zm.build(name, "small", 1).module
    threads = torch.get_num_threads()
    for batch in (1, 8):
        torch._dynamo.reset()
        compiled = torch.compile(module, backend="weft")
        xs = _inputs(name, batch)
        with torch.no_grad():
            want = module(*xs)
            for _ in range(2):  # the first call builds the plan; the second runs it
                _assert_close(compiled(*xs), want)
    assert torch.get_num_threads() == threads  # Weft leaves PyTorch's thread count alone


@pytest.mark.parametrize("name", MODELS)
def test_dynamic_batch_reuses_one_graph(name):
    module = zm.build(name, "small", 1).module
    compiled = torch.compile(module, backend="weft", dynamic=True)
    with torch.no_grad():
        for batch in (2, 8, 3, 8):
            xs = _inputs(name, batch, seed=batch)
            _assert_close(compiled(*xs), module(*xs))
    ex = wt.explain(module, *_inputs(name, 2), dynamic=True)
    assert ex.graph_breaks == [] and len(ex.graphs) == 1
    assert ex.weft_nodes > 50 and ex.torch_nodes == [], str(ex)


def test_outputs_come_from_weft_not_from_the_eager_recording(monkeypatch):
    """A plan's later calls run the compiled Weft models: break one kernel and the result changes."""
    module = zm.build("resnet18", "small", 1).module
    xs = _inputs("resnet18", 1)
    compiled = torch.compile(module, backend="weft")
    calls = []
    real = weft.Model.run_into

    def spy(self, inputs, outputs):
        calls.append(len(inputs))
        return real(self, inputs, outputs)

    monkeypatch.setattr(weft.Model, "run_into", spy)
    with torch.no_grad():
        compiled(*xs)
        assert calls == []  # the first call records the graph eagerly
        _assert_close(compiled(*xs), module(*xs))
    assert calls == [1]


class _Mixed(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(8)
        self.fc = torch.nn.Linear(8, 4)

    def forward(self, x):
        y = torch.relu(self.bn(self.conv(x)))
        y = torch.cumsum(y, dim=3)  # no Weft lowering: PyTorch runs it between two Weft segments
        return self.fc(y.mean((2, 3)))


def test_unsupported_nodes_fall_back_and_are_reported():
    torch.manual_seed(0)
    m = zm.randomize(_Mixed())
    x = torch.randn(2, 3, 8, 8)
    ex = wt.explain(m, x)
    names = [t[1] for t in ex.torch_nodes]
    assert names == ["aten.cumsum.default"], str(ex)
    assert "no Weft lowering" in ex.torch_nodes[0][2]
    assert ex.graphs[0]["weft_segments"] == 2
    c = torch.compile(m, backend="weft")
    with torch.no_grad():
        for _ in range(2):
            _assert_close(c(x), m(x))


def test_weft_ops_run_inside_compiled_graphs():
    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(8, 8)

        def forward(self, x, y):
            h = torch.ops.weft.AddCustom(self.lin(x), y)
            return torch.relu(torch.ops.weft.ScaleAttrs(h, scale=2.0, bias=0.5))

    net = Net().eval()
    x, y = torch.randn(3, 8), torch.randn(3, 8)
    ex = wt.explain(net, x, y)
    assert ex.torch_nodes == [] and ex.weft_nodes >= 4, str(ex)
    c = torch.compile(net, backend="weft")
    with torch.no_grad():
        want = torch.relu((net.lin(x) + y) * 2.0 + 0.5)
        for _ in range(2):
            torch.testing.assert_close(c(x, y), want, rtol=1e-5, atol=1e-5)


def test_changed_parameters_are_picked_up():
    m = torch.nn.Sequential(torch.nn.Linear(6, 6), torch.nn.ReLU(), torch.nn.Linear(6, 2)).eval()
    x = torch.randn(4, 6)
    c = torch.compile(m, backend="weft")
    with torch.no_grad():
        c(x)
        _assert_close(c(x), m(x))
        m[0].weight.mul_(-2.0)  # in place: the Weft constants are stale
        _assert_close(c(x), m(x))
        m[2].bias = torch.nn.Parameter(torch.randn(2))  # replaced
        _assert_close(c(x), m(x))


def test_gradients_still_flow_through_pytorch():
    m = torch.nn.Sequential(torch.nn.Linear(5, 7), torch.nn.Tanh(), torch.nn.Linear(7, 1))
    x = torch.randn(3, 5)
    c = torch.compile(m, backend="weft")
    c(x).sum().backward()
    got = [p.grad.clone() for p in m.parameters()]
    m.zero_grad()
    m(x).sum().backward()
    for g, p in zip(got, m.parameters()):
        torch.testing.assert_close(g, p.grad)


def test_compile_alias_takes_a_session():
    m = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.ReLU()).eval()
    x = torch.randn(1, 3, 6, 6)
    c = wt.compile(m, session=weft.Session(threads=2))
    with torch.no_grad():
        for _ in range(2):
            _assert_close(c(x), m(x))
    # The session given is the one that compiles: one without built-ins compiles nothing, and the
    # model still runs, in PyTorch, with the reason reported.
    bare = weft.Session(load_builtins=False, use_env_path=False)
    ex = wt.explain(m, x, options={"session": bare})
    assert ex.weft_nodes == 0 and ex.torch_nodes, str(ex)
    assert all("could not compile" in why for _, _, why in ex.torch_nodes), str(ex)
    torch._dynamo.reset()
    with pytest.raises(Exception, match="unknown option"):
        torch.compile(m, backend="weft", options={"sesion": bare})(x)


# ---- torch.export ------------------------------------------------------------------------------
@pytest.mark.parametrize("name", MODELS)
def test_from_exported_with_a_dynamic_batch(name, tmp_path):
    module = zm.build(name, "small", 2).module
    xs = tuple(_inputs(name, 2))
    batch = torch.export.Dim("batch", min=1, max=64)
    ep = torch.export.export(module, xs, dynamic_shapes=tuple({0: batch} for _ in xs))
    model = wt.from_exported(ep)
    assert all(shape[0] == -1 for _, _, shape in model.inputs)
    path = str(tmp_path / f"{name}.weft")
    model.save(path)
    loaded = weft.default_session().load_model(path)
    for b in (2, 5):
        ys = _inputs(name, b, seed=b)
        with torch.no_grad():
            want = module(*ys)
        _assert_close(weft.run(loaded, *ys), want)


def test_from_exported_names_what_it_cannot_lower():
    class Net(torch.nn.Module):
        def forward(self, x):
            return torch.cumsum(torch.relu(x), 0)

    ep = torch.export.export(Net(), (torch.randn(4, 3),))
    with pytest.raises(ValueError, match=r"cumsum \(aten.cumsum.default\): no Weft lowering"):
        wt.from_exported(ep)


def _weft_cli():
    """The Python package's `weft` command (installed or not)."""
    return [sys.executable, "-c", "import sys; from weft._cli import main; sys.argv[0] = 'weft'; main()"]


def test_cli_compiles_a_pt2_program(tmp_path):
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Conv2d(3, 6, 3, padding=1), torch.nn.BatchNorm2d(6), torch.nn.ReLU(),
                              torch.nn.Flatten(), torch.nn.Linear(6 * 8 * 8, 5)).eval()
    zm.randomize(net)
    x = torch.randn(1, 3, 8, 8)
    pt2, out = str(tmp_path / "net.pt2"), str(tmp_path / "net.weft")
    torch.export.save(torch.export.export(net, (x,)), pt2)
    cmd = _weft_cli()
    r = subprocess.run(cmd + ["compile", pt2, "-o", out], capture_output=True, text=True, check=False)
    assert r.returncode == 0, r.stderr
    assert "wrote" in r.stdout
    m = weft.default_session().load_model(out)
    with torch.no_grad():
        _assert_close(weft.run(m, x), net(x))
    bad = tmp_path / "bad.pt2"
    bad.write_bytes(b"not a zip")
    r = subprocess.run(cmd + ["compile", str(bad), "-o", out], capture_output=True, text=True, check=False)
    assert r.returncode != 0 and "is not a torch.export program" in r.stderr


def test_numeric_edge_cases_match_eager():
    def f(i, m, x):
        return i < 0.5, i >= 1.5, m == 2, i == 1.5, torch.clamp(x, min=1.0, max=-1.0), torch.relu(x), torch.sigmoid(i)

    i, m = torch.tensor([0, 1, 2]), torch.tensor([True, False, True])
    x = torch.tensor([-3.0, float("nan"), 3.0])
    c = torch.compile(f, backend="weft")
    with torch.no_grad():
        for _ in range(2):
            for got, want in zip(c(i, m, x), f(i, m, x)):
                torch.testing.assert_close(got, want, equal_nan=True)


def test_embedding_keeps_pytorchs_index_checks():
    emb = torch.nn.Embedding(10, 2).eval()
    c = torch.compile(lambda t: emb(t) * 1, backend="weft")
    with torch.no_grad():
        c(torch.tensor([1, 2]))
        with pytest.raises(IndexError):
            c(torch.tensor([1, -1]))


def test_a_new_instance_at_a_freed_instances_addresses_gets_its_own_plan():
    import gc

    x = torch.randn(3, 16)
    for seed in range(8):
        torch.manual_seed(seed)
        n = torch.nn.Linear(16, 16).eval()
        c = torch.compile(n, backend="weft")
        with torch.no_grad():
            c(x)
            _assert_close(c(x), n(x))
        del n, c
        gc.collect()


def test_weights_changed_behind_the_version_counter_need_unfrozen_parameters():
    m = torch.nn.Linear(8, 8).eval()
    x = torch.randn(2, 8)
    c = torch.compile(m, backend="weft", options={"freeze_parameters": False})
    with torch.no_grad():
        c(x)
        m.weight.data.mul_(2)  # .data has its own version counter: a frozen plan could not see this
        _assert_close(c(x), m(x))
        _assert_close(c(x), m(x))


def test_a_buffer_the_graph_updates_is_not_frozen(monkeypatch):
    from weft.torch import _backend

    class Counting(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(4, 4)
            self.register_buffer("calls", torch.zeros(1))

        def forward(self, x):
            self.calls += 1
            return self.lin(x) * self.calls

    built = []
    monkeypatch.setattr(_backend, "_log_plan", lambda name, plan: built.append(plan))
    m, ref = Counting().eval(), Counting().eval()
    ref.load_state_dict(m.state_dict())
    c = torch.compile(m, backend="weft")
    x = torch.randn(2, 4)
    with torch.no_grad():
        for _ in range(4):
            _assert_close(c(x), ref(x))
    assert len(built) == 1  # one plan, reused: the counter is an input, not a constant


def test_from_exported_refuses_a_program_that_updates_a_buffer():
    class Counting(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("calls", torch.zeros(1))

        def forward(self, x):
            self.calls.add_(1)
            return x * 10

    ep = torch.export.export(Counting(), (torch.randn(3),))
    with pytest.raises(ValueError, match="updates .*calls.* in place"):
        wt.from_exported(ep)
