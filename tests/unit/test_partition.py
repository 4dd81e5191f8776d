"""Partitioning: Send/Recv pairs on cut edges, feeds, fetches, pruning, libraries; and the
partitions of a graph, run in one process over a shared rendezvous, give the graph's values."""
from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from tensorweave.framework import errors
from tensorweave.framework.graph_def import FunctionDef, GraphDef, NodeDef
from tensorweave.runtime import partition as P
from tensorweave.runtime import placer
from tensorweave.runtime.executor import KernelContext, Plan, StepContext
from tensorweave.runtime.resources import ResourceManager

T0 = "/job:local/replica:0/task:0"
T1 = "/job:local/replica:0/task:1"
T2 = "/job:local/replica:0/task:2"
CLUSTER = {"local": ["h:1", "h:2", "h:3"]}


def const(name, value, device=""):
    arr = np.asarray(value, np.int32)
    return NodeDef(name, "Const", (), device, {"value": arr, "dtype": "int32", "_num_outputs": 1})


def add(name, a, b, device="", ctrl=()):
    return NodeDef(name, "Add", (a, b) + tuple("^" + c for c in ctrl), device, {"_num_outputs": 1})


def identity(name, a, device=""):
    return NodeDef(name, "Identity", (a,), device, {"_num_outputs": 1})


def placeholder(name, device=""):
    return NodeDef(name, "Placeholder", (), device, {"dtype": "int32", "shape": None, "_num_outputs": 1})


def split(gd, feeds, fetches, targets=(), dtypes=None, filters=()):
    names = P.prune(gd, feeds, fetches, targets)
    cd = placer.ClusterDevices.from_cluster(CLUSTER, T0, filters)
    dev = placer.place(gd, cd, nodes=names)
    return P.partition(gd, dev, feeds, fetches, targets, dtypes or {}, nodes=names)


def seed_238():
    """The seed: x = 2 on task 0, y2 = x + (-66) on task 1, y = (x + 300) + y2 on task 0 (x is
    an Identity of the constant, so that it is sent rather than copied)."""
    return GraphDef([const("two", 2), identity("x", "two"), const("m66", -66, "/job:local/task:1"),
                     add("y2", "x", "m66", "/job:local/task:1"),
                     const("c300", 300, "/job:local/task:0"), add("y1", "x", "c300", "/job:local/task:0"),
                     add("y", "y1", "y2", "/job:local/task:0")])


def run_partitions(parts, feeds: dict, fetches, deadline_s=None):
    """Runs every partition in its own thread over one shared rendezvous, like a cluster does."""
    from tensorweave.ops import sendrecv as sendrecv_ops  # noqa: F401  (registers _Send/_Recv)
    from tensorweave.runtime.rendezvous import Rendezvous
    rdv = {t: Rendezvous() for t in parts}

    def send(dst, key, value):
        rdv[dst].send(key, value)

    out, errs = {}, []

    def run(p):
        ctx = KernelContext(ResourceManager(), task=p.task, library=dict(p.graph_def.library),
                            services={"rendezvous": rdv[p.task], "send": send})
        try:
            plan = Plan(p.graph_def.node, p.feeds, p.fetches, p.targets, ctx)
            deadline = None if deadline_s is None else time.monotonic() + deadline_s
            vals = plan.run([feeds[f] for f in p.feeds], StepContext(7, deadline=deadline))
            out.update(zip(p.fetches, vals))
        except Exception as e:  # noqa: BLE001
            errs.append(e)

    threads = [threading.Thread(target=run, args=(p,)) for p in parts.values()]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    if errs:
        raise errs[0]
    return [out[f] for f in fetches]


def ops_of(part):
    return [(n.name, n.op) for n in part.graph_def.node]


