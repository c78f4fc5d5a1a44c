"""Cases for Einsum, OneHot, EyeLike, Compress, ReverseSequence, Shrink and NonMaxSuppression.

Random shapes with size-0 dims, each dtype the op takes, attribute variants, inputs as
initializers and as run-time inputs; NonMaxSuppression on random boxes in both coordinate
formats with tied scores and every optional input present or absent. The must-fail cases name
what a good error has to mention."""
import numpy as np
import onnx

from .common import BadCase, Case, data, i64, nonzero_shape, shape, spec

LETTERS = "abcdefgh"


def _einsum_case(rng):
    """A random equation over 1-3 operands (shared, batch, broadcast-ellipsis and diagonal labels)."""
    n_ops = int(rng.integers(1, 4))
    labels = LETTERS[: int(rng.integers(2, 6))]
    extent = {c: int(rng.integers(1, 4)) for c in labels}
    ell = tuple(int(rng.integers(1, 3)) for _ in range(int(rng.integers(0, 3)))) if rng.random() < 0.3 else None
    terms, arrays = [], []
    for _ in range(n_ops):
        k = int(rng.integers(0, min(4, len(labels)) + 1))
        t = "".join(rng.choice(list(labels), size=k, replace=rng.random() < 0.15))
        dims = [extent[c] for c in t]
        if ell is not None and rng.random() < 0.7:
            # broadcasting of the ellipsis: some dims 1 (ONNX Runtime wants every operand's ellipsis of one rank)
            e = [d if rng.random() < 0.7 else 1 for d in ell]
            t, dims = "..." + t, e + dims
        terms.append(t)
        arrays.append(data(rng, tuple(dims), np.float32, -2, 2))
    used = sorted(set("".join(terms).replace(".", "")))
    if rng.random() < 0.5:  # implicit output
        eq = ",".join(terms)
    else:
        out = "".join(c for c in used if rng.random() < 0.5)
        out = "".join(rng.permutation(list(out))) if out else ""
        if any("..." in t for t in terms):
            out = "..." + out
        eq = ",".join(terms) + "->" + out
    return eq, arrays


@spec("Einsum")
def einsum(rng, op):
    for _ in range(40):
        eq, arrays = _einsum_case(rng)
        yield Case(arrays, attrs={"equation": eq}, opset=12)
    # the forms exported transformers use, at sizes with real sums
    q, k, v = (data(rng, (2, 3, 5, 4)) for _ in range(3))
    yield Case([q, k], attrs={"equation": "bhid,bhjd->bhij"}, opset=12)
    att = data(rng, (2, 3, 5, 5))
    yield Case([att, v], attrs={"equation": "bhij,bhjd->bhid"}, opset=12)
    yield Case([data(rng, (2, 5, 8)), data(rng, (8, 3, 4))], attrs={"equation": "bsd,dhk->bshk"}, opset=12, const={1})
    yield Case([data(rng, (4, 4)).astype(np.float64)], attrs={"equation": "ii->i"}, opset=12)
    yield Case([data(rng, (3, 4), np.int64, -5, 5), data(rng, (4, 2), np.int64, -5, 5)], attrs={"equation": "ij,jk"}, opset=12)
    yield Case([data(rng, (3, 0)), data(rng, (0, 2))], attrs={"equation": "ij,jk->ik"}, opset=12)
    yield Case([data(rng, (2, 3))], attrs={"equation": "ij->"}, opset=12)
    # a lettered dim of extent 1 broadcasts (NumPy and ONNX Runtime allow it)
    yield Case([data(rng, (2, 1)), data(rng, (4, 3))], attrs={"equation": "ij,kj->ikj"}, opset=12)
    yield Case([data(rng, (1, 3)), data(rng, (4, 3))], attrs={"equation": "ij,ij->ij"}, opset=12)
    yield BadCase([data(rng, (2, 3)), data(rng, (4, 5))], attrs={"equation": "ij,jk->ik"}, opset=12, error="extent")
    yield BadCase([data(rng, (2, 3))], attrs={"equation": "ij,jk->ik"}, opset=12, error="operands")
    yield BadCase([data(rng, (2, 3))], attrs={"equation": "ij->ik"}, opset=12, error="'k' is in no operand")
    yield BadCase([data(rng, (2, 3))], attrs={"equation": "i1->i"}, opset=12, error="not a letter")


