"""The benchmarks' shared harness: a benchmark stopped by SIGTERM (`timeout`) still runs its
`finally` blocks, so the server processes and busy loops it started do not outlive it."""
import os
import signal
import subprocess
import sys
import time

BENCHMARKS = os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks")

CHILD = """
import sys, time
sys.path.insert(0, sys.argv[1])
import _harness
with _harness.busy_loops(1) as procs:
    print(procs[0].pid, flush=True)
    time.sleep(120)
"""


def test_sigterm_stops_the_busy_loops_a_benchmark_started():
    bench = subprocess.Popen([sys.executable, "-c", CHILD, BENCHMARKS], stdout=subprocess.PIPE, text=True)
    loop_pid = None
    try:
        loop_pid = int(bench.stdout.readline())
        bench.send_signal(signal.SIGTERM)
        assert bench.wait(timeout=60) == 128 + signal.SIGTERM
        deadline = time.monotonic() + 60
        while os.path.exists(f"/proc/{loop_pid}") and time.monotonic() < deadline:
            time.sleep(0.05)   # (busy_loops waits for its children, so the pid is gone once the bench is)
        assert not os.path.exists(f"/proc/{loop_pid}"), "the busy loop outlived its benchmark"
    finally:
        if bench.poll() is None:
            bench.kill()
            bench.wait()
        if loop_pid is not None and os.path.exists(f"/proc/{loop_pid}"):
            os.kill(loop_pid, signal.SIGKILL)



def _children() -> list:
    """This process's child processes' command lines."""
    pids = []
    for tid in os.listdir("/proc/self/task"):
        with open(f"/proc/self/task/{tid}/children") as f:
            pids += f.read().split()
    lines = []
    for pid in pids:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                lines.append(f.read().replace(b"\0", b" ").decode())
        except OSError:
            pass
    return lines


def test_bench_programs_contend_measures_beside_busy_loops(monkeypatch):
    """`bench_programs.py --contend N`: every side of every round is measured while N busy loops
    run, and they end with the command."""
    sys.path.insert(0, BENCHMARKS)
    try:
        import bench_programs
    finally:
        sys.path.remove(BENCHMARKS)
    seen = []

    def measure(programs, args):
        deadline = time.monotonic() + 60   # (a child shows its parent's command line until it has exec'ed)
        while sum("while True" in line for line in _children()) < args.contend and time.monotonic() < deadline:
            time.sleep(0.05)
        seen.append((programs, _children()))
    monkeypatch.setattr(bench_programs, "measure", measure)
    monkeypatch.setattr(sys, "argv", ["bench_programs.py", "--programs", "gan,autoencoder", "--contend", "2"])
    bench_programs.main()
    (programs, during), = seen
    assert programs == ["gan", "autoencoder"]
    assert sum("while True" in line for line in during) == 2
    assert not any("while True" in line for line in _children())