def test_seed_238_has_one_send_recv_pair_each_way():
    parts = split(seed_238(), [], ["y:0"], dtypes={"x:0": "int32", "y2:0": "int32"})
    assert set(parts) == {T0, T1}
    p0, p1 = parts[T0], parts[T1]
    sends0 = [n for n in p0.graph_def.node if n.op == "_Send"]
    recvs1 = [n for n in p1.graph_def.node if n.op == "_Recv"]
    assert len(sends0) == 1 and len(recvs1) == 1
    s, r = sends0[0], recvs1[0]
    assert s.attr["tensor_name"] == r.attr["tensor_name"] == "x:0"
    assert (s.attr["send_device"], s.attr["recv_device"]) == (T0, T1) == (r.attr["send_device"],
                                                                          r.attr["recv_device"])
    assert s.attr["T"] == r.attr["tensor_type"] == "int32"
    assert s.attr["_num_outputs"] == 0 and r.attr["_num_outputs"] == 1
    assert p0.fetches == ("y:0",) and p1.fetches == ()
    assert s.name in p0.targets
    assert [n.name for n in p1.graph_def.node if n.op == "_Send"] == list(p1.targets)
    y2 = next(n for n in p1.graph_def.node if n.name == "y2")
    assert y2.input[0] == r.name and y2.device == T1 + "/device:CPU:0"
    assert run_partitions(parts, {}, ["y:0"]) == [238]


def test_one_send_per_tensor_and_destination():
    gd = GraphDef([const("five", 5), identity("x", "five"), const("one", 1, "/job:local/task:1"),
                   const("two", 2, "/job:local/task:2"),
                   add("a", "x", "one", "/job:local/task:1"), add("b", "x", "a", "/job:local/task:1"),
                   add("c", "x", "two", "/job:local/task:2"), add("d", "b", "c")])
    parts = split(gd, [], ["d:0"])
    sends = [n for n in parts[T0].graph_def.node if n.op == "_Send"]
    assert sorted(n.attr["recv_device"] for n in sends) == [T1, T2]
    assert len([n for n in parts[T1].graph_def.node if n.op == "_Recv"]) == 1
    assert run_partitions(parts, {}, ["d:0"]) == [(5 + (5 + 1)) + (5 + 2)]


def test_control_edge_across_tasks_uses_a_dummy_tensor():
    gd = GraphDef([const("x", 1, "/job:local/task:1"), const("k", 3, "/job:local/task:1"),
                   add("side", "x", "k", "/job:local/task:1"),
                   const("a", 10), const("b", 20), add("main", "a", "b", ctrl=("side",))])
    parts = split(gd, [], ["main:0"])
    dummy = [n for n in parts[T1].graph_def.node if n.op == "Const" and n.input == ("^side",)]
    assert len(dummy) == 1 and dummy[0].attr["value"].shape == (0,)
    recv = next(n for n in parts[T0].graph_def.node if n.op == "_Recv")
    main = next(n for n in parts[T0].graph_def.node if n.name == "main")
    assert "^" + recv.name in main.input
    assert run_partitions(parts, {}, ["main:0"]) == [30]


def test_feeds_go_to_consumers_and_cut_the_graph():
    gd = GraphDef([placeholder("p", "/job:local/task:1"), const("k", 4, "/job:local/task:2"),
                   add("u", "p", "k", "/job:local/task:2"), add("v", "p", "p")])
    parts = split(gd, ["p:0"], ["u:0", "v:0"])
    assert set(parts) == {T0, T2}            # the placeholder's own task is never contacted
    assert parts[T2].feeds == ("p:0",) and parts[T0].feeds == ("p:0",)
    assert not any(n.op in ("_Send", "_Recv") for p in parts.values() for n in p.graph_def.node)
    assert run_partitions(parts, {"p:0": np.int32(3)}, ["u:0", "v:0"]) == [7, 6]


def test_fetch_of_a_fed_tensor_is_left_to_the_master():
    gd = GraphDef([placeholder("p", "/job:local/task:1"), add("v", "p", "p")])
    parts = split(gd, ["p:0"], ["p:0", "v:0"])
    assert [p.fetches for p in parts.values()] == [("v:0",)]


def test_pruning_leaves_unused_tasks_out():
    gd = seed_238()
    parts = split(gd, [], ["y1:0"])
    assert set(parts) == {T0}
    assert {n.name for n in parts[T0].graph_def.node} == {"two", "x", "c300", "y1"}


