"""Distributed runtime benchmark: one command, medians, TF ratios when TF is available.

    python benchmarks/bench_distributed.py [--quick] [--rounds N]

Two tasks of the seed's "local" job: task 0 is served in this (the client's) process, task 1
by another process. Measures
  (1) the step latency of the seed's 238 graph across the two tasks;
  (2) a 64 MiB float32 variable on task 1 reduced on task 0 (cross-task GB/s);
  (3) that variable fetched to the client (GB/s);
(2) and (3) also for the same variable initialised from tf.zeros and from a numpy array;
with this machine's memcpy bandwidth printed for scale. When TensorFlow is available (this
interpreter, or /opt/tfvenv/bin/python, or $TF_PYTHON) the same runs with tf.compat.v1 in a
subprocess and the ratios tensorweave/TF are printed (> 1 means tensorweave is slower). The
two run in alternating rounds (--rounds, default 3) so that both see the same machine load.

    python benchmarks/bench_distributed.py --transports

times instead ZeroMQ's tcp:// against its ipc:// to a one-task server process on this host
(ping round trips, tensor echoes).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

from _harness import free_ports, load_average, tf_python

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MIB = 1 << 20
VAR_BYTES = 64 * MIB

TF_SERVER = """
import json, sys
import tensorflow as tf
tf.compat.v1.disable_eager_execution()
server = tf.compat.v1.train.Server(tf.train.ClusterSpec(json.loads(sys.argv[1])), job_name="local", task_index=1)
print("SERVING", flush=True)
server.join()
"""


def memcpy_gbps() -> float:
    src = np.ones(VAR_BYTES // 4, np.float32)
    dst = np.empty_like(src)
    times = []
    for _ in range(7):
        t = time.perf_counter()
        np.copyto(dst, src)
        times.append(time.perf_counter() - t)
    return VAR_BYTES / statistics.median(times) / 1e9


def median_time(fn, repeats: int, inner: int = 1) -> float:
    fn()
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        for _ in range(inner):
            fn()
        times.append((time.perf_counter() - t) / inner)
    return statistics.median(times)


def run_suite(framework: str, quick: bool) -> dict:
    """Runs the three measurements with `framework` ('tensorweave' or 'tf'); returns seconds."""
    if framework == "tf":
        import tensorflow as tf_root
        tf_root.compat.v1.disable_eager_execution()
        tf = tf_root.compat.v1
        server_cmd = [sys.executable, "-c", TF_SERVER]
    else:
        import tensorweave as tf
        server_cmd = [sys.executable, "-m", "tensorweave.cli", "server", "--job_name", "local", "--task_index", "1",
                      "--cluster"]
    cluster = {"local": [f"localhost:{p}" for p in free_ports(2)]}
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    proc = subprocess.Popen(server_cmd + [json.dumps(cluster)], stdout=subprocess.PIPE, env=env,
                            start_new_session=True)
    try:
        while b"SERVING" not in proc.stdout.readline():
            if proc.poll() is not None:
                raise RuntimeError(f"task 1 ({framework}) did not start")
        server0 = tf.train.Server(tf.train.ClusterSpec(cluster), job_name="local", task_index=0)
        g = tf.Graph()
        with g.as_default():
            x = tf.constant(2)
            with tf.device("/job:local/task:1"):
                y2 = x - 66
            with tf.device("/job:local/task:0"):
                y1 = x + 300
                y = y1 + y2
            with tf.device("/job:local/task:1"):
                v = tf.Variable(tf.ones([VAR_BYTES // 4], tf.float32), name="big")
                # the same size initialised from tf.zeros (a Fill op on task 1) and from a numpy
                # array (a Const that travels in the graph): how a variable was initialised
                # must not change how fast its value moves
                vz = tf.Variable(tf.zeros([VAR_BYTES // 4], tf.float32), name="big_zeros")
                vn = tf.Variable(np.zeros(VAR_BYTES // 4, np.float32), name="big_numpy")
            with tf.device("/job:local/task:0"):
                total = tf.reduce_sum(v)
                total_z, total_n = tf.reduce_sum(vz), tf.reduce_sum(vn)
            sess = tf.Session(server0.target)
            sess.run([v.initializer, vz.initializer, vn.initializer])
            assert sess.run(y) == 238
            assert sess.run(total) == VAR_BYTES // 4
            assert sess.run(total_z) == 0 and sess.run(total_n) == 0
            reps = 3 if quick else 7
            out = {"step_238": median_time(lambda: sess.run(y), reps, 50 if quick else 200)}
            # the zeros- and numpy-initialised cases alternate so that both see the same load
            for _ in range(2):
                for key, var, red in (("", v, total), ("_zeros", vz, total_z), ("_numpy", vn, total_n)):
                    out.setdefault("reduce_64mib" + key, []).append(median_time(lambda: sess.run(red), reps))
                    out.setdefault("fetch_64mib" + key, []).append(median_time(lambda: sess.run(var), reps))
            out = {k: min(t) if isinstance(t, list) else t for k, t in out.items()}
            sess.close()
        if framework != "tf":
            server0.stop()   # the next round starts its own
        return out
    finally:
        proc.kill()
        proc.wait(10)


def measure_transports(rounds: int = 2000, sizes_mb=(1, 16)) -> dict:
    """Starts a one-task server process and times ping round trips and tensor echoes over its
    tcp:// and ipc:// endpoints, alternating them so both see the same machine load."""
    # Imported here: under a TensorFlow-only Python this script must not import tensorweave.
    from tensorweave.distributed.channel import Channel
    from tensorweave.distributed.sockets import ipc_path_for_port
    from tensorweave.framework.graph_def import GraphDef, NodeDef

    port = free_ports(1)[0]
    spec = {"local": [f"localhost:{port}"]}
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen([sys.executable, "-m", "tensorweave.distributed.server", "--cluster", json.dumps(spec),
                             "--job_name", "local", "--task_index", "0"], stdout=subprocess.PIPE, env=env)
    try:
        proc.stdout.readline()
        endpoints = {"tcp": f"tcp://127.0.0.1:{port}", "ipc": "ipc://" + ipc_path_for_port(port)}
        channels = {k: Channel(ep, "/job:local/replica:0/task:0", 10.0) for k, ep in endpoints.items()}
        graph_def = GraphDef([NodeDef("x", "Placeholder", (), "", {"dtype": "float32", "shape": None,
                                                                     "_num_outputs": 1}),
                              NodeDef("y", "Identity", ("x",), "", {"T": "float32", "_num_outputs": 1})])
        handle = channels["tcp"].call("register_graph", {"graph_def": graph_def.to_dict(), "feeds": ["x:0"],
                                                         "fetches": ["y:0"], "targets": []})
        out: dict = {k: {} for k in channels}
        for channel in channels.values():
            for _ in range(200):
                channel.ping()
        for _ in range(5):   # interleaved batches
            for k, channel in channels.items():
                t = time.perf_counter()
                for _ in range(rounds // 5):
                    channel.ping()
                out[k].setdefault("ping_us", []).append((time.perf_counter() - t) / (rounds // 5) * 1e6)
        for mb in sizes_mb:
            x = np.ones(mb << 18, np.float32)
            for _ in range(3):
                for k, channel in channels.items():
                    t = time.perf_counter()
                    for step in range(5):
                        channel.call("run_graph", {"graph_handle": handle, "step_id": step, "feed_values": [x]})
                    gbs = 2 * mb / 1024 * 5 / (time.perf_counter() - t)
                    out[k].setdefault(f"echo_{mb}MB_GBps", []).append(gbs)
        for channel in channels.values():
            channel.close()
        return {k: {m: round(float(np.median(v)), 2) for m, v in d.items()} for k, d in out.items()}
    finally:
        proc.terminate()
        proc.wait(10)


_CASES = (("", "tf.ones"), ("_zeros", "tf.zeros"), ("_numpy", "numpy"))


def _report(name: str, r: dict) -> None:
    print(f"  (1) 238 graph step, 2 tasks                 {r['step_238'] * 1e6:10.1f} us")
    for key, init in _CASES:
        for what, label in (("reduce", "(2) 64 MiB var task1 -> reduce t0"),
                            ("fetch", "(3) 64 MiB var fetched to client")):
            t = r[f"{what}_64mib{key}"]
            print(f"  {label} {'(' + init + ')':11s} {t * 1e3:8.1f} ms  {VAR_BYTES / t / 1e9:6.2f} GB/s")


def _median_of(rounds: list) -> dict:
    return {k: statistics.median(r[k] for r in rounds) for k in rounds[0]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    parser.add_argument("--rounds", type=int, default=None,
                        help="alternating tensorweave/TF rounds (default 3, 1 with --quick)")
    parser.add_argument("--framework", choices=["tensorweave", "tf"], default="tensorweave",
                        help=argparse.SUPPRESS)
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--transports", action="store_true",
                        help="time ZeroMQ tcp:// against ipc:// to a same-host server instead")
    args = parser.parse_args()
    if args.transports:
        for name, row in measure_transports().items():
            print(name, row)
        return 0
    if args.json:   # the TF half, run in TF's interpreter
        print("RESULTS " + json.dumps(run_suite(args.framework, args.quick)))
        return 0
    rounds = args.rounds or (1 if args.quick else 3)
    print(f"load average {load_average()}; transport {os.environ.get('TENSORWEAVE_TRANSPORT', 'auto')}; "
          f"memcpy bandwidth (numpy copyto, 64 MiB): {memcpy_gbps():.2f} GB/s")
    py = tf_python()
    cmd = None if py is None else [py, os.path.abspath(__file__), "--framework", "tf", "--json"] + (
        ["--quick"] if args.quick else [])
    tw_rounds, tf_rounds = [], []
    # The two alternate, round after round, so that both see the same machine load; each
    # figure printed is the median over the rounds of each round's median.
    for _ in range(rounds):
        tw_rounds.append(run_suite("tensorweave", args.quick))
        if cmd is None:
            continue
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600,
                              env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
        line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("RESULTS ")), None)
        if line is None:
            print("TensorFlow run failed:\n" + proc.stderr[-2000:])
            return 1
        tf_rounds.append(json.loads(line[len("RESULTS "):]))
    tw = _median_of(tw_rounds)
    print(f"tensorweave (medians of {rounds} rounds):")
    _report("tensorweave", tw)
    if py is None:
        print("TensorFlow not found: no ratios")
        return 0
    tfr = _median_of(tf_rounds)
    print(f"tensorflow {py} (tf.compat.v1, medians of {rounds} rounds, alternating with tensorweave's):")
    _report("tf", tfr)
    print("ratios tensorweave / TF (time; > 1 = slower):")
    rows = [("step_238", "(1) 238 step")] + [
        (f"{what}_64mib{key}", f"{label} ({init})") for key, init in _CASES
        for what, label in (("reduce", "(2) cross-task reduce"), ("fetch", "(3) fetch to client"))]
    for k, label in rows:
        print(f"  {label:36s} {tw[k] / tfr[k]:6.2f}x")
    print(f"load average after: {load_average()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