@spec("OneHot")
def onehot(rng, op):
    # (indices, values, depth) types ONNX Runtime implements
    combos = [(np.int64, np.float32, np.int64), (np.int64, np.int64, np.int64), (np.float32, np.float32, np.float32),
              (np.int32, np.float32, np.int32), (np.float32, np.int64, np.int64), (np.int64, np.float32, np.float32)]
    for trial in range(18):
        s = shape(rng, int(rng.integers(1, 4)), 1, 4)
        depth = int(rng.integers(1, 6))
        idx_t, val_t, depth_t = combos[trial % len(combos)]
        ind = data(rng, s, idx_t, -depth - 2, depth + 2)
        if idx_t == np.float32:
            ind = np.trunc(ind).astype(np.float32)
        rank = len(s) + 1
        axis = int(rng.integers(-rank, rank))
        values = np.array([int(rng.integers(-3, 1)), int(rng.integers(1, 5))]).astype(val_t)
        depth_arr = np.array([depth], depth_t)
        yield Case([ind, depth_arr, values], attrs={"axis": axis}, opset=11, const={1} if rng.random() < 0.7 else {1, 2})
    yield BadCase([i64([1, 2]), i64([3]), np.array([0, 1, 2], np.float32)], const={1}, opset=11, error="values")
    yield BadCase([i64([1, 2]), i64([0]), np.array([0, 1], np.float32)], const={1}, opset=11, error="depth")


@spec("EyeLike")
def eyelike(rng, op):
    for dt in (np.float32, np.int64, np.int32, np.float64):
        for _ in range(3):
            s = shape(rng, 2, 1, 6)
            yield Case([data(rng, s, dt)], attrs={"k": int(rng.integers(-4, 5))}, opset=9)
    yield Case([data(rng, (3, 4))], attrs={"dtype": 7}, opset=9)  # int64 output from a float input
    yield BadCase([data(rng, (2, 3, 4))], opset=9, error="2-D")
    yield BadCase([data(rng, (3, 3))], attrs={"dtype": 999}, opset=9, error="'dtype'")


@spec("Compress")
def compress(rng, op):
    for _ in range(16):
        rank = int(rng.integers(1, 4))
        s = nonzero_shape(rng, rank, 1, 4)
        dt = (np.float32, np.int64, np.bool_)[int(rng.integers(0, 3))]
        x = data(rng, s, dt)
        if rng.random() < 0.3:
            n = int(np.prod(s))
            cond = rng.random(int(rng.integers(0, n + 1))) < 0.5
            yield Case([x, cond], opset=11, const={1} if rng.random() < 0.5 else set())
        else:
            axis = int(rng.integers(-rank, rank))
            cond = rng.random(int(rng.integers(0, s[axis] + 1))) < 0.5
            yield Case([x, cond], attrs={"axis": axis}, opset=11, const={1} if rng.random() < 0.5 else set())
    yield BadCase([data(rng, (2, 3)), np.ones(4, np.bool_)], attrs={"axis": 1}, opset=11, error="condition")


@spec("ReverseSequence")
def reverse_sequence(rng, op):
    for _ in range(10):
        batch_axis = int(rng.integers(0, 2))
        s = list(nonzero_shape(rng, int(rng.integers(2, 5)), 1, 4))
        b, t = s[batch_axis], s[1 - batch_axis]
        lens = rng.integers(0, t + 1, size=b).astype(np.int64)
        dt = (np.float32, np.int64, np.int32)[int(rng.integers(0, 3))]
        yield Case([data(rng, tuple(s), dt), lens], attrs={"batch_axis": batch_axis, "time_axis": 1 - batch_axis}, opset=10,
                   const={1} if rng.random() < 0.5 else set())
    yield BadCase([data(rng, (3, 2)), i64([1, 4])], attrs={"batch_axis": 1, "time_axis": 0}, opset=10, error="sequence_lens")


