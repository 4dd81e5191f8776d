"""Limits and guards of the runtime, without sockets (issue 15): framework.limits, the
executor's checks of a graph (duplicate names, nonexistent outputs) and of a cancelled or late
step, and the rendezvous's allowance of pushed bytes per peer."""
from __future__ import annotations

import time

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.framework import errors, limits
from tensorweave.framework.graph_def import NodeDef, graph_to_graph_def
from tensorweave.runtime.executor import KernelContext, Plan, StepContext
from tensorweave.runtime.rendezvous import Rendezvous, RendezvousKey
from tensorweave.runtime.resources import ResourceManager



# -- framework.limits -----------------------------------------------------------------------------
def test_a_limit_comes_from_its_variable_and_its_error_names_it(monkeypatch, limit):
    limits.override(limits.REQUEST_THREADS, None)
    monkeypatch.setenv("TENSORWEAVE_MAX_REQUEST_THREADS", "7")
    limits._values.pop(limits.REQUEST_THREADS, None)   # (read once: forget the cached value)
    try:
        assert limits.value(limits.REQUEST_THREADS) == 7
        with pytest.raises(errors.ResourceExhaustedError,
                           match=r"threads of 8 threads exceeds the limit max_request_threads = 7 threads "
                                 r"\(TENSORWEAVE_MAX_REQUEST_THREADS\)"):
            limits.check(limits.REQUEST_THREADS, 8, "threads")
    finally:
        limits._values.pop(limits.REQUEST_THREADS, None)
    limit(limits.REQUEST_THREADS, 3)
    assert limits.value(limits.REQUEST_THREADS) == 3
    with pytest.raises(ValueError):
        limits.override(limits.REQUEST_THREADS, 0)


def test_check_elements_counts_in_python_integers(limit):
    limit(limits.OP_OUTPUT_ELEMENTS, 1000)
    assert limits.check_elements([10, 10, 10]) == 1000
    assert limits.check_elements(5) == 5
    with pytest.raises(errors.ResourceExhaustedError, match="Fill output of 1001 elements exceeds the limit "
                                                            "max_op_output_elements = 1000") as e:
        limits.check_elements(1001, op_name="fill", what="Fill output")
    assert e.value.op == "fill"
    with pytest.raises(errors.ResourceExhaustedError, match=str(2 ** 93)):   # no int64 wrap-around
        limits.check_elements([2 ** 31, 2 ** 31, 2 ** 31])


# -- the executor: what a graph must not be, and what a guarded step must not do ------------------
def _ctx():
    return KernelContext(resources=ResourceManager())


def test_duplicate_names_and_nonexistent_outputs_are_refused():
    g = tf.Graph()
    with g.as_default():
        tf.identity(tf.constant(3.0, name="c"), name="d")
    nodes = list(graph_to_graph_def(g).node)
    with pytest.raises(errors.InvalidArgumentError, match="Duplicate node name 'c'"):
        Plan(nodes + [nodes[0]], [], ["d:0"], [], _ctx())
    with pytest.raises(errors.InvalidArgumentError, match=r"Fetch c:7 does not exist: node c \(Const\) has 1 output"):
        Plan(nodes, [], ["c:7"], [], _ctx())
    with pytest.raises(errors.InvalidArgumentError, match="Feed c:1 does not exist"):
        Plan(nodes, ["c:1"], ["d:0"], [], _ctx())
    bad = NodeDef("e", "Identity", ("c:7",), "", dict(nodes[1].attr))
    with pytest.raises(errors.InvalidArgumentError, match="Input 'c:7' of node e does not exist"):
        Plan(nodes + [bad], [], ["e:0"], [], _ctx())
    assert Plan(nodes, [], ["d:0"], [], _ctx()).run() == [3.0]


def _assign_add_graph():
    g = tf.Graph()
    with g.as_default():
        v = tf.Variable(np.float32(1), name="v")
        tf.identity(tf.assign_add(v, 1.0), name="inc")
    return graph_to_graph_def(g), v


def test_a_guarded_plan_changes_no_state_once_its_step_is_cancelled_or_late():
    gd, v = _assign_add_graph()
    ctx = _ctx()
    Plan(gd.node, [], [], [v.initializer.name], ctx).run()
    inc = Plan(gd.node, [], ["inc:0"], [], ctx, guard_state_changes=True)
    assert inc.run((), StepContext(1)) == [2.0]
    cancelled = StepContext(2)
    cancelled.cancel(errors.AbortedError(None, None, "the client gave up"))
    with pytest.raises(errors.AbortedError, match="the client gave up"):
        inc.run((), cancelled)
    late = StepContext(3, deadline=time.monotonic() - 1)
    with pytest.raises(errors.DeadlineExceededError, match="ran past its deadline"):
        inc.run((), late)
    assert inc.run((), StepContext(4)) == [3.0]   # neither refused step added its 1


def test_an_unguarded_plan_needs_no_step():
    gd, v = _assign_add_graph()
    ctx = _ctx()
    Plan(gd.node, [], [], [v.initializer.name], ctx).run()
    assert Plan(gd.node, [], ["inc:0"], [], ctx).run() == [2.0]   # (local sessions: as before)


# -- the rendezvous: pushed bytes per peer ---------------------------------------------------------
def test_pushed_bytes_count_per_peer_until_taken_or_dropped(limit):
    limit(limits.UNCLAIMED_PUSH_BYTES, 1000 + 2 * 256)   # (each waiting value also costs 256 bytes)
    rdv = Rendezvous()
    k = lambda name, step=1, peer="/job:a/replica:0/task:0": RendezvousKey(peer, "/job:b/replica:0/task:0", name, step)  # noqa: E731
    rdv.send(k("x"), np.zeros(100, np.float32), from_peer=True)   # 400 bytes
    rdv.send(k("y"), np.zeros(100, np.float32), from_peer=True)   # 800
    with pytest.raises(errors.ResourceExhaustedError, match="pushed by /job:a/replica:0/task:0.*"
                                                            "max_unclaimed_push_bytes_per_peer"):
        rdv.send(k("z"), np.zeros(100, np.float32), from_peer=True)
    rdv.send(k("z", peer="/job:c/replica:0/task:0"), np.zeros(100, np.float32), from_peer=True)   # another peer
    rdv.send(k("local"), np.zeros(1000, np.float32))   # a task's own sends are not a peer's
    assert rdv.unclaimed_bytes("/job:a/replica:0/task:0") == 800 + 2 * 256
    step = StepContext(1)
    rdv.recv(k("x"), step)
    assert rdv.unclaimed_bytes("/job:a/replica:0/task:0") == 400 + 256
    rdv.drop_step(1, [k("y")])
    assert rdv.unclaimed_bytes("/job:a/replica:0/task:0") == 0
    rdv.send(k("w", step=2), np.zeros(200, np.float32), from_peer=True)
    rdv.abort_step(2, errors.CancelledError(None, None, "gone"))
    assert rdv.unclaimed_bytes("/job:a/replica:0/task:0") == 0
    assert rdv.aborted_error(2).message == "gone" and rdv.aborted_error(3) is None
