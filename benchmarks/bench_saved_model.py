"""SavedModel benchmark: loading a ~100 MB SavedModel and serving predictions from it.

    python benchmarks/bench_saved_model.py [--requests 200] [--clients 8] [--loads 3] [--rounds 3]

The model (written once by TensorFlow, tf.compat.v1's SavedModelBuilder: 1024 -> 4096 -> 4096 ->
1024 dense layers with ReLU, 24M float32 weights, 96 MiB of variables) is loaded and run by both
sides in the same command:
- load: a fresh Graph and Session, the SavedModel's graph imported and its variables restored
  (tf.saved_model.loader.load on both sides), median of --loads;
- latency of one small request (one row), p50 and p99 over --requests: the signature run in the
  loaded session (both sides), and for tensorweave also a whole TF Serving REST request
  (`tensorweave serve` in its own process, JSON over a kept-alive HTTP connection);
- throughput with --clients clients at once (threads, each its own connection), requests/s.
TensorFlow runs under $TF_PYTHON or /opt/tfvenv/bin/python in a subprocess, each side --rounds
times, alternating; the medians over rounds are printed, with ratios tensorweave / TF (> 1:
tensorweave slower or, for throughput, faster) and the load average.
"""
from __future__ import annotations

import argparse
import http.client
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from typing import Optional

import numpy as np

from _harness import free_ports, load_average, run_json, tf_python

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LAYERS = (1024, 4096, 4096, 1024)


def write_model(export_dir: str) -> None:
    """The model, written by TensorFlow's SavedModelBuilder."""
    import tensorflow.compat.v1 as tf
    tf.disable_eager_execution()
    tf.enable_resource_variables()
    with tf.Graph().as_default(), tf.Session() as sess:
        x = tf.placeholder(tf.float32, [None, LAYERS[0]], name="x")
        h = x
        for i, (n_in, n_out) in enumerate(zip(LAYERS, LAYERS[1:])):
            w = tf.get_variable(f"w{i}", [n_in, n_out], initializer=tf.random_normal_initializer(stddev=n_in ** -0.5))
            b = tf.get_variable(f"b{i}", [n_out], initializer=tf.zeros_initializer())
            h = tf.matmul(h, w) + b
            if i < len(LAYERS) - 2:
                h = tf.nn.relu(h)
        y = tf.identity(h, name="y")
        sess.run(tf.global_variables_initializer())
        builder = tf.saved_model.builder.SavedModelBuilder(export_dir)
        sig = tf.saved_model.signature_def_utils.predict_signature_def({"x": x}, {"y": y})
        builder.add_meta_graph_and_variables(sess, ["serve"], signature_def_map={"serving_default": sig})
        builder.save()


def percentile(values: list, q: float) -> float:
    return float(np.percentile(np.asarray(values), q))


def _latencies(call, n: int) -> list:
    call()   # warm up (plans, caches)
    out = []
    for _ in range(n):
        t = time.perf_counter()
        call()
        out.append(time.perf_counter() - t)
    return out


def _throughput(make_call, clients: int, per_client: int) -> float:
    """Requests per second with `clients` threads, each calling its own make_call() per_client times."""
    calls = [make_call() for _ in range(clients)]
    for c in calls:
        c()
    start = threading.Barrier(clients + 1)

    def client(call):
        start.wait()
        for _ in range(per_client):
            call()

    threads = [threading.Thread(target=client, args=(c,)) for c in calls]
    for t in threads:
        t.start()
    start.wait()
    t0 = time.perf_counter()
    for t in threads:
        t.join()
    return clients * per_client / (time.perf_counter() - t0)


