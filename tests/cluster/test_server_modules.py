"""A server runs graphs other processes built: it loads the op library (every kernel) and the
distributed runtime, never the graph-building namespaces. Both ways of starting one (`python -m
tensorweave.distributed.server` and `tensorweave server`) run as real processes under
`python -X importtime` (PYTHONPROFILEIMPORTTIME), serve a step, and their stderr says which modules
they loaded."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import numpy as np

import tensorweave as tf
from tensorweave.distributed.cluster import free_ports

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GRAPH_BUILDING = ("layers", "rnn", "metrics", "train", "keras", "estimator")
IMPORT_TIME = {"PYTHONPROFILEIMPORTTIME": "1"}


def _loaded(importtime_stderr: str) -> set:
    """The modules of `-X importtime` lines ("import time: self | cumulative | name")."""
    return {line.rsplit("|", 1)[1].strip() for line in importtime_stderr.splitlines()
            if line.startswith("import time:") and line.count("|") == 2}


def _run_a_step(target: str) -> None:
    """Variables, an nn op and a reduction, all on the server's task."""
    graph = tf.Graph()
    with graph.as_default(), tf.device("/job:worker/task:0"):
        v = tf.Variable([[1.0, -2.0], [3.0, -4.0]])
        y = tf.reduce_sum(tf.nn.relu(tf.matmul(v, v)))
        with tf.Session(target) as sess:
            sess.run(tf.global_variables_initializer())
            np.testing.assert_allclose(sess.run(y), 16.0)   # relu([[-5, 6], [-9, 10]])


def _assert_server_modules(loaded: set) -> None:
    assert {"tensorweave.ops", "tensorweave.ops.nn.activations", "tensorweave.distributed.worker"} <= loaded
    building = sorted(m for m in loaded if m.split(".")[:2] in [["tensorweave", n] for n in GRAPH_BUILDING])
    assert not building, f"the server loaded graph-building modules: {building}"


def test_python_m_server_loads_no_graph_building_module(start_cluster):
    cluster = start_cluster({"worker": 1}, env=IMPORT_TIME)
    _run_a_step(cluster.target("worker"))
    _assert_server_modules(_loaded(cluster.stderr("worker")))


def test_tensorweave_server_command_loads_no_graph_building_module():
    port, = free_ports(1)
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""), **IMPORT_TIME)
    env.pop("TF_CONFIG", None)
    proc = subprocess.Popen([sys.executable, "-m", "tensorweave.cli", "server", "--cluster",
                             json.dumps({"worker": [f"localhost:{port}"]}), "--job_name", "worker", "--task_index",
                             "0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=REPO,
                            start_new_session=True)
    try:
        assert proc.stdout.readline().startswith(f"SERVING grpc://localhost:{port}")
        _run_a_step(f"grpc://localhost:{port}")
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
        proc.stdout.close()
        proc.stderr.close()
    _assert_server_modules(_loaded(stderr))
