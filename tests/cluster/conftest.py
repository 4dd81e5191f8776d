"""Helpers to run real tensorweave server processes on free loopback ports, always killed.

    def test_x(start_cluster):
        c = start_cluster({"ps": 1, "worker": 2})
        c.spec                      # {"ps": ["localhost:p0"], "worker": [...]} (for ClusterSpec)
        c.address("worker", 1)      # "localhost:p2"
        c.target("worker", 1)       # "grpc://localhost:p2"
        c.task_name("worker", 1)    # "/job:worker/replica:0/task:1"
        c.kill("worker", 1)         # SIGKILL, waits for exit
        c.terminate("worker", 1)    # SIGTERM, waits for a clean exit, returns the exit code
        c.restart("worker", 1)      # (kills if alive and) starts it again on the same port
        c.pause("ps", 0)            # SIGSTOP, waits until every thread has stopped; c.resume: SIGCONT
        c.stop()                    # kills every task (the fixture also does this)

`start_cluster(jobs, env=None, ready_timeout=30.0, in_process=())` is the fixture (tasks listed
in `in_process`, as (job, index), get a port but no process: the test serves them itself);
`start_cluster_module` the same for a cluster shared by a module's tests. Each task runs the
equivalent of `python -m tensorweave.distributed.server --cluster JSON --job_name J --task_index I`
and is ready once it printed "SERVING". Its stderr is kept in `c.stderr(job, index)`.
"""
from __future__ import annotations

import atexit
import json
import os
import selectors
import signal
import subprocess
import sys
import tempfile
import time
from typing import Optional

import pytest
from tensorweave.distributed.cluster import free_ports

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_LIVE: set = set()


class ClusterHandle:
    """Server processes of one cluster, one per task."""

    def __init__(self, jobs: dict, env: Optional[dict] = None, ready_timeout: float = 30.0,
                 in_process: tuple = ()):
        counts = {j: (n if isinstance(n, int) else len(n)) for j, n in jobs.items()}
        ports = free_ports(sum(counts.values()))
        self.spec: dict = {}
        for job, n in counts.items():
            self.spec[job] = [f"localhost:{ports.pop(0)}" for _ in range(n)]
        self.env = dict(os.environ)
        self.env["PYTHONPATH"] = REPO + os.pathsep + self.env.get("PYTHONPATH", "")
        self.env.pop("TF_CONFIG", None)
        self.env.update(env or {})
        self.ready_timeout = ready_timeout
        self.procs: dict = {}
        self._errs: dict = {}
        _LIVE.add(self)
        try:
            for job, addrs in self.spec.items():
                for i in range(len(addrs)):
                    if (job, i) not in in_process:   # those the test serves itself (tf.train.Server)
                        self._spawn(job, i)
            for key in list(self.procs):
                self._wait_ready(*key)
        except BaseException:
            self.stop()
            raise

    # -- names ---------------------------------------------------------------------------------
    def address(self, job: str, index: int = 0) -> str:
        return self.spec[job][index]

    def target(self, job: str, index: int = 0) -> str:
        return "grpc://" + self.spec[job][index]

    @staticmethod
    def task_name(job: str, index: int = 0) -> str:
        return f"/job:{job}/replica:0/task:{index}"

    @property
    def addresses(self) -> dict:
        """task name -> address, for every task."""
        return {self.task_name(j, i): a for j, addrs in self.spec.items() for i, a in enumerate(addrs)}

    def stderr(self, job: str, index: int = 0) -> str:
        f = self._errs.get((job, index))
        if f is None:
            return ""
        f.flush()
        f.seek(0)
        return f.read().decode(errors="replace")

    # -- processes -----------------------------------------------------------------------------
    def _spawn(self, job: str, index: int) -> None:
        err = self._errs.get((job, index))
        if err is None:
            err = self._errs[(job, index)] = tempfile.TemporaryFile()
        cmd = [sys.executable, "-m", "tensorweave.distributed.server", "--cluster", json.dumps(self.spec),
               "--job_name", job, "--task_index", str(index)]
        self.procs[(job, index)] = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, env=self.env,
                                                    cwd=REPO, start_new_session=True)

    def _wait_ready(self, job: str, index: int) -> None:
        proc = self.procs[(job, index)]
        sel = selectors.DefaultSelector()
        sel.register(proc.stdout, selectors.EVENT_READ)
        deadline = time.monotonic() + self.ready_timeout
        buf = b""
        try:
            while b"SERVING" not in buf:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise RuntimeError(f"/job:{job}/task:{index} did not start within {self.ready_timeout} s:\n"
                                       + self.stderr(job, index))
                if sel.select(left):
                    chunk = os.read(proc.stdout.fileno(), 4096)
                    if not chunk:
                        proc.wait(5)
                        raise RuntimeError(f"/job:{job}/task:{index} exited with {proc.returncode}:\n"
                                           + self.stderr(job, index))
                    buf += chunk
        finally:
            sel.close()

    def pause(self, job: str, index: int = 0) -> None:
        """SIGSTOP, and wait until every thread of the task has stopped: a signal is delivered after
        kill() returns, and a thread on another core runs on meanwhile (it may take a request)."""
        pid = self.procs[(job, index)].pid
        os.kill(pid, signal.SIGSTOP)
        deadline = time.monotonic() + 60
        while any(open(f"/proc/{pid}/task/{t}/stat").read().rpartition(")")[2].split()[0] not in "Tt"
                  for t in os.listdir(f"/proc/{pid}/task")):
            assert time.monotonic() < deadline, f"/job:{job}/task:{index} did not stop"
            time.sleep(0.01)

    def resume(self, job: str, index: int = 0) -> None:
        os.kill(self.procs[(job, index)].pid, signal.SIGCONT)

    def kill(self, job: str, index: int = 0) -> None:
        """SIGKILLs the task and waits for it to be gone."""
        proc = self.procs.get((job, index))
        if proc is not None and proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait(10)

    def terminate(self, job: str, index: int = 0, timeout: float = 10.0) -> int:
        """SIGTERMs the task and returns its exit code (SIGKILL if it does not exit in time)."""
        proc = self.procs[(job, index)]
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.send_signal(signal.SIGUSR1)   # the task prints its threads' stacks: shown on failure
                time.sleep(1.0)
                print(f"/job:{job}/task:{index} did not exit on SIGTERM; its stderr:\n{self.stderr(job, index)}",
                      file=sys.stderr)
                self.kill(job, index)
        return proc.returncode

    def restart(self, job: str, index: int = 0) -> None:
        """Starts the task again on the same port (killing it first if it still runs)."""
        self.kill(job, index)
        self._close_stdout(job, index)
        self._spawn(job, index)
        self._wait_ready(job, index)

    def alive(self, job: str, index: int = 0) -> bool:
        return self.procs[(job, index)].poll() is None

    def _close_stdout(self, job: str, index: int) -> None:
        proc = self.procs.get((job, index))
        if proc is not None and proc.stdout is not None:
            proc.stdout.close()

    def stop(self) -> None:
        """Kills every task of the cluster."""
        for key in list(self.procs):
            self.kill(*key)
            self._close_stdout(*key)
        for f in self._errs.values():
            f.close()
        self._errs.clear()
        _LIVE.discard(self)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


