"""LiteRT resource variables (VAR_HANDLE, READ_VARIABLE, ASSIGN_VARIABLE) with the CALL_ONCE
subgraph that gives them their first values: what TensorFlow's converter writes for a model that
keeps tf.Variable state between calls. Each model runs as a stream against LiteRT's interpreter
(one Weft Model, one interpreter, the same inputs), and reset_state() starts over."""
import os
import sys

import numpy as np
import pytest

import weft

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "examples", "litert_custom_op"))
from tflite_writer import Model  # noqa: E402

ADD, MUL, CALL_ONCE, VAR_HANDLE, READ_VARIABLE, ASSIGN_VARIABLE = 0, 18, 129, 142, 143, 144
CALL_ONCE_OPTIONS, VAR_HANDLE_OPTIONS = 103, 111


def handle(m, name, shared):
    h = m.tensor(name, [], "resource")
    m.builtin(VAR_HANDLE, [], [h], options=(VAR_HANDLE_OPTIONS, [(0, "string", ""), (1, "string", shared)]))
    return h


def init_subgraph(m, values):
    """CALL_ONCE's subgraph: each variable in `values` (shared name -> array) assigned a constant."""
    def build(s):
        for shared, v in values.items():
            h = handle(s, f"init_{shared}", shared)
            c = s.tensor(f"{shared}_init", list(v.shape), v.dtype.name, data=v)
            s.builtin(ASSIGN_VARIABLE, [h, c], [])
        return [], []
    return m.subgraph(build, name="init")


def accumulator(tmp_path, init=True, read_after_assign=True):
    """y = acc + x; acc = y (float32 [1, 4]); n = n + 1 (int32 [1]); outputs y, n and the value read
    back after the assignment."""
    m = Model()
    x = m.tensor("x", [1, 4], "float32")
    if init:
        index = init_subgraph(m, {"acc": np.array([[1.0, -2.0, 3.0, 0.5]], np.float32), "n": np.array([7], np.int32)})
        m.builtin(CALL_ONCE, [], [], options=(CALL_ONCE_OPTIONS, [(0, "int32", index)]))
    acc = handle(m, "acc_handle", "acc")
    n = handle(m, "n_handle", "n")
    old = m.tensor("acc_old", [1, 4], "float32")
    m.builtin(READ_VARIABLE, [acc], [old])
    y = m.tensor("y", [1, 4], "float32")
    m.builtin(ADD, [old, x], [y])
    m.builtin(ASSIGN_VARIABLE, [acc, y], [])
    count = m.tensor("count", [1], "int32")
    m.builtin(READ_VARIABLE, [n], [count])
    one = m.tensor("one", [1], "int32", data=np.array([1], np.int32))
    nxt = m.tensor("next", [1], "int32")
    m.builtin(ADD, [count, one], [nxt])
    m.builtin(ASSIGN_VARIABLE, [n, nxt], [])
    outs = [y, nxt]
    if read_after_assign:
        back = m.tensor("back", [1, 4], "float32")
        m.builtin(READ_VARIABLE, [acc], [back])
        doubled = m.tensor("doubled", [1, 4], "float32")
        m.builtin(ADD, [back, back], [doubled])
        outs.append(doubled)
    path = str(tmp_path / "acc.tflite")
    with open(path, "wb") as f:
        f.write(m.finish([x], outs))
    return path


def litert(path):
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    it = Interpreter(model_path=path, experimental_op_resolver_type=OpResolverType.BUILTIN_REF, num_threads=1)
    it.allocate_tensors()
    return it


def run_litert(it, x):
    it.set_tensor(it.get_input_details()[0]["index"], x)
    it.invoke()
    return [it.get_tensor(d["index"]).copy() for d in it.get_output_details()]


def test_state_carries_from_run_to_run_as_in_litert(tmp_path):
    path = accumulator(tmp_path)
    model = weft.Session(use_env_path=False).compile(weft.import_litert(path))
    it = litert(path)
    rng = np.random.default_rng(0)
    xs = [rng.standard_normal((1, 4)).astype(np.float32) for _ in range(5)]
    for step, x in enumerate(xs):
        got, want = model.run([x]), run_litert(it, x)
        assert len(got) == len(want) == 3
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w, err_msg=f"step {step}")
    assert model.run([xs[0]])[1][0] == 7 + 6  # the counter kept counting
    # reset_state(): back to the CALL_ONCE values, as a new interpreter starts
    model.reset_state()
    it = litert(path)
    for step, x in enumerate(xs[:3]):
        for g, w in zip(model.run([x]), run_litert(it, x)):
            np.testing.assert_array_equal(g, w, err_msg=f"after reset, step {step}")


def test_two_models_keep_their_own_state(tmp_path):
    path = accumulator(tmp_path)
    s = weft.Session(use_env_path=False)
    a, b = s.compile(weft.import_litert(path)), s.compile(weft.import_litert(path))
    x = np.ones((1, 4), np.float32)
    for _ in range(3):
        a.run([x])
    np.testing.assert_array_equal(b.run([x])[0], np.array([[2.0, -1.0, 4.0, 1.5]], np.float32))
    np.testing.assert_array_equal(a.run([x])[0], np.array([[5.0, 2.0, 7.0, 4.5]], np.float32))


def test_saved_model_file_keeps_variables(tmp_path):
    path = accumulator(tmp_path)
    s = weft.Session(use_env_path=False)
    s.compile(weft.import_litert(path)).save(str(tmp_path / "acc.weft"))
    loaded = s.load_model(str(tmp_path / "acc.weft"))
    it = litert(path)
    x = np.full((1, 4), 0.25, np.float32)
    for step in range(3):
        for g, w in zip(loaded.run([x]), run_litert(it, x)):
            np.testing.assert_array_equal(g, w, err_msg=f"step {step}")


