"""`weft serve MODEL` and `serve run CONFIG` (Ray's CLI with weft.serve:app) as a user runs them:
a process that serves until interrupted."""
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

import weft

pytest.importorskip("ray")
requests = pytest.importorskip("requests")
yaml = pytest.importorskip("yaml")

from serve_models import mlp  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
# The example config: from the checkout, or copied next to these tests (scripts/test_wheel.sh).
EXAMPLE = os.path.join(HERE, "..", "..", "examples", "serving", "serve.yaml")
if not os.path.isfile(EXAMPLE):
    EXAMPLE = os.path.join(HERE, "serve.yaml")


def wait_ready(proc, url, log):
    for _ in range(600):  # a bounded wait; the process's own failure ends it sooner
        if proc.poll() is not None:
            pytest.fail(f"the server exited ({proc.returncode}):\n{open(log).read()[-3000:]}")
        try:
            if requests.get(url, timeout=5).status_code == 200:
                return
        except requests.RequestException:
            pass
        time.sleep(0.5)
    pytest.fail(f"no answer from {url}:\n{open(log).read()[-3000:]}")


def stop(proc):
    proc.send_signal(signal.SIGINT)
    try:
        return proc.wait(timeout=120)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        pytest.fail("the server did not stop on SIGINT")


def check_answers(url, model_path):
    x = np.random.default_rng(7).standard_normal((2, 16)).astype(np.float32)
    r = requests.post(url, json={"inputs": {"x": x.tolist()}}, timeout=60)
    assert r.status_code == 200, r.text
    ref = weft.Session().compile(weft.import_onnx(str(model_path))).run([x])[0]
    np.testing.assert_allclose(np.array(r.json()["outputs"]["y"]["data"], np.float32), ref, rtol=1e-6, atol=1e-7)


def env():
    e = dict(os.environ, RAY_USAGE_STATS_ENABLED="0")
    e.pop("RAY_ADDRESS", None)
    return e


def test_weft_serve_command(tmp_path):
    model = mlp(tmp_path / "clf.onnx")
    log = tmp_path / "serve.log"
    port = 18461
    with open(log, "w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "weft._cli", "serve", str(model), "--replicas", "2",
                                 "--port", str(port), "--route", "/clf", "--model-version", "3"],
                                stdout=out, stderr=subprocess.STDOUT, env=env())
    try:
        wait_ready(proc, f"http://127.0.0.1:{port}/clf/healthz", log)
        check_answers(f"http://127.0.0.1:{port}/clf", model)
        meta = requests.get(f"http://127.0.0.1:{port}/clf", timeout=60).json()
        assert meta["model"] == {"name": "clf", "version": "3", "engine": "weft", "engine_version": weft.__version__}
    finally:
        code = stop(proc)
    assert code == 0, open(log).read()[-3000:]
    assert "weft serve: stopping" in open(log).read()


def test_weft_serve_refuses_bad_arguments(tmp_path):
    r = subprocess.run([sys.executable, "-m", "weft._cli", "serve", str(tmp_path / "none.onnx")],
                       capture_output=True, text=True, env=env())
    assert r.returncode != 0 and "no such model file" in r.stderr
    model = mlp(tmp_path / "m.onnx", batch=1)
    r = subprocess.run([sys.executable, "-m", "weft._cli", "serve", str(model), "--batch-sizes", "1,2"],
                       capture_output=True, text=True, env=env())
    assert r.returncode != 0 and "dynamic first dim" in r.stderr, r.stderr


def test_serve_run_with_the_example_config(tmp_path):
    model = mlp(tmp_path / "classifier.onnx")
    config = yaml.safe_load(open(EXAMPLE))
    config["applications"][0]["args"]["model"] = str(model)
    config["http_options"]["port"] = port = 18462
    path = tmp_path / "serve.yaml"
    path.write_text(yaml.safe_dump(config))
    serve_cli = os.path.join(os.path.dirname(sys.executable), "serve")
    log = tmp_path / "serve_run.log"
    with open(log, "w") as out:
        proc = subprocess.Popen([serve_cli, "run", str(path)], stdout=out, stderr=subprocess.STDOUT, env=env())
    try:
        wait_ready(proc, f"http://127.0.0.1:{port}/classifier/healthz", log)
        check_answers(f"http://127.0.0.1:{port}/classifier", model)
    finally:
        stop(proc)
