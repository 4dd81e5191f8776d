"""Checkpoint benchmark: a 2-ps sharded save and restore of a 256 MiB model.

    python benchmarks/bench_checkpoint.py [--mib 256] [--repeats 3]

Two ps tasks run as server processes; the worker task is served in this (the client's)
process. The model is 8 float32 variables placed round robin over the ps tasks by
replica_device_setter; `Saver(sharded=True)` writes one data file per ps. Prints the median
seconds to save and to restore, the bytes this (the client's) process received over its TCP
connections during each (from `ss -ti`: tensorweave runs with TENSORWEAVE_TRANSPORT=tcp here so
that same-host traffic is TCP and counted; every tensor that reached the client would count),
and the load average. When TensorFlow is available ($TF_PYTHON, or /opt/tfvenv/bin/python)
the same runs under tf.compat.v1 in a subprocess and the ratios tensorweave/TF are printed
(> 1 means tensorweave is slower).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from _harness import free_ports, load_average, run_json, tf_python

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MIB = 1 << 20
N_VARS = 8

PS_COMMANDS = {
    "tensorweave": [sys.executable, "-m", "tensorweave.distributed.server", "--cluster", "{cluster}",
                    "--job_name", "ps", "--task_index", "{index}"],
    "tf": ["{python}", "-c", "import json, sys\nimport tensorflow as tf\ntf.compat.v1.disable_eager_execution()\n"
           "s = tf.compat.v1.train.Server(tf.train.ClusterSpec(json.loads(sys.argv[1])), job_name='ps', "
           "task_index=int(sys.argv[2]))\nprint('SERVING', flush=True)\ns.join()", "{cluster}", "{index}"],
}


def received_bytes() -> int:
    """Bytes received so far on this process's open TCP connections (kernel tcp_info)."""
    out = subprocess.run(["ss", "-tinpH"], capture_output=True, text=True).stdout.splitlines()
    total, mine = 0, False
    for line in out:
        if not line.startswith((" ", "\t")):
            mine = f"pid={os.getpid()}," in line
        elif mine:
            for field in line.split():
                if field.startswith("bytes_received:"):
                    total += int(field.split(":")[1])
    return total


def run_suite(framework: str, mib: int, repeats: int) -> dict:
    if framework == "tf":
        import tensorflow.compat.v1 as tf
        tf.disable_eager_execution()
    else:
        os.environ["TENSORWEAVE_TRANSPORT"] = "tcp"   # same-host traffic over TCP, so ss counts it
        import tensorweave as tf
    ports = free_ports(3)
    cluster = {"ps": [f"localhost:{ports[0]}", f"localhost:{ports[1]}"], "worker": [f"localhost:{ports[2]}"]}
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    procs = []
    workdir = tempfile.mkdtemp(prefix="bench_ckpt_")
    try:
        for i in range(2):
            cmd = [c.format(cluster=json.dumps(cluster), index=i, python=sys.executable)
                   for c in PS_COMMANDS[framework]]
            p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
            procs.append(p)
            while b"SERVING" not in p.stdout.readline():
                if p.poll() is not None:
                    raise RuntimeError(f"ps {i} exited")
        server = tf.train.Server(tf.train.ClusterSpec(cluster), job_name="worker", task_index=0)
        rows = mib * MIB // 4 // N_VARS // 1024
        with tf.Graph().as_default():
            with tf.device(tf.train.replica_device_setter(cluster=tf.train.ClusterSpec(cluster))):
                vs = [tf.Variable(tf.fill([rows, 1024], float(i)), name=f"v{i}") for i in range(N_VARS)]
                tf.Variable(0, dtype=tf.int64, name="step", trainable=False)
            saver = tf.train.Saver(sharded=True, max_to_keep=1)
            with tf.Session(server.target) as sess:
                sess.run(tf.global_variables_initializer())
                save_s, restore_s, save_io, restore_io = [], [], [], []
                prefix = os.path.join(workdir, "model.ckpt")
                for r in range(repeats + 1):
                    before, t = received_bytes(), time.perf_counter()
                    path = saver.save(sess, prefix, global_step=r, write_meta_graph=False)
                    dt, after = time.perf_counter() - t, received_bytes()
                    if r:   # the first round warms the plans up
                        save_s.append(dt)
                        save_io.append(after - before)
                    before, t = received_bytes(), time.perf_counter()
                    saver.restore(sess, path)
                    dt, after = time.perf_counter() - t, received_bytes()
                    if r:
                        restore_s.append(dt)
                        restore_io.append(after - before)
                files = sorted(os.listdir(workdir))
                before = received_bytes()
                check = float(sess.run(vs[-1])[0, 0])   # for scale: one variable fetched to the client
                fetch_io = received_bytes() - before
        assert check == float(N_VARS - 1)
        return {"save_s": statistics.median(save_s), "restore_s": statistics.median(restore_s),
                "save_client_bytes": statistics.median(save_io), "restore_client_bytes": statistics.median(restore_io),
                "fetch_client_bytes": fetch_io, "var_mib": rows * 1024 * 4 / MIB,
                "files": files, "model_mib": N_VARS * rows * 1024 * 4 / MIB}
    finally:
        for p in procs:
            p.kill()
            p.wait()
        shutil.rmtree(workdir, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mib", type=int, default=256)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--framework", default="tensorweave", choices=["tensorweave", "tf"])
    ap.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.json:
        print(json.dumps(run_suite(args.framework, args.mib, args.repeats)))
        return
    load = load_average()
    ours = run_suite("tensorweave", args.mib, args.repeats)
    py = tf_python()
    theirs = py and run_json(py, __file__, ["--framework", "tf", "--mib", args.mib, "--repeats", args.repeats])
    print(f"2-ps sharded checkpoint of a {ours['model_mib']:.0f} MiB model ({N_VARS} variables), median of "
          f"{args.repeats}; load average {load} (before), {load_average()} (after)")
    print(f"  files: {', '.join(ours['files'])}")
    fmt = "  {:<28} {:>12} {:>12} {:>8}"
    print(fmt.format("", "tensorweave", "TensorFlow" if theirs else "", "ratio" if theirs else ""))
    for key, label in (("save_s", "save (s)"), ("restore_s", "restore (s)"),
                       ("save_client_bytes", "client bytes during save"),
                       ("restore_client_bytes", "client bytes during restore"),
                       ("fetch_client_bytes", f"(fetch one {ours['var_mib']:.0f} MiB variable)")):
        a = ours[key]
        b = theirs[key] if theirs else None
        ratio = f"{a / b:.2f}" if theirs and key.endswith("_s") and b else ""
        cell = "{:.3f}" if key.endswith("_s") else "{:,.0f}"
        print(fmt.format(label, cell.format(a), cell.format(b) if b is not None else "", ratio))


if __name__ == "__main__":
    main()
