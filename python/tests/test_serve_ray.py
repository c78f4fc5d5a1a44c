"""weft.serve on a local Ray Serve app: HTTP (JSON, .npz), handles, 4xx errors, a config-file
application, the replicas' metrics read back from Ray's Prometheus export, and load from 8 clients
with one replica killed mid-load."""
import io
import os
import re
import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import weft

ray = pytest.importorskip("ray")
requests = pytest.importorskip("requests")
from ray import serve  # noqa: E402

import weft.serve as ws  # noqa: E402
from serve_models import mlp  # noqa: E402

PORT = int(os.environ.get("WEFT_TEST_SERVE_PORT", "18431"))
METRICS_PORT = int(os.environ.get("WEFT_TEST_METRICS_PORT", "18432"))
BASE = f"http://127.0.0.1:{PORT}"


@pytest.fixture(scope="module")
def cluster():
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    ray.init(num_cpus=4, include_dashboard=False, log_to_driver=False, object_store_memory=100 << 20,
             logging_level="ERROR", _metrics_export_port=METRICS_PORT)
    serve.start(http_options={"host": "127.0.0.1", "port": PORT})
    yield
    serve.shutdown()
    ray.shutdown()


@pytest.fixture(scope="module")
def model_path(tmp_path_factory):
    return mlp(tmp_path_factory.mktemp("serve_ray") / "mlp.onnx", features=16, hidden=64, classes=5)


@pytest.fixture(scope="module")
def reference(model_path):
    compiled = weft.Session().compile(weft.import_onnx(str(model_path)))
    return lambda x: compiled.run([x])[0]


@pytest.fixture(scope="module")
def app(cluster, model_path):
    handle = serve.run(ws.build(model_path, replicas=2, max_batch_size=8, batch_wait_timeout_s=0.002,
                                version="v1"), name="mlp", route_prefix="/mlp")
    yield handle
    serve.delete("mlp")


def request_input(k, rows=1):
    return np.random.default_rng(1000 + k).standard_normal((rows, 16)).astype(np.float32)


def test_http_json_and_npz(app, reference):
    x = request_input(1, rows=3)
    r = requests.post(f"{BASE}/mlp", json={"inputs": {"x": x.tolist()}}, timeout=60)
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["model"]["name"] == "mlp" and body["model"]["version"] == "v1"
    assert r.headers["X-Weft-Model-Version"] == "v1"
    y = np.array(body["outputs"]["y"]["data"], np.float32)
    assert body["outputs"]["y"]["shape"] == [3, 5]
    np.testing.assert_allclose(y, reference(x), rtol=1e-6, atol=1e-7)
    buf = io.BytesIO()
    np.savez(buf, x=x)
    r = requests.post(f"{BASE}/mlp", data=buf.getvalue(), headers={"Content-Type": "application/x-npz"}, timeout=60)
    assert r.status_code == 200 and r.headers["Content-Type"].startswith("application/x-npz")
    np.testing.assert_allclose(np.load(io.BytesIO(r.content))["y"], reference(x), rtol=1e-6, atol=1e-7)


def test_metadata_health_and_stats(app):
    meta = requests.get(f"{BASE}/mlp", timeout=60).json()
    assert meta["inputs"] == [{"name": "x", "dtype": "float32", "shape": [-1, 16]}]
    assert requests.get(f"{BASE}/mlp/healthz", timeout=60).json() == {"status": "ok"}
    stats = requests.get(f"{BASE}/mlp/stats", timeout=60).json()
    assert stats["model"]["name"] == "mlp" and "latency_ms" in stats and stats["pid"] > 0


def scrape_metrics():
    """Ray's Prometheus export on this node: {(name, frozenset(labels)): value} for weft's metrics."""
    try:
        text = requests.get(f"http://127.0.0.1:{METRICS_PORT}/metrics", timeout=30).text
    except requests.ConnectionError:  # the metrics agent not up yet
        return {}
    out = {}
    for line in text.splitlines():
        m = re.match(r"^(ray_weft_\w+)\{([^}]*)\} (\S+)$", line)
        if m:
            labels = frozenset(re.findall(r'(\w+)="([^"]*)"', m.group(2)))
            out[(m.group(1), labels)] = out.get((m.group(1), labels), 0.0) + float(m.group(3))
    return out


