"""A seeded fuzzer of every message a server takes, over ZeroMQ TCP and the same-host Unix
socket (issue 15): requests of every method, one-way pushes and cancels, well-formed and
mutated (fields dropped, retyped, lied about), garbage frames, bad tensor descriptors and
Unix-socket framing lies. Afterwards the server must still answer a real step over both
transports, and its resident memory must have grown less than RSS_BOUND.

    pytest tests/cluster/test_fuzz.py                  # 5,000 messages (CI: well under a minute)
    pytest tests/cluster/test_fuzz.py --long -s        # 1,000,000 (or TENSORWEAVE_FUZZ_LONG=1)
    TENSORWEAVE_FUZZ_MESSAGES=20000 TENSORWEAVE_FUZZ_SEED=7 pytest tests/cluster/test_fuzz.py -s

A failure prints the seed: the same seed sends the same messages in the same order. Ops whose
kernels allocate what their inputs ask for (Fill, Tile, Range, ...) are left out until their
element limits land; the graphs use identity, arithmetic, variables, Send/Recv and While.
"""
from __future__ import annotations

import collections
import os
import random
import struct
import time

import msgpack
import numpy as np

import tensorweave as tf
from tensorweave.distributed import channel as channel_mod
from tensorweave.distributed import wire
from tensorweave.framework.graph_def import graph_to_graph_def
from tensorweave.ops import sendrecv as sendrecv_ops

from raw_peer import TRANSPORTS, RawPeer, raw_header, rss_bytes, uds_bytes

T0, T1 = "/job:local/replica:0/task:0", "/job:local/replica:0/task:1"
SEED = int(os.environ.get("TENSORWEAVE_FUZZ_SEED", "1515"))
RSS_BOUND = 96 << 20
ENV = {"TENSORWEAVE_CLIENT_LEASE_S": "2", "TENSORWEAVE_PEER_STALL_S": "2", "TENSORWEAVE_REGISTRATION_LEASE_S": "3",
       "TENSORWEAVE_MAX_REQUEST_THREADS": "64", "TENSORWEAVE_MAX_MESSAGE_BYTES": str(8 << 20),
       "TENSORWEAVE_MAX_UNCLAIMED_PUSH_BYTES": str(4 << 20), "TENSORWEAVE_MAX_REGISTRATIONS_PER_CLIENT": "200"}
SAFE_OPS = ("Identity", "Add", "Mul", "Sub", "Const", "Placeholder", "_Recv", "_Send", "VarHandleOp", "ReadVariableOp",
            "AssignVariableOp", "AssignAddVariableOp", "NoOp", "RmRf", "")
STEP_IDS = list(range(1, 40))
CLIENTS = ("fuzz-a", "fuzz-b", "fuzz-c", "")


def _messages(request) -> int:
    if request.config.getoption("--long") or os.environ.get("TENSORWEAVE_FUZZ_LONG"):
        return 1_000_000
    return int(os.environ.get("TENSORWEAVE_FUZZ_MESSAGES", "5000"))


# -- base graphs the mutations start from ----------------------------------------------------------
def _base_graphs() -> list:
    graphs = []
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None], name="x")
        tf.identity(x * 2.0 + 1.0, name="y")
    graphs.append((graph_to_graph_def(g).to_dict(), ["x:0"], ["y:0"]))
    g = tf.Graph()
    with g.as_default():
        r = sendrecv_ops.recv(tf.float32, "edge", T0, T1, shape=[None], name="recv")
        tf.identity(r, name="out")
    graphs.append((graph_to_graph_def(g).to_dict(), [], ["out:0"]))
    g = tf.Graph()
    with g.as_default():
        v = tf.Variable(np.float32(1), name="fuzz_v")
        tf.identity(tf.assign_add(v, 1.0), name="inc")
    graphs.append((graph_to_graph_def(g).to_dict(), [], ["inc:0"]))
    g = tf.Graph()
    with g.as_default():
        c = tf.constant(np.arange(4, dtype=np.int64), name="c")
        sendrecv_ops.send(c, "self_edge", T1, T1, name="send_self")
        tf.identity(tf.while_loop(lambda i: i < 50, lambda i: i + 1, [tf.constant(0)]), name="loop")
    graphs.append((graph_to_graph_def(g).to_dict(), [], ["loop:0"]))
    return graphs