@spec("Shrink")
def shrink(rng, op):
    for dt in (np.float32, np.float64, np.int32, np.int64, np.int8):
        for _ in range(2):
            attrs = {}
            if rng.random() < 0.7:
                attrs["lambd"] = float(rng.choice([0.0, 0.5, 1.5, 2.0]))
            if rng.random() < 0.7:
                attrs["bias"] = float(rng.choice([0.0, 1.0, 1.5]))
            yield Case([data(rng, shape(rng, int(rng.integers(0, 4))), dt, -4, 4)], attrs=attrs, opset=9)
    # integers with fractional lambd and bias: compared and added in floating point, then truncated
    yield Case([np.array([-128, -3, -1, 0, 1, 3, 127], np.int8)], attrs={"lambd": 1.5, "bias": 2.7}, opset=9)
    yield Case([np.array([0, 1, 2, 3, 255], np.uint8)], attrs={"lambd": 1.5, "bias": 1.5}, opset=9)
    yield Case([np.array([-5, -1, 0, 1, 5], np.int64)], attrs={"lambd": -0.5, "bias": -2.9}, opset=9)


def _boxes(rng, b, n, center):
    if center:  # [xc, yc, w, h]
        c = rng.uniform(0, 10, (b, n, 2))
        wh = rng.uniform(0.5, 4, (b, n, 2))
        return np.concatenate([c, wh], axis=2).astype(np.float32)
    p = rng.uniform(0, 10, (b, n, 2))
    q = p + rng.uniform(-4, 4, (b, n, 2))  # corners in either order
    return np.concatenate([p, q], axis=2)[..., [0, 1, 2, 3]].astype(np.float32)


@spec("NonMaxSuppression")
def nms(rng, op):
    for trial in range(24):
        b, c, n = int(rng.integers(1, 3)), int(rng.integers(1, 4)), int(rng.integers(0, 12))
        center = int(rng.integers(0, 2))
        boxes = _boxes(rng, b, n, center)
        scores = rng.uniform(0, 1, (b, c, n)).astype(np.float32)
        if trial % 4 == 0:
            scores = np.round(scores * 4) / 4  # ties: the lower box index first
        if trial % 6 == 1 and n > 1:
            boxes[:, 1] = boxes[:, 0]  # identical boxes
        ins = [boxes, scores]
        if trial % 5 != 0:
            ins.append(i64([int(rng.integers(0, n + 2))]))
            if trial % 3 != 0:
                ins.append(np.array([float(rng.choice([0.0, 0.3, 0.5, 0.9]))], np.float32))
                if trial % 2:
                    ins.append(np.array([float(rng.uniform(0, 0.6))], np.float32))
        const = set(range(2, len(ins))) if rng.random() < 0.6 else set()
        yield Case(ins, attrs={"center_point_box": center}, opset=11, const=const)
    yield BadCase([_boxes(rng, 1, 3, 0), np.ones((1, 1, 4), np.float32), i64([2])], const={2}, opset=11, error="disagree")
    yield BadCase([_boxes(rng, 1, 3, 0), np.ones((1, 1, 3), np.float32), i64([2]), np.array([1.5], np.float32)], const={2, 3}, opset=11,
                  error="iou_threshold")


