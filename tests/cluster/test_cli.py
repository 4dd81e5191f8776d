"""The `tensorweave` command line: server, status and launch, as real processes."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest
from tensorweave.cli import gpu_shares
from tensorweave.distributed.cluster import free_ports

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

SCRIPT = textwrap.dedent("""
    import os, sys
    import tensorweave as tf
    r = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    server = tf.train.Server(r.cluster_spec(), job_name=r.task_type, task_index=r.task_id)
    if r.task_type == "ps":
        server.join()
    else:
        with tf.device("/job:ps/task:0"):
            y = tf.constant(r.task_id) * 10
        with tf.Session(server.target) as sess:
            print("result", sess.run(y), sys.argv[1:], flush=True)
        if r.task_id == int(os.environ.get("FAIL_TASK", "-1")):
            sys.exit(3)
""")


def _env(**extra):
    env = dict(os.environ)
    env["PYTHONPATH"] = REPO + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("TF_CONFIG", None)
    env.update(extra)
    return env


def cli(*args, env=None, timeout=60):
    return subprocess.run([sys.executable, "-m", "tensorweave.cli", *args], capture_output=True, text=True,
                          env=env or _env(), timeout=timeout, cwd=REPO)


@pytest.fixture
def spawn():
    procs = []

    def start(*args, env=None):
        p = subprocess.Popen([sys.executable, "-m", "tensorweave.cli", *args], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=env or _env(), cwd=REPO,
                             start_new_session=True)
        procs.append(p)
        return p

    yield start
    for p in procs:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
        p.wait(10)
        p.stdout.close()
        p.stderr.close()


def test_server_from_flags_and_tf_config_and_status(spawn):
    p0, p1 = free_ports(2)
    hosts = ["--ps_hosts", f"localhost:{p0}", "--worker_hosts", f"localhost:{p1}"]
    ps = spawn("server", *hosts, "--job_name", "ps", "--task_index", "0")
    assert ps.stdout.readline().startswith(f"SERVING grpc://localhost:{p0} /job:ps/task:0")
    st = cli("status", *hosts, "--timeout", "1")
    assert st.returncode == 1
    lines = st.stdout.splitlines()
    assert "/job:ps/replica:0/task:0" in lines[0] and " UP " in lines[0]
    assert "/job:worker/replica:0/task:0" in lines[1] and " DOWN " in lines[1] and "Unavailable" in lines[1]
    cfg = {"cluster": {"ps": [f"localhost:{p0}"], "worker": [f"localhost:{p1}"]},
           "task": {"type": "worker", "index": 0}}
    worker = spawn("server", env=_env(TF_CONFIG=json.dumps(cfg)))
    assert worker.stdout.readline().startswith(f"SERVING grpc://localhost:{p1} /job:worker/task:0")
    st = cli("status", f"grpc://localhost:{p0}", "--json")
    assert st.returncode == 0, st.stdout + st.stderr
    assert [t["up"] for t in json.loads(st.stdout)] == [True, True]


def test_server_without_a_cluster_fails_cleanly():
    r = cli("server", "--job_name", "ps")
    assert r.returncode == 2 and "no cluster" in r.stderr


def test_launch_runs_the_script_per_task_and_stops_the_ps(tmp_path):
    script = tmp_path / "trainer.py"
    script.write_text(SCRIPT)
    start = time.monotonic()
    r = cli("launch", "--ps", "1", "--workers", "2", str(script), "--task={job_name}:{task_index}", timeout=90)
    assert r.returncode == 0, r.stderr
    assert "[worker:0] result 0 ['--task=worker:0']" in r.stdout
    assert "[worker:1] result 10 ['--task=worker:1']" in r.stdout
    assert time.monotonic() - start < 60
    cluster = json.loads(r.stderr.split("tensorweave launch: cluster ", 1)[1].splitlines()[0])
    assert list(cluster) == ["ps", "worker"] and len(cluster["worker"]) == 2


def test_launch_returns_a_failing_task_status(tmp_path):
    script = tmp_path / "trainer.py"
    script.write_text(SCRIPT)
    r = cli("launch", "--ps", "1", "--workers", "2", "--ps_as_server", "--no_prefix", str(script),
            env=_env(FAIL_TASK="1"), timeout=90)
    assert r.returncode == 3
    assert "/job:worker/task:1 exited with 3" in r.stderr


def test_launch_servers_only_and_ctrl_c_stops_every_task(spawn):
    p = spawn("launch", "--ps", "1", "--workers", "1")
    cluster = json.loads(p.stderr.readline().split("tensorweave launch: cluster ", 1)[1])
    serving = [p.stdout.readline(), p.stdout.readline()]
    assert all("SERVING" in s for s in serving), serving + [p.stderr.read() if p.poll() is not None else ""]
    up = cli("status", "--cluster", json.dumps(cluster), "--timeout", "2")
    assert up.returncode == 0, up.stdout
    p.send_signal(signal.SIGINT)
    assert p.wait(20) == 0
    down = cli("status", "--cluster", json.dumps(cluster), "--timeout", "0.5")
    assert down.returncode == 1 and down.stdout.count(" DOWN ") == 2


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_tasks_of_a_killed_launcher_stop_too(spawn):
    p = spawn("launch", "--ps", "1", "--workers", "1")
    cluster = json.loads(p.stderr.readline().split("tensorweave launch: cluster ", 1)[1])
    assert all("SERVING" in p.stdout.readline() for _ in range(2))
    p.kill()   # SIGKILL: the launcher cannot stop its tasks itself
    p.wait(10)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        down = cli("status", "--cluster", json.dumps(cluster), "--timeout", "0.5")
        if down.stdout.count(" DOWN ") == 2:
            break
        time.sleep(0.2)
    assert down.returncode == 1 and down.stdout.count(" DOWN ") == 2, down.stdout


def test_launch_deals_the_gpus_to_the_workers_and_none_to_the_ps(tmp_path):
    # the workers end once the ps has printed: launch stops the ps tasks when the others are done
    # (on a loaded machine that was before the ps's Python had started)
    printed = tmp_path / "ps_printed"
    script = tmp_path / "show.py"
    script.write_text(
        "import json, os, pathlib, time\n"
        "print('gpus', repr(os.environ.get('CUDA_VISIBLE_DEVICES')), flush=True)\n"
        f"printed = pathlib.Path({str(printed)!r})\n"
        "if json.loads(os.environ['TF_CONFIG'])['task']['type'] == 'ps':\n"
        "    printed.touch()\n"
        "else:\n"
        "    deadline = time.monotonic() + 50\n"
        "    while not printed.exists() and time.monotonic() < deadline:\n"
        "        time.sleep(0.01)\n")
    r = cli("launch", "--ps", "1", "--workers", "3", str(script), env=_env(CUDA_VISIBLE_DEVICES="3,5"), timeout=60)
    assert r.returncode == 0, r.stderr
    for task, gpus in [("ps:0", "''"), ("worker:0", "'3'"), ("worker:1", "'5'"), ("worker:2", "'3'")]:
        assert f"[{task}] gpus {gpus}" in r.stdout, r.stdout
    r = cli("launch", "--workers", "1", "--num_gpus", "0", str(script), env=_env(CUDA_VISIBLE_DEVICES="3,5"))
    assert "[worker:0] gpus ''" in r.stdout, r.stdout
    r = cli("launch", "--workers", "1", "--num_gpus", "3", str(script), env=_env(CUDA_VISIBLE_DEVICES="3,5"))
    assert r.returncode == 2 and "--num_gpus 3, but 2 GPU(s) present" in r.stderr
    roles = [("chief", 0), ("ps", 0), ("worker", 0)]
    assert gpu_shares(roles, list("0123")) == {("chief", 0): "0,1", ("ps", 0): "", ("worker", 0): "2,3"}
