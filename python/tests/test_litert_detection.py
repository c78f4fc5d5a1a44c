"""TFLite_Detection_PostProcess, the custom operator that ends SSD-style LiteRT detection models,
against LiteRT's interpreter (reference kernels) on random boxes and scores: fast and regular
non-maximum suppression, one or several classes per detection, with and without a background
column, float and uint8 inputs. Rows past num_detections are zeros in Weft (LiteRT leaves them
unwritten), so only the detections are compared; they must be equal bit for bit."""
import importlib.util
import os
import sys

import numpy as np
import pytest

import weft

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "..", "examples", "litert_custom_op"))
from tflite_writer import Model  # noqa: E402

flexbuffers = pytest.importorskip("flatbuffers.flexbuffers")


def options(**kw):
    b = flexbuffers.Builder()
    with b.Map():
        for k, v in kw.items():
            if isinstance(v, bool):
                b.Bool(k, v)
            elif isinstance(v, int):
                b.Int(k, v)
            else:
                b.Float(k, v)
    return bytes(b.Finish())


BASE = dict(max_detections=10, max_classes_per_detection=1, nms_score_threshold=0.3, nms_iou_threshold=0.5, num_classes=5,
            y_scale=10.0, x_scale=10.0, h_scale=5.0, w_scale=5.0)


def build(tmp_path, n=60, background=True, quantized=False, **kw):
    opts = dict(BASE, **kw)
    rng = np.random.default_rng(n)
    cb = opts["num_classes"] + (1 if background else 0)
    rows = opts["max_detections"] * opts["max_classes_per_detection"]
    anchors = np.stack([rng.uniform(0, 1, n), rng.uniform(0, 1, n), rng.uniform(0.05, 0.5, n), rng.uniform(0.05, 0.5, n)], 1)
    m = Model()
    if quantized:  # as the converter writes a quantized SSD: uint8 encodings, scores and anchors
        e = m.tensor("box_encodings", [1, n, 4], "uint8", scale=0.05, zero_point=128)
        c = m.tensor("class_predictions", [1, n, cb], "uint8", scale=1 / 255, zero_point=0)
        a = m.tensor("anchors", [n, 4], "uint8", data=np.round(anchors / 0.004).astype(np.uint8), scale=0.004, zero_point=0)
    else:
        e = m.tensor("box_encodings", [1, n, 4], "float32")
        c = m.tensor("class_predictions", [1, n, cb], "float32")
        a = m.tensor("anchors", [n, 4], "float32", data=anchors.astype(np.float32))
    outs = [m.tensor("boxes", [1, rows, 4], "float32"), m.tensor("classes", [1, rows], "float32"),
            m.tensor("scores", [1, rows], "float32"), m.tensor("num", [1], "float32")]
    m.custom("TFLite_Detection_PostProcess", [e, c, a], outs, options=options(**opts))
    path = str(tmp_path / "detect.tflite")
    with open(path, "wb") as f:
        f.write(m.finish(inputs=[e, c], outputs=outs))
    return path, (n, cb)


def inputs(shape, quantized, seed):
    n, cb = shape
    rng = np.random.default_rng(seed)
    if quantized:
        return [rng.integers(0, 256, (1, n, 4), dtype=np.uint8), rng.integers(0, 256, (1, n, cb), dtype=np.uint8)]
    return [rng.standard_normal((1, n, 4)).astype(np.float32), rng.uniform(0, 1, (1, n, cb)).astype(np.float32)]