# -- random plain data ----------------------------------------------------------------------------
class Gen:
    """Every random choice of one run, from one seed."""

    def __init__(self, seed: int):
        self.r = random.Random(seed)
        self.np = np.random.default_rng(seed)
        self.graphs = _base_graphs()
        self.handles: list = [("nope", [])]   # (graph handle, feeds it takes)
        self.last_feeds: list = []
        self.sessions: list = ["", "s1"]

    def value(self, depth: int = 0):
        r = self.r
        k = r.randrange(12 if depth < 2 else 8)
        if k == 0:
            return None
        if k == 1:
            return r.random() < 0.5
        if k == 2:
            return r.choice([0, -1, 1, 7, 2 ** 31, 2 ** 63 - 1, -(2 ** 63), r.randrange(-1000, 1000)])
        if k == 3:
            return r.choice([0.0, -1.5, float("nan"), float("inf"), 1e308])
        if k == 4:
            return "".join(r.choice("ab:/^_x0\u00e9") for _ in range(r.randrange(0, 12)))
        if k == 5:
            return bytes(r.randrange(256) for _ in range(r.randrange(0, 16)))
        if k in (6, 7):
            return self.tensor()
        if k in (8, 9):
            return [self.value(depth + 1) for _ in range(r.randrange(0, 4))]
        return {str(self.value(depth + 2)): self.value(depth + 1) for _ in range(r.randrange(0, 4))}

    def tensor(self):
        r = self.r
        kind = r.randrange(5)
        shape = tuple(r.randrange(0, 6) for _ in range(r.randrange(0, 3)))
        if kind == 0:
            return np.array([b"a", b"\0bc"][: r.randrange(0, 3)], dtype=object)
        if kind == 1 and r.random() < 0.05:
            return np.ones(r.randrange(1, 1 << 18), np.float32)   # up to 1 MiB
        dtype = r.choice([np.float32, np.float64, np.int32, np.int64, np.bool_, np.uint8, np.complex64])
        return self.np.random(shape).astype(dtype) if shape else dtype(r.randrange(100))

    def mutate(self, args: dict) -> object:
        """args as is (about half the time), or with one field dropped, retyped or added, or
        replaced altogether."""
        r = self.r
        k = r.randrange(8)
        if k < 4 or not isinstance(args, dict):
            return args
        args = dict(args)
        if k == 4 and args:
            del args[r.choice(sorted(args))]
        elif k == 5 and args:
            args[r.choice(sorted(args))] = self.value()
        elif k == 6:
            args[str(self.value(2))] = self.value()
        else:
            return self.value()
        return args

    # -- one message of each kind (a list of frames) ------------------------------------------
    def request(self, method, args, rid):
        return _encode({"id": rid, "m": method, "a": self.mutate(args)})

    def graph_def(self) -> tuple:
        gd, feeds, fetches = self.r.choice(self.graphs)
        gd = {"node": [dict(n, attr=dict(n["attr"])) for n in gd["node"]], "library": gd.get("library", {}),
              "versions": {}}
        r = self.r
        for _ in range(r.randrange(0, 3)):
            n = r.choice(gd["node"])
            what = r.randrange(6)
            if what == 0:
                n["op"] = r.choice(SAFE_OPS)
            elif what == 1:
                n["input"] = [r.choice(["x:0", "y:7", "^x", "c", "recv:3", "", "nope:0"])]
            elif what == 2:
                gd["node"].append(dict(n))   # a duplicate name
            elif what == 3:
                n["attr"][r.choice(sorted(n["attr"]) or ["k"])] = self.value()
            elif what == 4:
                n["attr"].pop("_num_outputs", None)
            else:
                n["name"] = self.value(2) if r.random() < 0.3 else f"{n['name']}_"
        if r.random() < 0.1:
            fetches = [r.choice(["y:7", "out:1", "c:0", "loop", "x:0"])]
        return gd, feeds, fetches

    def message(self, kind: str, rid: int) -> list:
        r = self.r
        step = r.choice(STEP_IDS) if r.random() < 0.3 else r.getrandbits(63)   # (aborted ids do not run again)
        if kind == "ping":
            return self.request("ping", {"wait": [[bytes(r.randrange(256) for _ in range(12)), rid]],
                                         "client": r.choice(CLIENTS)}, rid)
        if kind == "get_status":
            return self.request("get_status", {}, rid)
        if kind == "register_graph":
            gd, feeds, fetches = self.graph_def()
            self.last_feeds = [np.ones(3, np.float32)] if feeds else []
            return self.request("register_graph", {"graph_def": gd, "feeds": feeds, "fetches": fetches,
                                                   "targets": [], "client": r.choice(CLIENTS),
                                                   "session_handle": r.choice(self.sessions),
                                                   "config": {"isolate_session_state": r.random() < 0.2}}, rid)
        if kind == "run_graph":
            handle, feeds = r.choice(self.handles)
            if r.random() < 0.3:
                feeds = [self.tensor() for _ in range(r.randrange(0, 3))]
            return self.request("run_graph", {"graph_handle": handle, "step_id": step,
                                              "feed_values": feeds, "trace": r.random() < 0.1,
                                              "timeout_s": r.choice([0.05, 0.2, 0.5]),
                                              "carry_to": r.choice([None, None, T0, "zz"])}, rid)
        if kind == "abort_step":
            return self.request("abort_step", {"step_id": step, "code": r.randrange(-2, 20), "message": "fuzz"}, rid)
        if kind == "deregister_graph":
            return self.request("deregister_graph", {"graph_handle": r.choice(self.handles)[0]}, rid)
        if kind == "close_session":
            return self.request("close_session", {"session_handle": r.choice(self.sessions)}, rid)
        if kind == "reset":
            return self.request("reset", {"containers": r.choice([None, [""], ["nope"]])}, rid)
        if kind == "recv_tensor":
            return self.request("recv_tensor", {"send_device": r.choice([T0, T1, "/job:evil/task:0"]),
                                                "recv_device": r.choice([T1, T1, T0]), "tensor_name": "edge",
                                                "step_id": step, "value": self.tensor()}, rid)
        if kind == "push":
            a = [r.choice([T0, T1, "x"]), r.choice([T1, T1, T0]), r.choice(["edge", "self_edge"]), step, self.tensor()]
            return _encode({"m": "recv_tensor", "a": self.mutate(a) if r.random() < 0.5 else a})
        if kind == "cancel":
            return _encode({"m": "cancel", "a": self.mutate({"id": r.randrange(0, rid + 1)})})
        if kind == "unknown_method":
            return self.request(r.choice(["format_disk", "", "PING", "run_graph2"]), {}, rid)
        if kind == "garbage":
            return [bytes(r.randrange(256) for _ in range(r.randrange(0, 40))) for _ in range(r.randrange(1, 4))]
        if kind == "bad_tensor":
            desc = r.choice([["float32", [1 << 40], 0, False], ["evil", [1], 0, False], ["int32", [4], 5, False],
                             ["float64", [2, 2], 0, True], ["string", [3], 0, False], "x", ["float32", "s", 0, 0]])
            head = msgpack.packb({"id": rid, "m": "recv_tensor",
                                  "a": {"send_device": T0, "recv_device": T1, "tensor_name": "t", "step_id": step,
                                        "value": msgpack.ExtType(r.choice([1, 1, 9]), msgpack.packb(desc))}})
            return [head] + [bytes(r.randrange(0, 40)) for _ in range(r.randrange(0, 3))]
        raise AssertionError(kind)

    def uds_lie(self, rid: int) -> bytes:
        """Bytes a Unix-socket peer should never send: the server answers or hangs up."""
        r = self.r
        head = raw_header({"id": rid, "m": "get_status", "a": {}})
        k = r.randrange(5)
        if k == 0:
            return struct.pack("<QI", 10, 0)                                  # no frames
        if k == 1:
            return struct.pack("<QI", 10, 1 << 30)                            # too many frames
        if k == 2:
            return struct.pack("<QIQ", 10, 1, 11) + b"\0" * 11                # lengths that do not add up
        if k == 3:
            big = 9 << 20                                                     # over the limit: skipped, answered
            return struct.pack("<QIQQ", len(head) + big, 2, len(head), big) + head + b"\0" * big
        return uds_bytes([head])[: r.randrange(1, len(head) + 20)]           # truncated (and then more)


