"""A server runs graphs other processes built: it loads the op library (every kernel) and the
distributed runtime, never the graph-building namespaces. Both ways of starting one (`python -m
tensorweave.distributed.server` and `tensorweave server`) run as real processes, serve a step from
this client, stop on SIGTERM, and write the names of every module they held (`sys.modules`, so a
module loaded through importlib or the lazy namespaces counts too) when they exit."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.distributed.cluster import free_ports

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GRAPH_BUILDING = ("layers", "rnn", "metrics", "train", "keras", "estimator")
# Runs the module named by its first argument as `python -m` would, and at exit writes sys.modules.
RUN_AND_LIST_MODULES = ("import atexit, os, runpy, sys\n"
                        "out = os.environ['MODULES_OUT']\n"
                        "atexit.register(lambda: open(out, 'w').write('\\n'.join(sorted(sys.modules))))\n"
                        "runpy.run_module(sys.argv.pop(1), run_name='__main__', alter_sys=True)\n")


def _run_a_step(target: str) -> None:
    """Variables, an nn op and a reduction, all on the server's task."""
    graph = tf.Graph()
    with graph.as_default(), tf.device("/job:worker/task:0"):
        v = tf.Variable([[1.0, -2.0], [3.0, -4.0]])
        y = tf.reduce_sum(tf.nn.relu(tf.matmul(v, v)))
        with tf.Session(target) as sess:
            sess.run(tf.global_variables_initializer())
            np.testing.assert_allclose(sess.run(y), 16.0)   # relu([[-5, 6], [-9, 10]])


@pytest.mark.parametrize("entry_point", ["tensorweave.distributed.server", "tensorweave.cli server"])
def test_a_server_loads_no_graph_building_module(entry_point, tmp_path):
    port, = free_ports(1)
    out = tmp_path / "modules.txt"
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""), MODULES_OUT=str(out))
    env.pop("TF_CONFIG", None)
    proc = subprocess.Popen([sys.executable, "-c", RUN_AND_LIST_MODULES, *entry_point.split(), "--cluster",
                             json.dumps({"worker": [f"localhost:{port}"]}), "--job_name", "worker", "--task_index",
                             "0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=REPO,
                            start_new_session=True)
    try:
        assert proc.stdout.readline().startswith(f"SERVING grpc://localhost:{port}")
        _run_a_step(f"grpc://localhost:{port}")
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=60)
        assert proc.returncode == 0, stderr
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
        proc.stdout.close()
        proc.stderr.close()
    loaded = set(out.read_text().split())
    assert {"tensorweave.ops", "tensorweave.ops.nn.activations", "tensorweave.distributed.worker"} <= loaded
    building = sorted(m for m in loaded if m.split(".")[:2] in [["tensorweave", n] for n in GRAPH_BUILDING])
    assert not building, f"the server loaded graph-building modules: {building}"
