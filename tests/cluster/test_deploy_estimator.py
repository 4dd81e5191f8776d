"""deploy/kubernetes/estimator-tfjob.yaml's and collective-tfjob.yaml's jobs, run here as the
TFJob operator would run them: one process per replica (1 ps, chief, 2 workers, evaluator; or, the
collective job of MultiWorkerMirroredStrategy, 2 workers and the evaluator) with the operator's
TF_CONFIG, whose cluster names the evaluator too, its host names replaced by loopback ports, each
running the replica's own command. Every process exits by itself with 0, each printing its task,
and the evaluator exports the final model."""
from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
import tempfile
import time

import pytest

from tensorweave.distributed.cluster import free_ports

yaml = pytest.importorskip("yaml")

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TIMEOUT_S = 300


@pytest.mark.parametrize("manifest", ["estimator-tfjob.yaml", "collective-tfjob.yaml"])
def test_the_tfjob_manifest_runs_to_the_end_with_the_operators_tf_config(tmp_path, manifest):
    with open(os.path.join(REPO, "deploy", "kubernetes", manifest)) as f:
        (tfjob,) = [d for d in yaml.safe_load_all(f) if d and d["kind"] == "TFJob"]
    specs = {rtype.lower(): spec for rtype, spec in tfjob["spec"]["tfReplicaSpecs"].items()}
    ports = iter(free_ports(sum(spec["replicas"] for spec in specs.values())))
    cluster = {rtype: [f"localhost:{next(ports)}" for _ in range(spec["replicas"])] for rtype, spec in specs.items()}
    model_dir = str(tmp_path / "model")
    procs, logs = {}, {}
    try:
        for rtype, spec in specs.items():
            (container,) = spec["template"]["spec"]["containers"]
            # the replica's command, with the image's paths made this checkout's and a short run
            command = [sys.executable if c == "python" else c.replace("/opt/tensorweave", REPO)
                       for c in container["command"]]
            args = [a for a in container["args"] if not a.startswith(("--model_dir=", "--max_steps="))]
            for index in range(spec["replicas"]):
                tf_config = {"cluster": cluster, "task": {"type": rtype, "index": index}, "environment": "cloud"}
                env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""),
                           TENSORWEAVE_CONNECT_TIMEOUT_S="20", TF_CONFIG=json.dumps(tf_config))
                logs[(rtype, index)] = log = tempfile.TemporaryFile()
                procs[(rtype, index)] = subprocess.Popen(
                    command + args + [f"--model_dir={model_dir}", "--max_steps=60"], env=env, cwd=REPO,
                    stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + TIMEOUT_S
        for (rtype, index), proc in procs.items():
            try:
                code = proc.wait(timeout=max(1.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                code = "hung"
            logs[(rtype, index)].seek(0)
            out = logs[(rtype, index)].read().decode(errors="replace")
            assert code == 0, f"{rtype} {index} exited with {code}:\n{out[-4000:]}"
            assert json.loads(out.strip().splitlines()[-1]) == {"task": [rtype, index]}, out[-2000:]
        assert len(glob.glob(os.path.join(model_dir, "export", "mnist", "*", "saved_model.pb"))) == 1
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        for log in logs.values():
            log.close()