@atexit.register
def _kill_leftovers() -> None:
    for c in list(_LIVE):
        c.stop()


def _cluster_starter():
    handles = []

    def start(jobs: dict = None, env: Optional[dict] = None, ready_timeout: float = 30.0,
              in_process: tuple = ()) -> ClusterHandle:
        h = ClusterHandle(jobs or {"local": 2}, env, ready_timeout, in_process)
        handles.append(h)
        return h

    yield start
    for h in handles:
        h.stop()


@pytest.fixture(scope="module")
def start_cluster_module():
    """Like start_cluster, for clusters shared by a module's tests (killed after the module)."""
    yield from _cluster_starter()


@pytest.fixture
def start_cluster():
    """start_cluster(jobs, env=None, ready_timeout=30.0) -> ClusterHandle; all killed at teardown."""
    yield from _cluster_starter()


@pytest.fixture(scope="module")
def module_env():
    """monkeypatch for a module's shared fixtures (the client's environment while its cluster lives)."""
    mp = pytest.MonkeyPatch()
    yield mp
    mp.undo()


@pytest.fixture
def netns_lab():
    """netns_lab(names) -> netns.NetnsLab: one network namespace per name, on a bridge, torn
    down after the test (also when it fails). Skips, saying why, unless run as root with `ip`
    and `nft` (tests/cluster/netns.py)."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import netns   # (a test helper beside this file, not a package)

    reason = netns.unavailable_reason()
    if reason:
        print(f"\nnetns_lab: skipped: {reason}", file=sys.stderr)
        pytest.skip(f"network namespaces unavailable: {reason}")
    labs = []

    def make(names) -> "netns.NetnsLab":
        labs.append(netns.NetnsLab(names))
        return labs[-1]

    yield make
    for lab in labs:
        lab.close()