def test_small_constants_are_copied_to_their_consumers_large_ones_sent():
    big = NodeDef("big", "Const", (), "", {"value": np.zeros(P.MAX_COPIED_CONST_BYTES // 4 + 1, np.int32),
                                           "dtype": "int32", "_num_outputs": 1})
    gd = GraphDef([const("small", 7), big, add("u", "small", "small", "/job:local/task:1"),
                   add("v", "big", "big", "/job:local/task:1"), add("w", "u", "small")])
    parts = split(gd, [], ["w:0", "v:0"])
    p1 = parts[T1]
    copied = [n for n in p1.graph_def.node if n.name == "small"]
    assert len(copied) == 1 and copied[0].device == T1 + "/device:CPU:0"
    recvs = [n.attr["tensor_name"] for n in p1.graph_def.node if n.op == "_Recv"]
    assert recvs == ["big:0"]
    w, v = run_partitions(parts, {}, ["w:0", "v:0"])
    assert w == 21 and v.shape == big.attr["value"].shape


def test_targets_run_on_their_task():
    gd = GraphDef([const("a", 1, "/job:local/task:2"), const("b", 2, "/job:local/task:2"),
                   add("t", "a", "b", "/job:local/task:2")])
    parts = split(gd, [], [], ["t"])
    assert set(parts) == {T2} and parts[T2].targets == ("t",) and parts[T2].fetches == ()


def test_device_filters_forbid_excluded_tasks():
    with pytest.raises(errors.InvalidArgumentError, match="Cannot assign a device for operation m66"):
        split(seed_238(), [], ["y:0"], filters=["/job:local/task:0"])
    assert set(split(seed_238(), [], ["y1:0"], filters=["/job:local/task:0"])) == {T0}


def test_function_library_goes_only_where_referenced():
    body = FunctionDef("body_fn", ("i:0",), ("o:0",), (NodeDef("o", "Identity", ("i",), "", {"_num_outputs": 1}),))
    unused = FunctionDef("unused_fn", (), (), ())
    gd = GraphDef([const("a", 1, "/job:local/task:1"),
                   NodeDef("f", "SomeCall", ("a",), "/job:local/task:1", {"f": "body_fn", "_num_outputs": 1}),
                   add("z", "f", "f")], {"body_fn": body, "unused_fn": unused})
    parts = split(gd, [], ["z:0"])
    assert set(parts[T1].graph_def.library) == {"body_fn"}
    assert parts[T0].graph_def.library == {}


def test_prune_raises_not_found_for_unknown_nodes():
    with pytest.raises(errors.NotFoundError):
        P.prune(seed_238(), [], ["nope:0"], [])


def test_ping_pong_partitions_take_their_recvs_in_one_shared_order():
    # Listed consumers first (as after a late _add_control_input): emitted in graph order,
    # task 0 would wait on b1's Recv before k's, while task 1 needs x (made from k) for b1.
    gd = GraphDef([identity("out", "b1", "/job:local/task:0"), identity("b1", "x", "/job:local/task:1"),
                   identity("x", "kk", "/job:local/task:0"), identity("kk", "k", "/job:local/task:1"),
                   const("k", 5, "/job:local/task:1")])
    parts = split(gd, [], ["out:0"])
    recvs0 = [n.attr["tensor_name"] for n in parts[T0].graph_def.node if n.op == "_Recv"]
    assert recvs0 == ["kk:0", "b1:0"]
    assert run_partitions(parts, {}, ["out:0"], deadline_s=5.0) == [5]
    # a longer ping-pong: every hop on the other task
    nodes, prev = [const("c", 1, "/job:local/task:0")], "c"
    for i in range(6):
        nodes.append(add(f"h{i}", prev, prev, f"/job:local/task:{(i + 1) % 2}"))
        prev = f"h{i}"
    parts = split(GraphDef(nodes[::-1]), [], [f"{prev}:0"])
    assert run_partitions(parts, {}, [f"{prev}:0"], deadline_s=5.0) == [64]
