"""The collective algorithms of ops/collective_ops.py with no sockets: the ring's segments and
chunks, and the all-reduce / gather run by threads over an in-memory link, against numpy; the
group leader's bookkeeping and the wire checks of distributed/collectives.py. The same functions
run between real processes in tests/cluster/test_collectives.py."""
from __future__ import annotations

import os
import queue
import subprocess
import sys
import time
import threading
import types

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.distributed import collectives, shm
from tensorweave.distributed.cluster import ClusterSpec
from tensorweave.distributed.collectives import Collectives
from tensorweave.distributed.wire import WireError
from tensorweave.framework import errors
from tensorweave.ops import collective_ops as co
from tensorweave.runtime.rendezvous import Rendezvous


class _Net:
    """Mailboxes between `size` ranks; records what crossed."""

    def __init__(self, size: int):
        self.size = size
        self.boxes: dict = {}
        self.lock = threading.Lock()
        self.sent_bytes = [0] * size

    def box(self, key):
        with self.lock:
            return self.boxes.setdefault(key, queue.Queue())


class _Link(co.CollectiveLink):
    def __init__(self, net: _Net, rank: int):
        self.net, self.rank, self.size = net, rank, net.size

    def send(self, dst, tag, value, anonymous=False):
        assert dst != self.rank
        self.net.sent_bytes[self.rank] += value.nbytes
        self.net.box((None if anonymous else self.rank, dst, tag)).put(value)

    def recv(self, src, tag):
        return self.net.box((src, self.rank, tag)).get(timeout=30)


def _run_group(size: int, fn) -> tuple:
    net = _Net(size)
    results: list = [None] * size
    failures: list = []

    def member(r):
        try:
            results[r] = fn(_Link(net, r), r)
        except BaseException as e:  # noqa: BLE001 - reported below
            failures.append(e)
    threads = [threading.Thread(target=member, args=(r,)) for r in range(size)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    if failures:
        raise failures[0]
    return results, net


def test_segments_cover_any_length_and_differ_by_at_most_one():
    for n in (0, 1, 2, 3, 7, 8, 1001):
        for k in (1, 2, 3, 4, 5):
            b = co.segment_bounds(n, k)
            lengths = np.diff(b)
            assert b[0] == 0 and b[-1] == n and len(b) == k + 1
            assert lengths.max() - lengths.min() <= 1
    assert co.segment_bounds(10, 4) == [0, 3, 6, 8, 10]   # numpy.array_split's cut
    assert [len(p) for p in np.array_split(np.arange(10), 4)] == list(np.diff(co.segment_bounds(10, 4)))


def test_chunks_tile_the_segment():
    assert co.chunk_bounds(5, 5, 3) == []
    assert co.chunk_bounds(0, 7, 3) == [(0, 3), (3, 6), (6, 7)]
    assert co.chunk_bounds(2, 4, 100) == [(2, 4)]


@pytest.mark.parametrize("size", [2, 3, 4])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
@pytest.mark.parametrize("n", [0, 1, 5, 1001])
@pytest.mark.parametrize("merge_op", ["Add", "Max", "Min"])
def test_ring_all_reduce_equals_numpy(size, dtype, n, merge_op):
    rng = np.random.RandomState(n + size)
    inputs = [(rng.randn(n) * 100).astype(dtype) for _ in range(size)]
    # Tiny chunks and no small-tensor shortcut: many chunks per segment, the ring's every path.
    results, _ = _run_group(size, lambda link, r: co.ring_all_reduce(
        inputs[r], link, co.MERGE_OPS[merge_op], chunk_bytes=3 * np.dtype(dtype).itemsize, small_bytes=0))
    want = {"Add": np.sum, "Max": np.max, "Min": np.min}[merge_op](np.stack(inputs), axis=0)
    for got in results:
        assert got.dtype == dtype and got.shape == (n,)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-3 if dtype == np.float32 else 1e-9)
        np.testing.assert_array_equal(got, results[0])   # every member the same bits


