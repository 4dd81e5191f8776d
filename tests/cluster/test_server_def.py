"""tf.train.Server started from a tf.train.ServerDef (TF's message): a ps task in its own process
started from a serialized ServerDef, a worker in this process from a ServerDef whose job_name the
arguments override, and a session whose variable lives on the ps (issue 28)."""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np

import tensorweave as tf
from tensorweave.distributed.cluster import free_ports

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PS_MAIN = """
import sys
import tensorweave as tf
server = tf.train.Server(tf.train.ServerDef.FromString(bytes.fromhex(sys.argv[1])))
print("SERVING", server.target, flush=True)
server.join()
"""


def test_server_from_server_def_in_a_real_process():
    ps_port, worker_port = free_ports(2)
    cluster_def = tf.train.ClusterSpec({"ps": [f"localhost:{ps_port}"],
                                        "worker": [f"localhost:{worker_port}"]}).as_cluster_def()
    ps_def = tf.train.ServerDef(cluster=cluster_def, job_name="ps", task_index=0, protocol="grpc")
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    ps = subprocess.Popen([sys.executable, "-c", PS_MAIN, ps_def.SerializeToString().hex()],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    worker = None
    try:
        line = ps.stdout.readline()
        assert line.startswith("SERVING"), ps.stderr.read()
        # the arguments override the ServerDef's fields, as TF's Server does
        worker = tf.train.Server(tf.train.ServerDef(cluster=cluster_def, job_name="ps", protocol="grpc"),
                                 job_name="worker", task_index=0)
        assert worker.server_def.job_name == "worker" and worker.server_def.cluster == cluster_def
        assert worker.target == f"grpc://localhost:{worker_port}"
        g = tf.Graph()
        with g.as_default():
            with tf.device("/job:ps/task:0"):
                v = tf.Variable([1.0, 2.0], name="v")
            with tf.device("/job:worker/task:0"):
                inc = tf.assign_add(v, [10.0, 20.0])
            with tf.Session(worker.target) as sess:
                sess.run(tf.global_variables_initializer())
                sess.run(inc)
            with tf.Session(f"grpc://localhost:{ps_port}") as ps_sess:   # the ps process's own master
                np.testing.assert_allclose(ps_sess.run(v), [11.0, 22.0])
    finally:
        if worker is not None:
            worker.stop()
        ps.kill()
        ps.wait(30)
        ps.stdout.close()
        ps.stderr.close()


def test_server_from_a_cluster_def():
    port = free_ports(1)[0]
    cluster_def = tf.train.ClusterDef()
    cluster_def.job.add(name="local", tasks={0: f"localhost:{port}"})
    server = tf.train.Server(cluster_def)   # one job of one task: no job_name or task_index needed
    try:
        assert server.server_def.cluster == cluster_def and server.server_def.task_index == 0
        with tf.Graph().as_default(), tf.Session(server.target) as sess:
            assert sess.run(tf.constant(3) * 2) == 6
    finally:
        server.stop()