def metric_sum(metrics, name, **labels):
    want = set(labels.items())
    return sum(v for (n, ls), v in metrics.items() if n == name and want <= ls)


def test_metrics_reach_rays_prometheus_export(app, reference):
    """The replicas record latency, batch size, queue depth and requests by status through Ray's
    metrics API; Ray's metrics agent exports them on the node's Prometheus endpoint, from which
    they are read back here after a known number of good and bad requests. Ray exports on an
    interval, so the endpoint is polled until the counts arrive (or the poll gives up)."""
    before = scrape_metrics()
    good0 = metric_sum(before, "ray_weft_requests_total", model="mlp", status="200")
    bad0 = metric_sum(before, "ray_weft_requests_total", model="mlp", status="422")
    for k in range(12):
        r = requests.post(f"{BASE}/mlp", json={"inputs": {"x": request_input(300 + k).tolist()}}, timeout=60)
        assert r.status_code == 200
    for _ in range(3):
        assert requests.post(f"{BASE}/mlp", json={"inputs": {"x": [[0.0] * 15]}}, timeout=60).status_code == 422
    metrics = {}
    for _ in range(90):  # Ray's report interval is a few seconds; allow for a slow machine
        metrics = scrape_metrics()
        if (metric_sum(metrics, "ray_weft_requests_total", model="mlp", status="200") >= good0 + 12 and
                metric_sum(metrics, "ray_weft_requests_total", model="mlp", status="422") >= bad0 + 3):
            break
        time.sleep(2)
    names = sorted({n for n, _ in metrics})
    assert metric_sum(metrics, "ray_weft_requests_total", model="mlp", status="200") >= good0 + 12, names
    assert metric_sum(metrics, "ray_weft_requests_total", model="mlp", status="422") >= bad0 + 3, names
    # Histograms: every request has a latency sample, every run of the engine a batch-size sample
    # (12 good requests: at least 2 runs with max_batch_size 8; the first scrape may predate the
    # export of earlier tests' runs, so only lower bounds hold). Only the counts are exact: Ray's
    # recorder reports a histogram's sum from bucket midpoints.
    assert metric_sum(metrics, "ray_weft_request_latency_ms_count", model="mlp") >= good0 + bad0 + 15, names
    runs = metric_sum(metrics, "ray_weft_batch_size_count", model="mlp") - metric_sum(before, "ray_weft_batch_size_count", model="mlp")
    assert runs >= 2, (runs, names)
    assert any(n == "ray_weft_queue_depth" for n, _ in metrics), names


@pytest.mark.parametrize("kwargs,status,words", [
    ({"json": {"inputs": {"z": [[0.0] * 16]}}}, 422, "unknown input 'z'"),
    ({"json": {"inputs": {"x": [[0.0] * 15]}}}, 422, "dim 1 must be 16"),
    ({"json": {"inputs": {"x": {"dtype": "int32", "data": [[0] * 16]}}}}, 422, "'x' is int32"),
    ({"json": {"outputs": {}}}, 400, '"inputs"'),
    ({"data": b"{not json", "headers": {"Content-Type": "application/json"}}, 400, "not JSON"),
    ({"data": b"PK\x03\x04junk", "headers": {"Content-Type": "application/x-npz"}}, 400, ".npz"),
    ({"data": b"hello", "headers": {"Content-Type": "text/plain"}}, 415, "text/plain"),
])
def test_bad_requests_get_4xx_and_the_replica_lives(app, reference, kwargs, status, words):
    r = requests.post(f"{BASE}/mlp", timeout=60, **kwargs)
    assert r.status_code == status, r.text
    assert words in r.json()["error"] and r.json()["model"]["name"] == "mlp"
    x = request_input(2)
    ok = requests.post(f"{BASE}/mlp", json={"inputs": {"x": x.tolist()}}, timeout=60)
    assert ok.status_code == 200


