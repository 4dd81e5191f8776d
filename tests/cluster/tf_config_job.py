"""The processes of one job started by TF_CONFIG, one per task (a trainer script run as
`python SCRIPT OUT_DIR *args` with TF_CONFIG naming its task), each one's output kept per start,
each killable and restartable on the same address; all killed at the end.

    with TFConfigJob(script, {"ps": 1, "worker": 2}, out_dir, args) as job:
        job.start("worker", 0); job.kill("worker", 0); job.start("worker", 0)
        job.wait_all()               # {(job, index): exit code or "hung"}
        job.result("worker", 0)      # its last JSON line
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time

from tensorweave.distributed.cluster import free_ports

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXIT_TIMEOUT_S = 240


class TFConfigJob:
    def __init__(self, script: str, jobs: dict, model_dir: str, args=(), env=None):
        ports = free_ports(sum(jobs.values()))
        self.cluster = {job: [f"localhost:{ports.pop()}" for _ in range(n)] for job, n in jobs.items()}
        self.script, self.model_dir, self.args, self.env = script, model_dir, list(args), dict(env or {})
        self.procs: dict = {}
        self.logs: dict = {}

    def start(self, job: str, index: int = 0) -> None:
        env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""),
                   PYTHONFAULTHANDLER="1", TENSORWEAVE_CONNECT_TIMEOUT_S="20",
                   TF_CONFIG=json.dumps({"cluster": self.cluster, "task": {"type": job, "index": index}}),
                   **self.env)
        out, err = tempfile.TemporaryFile(), tempfile.TemporaryFile()
        self.logs.setdefault((job, index), []).append((out, err))
        self.procs[(job, index)] = subprocess.Popen([sys.executable, self.script, self.model_dir, *self.args], env=env,
                                                    cwd=REPO, stdout=out, stderr=err, start_new_session=True)

    def kill(self, job: str, index: int = 0) -> None:
        proc = self.procs[(job, index)]
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(30)

    def output(self, job: str, index: int = 0, run: int = -1, stream: int = 1) -> str:
        f = self.logs[(job, index)][run][stream]
        f.seek(0)
        return f.read().decode(errors="replace")

    def lines(self, job: str, index: int = 0, run: int = -1) -> list:
        """The JSON lines the task printed in start `run`."""
        return [json.loads(line) for line in self.output(job, index, run, stream=0).splitlines()
                if line.startswith("{")]

    def result(self, job: str, index: int = 0) -> dict:
        lines = self.lines(job, index)
        assert lines, f"/job:{job}/task:{index} printed no result:\n{self.output(job, index)[-4000:]}"
        return lines[-1]

    def describe(self) -> str:
        return "\n".join(f"--- {key} run {r}:\n{self.output(*key, run=r)[-3000:]}"
                         for key, runs in self.logs.items() for r in range(len(runs)))

    def wait_all(self) -> dict:
        deadline = time.monotonic() + EXIT_TIMEOUT_S
        codes = {}
        for key, proc in self.procs.items():
            try:
                codes[key] = proc.wait(timeout=max(1.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                os.kill(proc.pid, signal.SIGABRT)   # faulthandler prints its threads' stacks
                proc.wait(30)
                codes[key] = "hung"
        return codes

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for key in self.procs:
            self.kill(*key)
        for runs in self.logs.values():
            for out, err in runs:
                out.close()
                err.close()