def test_errors_name_the_variable_or_the_construct(tmp_path):
    with pytest.raises(Exception, match="reads the variable 'acc' before anything assigns it"):
        weft.import_litert(accumulator(tmp_path, init=False))
    m = Model()
    x = m.tensor("x", [1, 4], "float32")

    def build(s):  # an initializer that computes
        h = handle(s, "h", "acc")
        c = s.tensor("c", [1, 4], "float32", data=np.ones((1, 4), np.float32))
        d = s.tensor("d", [1, 4], "float32")
        s.builtin(MUL, [c, c], [d])
        s.builtin(ASSIGN_VARIABLE, [h, d], [])
        return [], []
    index = m.subgraph(build, name="init")
    m.builtin(CALL_ONCE, [], [], options=(CALL_ONCE_OPTIONS, [(0, "int32", index)]))
    acc = handle(m, "acc", "acc")
    old = m.tensor("old", [1, 4], "float32")
    m.builtin(READ_VARIABLE, [acc], [old])
    y = m.tensor("y", [1, 4], "float32")
    m.builtin(ADD, [old, x], [y])
    bad = str(tmp_path / "bad.tflite")
    with open(bad, "wb") as f:
        f.write(m.finish([x], [y]))
    with pytest.raises(Exception, match="runs MUL; Weft takes CALL_ONCE subgraphs that only assign constants"):
        weft.import_litert(bad)


def test_a_variable_is_its_container_and_shared_name(tmp_path):
    """Handles name a variable by the pair (container, shared_name), as LiteRT does: ('a/b', 'c')
    and ('a', 'b/c') are two variables, and handles without names are one."""
    m = Model()
    x = m.tensor("x", [1, 4], "float32")

    def build(s):
        for k, (c, n, v) in enumerate((("a/b", "c", 1.0), ("a", "b/c", 100.0), ("", "", 5.0))):
            h = s.tensor(f"h{k}", [], "resource")
            s.builtin(VAR_HANDLE, [], [h], options=(VAR_HANDLE_OPTIONS, [(0, "string", c), (1, "string", n)]))
            s.builtin(ASSIGN_VARIABLE, [h, s.tensor(f"v{k}", [1, 4], "float32", data=np.full((1, 4), v, np.float32))], [])
        return [], []
    index = m.subgraph(build, name="init")
    m.builtin(CALL_ONCE, [], [], options=(CALL_ONCE_OPTIONS, [(0, "int32", index)]))
    outs = []
    for k, (c, n) in enumerate((("a/b", "c"), ("a", "b/c"), ("", ""))):
        h = m.tensor(f"mh{k}", [], "resource")
        if c or n:
            m.builtin(VAR_HANDLE, [], [h], options=(VAR_HANDLE_OPTIONS, [(0, "string", c), (1, "string", n)]))
        else:
            m.builtin(VAR_HANDLE, [], [h])  # no options: the unnamed variable
        r = m.tensor(f"r{k}", [1, 4], "float32")
        m.builtin(READ_VARIABLE, [h], [r])
        y = m.tensor(f"y{k}", [1, 4], "float32")
        m.builtin(ADD, [r, x], [y])
        m.builtin(ASSIGN_VARIABLE, [h, y], [])
        outs.append(y)
    path = str(tmp_path / "names.tflite")
    with open(path, "wb") as f:
        f.write(m.finish([x], outs))
    model = weft.Session(use_env_path=False).compile(weft.import_litert(path))
    it = litert(path)
    for step in range(3):
        x1 = np.full((1, 4), step, np.float32)
        for g, w in zip(model.run([x1]), run_litert(it, x1)):
            np.testing.assert_array_equal(g, w, err_msg=f"step {step}")


def test_every_read_is_checked_and_call_once_comes_first(tmp_path):
    m = Model()
    x = m.tensor("x", [1, 4], "float32")
    index = init_subgraph(m, {"acc": np.zeros((1, 4), np.float32)})
    m.builtin(CALL_ONCE, [], [], options=(CALL_ONCE_OPTIONS, [(0, "int32", index)]))
    acc = handle(m, "acc_h", "acc")
    m.builtin(ASSIGN_VARIABLE, [acc, x], [])
    wrong = m.tensor("wrong", [7, 7], "int32")
    m.builtin(READ_VARIABLE, [acc], [wrong])  # after the assignment, into another type and shape
    path = str(tmp_path / "read.tflite")
    with open(path, "wb") as f:
        f.write(m.finish([x], [wrong]))
    with pytest.raises(Exception, match=r"reads the variable 'acc' \(float32\[1,4\]\) into tensor 'wrong' \(int32\[7,7\]\)"):
        weft.import_litert(path)
    m = Model()
    x = m.tensor("x", [1, 4], "float32")
    acc = handle(m, "acc_h", "acc")
    m.builtin(ASSIGN_VARIABLE, [acc, x], [])
    index = init_subgraph(m, {"acc": np.zeros((1, 4), np.float32)})
    m.builtin(CALL_ONCE, [], [], options=(CALL_ONCE_OPTIONS, [(0, "int32", index)]))
    path = str(tmp_path / "late.tflite")
    with open(path, "wb") as f:
        f.write(m.finish([x], [x]))
    with pytest.raises(Exception, match="gives the variable 'acc' a value after the main subgraph used it; CALL_ONCE must come first"):
        weft.import_litert(path)
