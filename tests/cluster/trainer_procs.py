"""Runs examples/distributed_trainer.py as a real cluster: one process per task on free
loopback ports, each killable, restartable and always cleaned up.

    with TrainerCluster(ps=1, workers=2, args=["--sync=true"]) as c:
        c.start_all()
        c.wait("worker", 0)          # exit code; c.result("worker", 0) is its JSON line
        c.kill("ps", 0); c.start("ps", 0)
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from typing import Optional

import tensorweave as tf
from tensorweave.distributed.cluster import free_ports

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TRAINER = os.path.join(REPO, "examples", "distributed_trainer.py")


class TrainerCluster:
    def __init__(self, ps: int = 1, workers: int = 2, args=(), env: Optional[dict] = None,
                 script: str = TRAINER, hosts: Optional[dict] = None, wrap=None):
        # hosts: {"ps": [addresses], "worker": [...]} other than loopback's; wrap(job, index, argv)
        # -> the argv that runs the task (in a network namespace: netns.NetnsLab.command)
        ports = free_ports(ps + workers)
        self.hosts = hosts or {"ps": [f"localhost:{p}" for p in ports[:ps]],
                               "worker": [f"localhost:{p}" for p in ports[ps:]]}
        self.wrap = wrap or (lambda job, index, argv: argv)
        self.args = list(args)
        self.script = script
        self.env = dict(os.environ)
        self.env["PYTHONPATH"] = REPO + os.pathsep + self.env.get("PYTHONPATH", "")
        self.env.pop("TF_CONFIG", None)
        self.env["TENSORWEAVE_CONNECT_TIMEOUT_S"] = "20"
        self.env["PYTHONFAULTHANDLER"] = "1"   # a task that hangs is SIGABRTed: its threads' stacks are kept
        self.env.update(env or {})
        self.procs: dict = {}
        self.outputs: dict = {}   # (job, index) -> list of (stdout file, stderr file), one per start
        self.started_at: dict = {}

    # -- processes -------------------------------------------------------------------------------
    def start(self, job: str, index: int, extra=()) -> None:
        out, err = tempfile.TemporaryFile(), tempfile.TemporaryFile()
        cmd = [sys.executable, self.script, f"--ps_hosts={','.join(self.hosts['ps'])}",
               f"--worker_hosts={','.join(self.hosts['worker'])}", f"--job_name={job}", f"--task_index={index}",
               *self.args, *extra]
        self.procs[(job, index)] = subprocess.Popen(self.wrap(job, index, cmd), stdout=out, stderr=err, env=self.env,
                                                    cwd=REPO, start_new_session=True)
        self.outputs.setdefault((job, index), []).append((out, err))
        self.started_at[(job, index)] = time.monotonic()

    def start_all(self) -> None:
        for job in ("ps", "worker"):
            for i in range(len(self.hosts[job])):
                self.start(job, i)

    def kill(self, job: str, index: int) -> None:
        """SIGKILL, and wait for the process to be gone."""
        p = self.procs[(job, index)]
        if p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait(10)

    def signal(self, job: str, index: int, signum: int) -> None:
        """Sends `signum` to the task's process group (SIGSTOP/SIGCONT: a stall, not a restart)."""
        os.killpg(self.procs[(job, index)].pid, signum)

    def wait(self, job: str, index: int, timeout: float = 60) -> int:
        """The task's exit code; AssertionError (with its threads' stacks) when it hangs."""
        p = self.procs[(job, index)]
        try:
            return p.wait(timeout)
        except subprocess.TimeoutExpired:
            os.kill(p.pid, signal.SIGABRT)   # faulthandler prints every thread's stack
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                pass
            raise AssertionError(f"/job:{job}/task:{index} did not exit within {timeout} s:\n"
                                 + self.stderr(job, index)[-8000:]) from None

    def alive(self, job: str, index: int) -> bool:
        return self.procs[(job, index)].poll() is None

    # -- what they said --------------------------------------------------------------------------
    def stdout(self, job: str, index: int, run: int = -1) -> str:
        return _read(self.outputs[(job, index)][run][0])

    def stderr(self, job: str, index: int, run: int = -1) -> str:
        return _read(self.outputs[(job, index)][run][1])

    def result(self, job: str, index: int, run: int = -1) -> dict:
        """The JSON line the task printed last."""
        lines = [line for line in self.stdout(job, index, run).splitlines() if line.startswith("{")]
        if not lines:
            raise AssertionError(f"/job:{job}/task:{index} printed no result; stderr:\n"
                                 + self.stderr(job, index, run)[-3000:])
        return json.loads(lines[-1])

    def describe(self) -> str:
        parts = []
        for (job, i), runs in self.outputs.items():
            for r in range(len(runs)):
                parts.append(f"--- /job:{job}/task:{i} run {r} rc={self.procs[(job, i)].poll()}\n"
                             f"{self.stdout(job, i, r)[-1500:]}\n{self.stderr(job, i, r)[-3000:]}")
        return "\n".join(parts)

    # -- cleanup ---------------------------------------------------------------------------------
    def stop(self) -> None:
        for key in list(self.procs):
            self.kill(*key)
        for runs in self.outputs.values():
            for out, err in runs:
                out.close()
                err.close()
        self.outputs.clear()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


class StepWatcher:
    """Reads the global step from the ps, as a separate client (None while unreadable)."""

    def __init__(self, ps_address: str):
        self._target = "grpc://" + ps_address
        self._graph = tf.Graph()
        with self._graph.as_default(), tf.device("/job:ps/task:0"):
            self._step = tf.train.get_or_create_global_step()
        self._sess = None
        self.seen: list = []

    def read(self):
        try:
            if self._sess is None:
                self._sess = tf.Session(self._target, graph=self._graph,
                                        config=tf.ConfigProto(device_filters=["/job:ps"]))
            value = int(self._sess.run(self._step))
            self.seen.append((time.monotonic(), value))
            return value
        except tf.errors.OpError:
            self.close()
            return None

    def wait_for(self, at_least: int, timeout: float = 60) -> int:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            v = self.read()
            if v is not None and v >= at_least:
                return v
            time.sleep(0.05)
        raise AssertionError(f"global step did not reach {at_least} within {timeout} s (seen {self.seen[-5:]})")

    def close(self):
        if self._sess is not None:
            try:
                self._sess.close()
            except Exception:  # noqa: BLE001
                pass
            self._sess = None


def _read(f) -> str:
    f.flush()
    f.seek(0)
    return f.read().decode(errors="replace")