@pytest.mark.parametrize("hosts", [["a", "a", "b", "b", "b"], ["a", "b", "a", "c", "b"], ["a", "a"]])
def test_hierarchical_all_reduce_equals_numpy_and_crosses_hosts_once_per_host(hosts):
    size, n = len(hosts), 1001
    inputs = [np.random.RandomState(r).randn(n) for r in range(size)]
    crossed = [0]

    class HostLink(_Link):
        def __init__(self, net, rank):
            super().__init__(net, rank)
            self.hosts = hosts

        def send(self, dst, tag, value, anonymous=False):
            if hosts[dst] != hosts[self.rank]:
                crossed[0] += value.nbytes
            super().send(dst, tag, value, anonymous)

    net = _Net(size)
    results: list = [None] * size
    threads = [threading.Thread(target=lambda r=r: results.__setitem__(r, co.hierarchical_all_reduce(
        inputs[r], HostLink(net, r), np.add, lambda v: co.final_divide(v, size), small_bytes=0, chunk_bytes=800)))
        for r in range(size)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    for got in results:
        np.testing.assert_allclose(got, np.mean(inputs, axis=0), rtol=1e-12, atol=1e-12)
        np.testing.assert_array_equal(got, results[0])
    nhosts = len(set(hosts))
    assert crossed[0] == (2 * (nhosts - 1) * n * 8 if nhosts > 1 else 0)   # the ring among one member per host


def _ring_order_sum(inputs: list) -> np.ndarray:
    """The ring's sum: segment s starts at member s, each next member adds its own in front."""
    k, n = len(inputs), inputs[0].size
    bounds, want = co.segment_bounds(n, k), np.empty_like(inputs[0])
    for s in range(k):
        a, b = bounds[s], bounds[s + 1]
        acc = inputs[s][a:b]
        for j in range(1, k):
            acc = inputs[(s + j) % k][a:b] + acc
        want[a:b] = acc
    return want


@pytest.mark.parametrize("size", [2, 3, 4])
@pytest.mark.parametrize("shared", [True, False])
def test_one_host_all_reduce_gathers_directly_in_the_ring_s_order_with_outputs_of_their_own(size, shared):
    if shared and shm.directory() is None:
        pytest.skip("no private shared-memory directory here")
    pool = shm.Pool(limit_bytes=256 << 20) if shared else None
    n = 3 * (shm.MIN_BYTES // 4) + 7   # (chunks large enough for shared memory, an odd length)
    inputs = [np.random.RandomState(r).randn(n).astype(np.float32) for r in range(size)]

    class OneHostLink(_Link):
        hosts = ["h"] * size
        if shared:
            def local(self, n, dtype, hand_over=False):
                return pool.local(n, dtype, hand_over)

            def lend(self, arr, on):
                return pool.lend(arr, on)
    try:
        results, net = _run_group(size, lambda link, r: co.ring_all_reduce(
            inputs[r], OneHostLink(link.net, r), np.add, small_bytes=0, chunk_bytes=shm.MIN_BYTES))
        want = _ring_order_sum(inputs)
        for got in results:
            np.testing.assert_array_equal(got, want)   # the ring's additions, bit for bit
        # as much as the ring (2 (size - 1) / size each), after the swap that finds a member may not
        # reach the others in place (the link's in_place() says so, as a Link's with TENSORWEAVE_CMA=0)
        assert sum(net.sent_bytes) == 2 * (size - 1) * n * 4 + _addresses(size)
        results[0][...] = 0.0   # each member's output is its own
        assert all(np.array_equal(got, want) for got in results[1:])
        if shared:
            assert all(shm_backed in pool._locals for shm_backed in (g.__array_interface__["data"][0]
                                                                     for g in results))
            assert not any(b.lent for b in pool._locals.values())   # lent only until the barrier
    finally:
        if pool is not None:
            pool.close()


class _ReadingLink(_Link):
    """A link of members on one host that reach one another's memory in place (threads of this
    process: shm.read_peer / write_peer of its own pid, as between processes); `can_read`
    False: one that may not."""
    hosts = None

    def __init__(self, net, rank, can_read=True):
        super().__init__(net, rank)
        self.hosts, self.can_read, self.members = ["h"] * net.size, can_read, [f"m{r}" for r in range(net.size)]
        self._pids = {r: os.getpid() for r in range(net.size)}

    def in_place(self):
        return self.can_read

    read, write, _in_place = collectives.Link.read, collectives.Link.write, collectives.Link._in_place
    _node = types.SimpleNamespace(op="CollectiveReduce", name="red")


class _SharingLink(_ReadingLink):
    """A _ReadingLink whose members also share one output (shm.Pool.group_output)."""
    shared_output, attach_output = collectives.Link.shared_output, collectives.Link.attach_output


def _addresses(size: int) -> int:
    """The bytes of a run's address swap: each member's 14 words (its input's and output's addresses,
    the shared output, the board, its input in its arena) to the first member, which sends every
    other the table of them all."""
    return (size - 1) * 14 * 8 + (size - 1) * size * 14 * 8


class _Waiting:
    """What collectives.Link's waits read of a run (_Wait): a deadline `timeout_s` from now."""

    def __init__(self, timeout_s=None):
        self.deadline = None if timeout_s is None else time.monotonic() + timeout_s
        self.cancelled, self.error, self.pinged = threading.Event(), None, []

    def waiting_for(self, member):
        self.peer = member
        return self

    def time_left(self):
        return None if self.deadline is None else self.deadline - time.monotonic()

    def on_wait(self):
        self.pinged.append(self.peer)


class _BoardLink(_SharingLink):
    """A _SharingLink whose members meet at a board from the second run on (collectives.Link's
    board, offer_board, keep_board, meet), each member's keeping in `owners[rank]`."""

    def __init__(self, net, rank, owners, run, timeout_s=None):
        super().__init__(net, rank)
        self._owner, self.run, self.key = owners[rank], run, (1, 7, 1)
        self._wait, self._offered, self.step_id = _Waiting(timeout_s), None, -5

    board, offer_board, keep_board = collectives.Link.board, collectives.Link.offer_board, collectives.Link.keep_board
    meet, _still_waiting = collectives.Link.meet, collectives.Link._still_waiting


def _owners(size: int) -> list:
    return [types.SimpleNamespace(_boards={}, _made={}, _rendezvous=Rendezvous()) for _ in range(size)]


@pytest.mark.parametrize("size", [2, 3, 4])
@pytest.mark.parametrize("merge_op, final", [("Add", None), ("Add", "Div"), ("Max", None)])
@pytest.mark.parametrize("sharing", [False, True])
def test_members_reaching_one_another_in_place_get_the_ring_s_bits_and_send_no_data(size, merge_op, final, sharing,
                                                                                     monkeypatch):
    if not shm.reaches_peers() or shm.pool() is None:
        pytest.skip("no cross-memory attach or shared memory here")
    monkeypatch.setattr(shm, "MIN_BYTES", 0)
    n = 5 * 1001 + 3   # (several chunks per segment, an odd length)
    inputs = [(np.random.RandomState(r).randn(n) * 100).astype(np.float32) for r in range(size)]
    fin = (lambda v: co.final_divide(v, size)) if final else None
    reduce = co.MERGE_OPS[merge_op]
    ring, _ = _run_group(size, lambda link, r: co.ring_all_reduce(inputs[r], link, reduce, fin, small_bytes=0,
                                                                  chunk_bytes=1000 * 4))
    want = _ring_order_sum(inputs) if merge_op == "Add" else np.max(inputs, axis=0)
    np.testing.assert_array_equal(ring[0], want if final is None else co.final_divide(want, size))
    kept = len(shm.pool()._outputs)
    for again in range(2):
        results, net = _run_group(size, lambda link, r: co.ring_all_reduce(
            inputs[r].reshape(-1, 1), (_SharingLink if sharing else _ReadingLink)(link.net, r), reduce, fin,
            small_bytes=0, chunk_bytes=1000 * 4))
        for got in results:
            assert got.shape == (n, 1) and got.dtype == np.float32
            np.testing.assert_array_equal(got.reshape(-1), ring[0])   # the ring's bits
        assert sum(net.sent_bytes) == _addresses(size)   # the addresses only: no data crossed the link
        if sharing:   # one output, read-only as a received tensor is; the next run reuses it once nobody holds it
            assert not any(got.flags.writeable for got in results)
            del results, got
            assert len(shm.pool()._outputs) <= kept + 1
        else:
            results[0][...] = 0.0   # each member's output is its own
            assert all(np.array_equal(got.reshape(-1), ring[0]) for got in results[1:])


@pytest.mark.parametrize("size", [2, 3, 4])
def test_members_meet_at_a_board_from_the_second_run_on_with_the_ring_s_bits_and_no_messages(size, monkeypatch):
    if not shm.reaches_peers() or shm.pool() is None or shm._futex() is None:
        pytest.skip("no cross-memory attach, shared memory or futex here")
    monkeypatch.setattr(shm, "MIN_BYTES", 0)
    n = 5 * 1001 + 3
    inputs = [(np.random.RandomState(r).randn(n) * 100).astype(np.float32) for r in range(size)]
    want = _ring_order_sum(inputs)
    owners = _owners(size)
    for run in range(4):
        inputs[1][:3] = run   # (a new input every run: the members read what their peers hold now)
        want[:3] = _ring_order_sum([x[:3] for x in inputs])
        results, net = _run_group(size, lambda link, r: co.ring_all_reduce(
            inputs[r], _BoardLink(link.net, r, owners, run), np.add, small_bytes=0, chunk_bytes=1000 * 4))
        for got in results:
            np.testing.assert_array_equal(got, want)   # the ring's bits
        # the first run swaps the addresses in messages and names the board; the next send nothing
        assert sum(net.sent_bytes) == (_addresses(size) if run == 0 else 0)
        assert all(len(o._boards) == 1 for o in owners) and len(owners[0]._made) == 1
        del results, got
    board = owners[0]._boards[(1, 7, 1)]
    assert (board.slots[:, :2] == 4).all()   # every member posted the last run, in and done


def test_a_board_wait_fails_naming_the_member_it_waits_for_when_it_is_gone_or_past_the_timeout(monkeypatch):
    if not shm.reaches_peers() or shm.pool() is None or shm._futex() is None:
        pytest.skip("no cross-memory attach, shared memory or futex here")
    monkeypatch.setattr(shm, "MIN_BYTES", 0)
    owners, x = _owners(2), np.ones(3000, np.float32)
    _run_group(2, lambda link, r: co.ring_all_reduce(x, _BoardLink(link.net, r, owners, 0), np.add, small_bytes=0))
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    link = _BoardLink(_Net(2), 0, owners, 1, timeout_s=60)   # (60 s: a failure, not a hang, were its pid reused)
    link._pids[1] = child.pid   # (member m1's process is gone: its slot never moves)
    started = time.monotonic()
    with pytest.raises(errors.UnavailableError, match="m1 is gone"):
        co.ring_all_reduce(x, link, np.add, small_bytes=0)
    assert time.monotonic() - started < 30   # (a slice or two; a loaded machine's slack)
    link = _BoardLink(_Net(2), 0, owners, 1, timeout_s=0.2)   # alive, not running the op
    with pytest.raises(errors.UnavailableError, match="nothing from m1 within the collective's timeout"):
        co.ring_all_reduce(x, link, np.add, small_bytes=0)
    assert set(link._wait.pinged) <= {"m1"}   # (the pings' rule: the member waited for)
    link = _BoardLink(_Net(2), 0, owners, 1)
    link._owner._rendezvous.abort_step(-5, errors.UnavailableError(None, None, "m1 aborted by m0: gone"))
    with pytest.raises(errors.UnavailableError, match="m1 aborted"):
        co.ring_all_reduce(x, link, np.add, small_bytes=0)


def test_members_take_the_ring_when_one_may_not_read_the_others_and_disagreeing_lengths_are_named():
    if not shm.reaches_peers():
        pytest.skip("no cross-memory attach here")
    n, size = 3001, 3
    inputs = [np.arange(n, dtype=np.float64) * (r + 1) for r in range(size)]
    results, net = _run_group(size, lambda link, r: co.ring_all_reduce(
        inputs[r], _ReadingLink(link.net, r, can_read=r != 1), np.add, small_bytes=0, chunk_bytes=800))
    for got in results:
        np.testing.assert_array_equal(got, _ring_order_sum(inputs))
    assert sum(net.sent_bytes) == _addresses(size) + 2 * (size - 1) * n * 8   # addresses, then the ring
    lengths = [np.zeros(10, np.float32), np.zeros(12, np.float32)]
    with pytest.raises(errors.InvalidArgumentError, match="disagree"):
        _run_group(2, lambda link, r: co.ring_all_reduce(lengths[r], _ReadingLink(link.net, r), np.add,
                                                         small_bytes=0))


def test_reading_a_member_whose_process_is_gone_is_unavailable_naming_it():
    if not shm.reaches_peers():
        pytest.skip("no cross-memory attach here")
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    link = _ReadingLink(_Net(2), 0)
    link._pids[1] = child.pid
    with pytest.raises(errors.UnavailableError, match="m1 is gone"):
        link.read(1, 4096, np.empty(4, np.float32))


def test_ring_moves_two_times_size_minus_one_over_size_of_the_tensor():
    size, n = 4, 4000
    inputs = [np.full(n, r + 1.0) for r in range(size)]
    results, net = _run_group(size, lambda link, r: co.ring_all_reduce(inputs[r], link, np.add, small_bytes=0,
                                                                        chunk_bytes=1000))
    np.testing.assert_array_equal(results[2], np.full(n, 10.0))
    assert net.sent_bytes == [2 * (size - 1) * n * 8 // size] * size


def test_small_tensors_take_one_round_and_mean_divides_integers_like_tf():
    size = 3
    inputs = [np.array([[7, -7], [2, 9]], np.int32) * (r + 1) for r in range(size)]
    results, net = _run_group(size, lambda link, r: co.ring_all_reduce(
        inputs[r], link, np.add, lambda v: co.final_divide(v, size)))
    np.testing.assert_array_equal(results[1], np.array([[14, -14], [4, 18]], np.int32))   # 42/3, -42/3, 12/3, 54/3
    assert results[0].shape == (2, 2)
    assert net.sent_bytes == [(size - 1) * 16] * size
    np.testing.assert_array_equal(co.final_divide(np.array([-7, 7, -1], np.int32), 2), [-3, 3, 0])   # truncates
    np.testing.assert_allclose(co.final_divide(np.array([3.0], np.float32), 2), [1.5])


def test_gather_concatenates_in_rank_order_and_refuses_mismatched_shapes():
    inputs = [np.arange(r + 1, dtype=np.float64).reshape(r + 1, 1) + 10 * r for r in range(3)]
    results, _ = _run_group(3, lambda link, r: co.all_gather_values(inputs[r], link))
    for got in results:
        np.testing.assert_array_equal(got, np.concatenate(inputs))
    bad = [np.zeros((1, 2)), np.zeros((1, 3))]
    with pytest.raises(errors.InvalidArgumentError, match="does not stack"):
        _run_group(2, lambda link, r: co.all_gather_values(bad[r], link))
    rows = [np.zeros((1, 2)), np.zeros((2, 2))]
    with pytest.raises(errors.InvalidArgumentError, match="does not stack"):
        _run_group(2, lambda link, r: co.all_gather_values(rows[r], link, equal_rows=True))


def test_a_peer_with_another_length_is_invalid_argument():
    inputs = [np.zeros(10, np.float32), np.zeros(12, np.float32)]
    with pytest.raises(errors.InvalidArgumentError, match="disagree"):
        _run_group(2, lambda link, r: co.ring_all_reduce(inputs[r], link, np.add, small_bytes=0))


def test_wrappers_build_tf_nodes_and_a_group_of_one_runs_in_a_local_session():
    with tf.Graph().as_default() as g:
        x = tf.constant([1.0, 2.0, 3.0])
        red = co.all_reduce(x, 1, group_key=1, instance_key=1, merge_op="Add", final_op="Div")
        gathered = co.all_gather(tf.constant([[1, 2]]), 1, 1, 2)
        sent = co.broadcast_send(x, [3], tf.float32, 1, 1, 3)
        recv = co.broadcast_recv([3], tf.float32, 2, 1, 4)
        assert red.op.type == "CollectiveReduce" and red.op.get_attr("merge_op") == "Add"
        assert red.op.get_attr("subdiv_offsets") == [0] and red.shape.as_list() == [3]
        assert gathered.shape.as_list() == [1, 2] and recv.shape.as_list() == [3]   # (TF: group_size x rows)
        assert co.all_gather(tf.constant([[1, 2]]), 3, 1, 5).shape.as_list() == [3, 2]
        node = {n.name: n for n in g.as_graph_def().node}[red.op.name]
        assert node.attr["group_size"].i == 1 and node.attr["final_op"].s == b"Div"
        with pytest.raises(ValueError, match="merge_op"):
            co.all_reduce(x, 2, 1, 1, merge_op="Sum")
        with pytest.raises(ValueError, match="group_size"):
            co.all_reduce(x, 0, 1, 1)
        with tf.Session() as sess:
            np.testing.assert_array_equal(sess.run(red), [1.0, 2.0, 3.0])
            np.testing.assert_array_equal(sess.run(gathered), [[1, 2]])
            np.testing.assert_array_equal(sess.run(sent), [1.0, 2.0, 3.0])
            with pytest.raises(errors.FailedPreconditionError, match="distributed runtime"):
                sess.run(recv)


def test_packed_all_reduce_fuses_small_tensors_by_dtype_and_gives_each_back_in_its_shape():
    with tf.Graph().as_default() as g:
        values = [np.arange(6, dtype=np.float32).reshape(2, 3), np.array(5, np.int32), np.ones([4], np.float32),
                  np.full([3, 1], 2.5, np.float32), np.arange(3, dtype=np.int32)]
        reduced = co.all_reduce_packed([tf.constant(v) for v in values], 1, 1, 10, final_op="Div",
                                       bytes_per_pack=48)
        ops = [op for op in g.get_operations() if op.type == "CollectiveReduce"]
        # float32: 24 + 16 bytes fill the first 48-byte pack, 12 more start a second; one int32 pack
        assert sorted(op.get_attr("instance_key") for op in ops) == [10, 11, 12]
        assert [r.shape.as_list() for r in reduced] == [[2, 3], [], [4], [3, 1], [3]]
        with tf.Session() as sess:
            for got, want in zip(sess.run(reduced), values):
                assert got.dtype == want.dtype
                np.testing.assert_array_equal(got, want)
        with pytest.raises(ValueError, match="fully known"):
            co.all_reduce_packed([tf.placeholder(tf.float32, [None])], 1, 1, 1)


def _collectives(task="/job:worker/replica:0/task:0", jobs=None):
    sent: list = []
    cluster = ClusterSpec(jobs or {"ps": ["h:1"], "worker": ["h:2", "h:3", "h:4"]})
    svc = Collectives(task, cluster, Rendezvous(), lambda dst, key, value: sent.append((dst, key, value)),
                      lambda dst, method, args: sent.append((dst, method, args)), lambda *probed: None)
    return svc, sent


def test_the_leader_answers_each_member_once_the_group_is_complete_in_task_order():
    svc, sent = _collectives()
    assert svc.leader == "/job:worker/replica:0/task:0"
    assert _collectives(jobs={"chief": ["h:0"], "worker": ["h:1"]})[0].leader == "/job:chief/replica:0/task:0"
    members = [f"/job:worker/replica:0/task:{i}" for i in (2, 0)] + ["/job:ps/replica:0/task:0"]
    for nonce, member in enumerate(members):
        svc.take_join([member, 7, 3, nonce, 100 + nonce])
    deadline = time.monotonic() + 30
    while len(sent) < 3 and time.monotonic() < deadline:   # (answered from a thread)
        time.sleep(0.01)
    assert sorted(dst for dst, _, _ in sent) == sorted(members)
    answers = {dst: (key, value) for dst, key, value in sent}
    order = ["/job:ps/replica:0/task:0", "/job:worker/replica:0/task:0", "/job:worker/replica:0/task:2"]
    for nonce, member in enumerate(members):
        key, (got_members, epoch, incarnations) = answers[member]
        assert got_members == order and key.tensor_name == f"collective-group/7/{nonce}" and key.step_id < 0
        assert incarnations[order.index(member)] == 100 + nonce   # each member's own, in rank order
    assert len({v[1] for _, v in answers.values()}) == 1   # one epoch for the group


def test_joins_and_aborts_from_the_wire_are_checked():
    svc, sent = _collectives()
    for bad in (["/job:evil/replica:0/task:0", 1, 2, 3, 4], ["/job:worker/replica:0/task:1", 1, 0, 3, 4],
                ["/job:worker/replica:0/task:1", "1", 2, 3, 4], ["/job:worker/replica:0/task:1", 1, 2, 3],
                ["/job:worker/replica:0/task:1", 1, 2, 3, "4"], [1, 2], "join"):
        with pytest.raises(WireError):
            svc.take_join(bad)
    assert svc.take_abort([-5, "x" * 5000]) == (-5, "x" * 1000)
    for bad in ([5, "a real step"], [-5], ["-5", "m"], None):
        with pytest.raises(WireError):
            svc.take_abort(bad)
    assert sent == []


class _Step:
    """What a run's step gives the collective's waits (runtime's step): no deadline of its own."""
    deadline = on_wait = wait_remote = error = None

    def __init__(self):
        self.cancelled = threading.Event()


@pytest.mark.parametrize("answers_as", ["the incarnation that joined", "a restarted process"])
def test_a_wait_fails_when_the_member_waited_for_answers_as_another_incarnation(monkeypatch, answers_as):
    """A member killed and started again before a ping noticed it is gone: its new process
    answers the pings, but never runs the group its old one joined."""
    monkeypatch.setattr(collectives, "PROBE_S", 0.0)   # (a ping at every slice of the wait)
    leader, member = "/job:worker/replica:0/task:0", "/job:worker/replica:0/task:1"
    rendezvous, pushed = Rendezvous(), []
    now_answers = 5 if answers_as == "the incarnation that joined" else 6
    probed = []

    def send(dst, key, value):
        (rendezvous.send(key, value) if dst == leader else pushed.append((dst, key.tensor_name)))

    def probe(task, timeout_s):
        probed.append(task)
        return now_answers
    def push(dst, method, args):
        (svc.take_join(args) if dst == leader else pushed.append((dst, method)))
    svc = Collectives(leader, ClusterSpec({"worker": ["h:1", "h:2"]}), rendezvous, send, push, probe, incarnation=4)
    svc.take_join([member, 7, 2, 99, 5])   # the member's join came first (incarnation 5)
    node = types.SimpleNamespace(name="reduce", op="CollectiveReduce")
    link = svc.instance(node, _Step(), 2, 7, 1, timeout_s=1.0)
    assert link.members == (leader, member) and link.rank == 0
    with pytest.raises(errors.UnavailableError) as raised:
        with link:
            link.recv(1, "x")
    assert member in probed
    if answers_as == "a restarted process":
        assert f"{member} was restarted (incarnation 5 is gone, 6 answers)" in str(raised.value)
    else:   # the live member is waited for until the collective's timeout
        assert "within the collective's timeout" in str(raised.value) and "restarted" not in str(raised.value)
    assert (member, "collective_abort") in pushed and 7 not in svc._groups   # the group is forgotten


def test_the_leader_s_join_given_up_on_completes_no_group():
    """The leader's run timed out waiting for the group: a member joining afterwards waits for
    the leader's next join (a group answered then would have a leader that never runs it)."""
    svc, sent = _collectives(jobs={"worker": ["h:1", "h:2"]})
    leader, member = "/job:worker/replica:0/task:0", "/job:worker/replica:0/task:1"

    def push(dst, method, args):
        assert dst == leader
        svc.take_join(args)

    def send(dst, key, value):
        (svc._rendezvous.send(key, value) if dst == leader else sent.append((dst, key, value)))
    svc._push, svc._send = push, send
    node = types.SimpleNamespace(name="reduce", op="CollectiveReduce")
    with pytest.raises(errors.UnavailableError, match="did not gather every member"):
        svc.instance(node, _Step(), 2, 7, 1, timeout_s=0.2)
    svc.take_join([member, 7, 2, 99, 5])
    assert sent == [] and list(svc._joins[7][1]) == [member]   # nobody answered: the member waits
    link = svc.instance(node, _Step(), 2, 7, 1, timeout_s=60)   # the leader's next run completes the group
    assert link.members == (leader, member)
    deadline = time.monotonic() + 30
    while not sent and time.monotonic() < deadline:   # (answered from a thread)
        time.sleep(0.01)
    (dst, key, (members, epoch, incarnations)), = sent
    assert dst == member and key.tensor_name == "collective-group/7/99" and incarnations == [0, 5]


def test_a_member_gone_while_the_group_forms_fails_the_forming_and_one_never_up_is_waited_for_the_window(
        monkeypatch):
    """Without a timeout the leader's join never hangs on a member gone for good. At the first
    forming a member never seen up may be starting: its refused pings are waited out for
    TENSORWEAVE_RECOVERY_TIMEOUT_S, then it is gone. At a later forming a member of the last
    group whose ping is refused is gone at the first ping. Either way the members that joined
    are told (their joins fail now), and the error names the member."""
    monkeypatch.setattr(collectives, "PROBE_S", 0.0)
    leader, m1, m2 = (f"/job:worker/replica:0/task:{i}" for i in range(3))
    rendezvous, probed, pushed = Rendezvous(), [], []

    def send(dst, key, value):
        (rendezvous.send(key, value) if dst == leader else pushed.append((dst, "group", key.step_id)))

    def push(dst, method, args):
        (svc.take_join(args) if dst == leader else pushed.append((dst, method, args[0])))

    def probe(task, timeout_s):
        probed.append(task)
        raise errors.UnavailableError(None, None, f"Task {task} is unavailable: connection refused")
    svc = Collectives(leader, ClusterSpec({"worker": ["h:1", "h:2", "h:3"]}), rendezvous, send, push, probe)
    node = types.SimpleNamespace(name="reduce", op="CollectiveReduce")
    monkeypatch.setenv("TENSORWEAVE_RECOVERY_TIMEOUT_S", "1")
    svc.take_join([m1, 7, 3, 11, 5])
    with pytest.raises(errors.UnavailableError, match=f"Task {m2} is unavailable.*not up after .* "
                                                      r"\(TENSORWEAVE_RECOVERY_TIMEOUT_S=1\)"):
        svc.instance(node, _Step(), 3, 7, 1, timeout_s=0)
    assert len(probed) > 1 and set(probed) == {m2}   # (pinged again and again, a refusal no verdict)
    assert pushed == [(m1, "collective_abort", collectives._step_key(11))] and 7 not in svc._joins

    monkeypatch.setenv("TENSORWEAVE_RECOVERY_TIMEOUT_S", "600")
    svc.take_join([m1, 7, 3, 12, 5])
    svc.take_join([m2, 7, 3, 13, 6])
    assert svc.instance(node, _Step(), 3, 7, 1, timeout_s=0).members == (leader, m1, m2)   # formed once
    svc.failed(7)   # a run failed: the group is joined again, and m2 does not come
    del probed[:], pushed[:]
    svc.take_join([m1, 7, 3, 14, 5])
    with pytest.raises(errors.UnavailableError, match=f"Task {m2} is unavailable: connection refused"):
        svc.instance(node, _Step(), 3, 7, 1, timeout_s=0)
    assert probed == [m2]   # gone at its first refusal
    assert pushed == [(m1, "collective_abort", collectives._step_key(14))]


def test_a_member_forming_the_group_again_pings_the_leader_and_in_turn_the_other_members(monkeypatch):
    """The member's join waits on a live leader that has not joined again; another member of the
    last group is gone (its ping refused): the member's forming fails naming it, not a hang."""
    monkeypatch.setattr(collectives, "PROBE_S", 0.0)
    leader, m1, m2 = (f"/job:worker/replica:0/task:{i}" for i in range(3))
    cluster, probed = ClusterSpec({"worker": ["h:1", "h:2", "h:3"]}), []

    def probe(task, timeout_s):
        probed.append(task)
        if task == m2:
            raise errors.UnavailableError(None, None, f"Task {task} is unavailable: connection refused")
        return 0
    lead = Collectives(leader, cluster, Rendezvous(), lambda dst, key, value: (
        (lead if dst == leader else member)._rendezvous.send(key, value) if dst != m2 else None),
        lambda dst, method, args: lead.take_join(args), probe)
    member = Collectives(m1, cluster, Rendezvous(), lambda *a: None,
                         lambda dst, method, args: lead.take_join(args), probe)
    node = types.SimpleNamespace(name="reduce", op="CollectiveReduce")
    lead.take_join([m2, 7, 3, 13, 0])
    joined = threading.Thread(target=lambda: member.instance(node, _Step(), 3, 7, 1, timeout_s=60))
    joined.start()
    assert lead.instance(node, _Step(), 3, 7, 1, timeout_s=60).members == (leader, m1, m2)   # formed once
    joined.join(60)
    assert member._groups[7][0] == (leader, m1, m2)
    member.failed(7)   # its run failed: it joins again; the leader has not (yet), m2 never will
    del probed[:]
    with pytest.raises(errors.UnavailableError, match=f"Task {m2} is unavailable: connection refused"):
        member.instance(node, _Step(), 3, 7, 1, timeout_s=0)
    assert probed == [leader, m2]


def test_large_outputs_reuse_a_buffer_only_once_nothing_refers_to_it():
    """An all-reduce's large output comes from a recycled buffer (no fresh pages to fault in),
    never one an earlier output still uses, through any view of it."""
    recycled = co._Recycled(8 << 20)
    f32 = np.dtype(np.float32)
    first = recycled.empty(1 << 20, f32)   # 4 MiB
    first[:] = 1
    kept = first.reshape(2, -1)[1]   # (a view: the buffer is still in use)
    del first
    second = recycled.empty(1 << 20, f32)
    assert not np.shares_memory(second, kept)
    extra = recycled.empty(1 << 20, f32)   # past the 8 MiB kept: a plain array
    assert extra.base is None and not np.shares_memory(extra, second) and not np.shares_memory(extra, kept)
    address = kept.__array_interface__["data"][0] - (2 << 20)
    del kept
    third = recycled.empty(1 << 20, f32)   # the first buffer, free again
    assert third.__array_interface__["data"][0] == address and not np.shares_memory(third, second)
    small = recycled.empty(10, f32)   # (below RECYCLE_MIN_BYTES: plain arrays)
    assert small.base is None and recycled.empty(3 << 20, np.dtype(np.float64)).base is None   # (larger than kept)


def test_runs_of_one_instance_on_a_task_take_turns_in_their_order():
    """A run of an instance starts on a task once the run before it ended there (so every member's
    n-th run agrees on whether the instance's board exists); a run whose turn does not come within
    its timeout fails with UnavailableError, and the group is formed again."""
    svc, _ = _collectives()
    me = "/job:worker/replica:0/task:0"
    svc._groups[7] = ((me, "/job:worker/replica:0/task:1"), 11, {})
    node = types.SimpleNamespace(name="reduce", op="CollectiveReduce")
    first = svc.instance(node, _Step(), 2, 7, 1, timeout_s=0)
    other = svc.instance(node, _Step(), 2, 7, 2, timeout_s=0)   # (another instance: its own turns)
    started: list = []
    second = threading.Thread(target=lambda: started.append(svc.instance(node, _Step(), 2, 7, 1, timeout_s=0)))
    second.start()
    second.join(0.3)
    assert not started and first.run == 0 and other.run == 0
    with first:
        pass
    second.join(30)
    assert started and started[0].run == 1
    with pytest.raises(errors.UnavailableError, match="run 1 of the instance on this task did not end in time"):
        svc.instance(node, _Step(), 2, 7, 1, timeout_s=0.2)   # run 2, while run 1 has not ended
    assert 7 not in svc._groups   # (forgotten: the group forms again)
    svc._groups[7] = ((me, "/job:worker/replica:0/task:1"), 12, {})   # (formed again: a new epoch)
    first = svc.instance(node, _Step(), 2, 7, 1, timeout_s=0)
    failed: list = []

    def waits_without_timeout():
        try:
            svc.instance(node, _Step(), 2, 7, 1, timeout_s=0)
        except errors.UnavailableError as e:
            failed.append(e)
    second = threading.Thread(target=waits_without_timeout, daemon=True)
    second.start()
    deadline = time.monotonic() + 30
    while svc._runs.get((7, 1)) != 2 and time.monotonic() < deadline:   # (run 1 numbered: it waits for its turn)
        time.sleep(0.01)
    with pytest.raises(RuntimeError):
        with first:   # run 0 fails: run 1, waiting for its turn with no timeout, fails too (never a hang)
            raise RuntimeError("run 0 failed")
    second.join(30)
    assert failed and "run 0 of the instance failed on this task" in str(failed[0])


class _ArenaLink(_SharingLink):
    """A _SharingLink whose members name inputs that lie in their arena (distributed/arena.py)."""
    input_ref, peer_input = collectives.Link.input_ref, collectives.Link.peer_input


@pytest.mark.parametrize("size", [2, 3, 4])
@pytest.mark.parametrize("merge_op, final", [("Add", None), ("Add", "Div"), ("Max", None)])
def test_members_read_inputs_that_lie_in_their_arenas_where_they_lie(size, merge_op, final, monkeypatch):
    from tensorweave.distributed import arena
    if not shm.reaches_peers() or shm.pool() is None or arena.policy() is None:
        pytest.skip("no cross-memory attach, shared memory or arena here")
    monkeypatch.setattr(shm, "MIN_BYTES", 0)
    n = 5 * 1001 + 3
    previous = arena.use(arena.policy())
    try:
        inputs = [(np.random.RandomState(r).randn(n * 64) * 100).astype(np.float32)[:n] for r in range(size)]
    finally:
        arena.use(previous)
    assert all(arena.ref(x)[0] for x in inputs)

    def no_cross_memory_reads(*args):
        raise AssertionError("read through cross-memory attach")
    monkeypatch.setattr(shm, "read_peer", no_cross_memory_reads)
    fin = (lambda v: co.final_divide(v, size)) if final else None
    results, net = _run_group(size, lambda link, r: co.ring_all_reduce(
        inputs[r], _ArenaLink(link.net, r), co.MERGE_OPS[merge_op], fin, small_bytes=0, chunk_bytes=1000 * 4))
    want = _ring_order_sum(inputs) if merge_op == "Add" else np.max(inputs, axis=0)
    for got in results:   # the ring's bits (a sum in one pass of _ordered_sum where it is built)
        np.testing.assert_array_equal(got, want if final is None else co.final_divide(want, size))
    assert sum(net.sent_bytes) == _addresses(size)


@pytest.mark.skipif(co.ordered_sum is None, reason="_ordered_sum is not built here")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_one_pass_sum_adds_each_next_input_in_front_as_numpy_does_to_the_bit(dtype):
    rng, bits = np.random.RandomState(3), np.int32 if dtype == np.float32 else np.int64
    for n, k in [(1, 2), (7, 3), (8, 2), (9, 4), (1001, 5), (100003, 4)]:
        xs = [(rng.randn(n + 3) * 100).astype(dtype)[1:n + 1] for _ in range(k)]   # (misaligned for the streams)
        for j, x in enumerate(xs):   # NaNs of distinct payloads: which operand's survives is the order's
            x[j::5] = np.array([0x7FC00001 + j], bits).astype(bits).view(dtype)[0] if dtype == np.float32 else \
                np.array([0x7FF8000000000001 + j], bits).view(dtype)[0]
            x[j + 1::7] = np.inf
        out = np.full(n + 1, -7.0, dtype)[1:]   # (every element written, the unaligned head too)
        co.ordered_sum(out, xs)
        want = np.add(xs[0], xs[1])
        for x in xs[2:]:
            want = np.add(x, want)
        np.testing.assert_array_equal(out.view(bits), want.view(bits))
    with pytest.raises(ValueError, match="float32 or float64 C-contiguous arrays of one length"):
        co.ordered_sum(np.empty(4, dtype), [np.ones(4, dtype), np.ones(5, dtype)])