def _encode(header) -> list:
    return wire.encode(header)


KINDS = {"ping": 6, "get_status": 4, "register_graph": 10, "run_graph": 14, "abort_step": 5, "deregister_graph": 4,
         "close_session": 3, "reset": 0.3, "recv_tensor": 8, "push": 10, "cancel": 4, "unknown_method": 3,
         "garbage": 6, "bad_tensor": 6, "uds_framing": 3}


# -- the run --------------------------------------------------------------------------------------
def _real_step(address: str, transport: str) -> None:
    gd, feeds, fetches = _base_graphs()[0]
    ch = channel_mod.Channel(("tcp://" if transport == "tcp" else "") + address, T1, 10.0)
    try:
        h = ch.call("register_graph", {"graph_def": gd, "feeds": feeds, "fetches": fetches, "client": "check"})
        out = ch.call("run_graph", {"graph_handle": h, "step_id": 10 ** 6, "feed_values": [np.ones(3, np.float32)]})
        np.testing.assert_array_equal(out["values"][0], [3, 3, 3])
        ch.call("deregister_graph", {"graph_handle": h})
    finally:
        ch.close()


def test_fuzz_every_message_over_both_transports(start_cluster, request):
    c = start_cluster({"local": 2}, env=ENV)
    address = c.address("local", 1)
    pid = c.procs[("local", 1)].pid
    total = _messages(request)
    for transport in TRANSPORTS:   # warm: the first steps allocate what any step needs
        for _ in range(3):
            _real_step(address, transport)
    rss_before = rss_bytes(pid)
    gen = Gen(SEED)
    kinds, weights = zip(*KINDS.items())
    counts = {t: collections.Counter() for t in TRANSPORTS}
    replies = collections.Counter()
    answered = collections.Counter()   # kind -> replies that were not errors
    pending: dict = {}   # rid -> kind, for the replies that carry a graph handle
    peers = {t: RawPeer(t, address) for t in TRANSPORTS}
    dropped = collections.Counter()
    start = time.monotonic()

    def take_replies(t: str) -> None:
        try:
            got = peers[t].drain()
        except OSError:   # the server hung up on a lie: a new connection
            dropped[t] += 1
            peers[t].close()
            peers[t] = RawPeer(t, address)
            return
        for frames in got:
            replies[t] += 1
            try:
                head = msgpack.unpackb(bytes(frames[0]), raw=False, strict_map_key=False, ext_hook=lambda c, d: None)
            except Exception:  # noqa: BLE001
                continue
            kind = pending.pop(head.get("id"), None) if isinstance(head, dict) else None
            feeds = None
            if isinstance(kind, tuple):
                kind, feeds = kind
            if kind not in (None, "sync") and head.get("ok") is True:
                answered[kind] += 1
                if kind == "register_graph" and isinstance(head.get("r"), str):
                    gen.handles.append((head["r"], feeds))
                    if len(gen.handles) > 64:
                        del gen.handles[1:2]
                elif kind == "reset":
                    del gen.handles[1:]

    def sync(t: str, rid: int) -> float:
        """A ping round trip (the fuzzing client keeps in step with the server); its latency."""
        sent = time.monotonic()
        pending[rid] = "sync"
        peers[t].send(wire.encode({"id": rid, "m": "ping", "a": {}}))
        while time.monotonic() - sent < 30:
            take_replies(t)
            if rid not in pending:
                return time.monotonic() - sent
            time.sleep(0.001)
        raise AssertionError(f"seed {SEED}: no answer to a ping over {t} within 30 s")

    worst_ping = {t: 0.0 for t in TRANSPORTS}
    try:
        for i in range(total):
            t = TRANSPORTS[i % 2]
            kind = gen.r.choices(kinds, weights)[0]
            rid = i + 1
            if kind == "uds_framing" and t != "uds":
                kind = "garbage"
            try:
                if kind == "uds_framing":   # (on a connection of its own: the server hangs up on most lies)
                    liar = RawPeer("uds", address)
                    try:
                        liar.send_bytes(gen.uds_lie(rid))
                    finally:
                        liar.close()
                else:
                    message = gen.message(kind, rid)
                    pending[rid] = (kind, gen.last_feeds) if kind == "register_graph" else kind
                    peers[t].send(message)
            except OSError:
                dropped[t] += 1
                peers[t].close()
                peers[t] = RawPeer(t, address)
            counts[t][kind] += 1
            if i % 8 == 7:
                take_replies(t)
            if i % 500 >= 498:
                worst_ping[t] = max(worst_ping[t], sync(t, -(i + 1)))
            if len(pending) > 10_000:
                pending.clear()
        for t in TRANSPORTS:
            sync(t, -(total + 1))
    finally:
        for p in peers.values():
            p.close()
    took = time.monotonic() - start
    assert c.alive("local", 1), "the server died:\n" + c.stderr("local", 1)[-3000:]
    for t in TRANSPORTS:
        _real_step(address, t)
    time.sleep(3.5)   # registrations of the fuzzing clients expire (their lease: 3 s)
    _real_step(address, "uds")
    rss_after = rss_bytes(pid)
    ch = channel_mod.Channel(address, T1, 10.0)
    status = ch.call("get_status", {})
    ch.close()
    print(f"\nfuzz seed {SEED}: {total} messages in {took:.1f} s; replies {dict(replies)}; "
          f"connections the server dropped {dict(dropped)}")
    print("  answered without error: " + ", ".join(f"{k} {n}" for k, n in sorted(answered.items())))
    print("  slowest ping while fuzzing: " + ", ".join(f"{t} {worst_ping[t] * 1000:.0f} ms" for t in TRANSPORTS))
    for t in TRANSPORTS:
        print(f"  {t}: " + ", ".join(f"{k} {n}" for k, n in sorted(counts[t].items())))
    print(f"  server RSS {rss_before / 2**20:.1f} MiB before, {rss_after / 2**20:.1f} MiB after "
          f"(bound: +{RSS_BOUND >> 20} MiB); it holds " + ", ".join(
              f"{k} {status[k]}" for k in ("graphs", "sessions", "active_steps", "pending_tensors", "aborted_steps")))
    assert rss_after - rss_before < RSS_BOUND, f"seed {SEED}: RSS grew {(rss_after - rss_before) >> 20} MiB"
    assert "Traceback" not in c.stderr("local", 1) or "unexpected error" not in c.stderr("local", 1), \
        f"seed {SEED}: the server logged an unexpected error:\n" + c.stderr("local", 1)[-3000:]
