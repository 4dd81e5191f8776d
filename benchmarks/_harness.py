"""What the benchmarks share. Standard library only: every script also runs its TensorFlow side in
a subprocess, under a Python that may have TensorFlow and no tensorweave ($TF_PYTHON)."""
from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import resource
import signal
import socket
import subprocess
import sys
from typing import Optional


def _exit_on_sigterm(signum, frame):
    raise SystemExit(128 + signum)


# A benchmark stopped by `timeout` (SIGTERM) unwinds like one stopped by Ctrl-C: its `finally` blocks
# stop the servers and busy loops it started, rather than leaving them running.
signal.signal(signal.SIGTERM, _exit_on_sigterm)


def tf_python(default: str = "/opt/tfvenv/bin/python") -> Optional[str]:
    """A Python that has TensorFlow: this one, $TF_PYTHON or `default`; None if none (or if
    TF_PYTHON=none: a tensorweave-only run)."""
    if os.environ.get("TF_PYTHON") == "none":
        return None
    if importlib.util.find_spec("tensorflow") is not None:
        return sys.executable
    for cand in (os.environ.get("TF_PYTHON"), default):
        if cand and os.path.exists(cand):
            return cand
    return None


def run_json(python: str, script: str, args: list, timeout: float = 1800, env: Optional[dict] = None) -> Optional[dict]:
    """Runs `python script ARGS --json` (with `env` added to the environment) and returns the JSON
    object it printed last (TensorFlow may print after it); prints why and returns None when the
    run fails."""
    proc = subprocess.run([python, os.path.abspath(script), *map(str, args), "--json"], capture_output=True,
                          text=True, timeout=timeout, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", **(env or {})))
    if proc.returncode == 0:
        for line in reversed(proc.stdout.splitlines()):
            if line.startswith("{"):
                return json.loads(line)
    print(f"(run under {python} failed: {proc.stderr.strip()[-500:]})")
    return None


def free_ports(n: int) -> list:
    """n distinct free loopback ports."""
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


BUSY_LOOP = "while True:\n    pass\n"


@contextlib.contextmanager
def busy_loops(n: int):
    """`n` processes that each keep a core busy (a Python `while True: pass`) for the length of
    the block: the contention of a shared machine or a Kubernetes node (issue 26), the same for
    both frameworks of a run. n=0 starts none."""
    procs = [subprocess.Popen([sys.executable, "-c", BUSY_LOOP], stdin=subprocess.DEVNULL) for _ in range(n)]
    try:
        yield procs
    finally:
        for p in procs:
            p.kill()
        for p in procs:
            p.wait()


def add_contend_arg(parser) -> None:
    parser.add_argument("--contend", type=int, default=0, metavar="N",
                        help="start N busy-loop processes for the length of the run (contention; 2 in issue 26)")


def children_cpu_s() -> float:
    """User + system CPU seconds of this process's children that have ended (and been waited for)."""
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def own_cpu_s() -> float:
    """User + system CPU seconds of this process so far."""
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime
