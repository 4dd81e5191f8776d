"""Tasks on separate network stacks: one Linux network namespace per task, each with its own
address on a bridge (veth pairs), so the TCP path, CURVE and bind rules are exercised between
real network stacks rather than over loopback. Faults are made inside a task's namespace:
nftables drops (a partition, packet loss) and a delaying TCP relay (netns_relay.py; the
kernel here has no netem) spliced in with an nftables DNAT rule.

    def test_x(netns_lab):                      # the fixture (conftest.py); skips unless root + ip + nft
        lab = netns_lab(["ps", "w0"])           # namespaces tw-<tag>-ps, tw-<tag>-w0 on 10.a.b.0/24
        lab.address("ps")                       # "10.a.b.1" (the test process reaches it: it is 10.a.b.254)
        lab.command("ps", [sys.executable, ...])    # the argv that runs it inside that namespace
        lab.partition("ps", ["w0"]); lab.heal("ps")     # drop everything between them; undo
        lab.lose("ps", ["w0"], percent=10)      # drop that share of packets each way
        lab.delay("w0", "ps", port, one_way_ms=25)      # w0's connections to ps:port go via a relay

Names are unique per lab (a random tag), so parallel test workers do not collide; close()
(the fixture calls it, also after a failure, and at exit) kills the relays and deletes the
namespaces and the bridge.
"""
from __future__ import annotations

import atexit
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import uuid
from typing import Optional

RELAY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "netns_relay.py")
TABLE = "twfault"
_LIVE: set = set()


