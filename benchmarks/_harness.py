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


# Touches 512 MiB in transparent huge pages (numpy asks for them on large arrays) and exits.
_SETTLE = "import numpy as np; np.ones(1 << 27, np.float32)"


def settle_memory() -> None:
    """Runs _SETTLE in a process of its own. On the 2-core VM the first process to fault in large
    arrays after another has exited (TensorFlow's side, in an alternating benchmark) pays for the
    huge pages: word2vec took 1.2-1.3 s there against 0.80 s next, CPU time included, whichever
    checkout ran in that place, and 0.80-0.86 s after this toucher (docs/PERFORMANCE.md, wave 14)."""
    subprocess.run([sys.executable, "-c", _SETTLE], check=False, timeout=120)


def run_json(python: str, script: str, args: list, timeout: float = 1800, env: Optional[dict] = None) -> Optional[dict]:
    """Runs `python script ARGS --json` (with `env` added to the environment) on settled memory
    (settle_memory) and returns the JSON object it printed last (TensorFlow may print after it);
    prints why and returns None when the run fails."""
    settle_memory()
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
