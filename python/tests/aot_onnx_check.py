"""Shared by the weft aot tests of ONNX operators: one small ONNX model through ONNX Runtime (the
independent reference), Weft's runtime, and the C module `weft.generate_c` writes for it, built
as strict C99 and run on the host with ONNX Runtime's outputs as its golden values."""
import glob
import os
import shutil
import subprocess

import numpy as np
import pytest

import weft

STRICT = ["-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic"]


def check_onnx_model(tmp_path, model, inputs, atol=1e-5, rtol=1e-4, name="m"):
    """Saves `model` (an onnx ModelProto), runs it on `inputs` (name -> array) in ONNX Runtime and
    in Weft's runtime (which must agree within the tolerance), then writes, builds and runs its C
    module with ONNX Runtime's outputs as the expected values. Returns ONNX Runtime's outputs."""
    onnx = pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    cc = shutil.which(os.environ.get("CC", "cc"))
    if not cc:
        pytest.skip("needs a C compiler")
    onnx.checker.check_model(model)
    path = str(tmp_path / f"{name}.onnx")
    onnx.save(model, path)
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    out_names = [o.name for o in sess.get_outputs()]
    want = sess.run(out_names, inputs)
    graph = weft.import_model(path)
    got = weft.Session(use_env_path=False).compile(graph).run([inputs[i.name] for i in sess.get_inputs()])
    for n, w, g in zip(out_names, want, got):
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, err_msg=f"Weft's runtime vs ONNX Runtime on {n}")
    out = tmp_path / f"{name}_c"
    weft.generate_c(path, out, prefix=name, test_inputs=inputs, test_outputs=dict(zip(out_names, want)), atol=atol, rtol=rtol)
    exe = str(tmp_path / f"{name}_test")
    subprocess.run([cc, *STRICT, f"-I{out}/includes-api", f"-I{out}/src", f"-I{out}/test", *sorted(glob.glob(f"{out}/src/*.c")),
                    *sorted(glob.glob(f"{out}/test/*.c")), "-o", exe, "-lm"], check=True)
    res = subprocess.run([exe], capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr
    return want


def check_c_against_runtime(tmp_path, path, inputs, atol=0.0, rtol=0.0, name="m"):
    """Writes, builds (strict C99) and runs the C module of the ONNX file at `path` with Weft's
    runtime outputs on `inputs` as the expected values: for what the C must reproduce byte for
    byte (atol and rtol 0) or within a tolerance where the runtime itself has no independent
    reference that agrees to the bit."""
    cc = shutil.which(os.environ.get("CC", "cc"))
    if not cc:
        pytest.skip("needs a C compiler")
    out = tmp_path / f"{name}_c"
    weft.generate_c(path, out, prefix=name, test_inputs=inputs, atol=atol, rtol=rtol)
    exe = str(tmp_path / f"{name}_test")
    subprocess.run([cc, *STRICT, "-O1", f"-I{out}/includes-api", f"-I{out}/src", f"-I{out}/test", *sorted(glob.glob(f"{out}/src/*.c")),
                    *sorted(glob.glob(f"{out}/test/*.c")), "-o", exe, "-lm"], check=True)
    res = subprocess.run([exe], capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr


def run_with_main(tmp_path, path, prefix, main_source):
    """Writes the C module of the ONNX file at `path` (no test case), builds it as strict C99
    with `main_source` (a C program driving `<prefix>_init` / `<prefix>_run`) and runs it;
    returns the finished process."""
    cc = shutil.which(os.environ.get("CC", "cc"))
    if not cc:
        pytest.skip("needs a C compiler")
    out = tmp_path / "c"
    weft.generate_c(path, out, prefix=prefix)
    main = tmp_path / "main.c"
    main.write_text(main_source)
    exe = str(tmp_path / "t")
    subprocess.run([cc, *STRICT, f"-I{out}/includes-api", f"-I{out}/src", *sorted(glob.glob(f"{out}/src/*.c")), str(main), "-o", exe, "-lm"],
                   check=True)
    return subprocess.run([exe], capture_output=True, text=True)
