"""weft.serve on a Ray cluster of three nodes (a head and two workers, each its own raylet with one
CPU, started on this host by ray.cluster_utils.Cluster): two replicas land on two nodes, answers
over HTTP equal Weft's direct run, and when the node of one replica is removed mid-load the
others keep serving and Serve starts the lost replica on the spare node."""
import os
import time

import numpy as np
import pytest

import weft

ray = pytest.importorskip("ray")
requests = pytest.importorskip("requests")
from ray import serve  # noqa: E402
from ray.cluster_utils import Cluster  # noqa: E402

import weft.serve as ws  # noqa: E402
from serve_models import mlp  # noqa: E402

PORT = int(os.environ.get("WEFT_TEST_CLUSTER_PORT", "18433"))


def busy_nodes():
    """Nodes whose one CPU a replica holds (a node's free resources omit CPU when none is left)."""
    return {k for k, v in ray._private.state.available_resources_per_node().items() if v.get("CPU", 0.0) == 0.0}


def test_replicas_on_several_nodes_and_a_node_lost(tmp_path):
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    path = mlp(tmp_path / "mlp.onnx", features=16, hidden=64, classes=5)
    reference = weft.Session().compile(weft.import_onnx(str(path)))
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False, "object_store_memory": 100 << 20})
    try:
        workers = [cluster.add_node(num_cpus=1, object_store_memory=100 << 20) for _ in range(2)]
        ray.init(address=cluster.address, log_to_driver=False, logging_level="ERROR")
        assert len([n for n in ray.nodes() if n["Alive"]]) == 3
        # One HTTP proxy, on the head node (never removed): on one host, a proxy per node would
        # share the port, and a request could reach one whose routes are not yet up to date.
        serve.start(proxy_location="HeadOnly", http_options={"host": "127.0.0.1", "port": PORT})
        serve.run(ws.build(path, replicas=2, num_cpus=1, version="v1"), name="mlp", route_prefix="/mlp")
        deadline = time.time() + 60
        while time.time() < deadline:  # the proxy learns the route shortly after serve.run returns
            try:
                if "/mlp" in requests.get(f"http://127.0.0.1:{PORT}/-/routes", timeout=5).json():
                    break
            except (requests.RequestException, ValueError):
                pass
            time.sleep(0.2)
        deadline = time.time() + 60
        while len(busy_nodes()) < 2 and time.time() < deadline:
            time.sleep(0.2)
        before = busy_nodes()
        assert len(before) == 2, before  # one replica a node
        lost = next(w for w in workers if str(w.node_id) in before)
        failed = 0
        for k in range(300):
            if k == 100:
                cluster.remove_node(lost)
            x = np.random.default_rng(k).standard_normal((1, 16)).astype(np.float32)
            try:
                r = requests.post(f"http://127.0.0.1:{PORT}/mlp", json={"inputs": {"x": x.tolist()}}, timeout=60)
            except requests.RequestException:
                failed += 1  # in flight on the removed node
                continue
            assert r.status_code == 200, r.text
            got = np.asarray(next(iter(r.json()["outputs"].values()))["data"], np.float32)
            np.testing.assert_allclose(got, reference.run([x])[0], rtol=1e-5, atol=1e-6)
        assert failed <= 1, failed
        deadline = time.time() + 60
        while (len(busy_nodes()) < 2 or str(lost.node_id) in busy_nodes()) and time.time() < deadline:
            time.sleep(0.2)
        after = busy_nodes()
        assert len(after) == 2 and str(lost.node_id) not in after, after  # the lost replica runs again elsewhere
    finally:
        try:
            serve.shutdown()
        finally:
            ray.shutdown()
            cluster.shutdown()