def compare(path, feeds, rows_per_detection):
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    it = Interpreter(model_path=path, experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
    it.allocate_tensors()
    for d, v in zip(it.get_input_details(), feeds):
        it.set_tensor(d["index"], v)
    it.invoke()
    want = [it.get_tensor(d["index"]).copy() for d in it.get_output_details()]
    got = weft.Session(use_env_path=False).compile(weft.import_litert(path)).run(feeds)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
    assert got[3][0] == want[3][0]
    rows = int(want[3][0]) * rows_per_detection
    for g, w in zip(got[:3], want[:3]):
        np.testing.assert_array_equal(g[0, :rows], w[0, :rows])
    assert not got[2][0, rows:].any()  # the rest are zeros
    return int(want[3][0])


VARIANTS = {
    "fast": dict(),
    "fast_three_classes_each": dict(max_classes_per_detection=3),
    "fast_no_background": dict(background=False),
    "fast_many_boxes": dict(n=600, max_detections=25, nms_iou_threshold=0.3),
    "regular": dict(use_regular_nms=True, detections_per_class=4),
    "regular_no_background": dict(use_regular_nms=True, detections_per_class=8, background=False, max_detections=20),
    "regular_unbounded_per_class": dict(use_regular_nms=True, detections_per_class=2**31 - 1),
    "quantized_fast": dict(quantized=True),
    "quantized_regular": dict(quantized=True, use_regular_nms=True, detections_per_class=3),
}


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_matches_litert(tmp_path, variant):
    pytest.importorskip("ai_edge_litert")
    kw = dict(VARIANTS[variant])
    quantized = kw.get("quantized", False)
    path, shape = build(tmp_path, **kw)
    per = 1 if kw.get("use_regular_nms") else kw.get("max_classes_per_detection", 1)
    found = [compare(path, inputs(shape, quantized, seed), per) for seed in range(4)]
    assert max(found) > 2, found  # the inputs exercise the suppression, not only empty results


def test_nothing_above_the_threshold(tmp_path):
    path, shape = build(tmp_path, nms_score_threshold=0.99)
    e, c = inputs(shape, False, 0)
    boxes, classes, scores, num = weft.Session(use_env_path=False).compile(weft.import_litert(path)).run([e, c * 0.5])
    assert num[0] == 0 and not boxes.any() and not classes.any() and not scores.any()


@pytest.mark.parametrize("bad,message", [
    (dict(nms_iou_threshold=0.0), "nms_iou_threshold is 0.000000; it must lie in \\(0, 1\\]"),
    (dict(num_classes=9), "class_predictions has 6 columns; with num_classes 9"),
    (dict(max_classes_per_detection=0), "max_classes_per_detection is 0"),
    (dict(y_scale=0.0), "must be finite and non-zero"),
])
def test_bad_options_are_refused(tmp_path, bad, message):
    kw = dict(bad)
    path, _ = build(tmp_path, **kw) if "num_classes" not in kw else build_mismatched(tmp_path, kw["num_classes"])
    with pytest.raises(ValueError, match=message):
        weft.Session(use_env_path=False).compile(weft.import_litert(path))


def build_mismatched(tmp_path, num_classes):
    """class_predictions with 6 columns, options that say num_classes classes."""
    m = Model()
    e = m.tensor("box_encodings", [1, 8, 4], "float32")
    c = m.tensor("class_predictions", [1, 8, 6], "float32")
    a = m.tensor("anchors", [8, 4], "float32", data=np.full((8, 4), 0.5, np.float32))
    outs = [m.tensor("boxes", [1, 10, 4], "float32"), m.tensor("classes", [1, 10], "float32"),
            m.tensor("scores", [1, 10], "float32"), m.tensor("num", [1], "float32")]
    m.custom("TFLite_Detection_PostProcess", [e, c, a], outs, options=options(**dict(BASE, num_classes=num_classes)))
    path = str(tmp_path / "bad.tflite")
    with open(path, "wb") as f:
        f.write(m.finish(inputs=[e, c], outputs=outs))
    return path, None


def aot_check(tmp_path, model_path, prefix):
    """weft aot with its test case (random inputs, outputs compared with Weft's runtime), built as
    strict C99 and run; returns the test program's result."""
    import shutil
    import subprocess

    cli = os.environ.get("WEFT_CLI") or shutil.which("weft")
    cc = shutil.which(os.environ.get("CC", "cc"))
    if not cli or not cc:
        pytest.skip("needs the weft command (WEFT_CLI) and a C compiler")
    out = tmp_path / prefix
    subprocess.run([cli, "aot", model_path, "-o", str(out), "--prefix", prefix, "--test", "--test-steps", "3"],
                   check=True, capture_output=True, text=True)
    exe = tmp_path / (prefix + "_test")
    subprocess.run([cc, "-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", "-O1", f"-I{out}/includes-api", f"-I{out}/src",
                    f"-I{out}/test", *map(str, sorted(out.glob("src/*.c"))), *map(str, sorted(out.glob("test/*.c"))), "-o", str(exe),
                    "-lm"], check=True, capture_output=True, text=True)
    return subprocess.run([str(exe)], capture_output=True, text=True)


@pytest.mark.parametrize("variant", ["fast", "fast_three_classes_each", "regular", "quantized_fast", "quantized_regular"])
def test_as_c_equals_the_runtime(tmp_path, variant):
    """The C module runs the same text as the runtime's op: its outputs equal the runtime's."""
    path, _ = build(tmp_path, **VARIANTS[variant])
    r = aot_check(tmp_path, path, "det")
    assert r.returncode == 0, r.stdout + r.stderr


def test_a_huge_detections_per_class_is_every_box(tmp_path):
    """LiteRT reads the option as int32; Weft reads all 64 bits and keeps at most every box."""
    small, shape = build(tmp_path, use_regular_nms=True, detections_per_class=60)
    (tmp_path / "huge").mkdir()
    huge, _ = build(tmp_path / "huge", use_regular_nms=True, detections_per_class=2**62)
    feeds = inputs(shape, False, 3)
    session = weft.Session(use_env_path=False)
    for a, b in zip(session.compile(weft.import_litert(small)).run(feeds), session.compile(weft.import_litert(huge)).run(feeds)):
        np.testing.assert_array_equal(a, b)


def test_converter_keys_in_the_options_are_ignored(tmp_path):
    """The converter writes its own "_..." keys into the options (_output_quantized, ...)."""
    plain, shape = build(tmp_path)
    (tmp_path / "keys").mkdir()
    keyed, _ = build(tmp_path / "keys", _output_quantized=True, _support_output_type_float_in_quantized_op=True)
    feeds = inputs(shape, False, 2)
    session = weft.Session(use_env_path=False)
    for a, b in zip(session.compile(weft.import_litert(plain)).run(feeds), session.compile(weft.import_litert(keyed)).run(feeds)):
        np.testing.assert_array_equal(a, b)


def test_many_classes_per_detection_rank_classes_by_score(tmp_path):
    """Several classes per detection: each kept box lists all its classes, best first, each with
    its own score; with many equal scores, in LiteRT's order."""
    classes = 2048
    path, shape = build(tmp_path, n=3, background=False, num_classes=classes, max_classes_per_detection=classes, max_detections=3)
    rng = np.random.default_rng(9)
    e = rng.standard_normal((1, 3, 4)).astype(np.float32)
    c = rng.integers(0, 50, (1, 3, classes)).astype(np.float32) / 50  # many equal scores
    boxes, cls, scores, num = weft.Session(use_env_path=False).compile(weft.import_litert(path)).run([e, c])
    assert num[0] >= 1
    for k in range(int(num[0])):
        row = cls[0, k * classes:(k + 1) * classes].astype(np.int64)
        got = scores[0, k * classes:(k + 1) * classes]
        assert sorted(row) == list(range(classes)) and (np.diff(got) <= 0).all()
        assert any((c[0, b][row] == got).all() for b in range(3))
    if importlib.util.find_spec("ai_edge_litert"):
        compare(path, [e, c], classes)


@pytest.mark.parametrize("quantized", [True, False], ids=["uint8", "float"])
@pytest.mark.parametrize("kw", [dict(max_classes_per_detection=3), dict(num_classes=90, max_classes_per_detection=5),
                                dict(num_classes=12, max_classes_per_detection=2, background=False),
                                dict(use_regular_nms=True, detections_per_class=4)], ids=["3of5", "5of90", "2of12", "regular"])
def test_equal_scores_come_out_in_litert_order(tmp_path, quantized, kw):
    """Scores from a few values, as 8-bit models give them: boxes and classes with equal scores
    are listed in LiteRT's order (a box's classes: a heap selection's order, not a stable sort's)."""
    pytest.importorskip("ai_edge_litert")
    path, (n, cb) = build(tmp_path, quantized=quantized, **kw)
    per = 1 if kw.get("use_regular_nms") else kw["max_classes_per_detection"]
    for seed in range(6):
        rng = np.random.default_rng(seed)
        if quantized:
            enc = rng.integers(100, 156, (1, n, 4), dtype=np.uint8)
            scores = rng.choice(np.array([0, 150, 200, 201], np.uint8), (1, n, cb))
        else:
            enc = (rng.standard_normal((1, n, 4)) * 0.3).astype(np.float32)
            scores = rng.choice(np.array([0, 0.5, 0.75, 0.8], np.float32), (1, n, cb))
        assert compare(path, [enc, scores], per) > 2
