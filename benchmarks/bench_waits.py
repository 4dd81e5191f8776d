"""Same-host waits under contention: two processes ping-pong a byte over a Unix socket pair, each
waiting for the other with the transport's `sockets.SpinPoll` and doing --work_us of busy work a
turn (a ps and a worker, small), for each waiting policy:

  adaptive   SpinPoll as it is: spin (yielding) up to TENSORWEAVE_SPIN_US while waits are short,
             and not for a second after a yield lost the CPU (every core busy)
  no-pause   the spin without that pause (SpinPoll before issue 26 item 5)
  sleep      no spinning (TENSORWEAVE_SPIN_US=0): every wait sleeps in poll(2)

    python benchmarks/bench_waits.py [--work_us 30,100] [--seconds 2] [--rounds 3] [--contend 2]

The policies alternate for --rounds rounds, each run a fresh pair of processes; printed: the
median round trips a second and both processes' CPU microseconds a round trip, with the load
average. --contend N runs N busy-loop processes for the whole measurement.
"""
from __future__ import annotations

import argparse
import os
import select
import socket
import statistics
import sys
import time

from _harness import add_contend_arg, busy_loops, load_average

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from tensorweave.distributed import sockets

POLICIES = ("adaptive", "no-pause", "sleep")


def _side(sock: socket.socket, work_s: float, seconds: float, first: bool) -> int:
    poller = select.poll()
    poller.register(sock.fileno(), select.POLLIN)
    waiter, rounds = sockets.SpinPoll(poller), 0
    if first:
        sock.send(b"x")
    start = time.perf_counter()
    while True:
        waiter.poll(10_000)
        if sock.recv(16) != b"x":
            return rounds
        end = time.perf_counter() + work_s
        while time.perf_counter() < end:
            pass
        rounds += 1
        if first and time.perf_counter() - start > seconds:
            sock.send(b"q")
            return rounds
        sock.send(b"x")


def run(policy: str, work_us: float, seconds: float) -> tuple:
    """(round trips a second, CPU microseconds a round trip of both processes) of one run."""
    spin_s, contended = sockets.SPIN_S, sockets.CONTENDED_YIELD_S
    sockets.SPIN_S = 0.0 if policy == "sleep" else spin_s
    sockets.CONTENDED_YIELD_S = float("inf") if policy == "no-pause" else contended
    try:
        a, b = socket.socketpair()
        t0, c0 = time.perf_counter(), os.times()
        pid = os.fork()
        if pid == 0:
            a.close()
            _side(b, work_us * 1e-6, seconds, False)
            os._exit(0)
        b.close()
        rounds = _side(a, work_us * 1e-6, seconds, True)
        os.waitpid(pid, 0)
        wall, c1 = time.perf_counter() - t0, os.times()
        a.close()
    finally:
        sockets.SPIN_S, sockets.CONTENDED_YIELD_S = spin_s, contended
    cpu = sum(getattr(c1, f) - getattr(c0, f) for f in ("user", "system", "children_user", "children_system"))
    return rounds / wall, 1e6 * cpu / max(rounds, 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work_us", default="30,100", help="comma-separated: busy work a turn, each side")
    parser.add_argument("--seconds", type=float, default=2.0, help="length of one run")
    parser.add_argument("--rounds", type=int, default=3)
    add_contend_arg(parser)
    args = parser.parse_args()
    print(f"bench_waits: SpinPoll ping-pong, spin {sockets.SPIN_S * 1e6:.0f} us; load average {load_average()}, "
          f"{os.cpu_count()} cores" + (f"; {args.contend} busy-loop processes running" if args.contend else ""))
    works = [float(w) for w in args.work_us.split(",") if w]
    results: dict = {}
    with busy_loops(args.contend):
        for _ in range(args.rounds):
            for work in works:
                for policy in POLICIES:
                    results.setdefault((work, policy), []).append(run(policy, work, args.seconds))
    for (work, policy), runs in results.items():
        print(f"work {work:5.0f} us  {policy:10s} {statistics.median(r for r, _ in runs):8.0f} round trips/s "
              f"(runs {' / '.join(f'{r:.0f}' for r, _ in runs)})  CPU {statistics.median(c for _, c in runs):6.1f} "
              "us a round trip")
    print(f"load average after: {load_average()}")


if __name__ == "__main__":
    main()