def unavailable_reason() -> Optional[str]:
    """Why namespaces cannot be used here, or None."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return "network namespaces need root"
    for tool, package in (("ip", "iproute2"), ("nft", "nftables")):
        if shutil.which(tool) is None:
            return f"`{tool}` not found (install {package})"
    probe = f"tw-probe-{uuid.uuid4().hex[:8]}"
    made = _run(["ip", "netns", "add", probe], check=False)
    if made.returncode != 0:
        return f"cannot make a network namespace: {made.stderr.strip()}"
    try:
        nft = _run(["ip", "netns", "exec", probe, "nft", "add", "table", "inet", TABLE], check=False)
        if nft.returncode != 0:
            return f"nftables does not work in a namespace: {nft.stderr.strip()}"
    finally:
        _run(["ip", "netns", "del", probe], check=False)
    return None


def _run(argv, check=True, stdin: Optional[str] = None) -> subprocess.CompletedProcess:
    done = subprocess.run(argv, input=stdin, capture_output=True, text=True, timeout=30)
    if check and done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr.strip()}")
    return done


def _free_subnet() -> str:
    """'10.a.b' whose /24 no route of this host uses (a bridge left by another lab included)."""
    routes = _run(["ip", "-4", "route", "show", "table", "all"]).stdout
    for _ in range(200):
        prefix = f"10.{random.randint(64, 250)}.{random.randint(1, 250)}"
        if prefix + "." not in routes:
            return prefix
    raise RuntimeError("no free 10.x.y.0/24 subnet for the namespaces")


class NetnsLab:
    """Namespaces joined by one bridge; see the module's text."""

    def __init__(self, names):
        self.tag = uuid.uuid4().hex[:6]
        self.bridge = f"twb{self.tag}"
        self.names = list(names)
        self.namespaces: dict = {}
        self.relays: list = []
        # A namespace's tasks get a TMPDIR of their own, as separate hosts have (sharing one is
        # fine too: test_transport_paths.py's namespace test).
        self.tmpdir = tempfile.mkdtemp(prefix="tw-netns-")
        _LIVE.add(self)
        try:
            self._build()
        except BaseException:
            self.close()
            raise

    def _build(self) -> None:
        self.subnet = _free_subnet()
        self.gateway = f"{self.subnet}.254"   # the bridge's address: the test process and the relays
        _run(["ip", "link", "add", self.bridge, "type", "bridge"])
        _run(["ip", "addr", "add", f"{self.gateway}/24", "dev", self.bridge])
        _run(["ip", "link", "set", self.bridge, "up"])
        for i, name in enumerate(self.names):
            ns, inside, outside = f"tw-{self.tag}-{name}", f"tw{self.tag}{i}a", f"tw{self.tag}{i}b"
            _run(["ip", "netns", "add", ns])
            self.namespaces[name] = ns
            _run(["ip", "link", "add", inside, "type", "veth", "peer", "name", outside])
            _run(["ip", "link", "set", inside, "netns", ns])
            _run(["ip", "link", "set", outside, "master", self.bridge, "up"])
            _run(["ip", "-n", ns, "addr", "add", f"{self.address(name)}/24", "dev", inside])
            _run(["ip", "-n", ns, "link", "set", inside, "up"])
            _run(["ip", "-n", ns, "link", "set", "lo", "up"])
            # drops in filter chains; the relays' DNAT in a nat output chain
            self.nft(name, f"""table inet {TABLE} {{
                chain input {{ type filter hook input priority 0; }}
                chain output {{ type filter hook output priority 0; }}
                chain splice {{ type nat hook output priority -100; }}
            }}""")

    # -- where things are ------------------------------------------------------------------------
    def address(self, name: str) -> str:
        return f"{self.subnet}.{self.names.index(name) + 1}"

    def command(self, name: str, argv) -> list:
        """`argv` run inside the namespace of `name` (with that namespace's TMPDIR)."""
        tmpdir = os.path.join(self.tmpdir, name)
        os.makedirs(tmpdir, exist_ok=True)
        return ["ip", "netns", "exec", self.namespaces[name], "env", f"TMPDIR={tmpdir}", *argv]

    def nft(self, name: str, script: str) -> None:
        _run(["ip", "netns", "exec", self.namespaces[name], "nft", "-f", "-"], stdin=script)

    # -- faults ----------------------------------------------------------------------------------
    def _drop(self, name: str, peers, match: str = "") -> None:
        rules = []
        for peer in peers:
            rules.append(f"add rule inet {TABLE} input ip saddr {self.address(peer)} {match} drop")
            rules.append(f"add rule inet {TABLE} output ip daddr {self.address(peer)} {match} drop")
        self.nft(name, "\n".join(rules))

    def partition(self, name: str, peers) -> None:
        """Every packet between `name` and each of `peers` is dropped (both ways), silently."""
        self._drop(name, peers)

    def lose(self, name: str, peers, percent: int) -> None:
        """`percent` % of the packets between `name` and each of `peers` are dropped, each way."""
        self._drop(name, peers, f"numgen random mod 100 < {int(percent)}")

    def heal(self, name: str) -> None:
        """Undoes partition() and lose() for `name`."""
        self.nft(name, f"flush chain inet {TABLE} input\nflush chain inet {TABLE} output")

    def delay(self, name: str, peer: str, port: int, one_way_ms: float) -> None:
        """New TCP connections from `name` to `peer`:`port` go through a relay (in the root
        namespace, on the bridge) that holds each byte `one_way_ms` in each direction."""
        relay = subprocess.Popen([sys.executable, RELAY, self.gateway, "0", self.address(peer), str(port),
                                  str(one_way_ms)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                 start_new_session=True)
        self.relays.append(relay)
        line = relay.stdout.readline()
        if not line.startswith("RELAYING "):
            raise RuntimeError(f"the relay did not start: {line}{relay.stderr.read()}")
        relay_port = int(line.split()[1])
        self.nft(name, f"add rule inet {TABLE} splice ip daddr {self.address(peer)} tcp dport {port} "
                       f"dnat ip to {self.gateway}:{relay_port}")

    # -- cleanup ---------------------------------------------------------------------------------
    def close(self) -> None:
        for relay in self.relays:
            if relay.poll() is None:
                os.killpg(relay.pid, signal.SIGKILL)
                relay.wait(10)
            relay.stdout.close()
            relay.stderr.close()
        self.relays.clear()
        for i in range(len(self.namespaces)):   # (now: a namespace's own end would go only once its last socket has)
            _run(["ip", "link", "del", f"tw{self.tag}{i}b"], check=False)
        for ns in self.namespaces.values():
            _run(["ip", "netns", "del", ns], check=False)
        self.namespaces.clear()
        _run(["ip", "link", "del", self.bridge], check=False)
        shutil.rmtree(self.tmpdir, ignore_errors=True)
        _LIVE.discard(self)


@atexit.register
def _close_all() -> None:
    for lab in list(_LIVE):
        lab.close()