def run_suite(framework: str, model_dir: str, requests: int, clients: int, loads: int) -> dict:
    row = np.random.RandomState(0).rand(1, LAYERS[0]).astype(np.float32)
    if framework == "tf":
        import tensorflow.compat.v1 as tf
        tf.disable_eager_execution()

        def load():
            sess = tf.Session(graph=tf.Graph())
            with sess.graph.as_default():
                meta = tf.saved_model.loader.load(sess, ["serve"], model_dir)
            return sess, meta.signature_def["serving_default"]
    else:
        from tensorweave.client.session import Session
        from tensorweave.framework.graph import Graph
        from tensorweave.saved_model import loader

        def load():
            sess = Session(graph=Graph())
            return sess, loader.load(sess, ["serve"], model_dir).signature_def["serving_default"]
    load_s = []
    for _ in range(loads):
        t = time.perf_counter()
        sess, sig = load()
        load_s.append(time.perf_counter() - t)
        sess.close()
    sess, sig = load()
    x, y = sig.inputs["x"].name, sig.outputs["y"].name
    result = sess.run(y, {x: row})
    lat = _latencies(lambda: sess.run(y, {x: row}), requests)
    rps = _throughput(lambda: (lambda: sess.run(y, {x: row})), clients, max(1, requests // clients))
    sess.close()
    out = {"load_s": statistics.median(load_s), "p50_ms": percentile(lat, 50) * 1e3,
           "p99_ms": percentile(lat, 99) * 1e3, "rps": rps, "checksum": float(np.sum(result))}
    if framework == "tensorweave":
        out.update(http_suite(model_dir, row, requests, clients))
    return out


def http_suite(model_dir: str, row: np.ndarray, requests: int, clients: int) -> dict:
    """The same request through `tensorweave serve`: JSON over HTTP, one kept-alive connection per client."""
    base = tempfile.mkdtemp(prefix="bench_serve_")
    os.symlink(model_dir, os.path.join(base, "1"))
    port = free_ports(1)[0]
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen([sys.executable, "-m", "tensorweave.cli", "serve", "--model_base_path", base,
                             "--model_name", "m", "--port", str(port), "--host", "127.0.0.1"],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    body = json.dumps({"instances": row.tolist()})

    def make_call():
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)

        def call():
            conn.request("POST", "/v1/models/m:predict", body, {"Content-Type": "application/json"})
            resp = conn.getresponse()
            data = resp.read()
            if resp.status != 200:
                raise RuntimeError(data)
            return data
        return call

    try:
        deadline = time.monotonic() + 300
        while True:   # ready once the model answers
            try:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
                conn.request("GET", "/v1/models/m")
                if conn.getresponse().status == 200:
                    break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("tensorweave serve did not come up")
            time.sleep(0.1)
        call = make_call()
        prediction = json.loads(call())["predictions"]
        lat = _latencies(call, requests)
        rps = _throughput(make_call, clients, max(1, requests // clients))
        return {"http_p50_ms": percentile(lat, 50) * 1e3, "http_p99_ms": percentile(lat, 99) * 1e3, "http_rps": rps,
                "http_checksum": float(np.sum(prediction))}
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(30)
        shutil.rmtree(base, ignore_errors=True)


def _medians(results: list) -> Optional[dict]:
    """Each figure's median over rounds; None when no round succeeded."""
    if not results:
        return None
    return {k: statistics.median(r[k] for r in results) for k in results[0]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--requests", type=int, default=200)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--loads", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=3, help="alternating tensorweave/TF runs; medians are printed")
    ap.add_argument("--framework", default="tensorweave", choices=["tensorweave", "tf"])
    ap.add_argument("--model_dir", help=argparse.SUPPRESS)
    ap.add_argument("--write_model", help=argparse.SUPPRESS)
    ap.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.write_model:
        write_model(args.write_model)
        print(json.dumps({"written": args.write_model}))
        return
    if args.json:
        print(json.dumps(run_suite(args.framework, args.model_dir, args.requests, args.clients, args.loads)))
        return
    py = tf_python()
    if py is None:
        print("bench_saved_model needs TensorFlow to write its model ($TF_PYTHON or /opt/tfvenv/bin/python)")
        return
    workdir = tempfile.mkdtemp(prefix="bench_saved_model_")
    try:
        model_dir = os.path.join(workdir, "model")
        if run_json(py, __file__, ["--write_model", model_dir]) is None:
            return
        size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(model_dir) for f in fs)
        load = load_average()
        common = ["--model_dir", model_dir, "--requests", args.requests, "--clients", args.clients,
                  "--loads", args.loads]
        env = {"PYTHONPATH": REPO + os.pathsep + os.environ.get("PYTHONPATH", "")}
        runs: dict = {"tensorweave": [], "tf": []}
        for _ in range(args.rounds):   # alternating, so both sides see the same load
            runs["tensorweave"].append(run_json(sys.executable, __file__, ["--framework", "tensorweave"] + common,
                                                env=env))
            runs["tf"].append(run_json(py, __file__, ["--framework", "tf"] + common))
        ours, theirs = (_medians([r for r in runs[k] if r]) for k in ("tensorweave", "tf"))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    if ours is None:
        return
    print(f"SavedModel of {size / (1 << 20):.0f} MiB ({' -> '.join(map(str, LAYERS))} dense); one-row requests; "
          f"medians of {args.rounds} alternating rounds; load average {load} (before), {load_average()} (after)")
    if theirs:
        assert abs(ours["checksum"] - theirs["checksum"]) <= 1e-3 * max(1.0, abs(theirs["checksum"])), (ours, theirs)
    fmt = "  {:<44} {:>12} {:>12} {:>8}"
    print(fmt.format("", "tensorweave", "TensorFlow" if theirs else "", "ratio" if theirs else ""))
    rows = [("load_s", f"load, median of {args.loads} (s)", "load_s"),
            ("p50_ms", "session.run latency p50 (ms)", "p50_ms"),
            ("p99_ms", "session.run latency p99 (ms)", "p99_ms"),
            ("rps", f"session.run throughput, {args.clients} clients (req/s)", "rps"),
            ("http_p50_ms", "REST :predict latency p50 (ms)", "p50_ms"),
            ("http_p99_ms", "REST :predict latency p99 (ms)", "p99_ms"),
            ("http_rps", f"REST :predict throughput, {args.clients} clients (req/s)", "rps")]
    for key, label, tf_key in rows:
        a = ours[key]
        b = theirs[tf_key] if theirs else None
        print(fmt.format(label, f"{a:.3f}" if key == "load_s" else f"{a:.1f}",
                         "" if b is None else (f"{b:.3f}" if key == "load_s" else f"{b:.1f}"),
                         "" if b is None else f"{a / b:.2f}"))
    if theirs:
        print("  (the REST rows' TF column is TF's session.run: TF Serving is not part of TF 2.21)")


if __name__ == "__main__":
    main()
