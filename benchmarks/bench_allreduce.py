"""All-reduce bus bandwidth: tensorweave's ring (ops/collective_ops.py) beside TensorFlow's
CollectiveReduce, over 2 and 4 server processes on this host, with memcpy for scale.

    python benchmarks/bench_allreduce.py [--quick] [--sizes 4K,1M,64M] [--groups 2,4] [--rounds N]
                                         [--no-tf] [--baseline CHECKOUT]

Each framework starts `group` server processes (a "worker" job on loopback ports); this process
drives one session per worker, each in its own thread, on a graph that holds on its worker one
float32 variable per size and an all-reduce (sum) of it: the members' steps start together
(a barrier) and a step's time is from the first start to the last end; a step fetches nothing
(the op is a target), so the client's feeds and fetches do not count. Bus bandwidth is NCCL's:
2 (group - 1) / group * bytes / time, what each member's links must carry; the physical limit on
one host is memcpy's bandwidth. TensorFlow (tf.compat.v1, graph mode, its CollectiveReduce op via
collective_ops.all_reduce: what MultiWorkerMirroredStrategy runs, with the group leader set) runs
in a subprocess under a Python that has it (/opt/tfvenv/bin/python or $TF_PYTHON); the two
alternate per round so both see the same machine load. Medians; the load average is printed.
`--baseline` runs another checkout's tensorweave (its own copy of this script) in the same
rounds, for a before/after.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time

import numpy as np

from _harness import free_ports, load_average, run_json, tf_python

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KIB, MIB = 1 << 10, 1 << 20
LEADER = "/job:worker/replica:0/task:0"

TF_SERVER = """
import json, sys
import tensorflow as tf
tf.compat.v1.disable_eager_execution()
config = tf.compat.v1.ConfigProto()
config.experimental.collective_group_leader = %r
server = tf.distribute.Server(tf.train.ClusterSpec(json.loads(sys.argv[1])), job_name="worker",
                              task_index=int(sys.argv[2]), config=config)