def test_unknown_path_and_method(app):
    assert requests.get(f"{BASE}/mlp/nothing", timeout=60).status_code == 404
    assert requests.put(f"{BASE}/mlp", data=b"", timeout=60).status_code == 405


def test_handle_api(app, reference):
    x = request_input(3, rows=2)
    out = app.infer.remote({"x": x}).result()
    np.testing.assert_allclose(out["y"], reference(x), rtol=1e-6, atol=1e-7)
    with pytest.raises(ws.RequestError) as err:
        app.infer.remote({"x": x.astype(np.float64)}).result()
    assert err.value.status == 422 and "float64" in str(err.value)
    assert app.metadata.remote().result()["model"]["version"] == "v1"


def test_application_builder_from_config_args(cluster, model_path, reference):
    # What `serve run config.yaml` does with `import_path: weft.serve:app` and its args.
    handle = serve.run(ws.app({"model": str(model_path), "max_batch_size": "4", "batch_sizes": "1,2,4",
                               "name": "cfg"}), name="cfg", route_prefix="/cfg")
    try:
        x = request_input(4, rows=3)
        np.testing.assert_allclose(handle.infer.remote({"x": x}).result()["y"], reference(x), rtol=1e-5, atol=1e-6)
        meta = requests.get(f"{BASE}/cfg", timeout=60).json()
        assert meta["batch_sizes"] == [1, 2, 4] and meta["model"]["name"] == "cfg"
    finally:
        serve.delete("cfg")
    with pytest.raises(TypeError, match="unknown option 'max_batch'.*max_batch_size"):
        ws.app({"model": str(model_path), "max_batch": 4})
    with pytest.raises(ValueError, match="needs args.model"):
        ws.app({})


def replica_pids(route, want):
    pids = set()
    for _ in range(200):
        pids.add(requests.get(f"{BASE}{route}/stats", timeout=60).json()["pid"])
        if len(pids) >= want:
            break
    return pids


def test_load_8_clients_1000_requests_with_a_replica_killed(app, reference):
    pids = replica_pids("/mlp", 2)
    assert len(pids) == 2, f"expected 2 replicas, saw pids {pids}"
    victim = sorted(pids)[0]
    total, clients = 1000, 8
    done = []
    lock = threading.Lock()
    killed_at = []

    def client(c):
        session = requests.Session()
        results = []
        for k in range(c, total, clients):
            x = request_input(k, rows=1 + k % 3)  # every request its own input: a misrouted answer fails
            try:
                r = session.post(f"{BASE}/mlp", json={"inputs": {"x": x.tolist()}}, timeout=120)
                status, body = r.status_code, r.json() if r.headers.get("content-type", "").startswith(
                    "application/json") else r.text
            except requests.RequestException as e:
                status, body = -1, str(e)
            results.append((k, x, status, body, time.monotonic()))
            with lock:
                done.append(k)
                if len(done) == 300 and not killed_at:
                    os.kill(victim, signal.SIGKILL)
                    killed_at.append(time.monotonic())
        return results

    with ThreadPoolExecutor(clients) as pool:
        results = [r for rs in pool.map(client, range(clients)) for r in rs]
    assert len(results) == total and killed_at
    ok, failed = 0, []
    for k, x, status, body, t in results:
        if status == 200:
            y = np.array(body["outputs"]["y"]["data"], np.float32)
            np.testing.assert_allclose(y, reference(x), rtol=1e-5, atol=1e-6, err_msg=f"request {k}")
            ok += 1
        else:
            failed.append((k, status, str(body)[:200], t))
    # Only requests in flight on the killed replica may fail (at most one per client), and with a
    # clean HTTP error, not a dropped connection.
    assert len(failed) <= clients, failed
    assert all(status >= 500 for _, status, _, _ in failed), failed
    after = [r for r in results if r[4] > killed_at[0] + 1.0]
    assert len(after) > 100 and all(r[2] == 200 for r in after), "the other replica kept serving"
    print(f"\n{ok} of {total} answered, {len(failed)} failed at the kill: {[f[:3] for f in failed]}")