@spec("GridSample")
def grid_sample(rng, op):
    """Every mode, padding mode and align_corners on random grids reaching past the borders,
    2 spatial dims (and 3 for linear and nearest at opset 20), float32 and float64."""
    for trial in range(36):
        opset = 16 if trial % 2 else 20
        three = opset == 20 and trial % 3 == 0
        modes = ("bilinear", "nearest", "bicubic") if opset == 16 else ("linear", "nearest", "cubic")
        mode = modes[trial % 3 if not three else trial % 2]
        pad = ("zeros", "border", "reflection")[(trial // 3) % 3]
        n, c = int(rng.integers(1, 3)), int(rng.integers(1, 4))
        sp = 3 if three else 2
        in_dims = tuple(int(rng.integers(1, 6)) for _ in range(sp))
        out_dims = tuple(int(rng.integers(1, 5)) for _ in range(sp))
        dt = np.float64 if trial % 5 == 0 and opset == 20 else np.float32  # ONNX Runtime: float64 from opset 20
        x = data(rng, (n, c) + in_dims, dt)
        g = rng.uniform(-1.6, 1.6, (n,) + out_dims + (sp,)).astype(dt)
        if trial % 7 == 0:
            g[..., 0] = np.round(g[..., 0] * 4) / 4  # positions on pixel edges and centres (ties of nearest)
        attrs = {"mode": mode, "padding_mode": pad, "align_corners": int(trial % 4 == 1)}
        yield Case([x, g], attrs=attrs, opset=opset, const={1} if trial % 3 == 2 else set())
    yield BadCase([data(rng, (1, 1, 3, 3)), data(rng, (1, 2, 2, 3))], opset=16, error="grid")
    yield BadCase([data(rng, (1, 1, 0, 4)), data(rng, (1, 2, 2, 2))], attrs={"padding_mode": "border"}, opset=16, error="empty spatial dim")
    yield BadCase([data(rng, (1, 1, 2, 3, 3)), data(rng, (1, 2, 2, 2, 3))], attrs={"mode": "cubic"}, opset=20, error="cubic")


@spec("MaxUnpool")
def max_unpool(rng, op):
    for trial in range(12):
        sp = 1 + trial % 2
        n, c = int(rng.integers(1, 3)), int(rng.integers(1, 3))
        k = [int(rng.integers(1, 4)) for _ in range(sp)]
        st = [int(rng.integers(1, 3)) for _ in range(sp)]
        pads = [int(rng.integers(0, min(2, k[d % sp]))) for d in range(2 * sp)]  # smaller than the kernel
        ins = [int(rng.integers(1, 4)) for _ in range(sp)]
        outs = [(i - 1) * s - pads[d] - pads[d + sp] + kk for d, (i, s, kk) in enumerate(zip(ins, st, k))]
        if min(outs) < 1:
            continue
        x = data(rng, (n, c) + tuple(ins))
        total = n * c * int(np.prod(outs))
        if x.size > total:
            continue
        idx = rng.choice(total, size=x.size, replace=False).astype(np.int64).reshape(x.shape)  # distinct positions
        attrs = {"kernel_shape": k, "strides": st, "pads": pads}
        if trial % 3 == 0:
            shape_in = [n, c] + [o + int(rng.integers(0, 3)) for o in outs]
            yield Case([x, idx, i64(shape_in)], attrs=attrs, opset=11, const={2})
        else:
            yield Case([x, idx], attrs=attrs, opset=11)
    yield BadCase([data(rng, (1, 1, 2, 2)), i64([[[[0, 1], [2, 99]]]])], attrs={"kernel_shape": [2, 2], "strides": [2, 2]}, opset=11,
                  error="outside")


@spec("Det")
def det(rng, op):
    for trial in range(10):
        m = int(rng.integers(1, 6))
        batch = shape(rng, int(rng.integers(0, 3)), 1, 3, zero_prob=0.1)
        x = data(rng, tuple(batch) + (m, m), np.float32, -2, 2)
        if trial == 3 and m > 1:
            x[..., 1, :] = x[..., 0, :]  # singular
        yield Case([x], opset=11)
    nan = data(rng, (2, 3, 3))
    nan[1, 0, 2] = np.nan
    yield Case([nan], opset=11)  # NaN in a matrix: its determinant is NaN
    yield BadCase([data(rng, (2, 3))], opset=11, error="M, M")


@spec("DFT")
def dft(rng, op):
    """Real and complex signals, power-of-two and other lengths (the chirp transform), padding and
    truncation to dft_length, onesided, inverse, every signal axis; opset 17 (axis attribute) and
    20 (axis input, default -2). The reference is the ONNX package's evaluator (NumPy's FFT in
    float64): ONNX Runtime transforms in float32, leaving ~1e-6 where a bin is 0 (the imaginary part
    of the DC bin), more than the harness's absolute tolerance of 1e-7."""
    for trial in range(24):
        rank = int(rng.integers(3, 5))
        s = [int(rng.integers(1, 3))] + [int(rng.integers(1, 13)) for _ in range(rank - 2)] + [1 if trial % 3 else 2]
        x = data(rng, tuple(s), np.float32 if trial % 5 else np.float64)
        signal_axes = list(range(1, rank - 1))
        axis = int(rng.choice(signal_axes))
        onesided = int(s[-1] == 1 and trial % 2 == 0)
        inverse = int(not onesided and trial % 4 == 1)
        ins = [x]
        if trial % 3 == 0:
            ins.append(i64(int(rng.integers(1, 2 * s[axis] + 3))))
        opset = 20 if trial % 2 else 17
        attrs = {"onesided": onesided, "inverse": inverse}
        if opset == 17:
            attrs["axis"] = axis
            yield Case(ins, attrs=attrs, opset=17, const={1}, reference="onnx")
        else:
            ins += [None] * (2 - len(ins)) + [i64(axis - rank)]
            yield Case(ins, attrs=attrs, opset=20, const={1, 2}, reference="onnx")
    x = data(rng, (1, 400, 1))  # a 400-point frame (16 kHz speech front ends)
    yield Case([x], attrs={"onesided": 1, "axis": 1}, opset=17, reference="onnx")
    # onesided and inverse: a one-sided spectrum back to a real signal (the real inverse), its
    # length 2 * (bins - 1) or dft_length (bins truncated or zero-padded); real or complex bins
    for bins, length, comps in ((5, None, 2), (9, 15, 2), (4, 3, 2), (6, None, 1), (3, 10, 2)):
        ins = [data(rng, (2, bins, comps))] + ([i64(length)] if length else [])
        yield Case(ins, attrs={"onesided": 1, "inverse": 1, "axis": 1}, opset=17, const={1}, reference="onnx")
    yield Case([data(rng, (1, 3, 7, 2)), None, i64(-2)], attrs={"onesided": 1, "inverse": 1}, opset=20, const={2}, reference="onnx")
    yield BadCase([data(rng, (1, 1, 2))], attrs={"onesided": 1, "inverse": 1, "axis": 1}, opset=17, error="at least 2 bins")
    yield BadCase([data(rng, (1, 8, 3))], opset=17, error="end in a dim of 1 (real) or 2 (complex)")
    yield BadCase([data(rng, (1, 8, 2))], attrs={"onesided": 1}, opset=17, error="onesided")


@spec("STFT")
def stft(rng, op):
    """Frames with and without a window and frame_length, steps shorter and longer than a frame;
    against the ONNX evaluator, as DFT."""
    for trial in range(16):
        b = int(rng.integers(1, 3))
        frame = int(rng.integers(2, 20))
        length = frame + int(rng.integers(0, 40))
        step = int(rng.integers(1, frame + 3))
        x = data(rng, (b, length, 1 if trial % 4 else 2), np.float32 if trial % 5 else np.float64)
        onesided = int(x.shape[2] == 1 and trial % 2 == 0)
        if trial % 3 == 0:
            win = data(rng, (frame,), x.dtype, 0, 1)
            yield Case([x, i64(step), win], attrs={"onesided": onesided}, opset=17, const={1}, reference="onnx")
        elif trial % 3 == 1:
            yield Case([x, i64(step), None, i64(frame)], attrs={"onesided": onesided}, opset=17, const={1, 3}, reference="onnx")
        else:
            win = data(rng, (frame,), x.dtype, 0, 1)
            yield Case([x, i64(step), win, i64(frame)], attrs={"onesided": onesided}, opset=17, const={1, 3}, reference="onnx")
    yield BadCase([data(rng, (1, 5, 1)), i64(2), None, i64(8)], opset=17, const={1, 3}, error="exceeds")


@spec("HannWindow", "HammingWindow", "BlackmanWindow")
def windows(rng, op):
    for size in (1, 2, 7, 16, 25):
        for periodic in (0, 1):
            yield Case([i64(size)], attrs={"periodic": periodic}, opset=17, const={0} if size % 2 else set())
    yield Case([np.array(10, np.int32)], attrs={"output_datatype": 11}, opset=17, const={0})
    for t in (3, 2, 6, 7):  # integer outputs truncate: only a value of exactly 1 survives (Blackman's centre)
        yield Case([i64(10)], attrs={"output_datatype": t, "periodic": 1}, opset=17, const={0})


@spec("MelWeightMatrix")
def mel_weight_matrix(rng, op):
    for mel, dft_len, rate, lo, hi in ((8, 64, 16000, 0.0, 8000.0), (40, 512, 16000, 20.0, 7600.0), (80, 400, 16000, 0.0, 8000.0),
                                       (13, 256, 8000, 100.0, 3000.0), (5, 33, 22050, 50.0, 11000.0)):
        yield Case([i64(mel), i64(dft_len), i64(rate), np.array(lo, np.float32), np.array(hi, np.float32)], opset=17,
                   const={0, 1, 2, 3, 4})


@spec("Unique")
def unique(rng, op):
    """Flattened and per-axis, sorted and in order of appearance, many repeats (small integer
    values), every output or only Y."""
    for trial in range(16):
        rank = int(rng.integers(1, 4))
        s = nonzero_shape(rng, rank, 1, 4)
        dt = (np.float32, np.int64, np.int8)[trial % 3]  # types ONNX Runtime implements
        x = data(rng, s, dt, -2, 2)
        if dt == np.float32:
            x = np.round(x).astype(np.float32)  # repeats
        attrs = {"sorted": int(trial % 4 != 1)}
        if trial % 2:
            attrs["axis"] = int(rng.integers(-rank, rank))
        yield Case([x], attrs=attrs, outputs=4 if trial % 5 else 1, opset=11)


@spec("DeformConv")
def deform_conv(rng, op):
    """Random 2-D geometry (strides, dilations, pads, groups, offset groups), offsets reaching past
    the borders, with and without bias and mask, size-0 batch; float32 and float64."""
    for trial in range(16):
        n = 0 if trial == 5 else int(rng.integers(1, 3))
        group, og = int(rng.integers(1, 3)), int(rng.integers(1, 3))
        c = group * og * int(rng.integers(1, 3))
        m = group * int(rng.integers(1, 3))
        kh, kw = int(rng.integers(1, 4)), int(rng.integers(1, 4))
        s, d = [int(rng.integers(1, 3)) for _ in range(2)], [int(rng.integers(1, 3)) for _ in range(2)]
        pads = [int(rng.integers(0, 3)) for _ in range(4)]
        h = (kh - 1) * d[0] + 1 + int(rng.integers(0, 4))
        w = (kw - 1) * d[1] + 1 + int(rng.integers(0, 4))
        oh = (h + pads[0] + pads[2] - d[0] * (kh - 1) - 1) // s[0] + 1
        ow = (w + pads[1] + pads[3] - d[1] * (kw - 1) - 1) // s[1] + 1
        dt = np.float64 if trial % 4 == 3 else np.float32
        inputs = [data(rng, (n, c, h, w), dt), data(rng, (m, c // group, kh, kw), dt), data(rng, (n, og * 2 * kh * kw, oh, ow), dt)]
        bias, mask = trial % 3 != 0, trial % 2 == 0
        inputs.append(data(rng, (m,), dt) if bias else (None if mask else None))
        if mask:
            inputs.append(data(rng, (n, og * kh * kw, oh, ow), dt, 0.0, 1.0))
        elif not bias:
            inputs.pop()
        attrs = {"strides": s, "dilations": d, "pads": pads, "group": group, "offset_group": og}
        if trial % 2:
            attrs["kernel_shape"] = [kh, kw]
        yield Case(inputs, attrs=attrs, opset=22, const={1} if trial % 3 == 1 else set())
    yield BadCase([data(rng, (1, 2, 5, 5)), data(rng, (3, 2, 3, 3)), data(rng, (1, 17, 3, 3))], opset=22, error="offset")
    yield BadCase([data(rng, (1, 3, 5, 5)), data(rng, (3, 2, 3, 3)), data(rng, (1, 18, 3, 3))], opset=22, error="channels")
    yield BadCase([data(rng, (1, 2, 5, 5)), data(rng, (3, 2, 3, 3)), data(rng, (1, 18, 3, 3)), data(rng, (2,))], opset=22, error="B must be")
    yield BadCase([data(rng, (1, 2, 5, 5, 5)), data(rng, (3, 2, 3, 3, 3)), data(rng, (1, 54, 3, 3, 3))], opset=22, error="2-D")


@spec("Col2Im")
def col2im(rng, op):
    """1-D to 3-D images, random blocks, strides, dilations and pads; float32, float64 and int32.
    Against the onnx package's reference: ONNX Runtime has float32 only, and its 1-D Col2Im
    misplaces columns when dilations and pads are both set."""
    for trial in range(15):
        nd = 1 + trial % 3
        block = [int(rng.integers(1, 4)) for _ in range(nd)]
        s, d = [int(rng.integers(1, 3)) for _ in range(nd)], [int(rng.integers(1, 3)) for _ in range(nd)]
        pads = [int(rng.integers(0, 3)) for _ in range(2 * nd)]
        image = [max(0, (block[k] - 1) * d[k] + 1 - pads[k] - pads[k + nd]) + int(rng.integers(0, 4)) for k in range(nd)]
        counts = [(image[k] + pads[k] + pads[k + nd] - d[k] * (block[k] - 1) - 1) // s[k] + 1 for k in range(nd)]
        n, c = int(rng.integers(1, 3)), int(rng.integers(1, 3))
        dt = (np.float32, np.float64, np.int32)[trial % 3]
        x = data(rng, (n, c * int(np.prod(block)), int(np.prod(counts))), dt)
        yield Case([x, np.array(image, np.int64), np.array(block, np.int64)], attrs={"strides": s, "dilations": d, "pads": pads},
                   opset=18, const={1, 2} if trial % 2 else set(), reference="onnx")
    yield BadCase([data(rng, (1, 4, 15)), np.array([5, 5], np.int64), np.array([2, 2], np.int64)], opset=18, const={1, 2}, error="columns")
    yield BadCase([data(rng, (1, 4, 16)), np.array([5, 5], np.int64), np.array([2, 2, 1], np.int64)], opset=18, const={1, 2}, error="image_shape has 2 dims")
    yield BadCase([data(rng, (1, 4, 16)), np.array([5, 5], np.int64), np.array([2, 2], np.int64)], attrs={"strides": [0, 1]}, opset=18,
                  const={1, 2}, error="positive")


@spec("BitCast")
def bit_cast(rng, op):
    """Every pair of same-width types, random shapes with size-0 dims (against the onnx package's
    reference: ONNX Runtime has no BitCast)."""
    widths = {1: [np.int8, np.uint8, np.bool_], 2: [np.int16, np.uint16, np.float16], 4: [np.int32, np.uint32, np.float32],
              8: [np.int64, np.uint64, np.float64]}
    for group in widths.values():
        for src in group:
            for dst in group:
                if dst is np.bool_:
                    continue  # a bool must be 0 or 1
                x = data(rng, shape(rng, int(rng.integers(0, 4))), src)
                to = onnx.helper.np_dtype_to_tensor_dtype(np.dtype(dst))
                yield Case([x], attrs={"to": int(to)}, opset=26, reference="onnx")
    yield BadCase([data(rng, (2, 3))], attrs={"to": onnx.TensorProto.INT64}, opset=26, error="widths must match")