print("SERVING", flush=True)
server.join()
""" % LEADER


def parse_size(text: str) -> int:
    text = text.strip().upper()
    for suffix, scale in (("K", KIB), ("M", MIB), ("G", 1 << 30)):
        if text.endswith(suffix):
            return int(float(text[:-1]) * scale)
    return int(text)


def label(nbytes: int) -> str:
    return f"{nbytes // MIB} MiB" if nbytes >= MIB else f"{nbytes // KIB} KiB"


def memcpy_gbps(nbytes: int = 64 * MIB) -> float:
    src = np.ones(nbytes // 4, np.float32)
    dst = np.empty_like(src)
    times = []
    for _ in range(7):
        t = time.perf_counter()
        np.copyto(dst, src)
        times.append(time.perf_counter() - t)
    return nbytes / statistics.median(times) / 1e9


def cpu_seconds(pids: list) -> float:
    """User + system CPU time the processes used so far (Linux /proc)."""
    total = 0
    for pid in pids:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rpartition(")")[2].split()
        total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def _start_servers(framework: str, group: int) -> tuple:
    cluster = {"worker": [f"localhost:{p}" for p in free_ports(group)]}
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""), TF_CPP_MIN_LOG_LEVEL="3")
    procs = []
    for i in range(group):
        if framework == "tf":
            cmd = [sys.executable, "-c", TF_SERVER, json.dumps(cluster), str(i)]
        else:
            cmd = [sys.executable, "-m", "tensorweave.cli", "server", "--job_name", "worker", "--task_index", str(i),
                   "--cluster", json.dumps(cluster)]
        # (in the checkout: `-m` puts the working directory first on the path, before PYTHONPATH)
        procs.append(subprocess.Popen(cmd, stdout=subprocess.PIPE, env=env, cwd=REPO, start_new_session=True))
    for p in procs:
        while b"SERVING" not in p.stdout.readline():
            if p.poll() is not None:
                raise RuntimeError(f"a {framework} server did not start")
    return cluster, procs


def run_suite(framework: str, group: int, sizes: list, steps: int) -> dict:
    """{size: (median seconds of one all-reduce over `group` worker processes, the CPU seconds
    the worker processes used per all-reduce, all together)}."""
    if framework == "tf":
        import tensorflow as tf_root
        from tensorflow.python.ops import collective_ops
        tf_root.compat.v1.disable_eager_execution()
        tf = tf_root.compat.v1
        config = tf.ConfigProto()
        config.experimental.collective_group_leader = LEADER
        options = tf.RunOptions()
        options.experimental.collective_graph_key = 1
    else:
        import tensorweave as tf
        from tensorweave.ops import collective_ops
        config, options = None, None
    cluster, procs = _start_servers(framework, group)
    try:
        sessions, ops = [], []
        for rank in range(group):
            g = tf.Graph()
            with g.as_default(), tf.device(f"/job:worker/task:{rank}"):
                per_size = {}
                for key, nbytes in enumerate(sizes):
                    v = tf.Variable(tf.fill([nbytes // 4], float(rank + 1)), name=f"v{key}")
                    red = collective_ops.all_reduce(v.read_value(), group, 1, key + 1, "Add", "Id")
                    per_size[nbytes] = (v, red, red[:4])
            sess = tf.Session(f"grpc://{cluster['worker'][rank]}", graph=g, config=config)
            sess.run([v.initializer for v, _, _ in per_size.values()])
            sessions.append(sess)
            ops.append(per_size)
        out = {}
        for nbytes in sizes:
            reps = steps if nbytes <= 16 * MIB else max(3, steps // 2)
            starts = [[0.0] * (reps + 1) for _ in range(group)]
            ends = [[0.0] * (reps + 1) for _ in range(group)]
            barrier = threading.Barrier(group)
            errors: list = []
            heads: list = [None] * group

            def member(rank: int) -> None:
                try:
                    _, op, head = ops[rank][nbytes]
                    for rep in range(reps + 1):   # (the first is a warm-up)
                        barrier.wait(600)
                        starts[rank][rep] = time.perf_counter()
                        sessions[rank].run(op.op, options=options)
                        ends[rank][rep] = time.perf_counter()
                    heads[rank] = sessions[rank].run(head, options=options)   # (one more, checked)
                except Exception as e:  # noqa: BLE001 - reported by the driver
                    errors.append(e)
                    barrier.abort()
            threads = [threading.Thread(target=member, args=(r,)) for r in range(group)]
            cpu = cpu_seconds([p.pid for p in procs])
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            cpu = (cpu_seconds([p.pid for p in procs]) - cpu) / (reps + 2)
            if errors:
                raise errors[0]
            assert all(np.all(h == group * (group + 1) / 2) for h in heads), (framework, nbytes, heads)
            span = [max(ends[r][i] for r in range(group)) - min(starts[r][i] for r in range(group))
                    for i in range(1, reps + 1)]
            out[nbytes] = (statistics.median(span), cpu)
        for sess in sessions:
            sess.close()
        return out
    finally:
        for p in procs:
            p.kill()
            p.wait(10)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="fewer sizes and steps")
    ap.add_argument("--sizes", default="", help="comma-separated sizes (4K, 1M, 64M); default 4 KiB to 256 MiB")
    ap.add_argument("--groups", default="2,4")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--steps", type=int, default=0)
    ap.add_argument("--framework", choices=["tensorweave", "tf"], default="")
    ap.add_argument("--no-tf", action="store_true", help="tensorweave only")
    ap.add_argument("--baseline", default="", help="another checkout whose tensorweave runs beside (before/after)")
    ap.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    sizes = [parse_size(s) for s in args.sizes.split(",")] if args.sizes else \
        ([4 * KIB, MIB, 64 * MIB] if args.quick else [4 * KIB, 64 * KIB, MIB, 16 * MIB, 64 * MIB, 256 * MIB])
    groups = [int(g) for g in args.groups.split(",")]
    steps = args.steps or (5 if args.quick else 11)
    if args.framework:   # one framework's suite (the TF side runs so, under its Python)
        result = {str(g): {str(n): t for n, t in run_suite(args.framework, g, sizes, steps).items()} for g in groups}
        print(json.dumps(result) if args.json else result)
        return
    tf_py = None if args.no_tf else tf_python()
    runs = {"tensorweave": (sys.executable, __file__, REPO)}   # name -> (python, script, checkout)
    if args.baseline:
        base = os.path.abspath(args.baseline)
        runs["baseline"] = (sys.executable, os.path.join(base, "benchmarks", "bench_allreduce.py"), base)
    if tf_py is not None:
        runs["tf"] = (tf_py, __file__, REPO)
    memcpys = [memcpy_gbps()]
    print(f"load average before: {load_average()}; memcpy {memcpys[0]:.2f} GB/s")
    times: dict = {}
    for _ in range(args.rounds):
        for fw, (python, script, checkout) in runs.items():
            res = run_json(python, script, ["--framework", "tf" if fw == "tf" else "tensorweave", "--sizes",
                                            ",".join(map(str, sizes)), "--groups", args.groups, "--steps", steps],
                           env={"PYTHONPATH": checkout + os.pathsep + os.environ.get("PYTHONPATH", "")})
            for g, per in (res or {}).items():
                for n, t in per.items():
                    times.setdefault((fw, int(g), int(n)), []).append(t)
            memcpys.append(memcpy_gbps())
    mc = statistics.median(memcpys)
    print(f"load average after: {load_average()}; memcpy {memcpys[-1]:.2f} GB/s; median of the "
          f"{len(memcpys)} between runs {mc:.2f} GB/s (the tw/memcpy column's)")
    print("ms: median time of one all-reduce; cpu: CPU ms the worker processes spent on it (all together)")
    print(f"{'group':>5} {'size':>8} {'tw ms':>9} {'tw cpu':>8} {'tw busbw GB/s':>14} {'TF ms':>9} {'TF cpu':>8} "
          f"{'TF busbw GB/s':>14} {'tw/TF busbw':>11} {'tw/memcpy':>9}"
          + (f" {'base ms':>9} {'base cpu':>8} {'base/memcpy':>11}" if args.baseline else ""))
    for g in groups:
        for n in sizes:
            row = {}
            for fw in runs:
                t = times.get((fw, g, n))
                if t:
                    sec = statistics.median(x[0] for x in t)
                    row[fw] = (sec, 2 * (g - 1) / g * n / sec / 1e9, statistics.median(x[1] for x in t))
            tw, tfr = row.get("tensorweave"), row.get("tf")
            print(f"{g:>5} {label(n):>8} "
                  + (f"{tw[0] * 1e3:>9.2f} {tw[2] * 1e3:>8.1f} {tw[1]:>14.3f} " if tw
                     else f"{'-':>9} {'-':>8} {'-':>14} ")
                  + (f"{tfr[0] * 1e3:>9.2f} {tfr[2] * 1e3:>8.1f} {tfr[1]:>14.3f} " if tfr
                     else f"{'-':>9} {'-':>8} {'-':>14} ")
                  + (f"{tw[1] / tfr[1]:>11.2f} " if tw and tfr else f"{'-':>11} ")
                  + (f"{tw[1] / mc:>9.3f}" if tw else f"{'-':>9}")
                  + (f" {row['baseline'][0] * 1e3:>9.2f} {row['baseline'][2] * 1e3:>8.1f} "
                     f"{row['baseline'][1] / mc:>11.3f}" if "baseline" in row else ""))


if __name__ == "__main__":
    main()
