"""Collective ops between tasks: CollectiveReduce (all-reduce), CollectiveGather (all-gather),
CollectiveBcastSend / CollectiveBcastRecv, with TF's op names, attrs and semantics (TF 1.15's
tensorflow/python/ops/collective_ops.py wrappers: all_reduce, all_gather, broadcast_send,
broadcast_recv). Not differentiable, as in TF.

Every member of a group (group_key, group_size) runs the op on its own task (tf.device); the n-th
run of instance `instance_key` on one task meets the n-th run on every other member. The group's
members are resolved at run time through the cluster (distributed/collectives.py: the kernel asks
`ctx.services["collectives"].instance(...)` for a link to its peers, by rank); this module holds the
algorithms, over a link (CollectiveLink) with `rank`, `size`, `send(dst_rank, tag, array)` (never waits) and
`recv(src_rank, tag) -> array` (waits, within the op's timeout; src_rank None: from whichever member
sent it `anonymous`ly, a broadcast's receivers not knowing its sender):

  all-reduce: a bandwidth-optimal ring, reduce-scatter then all-gather. The flattened tensor is
  cut into `size` segments (lengths differ by at most one: any length, 0 and 1 included), each
  segment into chunks of at most CHUNK_BYTES; a chunk is forwarded as soon as it is reduced, so
  the 2 (size - 1) steps overlap (pipelined). Each member sends and receives 2 (size-1)/size of the
  tensor. Tensors of at most SMALL_BYTES skip the ring: one round where every member sends its
  tensor to every other and reduces them in rank order (latency, not bandwidth, bounds those).
  Every member computes every element in the same order, so all members get identical bits.
  On one host the all-gather is direct: the member that completes a segment sends it to every
  other, and the members end with a barrier ("done"). The link may offer memory of its own
  (`link.local(n, dtype, hand_over)`, `link.lend(array, on)`: distributed/collectives.py, over
  shm.Pool): the output is then a shared-memory buffer kept between steps once nobody holds the
  last one, a reduce-scatter step reduces straight into the chunk it sends (handed over, not
  copied), and the output's parts go to the other members as references they read in place (lent
  until the barrier). A member's memory passes per byte of its share: about 1 + 2 (size - 2) /
  size + 1 + (size - 1), where the copying ring took about twice that, and no fresh pages.
  Where the members on one host may read and write one another's memory in place
  (`link.in_place()`, `link.read` / `link.write(rank, address, array)`: Linux cross-memory
  attach, distributed/shm.py, each member's process known from its connection),
  there is no ring: the members swap the addresses of their input and output ("mem", through
  the first member: each sends it its own, it sends back the table of all), and the
  first member names an output buffer they all share (`link.shared_output` / `attach_output`:
  shm.Pool.group_output, reused once no member holds it); member r reduces segment r reading the
  others' parts of it chunk by chunk and adds them in the ring's order (the bits are the ring's)
  straight into the shared output: where a member's input lies in its arena (a collective job's
  large arrays: distributed/arena.py; `link.input_ref` / `peer_input`) the others map it and read
  it where it lies, else they copy each chunk of it into a buffer that stays in the cache
  (cross-memory attach, a third of memcpy's speed); a float sum of inputs all read where they
  lie is one pass over them that streams the segment into the shared output (_ordered_sum.c:
  numpy's additions in the same order, the same bits); the barrier ("done",
  through the first member too: 2 (size - 1) messages a round, not size (size - 1)) ends it.
  Per member that reads the tensor once and writes a 1/size share of it: no copy of an input,
  no message carrying data. The shared output is read-only, as a received tensor is. From the
  instance's second run on there are no messages at all: the first run's swap also names a
  board (`link.offer_board` / `keep_board`: shm.Board, a slot a member in shared memory), and
  the swap and the barrier are posts there (`link.meet`: a store, and a futex wake-up of the
  members waiting for it), with the faults' rules of messages (distributed/collectives.py).
  Where the first member has no buffer to offer, each member's output is its own and each
  reduced chunk is written, still in the cache, into every other member's (`link.write`): the
  tensor written once per member. (One member that may not reach the others says so, and then
  every member takes the ring.)
  When the group spans hosts, hierarchically: reduced within each host first, the ring among one
  member per host, the result sent back within each host (hierarchical_all_reduce).
  gather: every member's tensor to every other, concatenated in rank order along dimension 0.
  broadcast: the sender's tensor to every other member.

A value a member sends is never written afterwards (the transport may send it zero-copy, later).
Without the link's own memory (a group across hosts, or one on a host that reads its members'
memory in place), an all-reduce's output of at least
RECYCLE_MIN_BYTES is a view of a buffer reused once nothing refers to it (`_Recycled`; at most
TENSORWEAVE_COLLECTIVE_RECYCLE_BYTES, 512 MiB, kept; 0: off).
"""
from __future__ import annotations

import os
import sys
import threading
from typing import Callable, Optional

import numpy as np

from tensorweave.framework import dtypes, errors
from tensorweave.framework.shapes import TensorShape, as_shape, unknown_shape
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.ops.array.concat import concat, split
from tensorweave.ops.array.core import reshape
from tensorweave.ops.helpers import invalid, make_op
from tensorweave.ops.registry import register

try:
    from tensorweave.ops._ordered_sum import ordered_sum
except ImportError:   # (not built: no C compiler where it was installed; numpy's adds then)
    ordered_sum = None

CHUNK_BYTES = int(os.environ.get("TENSORWEAVE_COLLECTIVE_CHUNK_BYTES", "") or 4 << 20)
SMALL_BYTES = int(os.environ.get("TENSORWEAVE_COLLECTIVE_SMALL_BYTES", "") or 64 << 10)
IN_PLACE_CHUNK_BYTES = 1 << 20   # the in-place all-reduce's chunk: it and its sum stay in the cache (L2)
PACK_BYTES = 4 << 20   # all_reduce_packed's default pack size

RECYCLE_MIN_BYTES = 1 << 20   # outputs at least this large come from recycled buffers
RECYCLE_MAX_BYTES = int(os.environ.get("TENSORWEAVE_COLLECTIVE_RECYCLE_BYTES", "") or 512 << 20)

MERGE_OPS: dict[str, Callable] = {"Add": np.add, "Mul": np.multiply, "Max": np.maximum, "Min": np.minimum}
FINAL_OPS = ("Id", "Div")
_REDUCE_DTYPES = (dtypes.float32, dtypes.float16, dtypes.float64, dtypes.int32, dtypes.int64)
_GATHER_DTYPES = (dtypes.float32, dtypes.float16, dtypes.float64, dtypes.int32, dtypes.int64)
_BCAST_DTYPES = (dtypes.bool, dtypes.float32, dtypes.float16, dtypes.float64, dtypes.int32, dtypes.int64)


# -- the transport seam ------------------------------------------------------------------------
class CollectiveLink:
    """A run's link to its group's members by rank, what the algorithms below run over
    (distributed/collectives.py's Link is the cluster's). Every link sends and receives; the rest
    are capabilities a link has where it overrides them (the module docstring says what each is
    for), and the defaults say it has none: then the ring runs on messages alone."""
    rank: int
    size: int
    hosts: Optional[list] = None   # each rank's host, where known

    def send(self, dst_rank: int, tag: str, value, anonymous: bool = False) -> None:
        """Sends `value` to member `dst_rank` (never waits; `anonymous`: as the group's, not this member's)."""
        raise TypeError(f"{type(self).__name__} does not send")

    def recv(self, src_rank: Optional[int], tag: str):
        """What member `src_rank` (None: any, sent anonymously) sent under `tag` (waits, within the timeout)."""
        raise TypeError(f"{type(self).__name__} does not receive")

    def local(self, n: int, dtype, hand_over: bool = False):
        """A writable array of `n` elements in memory of the link's own, None without."""
        return None

    def lend(self, arr, on: bool) -> bool:
        """Starts or ends lending the local array `arr` (its parts sent meanwhile are read in place)."""
        return False

    def in_place(self) -> bool:
        """Whether this member may read and write every other member's memory in place."""
        return False

    def shared_output(self, nbytes: int):
        """(the first member) (reference, writable bytes) of an output the members share, None without."""
        return None

    def input_ref(self, arr) -> tuple:
        """3 ints that name `arr` where the other members may map it; zeros: nowhere."""
        return 0, 0, 0

    def peer_input(self, rank: int, ref, n: int, dtype):
        """Member `rank`'s input that it named by input_ref, mapped here; None: read it."""
        return None

    def board(self):
        """The board this instance's members meet at in this run, None without."""
        return None

    def offer_board(self) -> tuple:
        """(the first member) 3 ints naming a new board for the members to keep; zeros: none."""
        return 0, 0, 0

    def keep_board(self, ref) -> None:
        """Keeps the board the first member named (`ref`) for the instance's next runs."""


# -- the ring's arithmetic (no communication) ---------------------------------------------------
def segment_bounds(n: int, size: int) -> list:
    """The `size` + 1 boundaries of the ring's segments of `n` elements: the first n % size
    segments one element longer (numpy.array_split's cut)."""
    base, extra = divmod(n, size)
    bounds = [0]
    for s in range(size):
        bounds.append(bounds[-1] + base + (1 if s < extra else 0))
    return bounds


def chunk_bounds(lo: int, hi: int, chunk_elems: int) -> list:
    """The chunks [(a, b), ...] of the segment [lo, hi): at most `chunk_elems` elements each,
    none for an empty segment."""
    step = max(int(chunk_elems), 1)
    return [(a, min(a + step, hi)) for a in range(lo, hi, step)]


def final_divide(value: np.ndarray, size: int) -> np.ndarray:
    """final_op "Div": the reduced value divided by the group size (TF's Div: integers
    truncate toward zero)."""
    if value.dtype.kind in "iu":
        return (np.sign(value) * (np.abs(value) // size)).astype(value.dtype, copy=False)
    return (value / value.dtype.type(size)).astype(value.dtype, copy=False)


class _Recycled:
    """Output buffers of large all-reduces, used again once nothing refers to them: a fresh
    array of 64 MiB costs the kernel's zeroing of its pages on first touch (a third of a
    2-member ring's CPU time, docs/PERFORMANCE.md). An output is a view of a buffer kept here;
    every array over its memory (a consumer's, a variable's, a transport's send) refers to the
    buffer, so a buffer only this cache refers to is free. At most RECYCLE_MAX_BYTES are kept."""

    def __init__(self, limit_bytes: int):
        self._limit = limit_bytes
        self._lock = threading.Lock()
        self._buffers: list = []

    def empty(self, n: int, dtype: np.dtype) -> np.ndarray:
        nbytes = n * dtype.itemsize
        if nbytes < RECYCLE_MIN_BYTES or nbytes > self._limit:
            return np.empty(n, dtype)
        with self._lock:
            free = [i for i in range(len(self._buffers))
                    if sys.getrefcount(self._buffers[i]) == 2]   # (the list's, the argument's)
            for i in free:
                if self._buffers[i].nbytes == nbytes:
                    return self._buffers[i].view(dtype)
            kept = sum(b.nbytes for b in self._buffers)
            for i in reversed(free):   # room for the new one: the free buffers of other sizes go
                if kept + nbytes <= self._limit:
                    break
                kept -= self._buffers.pop(i).nbytes
            if kept + nbytes > self._limit:
                return np.empty(n, dtype)
            self._buffers.append(np.empty(nbytes, np.uint8))
            return self._buffers[-1].view(dtype)


_outputs = _Recycled(RECYCLE_MAX_BYTES)


def _mismatch(node, message: str) -> errors.InvalidArgumentError:
    """The error of a value a peer sent that does not fit (`node`: None outside a kernel)."""
    return errors.InvalidArgumentError(node, getattr(node, "name", None),
                                       f"{getattr(node, 'op', 'collective')} {getattr(node, 'name', '')}: {message}")


def _expect(got, dtype, length: int, node=None) -> np.ndarray:
    if not isinstance(got, np.ndarray) or got.dtype != dtype or got.size != length:
        shape = getattr(got, "shape", type(got).__name__)
        raise _mismatch(node, f"a peer sent {getattr(got, 'dtype', '?')} {shape} where {dtype} of {length} "
                              f"elements was expected (the group's members disagree on the tensor's shape or dtype)")
    return got.reshape(-1)


def ring_all_reduce(x: np.ndarray, link, merge: Callable, final: Callable = None,
                    chunk_bytes: int = CHUNK_BYTES, small_bytes: int = SMALL_BYTES, node=None) -> np.ndarray:
    """The all-reduce of `x` over `link`'s group (module docstring): a new array of x's shape;
    `final(reduced)` (final_op) is applied once per element, by the member that completes it."""
    k, r = link.size, link.rank
    flat = x.reshape(-1)
    n = flat.size
    if k == 1 or n == 0:
        return (final(flat) if final is not None else flat).copy().reshape(x.shape)
    if flat.nbytes <= small_bytes or n < k:
        for peer in range(k):
            if peer != r:
                link.send(peer, "all", flat)
        acc = None
        for peer in range(k):
            v = flat if peer == r else _expect(link.recv(peer, "all"), flat.dtype, n, node)
            acc = v if acc is None else merge(acc, v)
        return (final(acc) if final is not None else acc).reshape(x.shape)   # (a merge's new array)
    gather_direct = link.hosts is not None and len(set(link.hosts)) == 1
    if gather_direct:
        out = _read_in_place_all_reduce(flat, link, merge, final, min(chunk_bytes, IN_PLACE_CHUNK_BYTES), node)
        if out is not None:
            return out.reshape(x.shape)
    out = link.local(n, flat.dtype)   # (shared memory of the link's own: module docstring)
    if out is None:
        out = _outputs.empty(n, flat.dtype)
    lent = gather_direct and link.lend(out, True)
    bounds = segment_bounds(n, k)
    chunk_elems = max(chunk_bytes // flat.itemsize, 1)
    chunks = [chunk_bounds(bounds[s], bounds[s + 1], chunk_elems) for s in range(k)]
    nxt, prev = (r + 1) % k, (r - 1) % k
    try:
        for c, (a, b) in enumerate(chunks[r]):                 # reduce-scatter, step 0
            link.send(nxt, f"rs0.{c}", flat[a:b])
        for s in range(k - 1):                                 # reduce-scatter: receive, reduce, forward
            seg = (r - s - 1) % k
            for c, (a, b) in enumerate(chunks[seg]):
                got = _expect(link.recv(prev, f"rs{s}.{c}"), flat.dtype, b - a, node)
                if s < k - 2:   # (reduced straight into the chunk that goes out, when it can be one to hand over)
                    link.send(nxt, f"rs{s + 1}.{c}", merge(flat[a:b], got, out=link.local(b - a, flat.dtype, True)))
                    continue
                # This member completes segment r+1, in its place in `out` (which is never
                # written again: it may go out as it is).
                merge(flat[a:b], got, out=out[a:b])
                if final is not None:
                    out[a:b] = final(out[a:b])
                for peer in (range(k) if gather_direct else (nxt,)):
                    if peer != r:
                        link.send(peer, "ag." + str(c) if gather_direct else f"ag0.{c}", out[a:b])
        if gather_direct:
            _gather_direct(out, link, chunks, node)
        else:
            for s in range(k - 1):                             # all-gather: receive, keep, forward
                seg = (r - s) % k
                for c, (a, b) in enumerate(chunks[seg]):
                    got = _expect(link.recv(prev, f"ag{s}.{c}"), flat.dtype, b - a, node)
                    out[a:b] = got
                    if s < k - 2:
                        link.send(nxt, f"ag{s + 1}.{c}", got)
    finally:
        if lent:
            link.lend(out, False)
    return out.reshape(x.shape)


def _address(arr: np.ndarray) -> int:
    return arr.__array_interface__["data"][0]


def _read_in_place_all_reduce(flat: np.ndarray, link, merge: Callable, final: Callable, chunk_bytes: int, node):
    """The all-reduce of a group on one host whose members reach one another's memory in place
    (`link.in_place()`, `link.read` / `link.write(rank, address, array)`: module docstring), or
    None when a member may not (every member then takes the ring: they all see the same
    answers). Member r reduces segment r chunk by chunk: each other member's part of
    the chunk read into a buffer that stays in the cache, merged in the ring's order (segment s
    starts with member s's part, each next member's added in front) straight into the output
    the members share (`link.shared_output` / `attach_output`), or, where the first member has
    none to offer, into its own output and then written, still in the cache, into every other
    member's. A barrier ("done") ends it: no member's input or output is freed or written while
    another reaches it."""
    k, r, n = link.size, link.rank, flat.size
    flat = np.ascontiguousarray(flat)
    can = link.in_place()
    shared = link.shared_output(flat.nbytes) if can and r == 0 else None
    out = shared[1].view(flat.dtype) if shared else _outputs.empty(n, flat.dtype)
    kind = ord(flat.dtype.kind) << 8 | flat.itemsize
    board = link.board()
    offer = link.offer_board() if board is None and can and r == 0 else (0, 0, 0)
    mine = np.array([can, _address(flat), _address(out), n, kind, *(shared[0] if shared else (0, 0, 0)), *offer,
                     *link.input_ref(flat)], np.int64)
    try:
        if board is not None:   # (from the instance's second run on: one post and one wake-up each)
            link.meet(board, 0, mine)
            table = board.slots[:, 2:2 + mine.size].copy()
        elif r:   # (the swap through the first member: 2 (k - 1) messages, not k (k - 1))
            link.send(0, "mem", mine)
            table = _expect(link.recv(0, "mems"), mine.dtype, k * mine.size, node).reshape(k, mine.size)
        else:
            table = np.empty((k, mine.size), np.int64)
            table[0] = mine
            for peer in range(1, k):
                table[peer] = _expect(link.recv(peer, "mem"), mine.dtype, mine.size, node)
            for peer in range(1, k):
                link.send(peer, "mems", table)
        ids = {peer: table[peer] for peer in range(k) if peer != r}
        if not mine[0] or any(int(v[0]) == 0 for v in ids.values()):
            return None
        if board is None:
            link.keep_board(table[0][8:11])
        for peer, v in ids.items():
            if int(v[3]) != n or int(v[4]) != kind:
                raise _mismatch(node, f"member {peer} of the group all-reduces {int(v[3])} elements of another "
                                      f"type where this one has {n} of {flat.dtype} (the group's members disagree "
                                      f"on the tensor's shape or dtype)")
        ref = (ids[0] if r else mine)[5:8]
        shares = bool(ref.any())
        if r and shares:
            out = link.attach_output(ref, flat.nbytes).view(flat.dtype)
        size = flat.itemsize
        bounds = segment_bounds(n, k)
        step = max(chunk_bytes // size, 1)
        inputs = {peer: link.peer_input(peer, v[11:14], n, flat.dtype) for peer, v in ids.items()}
        lo, hi = bounds[r], bounds[r + 1]
        if shares and merge is np.add and ordered_sum is not None and flat.dtype in (np.float32, np.float64) \
                and all(v is not None for v in inputs.values()):   # (all read where they lie: one pass, streamed)
            ordered_sum(out[lo:hi], [inputs[(r + 1) % k][lo:hi], flat[lo:hi]] +
                        [inputs[(r + j) % k][lo:hi] for j in range(2, k)])
            if final is not None:
                out[lo:hi] = final(out[lo:hi])
            lo = hi
        buffer = np.empty(min(step, hi - lo), flat.dtype)
        for a, b in chunk_bounds(lo, hi, step):
            acc = out[a:b]
            for j in range(1, k):
                peer = (r + j) % k
                if inputs[peer] is not None:   # (in its arena, mapped here: read where it lies)
                    got = inputs[peer][a:b]
                else:
                    got = buffer[:b - a]
                    link.read(peer, int(ids[peer][1]) + a * size, got)
                merge(got, flat[a:b] if j == 1 else acc, out=acc)
            if final is not None:
                acc[...] = final(acc)
            for j in range(1, 1 if shares else k):
                peer = (r + j) % k
                link.write(peer, int(ids[peer][2]) + a * size, acc)
        if board is not None:
            link.meet(board, 1)
        else:
            _barrier(link, flat.dtype)
    except BaseException:
        _reachable_after_failure.extend((out, flat))   # (another member may still reach them: never reused)
        raise
    if shares:
        out.flags.writeable = False   # (the members' one output: read-only, as a received tensor is)
    return out


_reachable_after_failure: list = []   # inputs and outputs of failed in-place runs


def _barrier(link, dtype) -> None:
    """The members' "done": each tells the first member, which tells every other once all have
    (2 (size - 1) messages)."""
    empty = np.zeros(0, dtype)
    if link.rank:
        link.send(0, "done", empty)
        link.recv(0, "done")
        return
    for peer in range(1, link.size):
        link.recv(peer, "done")
    for peer in range(1, link.size):
        link.send(peer, "done", empty)


def _tell_all(link, tag: str, dtype) -> None:
    """An empty message `tag` to every other member."""
    empty = np.zeros(0, dtype)
    for peer in range(link.size):
        if peer != link.rank:
            link.send(peer, tag, empty)


def _gather_direct(out: np.ndarray, link, chunks: list, node) -> None:
    """The all-gather of a group on one host: every member sent the segment it completed to
    every other (in shared memory a lent part of its output, read in place: one copy, not a
    copy per hop); each takes the others' into `out`, then they tell one another they are done,
    so that no member's output is written again (by its consumers) while another reads it."""
    k, r = link.size, link.rank
    for i in range(1, k):
        member = (r + i) % k
        for c, (a, b) in enumerate(chunks[(member + 1) % k]):   # (member m completed segment m + 1)
            out[a:b] = _expect(link.recv(member, f"ag.{c}"), out.dtype, b - a, node)
    _tell_all(link, "done", out.dtype)
    for peer in range(k):
        if peer != r:
            link.recv(peer, "done")


class _SubLink(CollectiveLink):
    """The link among some members of a group (`ranks`, renumbered 0..), its tags kept apart."""

    def __init__(self, link, ranks: list, prefix: str):
        self._link, self._ranks, self._prefix = link, ranks, prefix
        self.rank, self.size = ranks.index(link.rank), len(ranks)

    def send(self, dst_rank: int, tag: str, value, anonymous: bool = False) -> None:
        self._link.send(self._ranks[dst_rank], self._prefix + tag, value)

    def recv(self, src_rank: int, tag: str):
        return self._link.recv(self._ranks[src_rank], self._prefix + tag)


def hierarchical_all_reduce(x: np.ndarray, link, merge: Callable, final: Callable = None, node=None,
                            **ring) -> np.ndarray:
    """ring_all_reduce, but when the group spans hosts (`link.hosts`, each rank's) and a host
    holds several members: each host's members send their tensor to its first member, which
    reduces them in rank order; those run the ring among themselves and send the result back
    on their host. What crosses between hosts is then one tensor's share per host, not per
    member. Every member still gets the same bits."""
    hosts = link.hosts
    if hosts is None or len(set(hosts)) in (1, link.size):
        return ring_all_reduce(x, link, merge, final, node=node, **ring)
    flat = x.reshape(-1)
    local = [r for r in range(link.size) if hosts[r] == hosts[link.rank]]
    if link.rank != local[0]:
        link.send(local[0], "host-in", flat)
        return np.array(_expect(link.recv(local[0], "host-out"), flat.dtype, flat.size, node)).reshape(x.shape)
    acc = flat
    for r in local[1:]:
        acc = merge(acc, _expect(link.recv(r, "host-in"), flat.dtype, flat.size, node))
    heads = sorted({hosts.index(h) for h in hosts})
    out = ring_all_reduce(acc.reshape(x.shape), _SubLink(link, heads, "hosts-"), merge, final, node=node, **ring)
    for r in local[1:]:
        link.send(r, "host-out", out.reshape(-1))
    return out


def all_gather_values(x: np.ndarray, link, node=None, equal_rows: bool = False) -> np.ndarray:
    """Every member's `x` concatenated in rank order along dimension 0 (their first dimensions
    may differ unless `equal_rows`; the others must agree)."""
    if x.ndim == 0:
        raise _mismatch(node, "CollectiveGather needs a tensor of rank at least 1, got a scalar")
    for peer in range(link.size):
        if peer != link.rank:
            link.send(peer, "gather", x)
    parts = []
    for peer in range(link.size):
        v = x if peer == link.rank else link.recv(peer, "gather")
        if not isinstance(v, np.ndarray) or v.dtype != x.dtype or v.shape[int(not equal_rows):] != x.shape[
                int(not equal_rows):]:
            raise _mismatch(node, f"member {peer} of the group sent {getattr(v, 'dtype', '?')} "
                                  f"{getattr(v, 'shape', '?')}, which does not stack with {x.dtype} {x.shape}")
        parts.append(v)
    return np.concatenate(parts, axis=0)


# -- graph-building wrappers (TF's collective_ops module) --------------------------------------
def _group_attrs(group_size, group_key, instance_key, communication_hint, timeout) -> dict:
    if int(group_size) < 1:
        raise ValueError(f"Parameter group_size to collective ops must be at least 1, got {group_size}")
    return {"group_size": int(group_size), "group_key": int(group_key), "instance_key": int(instance_key),
            "communication_hint": str(communication_hint).lower(), "timeout_seconds": float(timeout)}


def all_reduce(t, group_size, group_key, instance_key, merge_op="Add", final_op="Id", subdiv_offsets=(0,),
               communication_hint="auto", timeout=0, name=None):
    """collective_ops.all_reduce: the reduction (merge_op Add/Mul/Max/Min, then final_op Id or
    Div by group_size) of `t` over the group's members; every member gets the result.
    subdiv_offsets is kept for TF's graphs (this ring cuts its own segments)."""
    if merge_op not in MERGE_OPS:
        raise ValueError(f"Unrecognized merge_op {merge_op!r}: expected one of {sorted(MERGE_OPS)}")
    if final_op not in FINAL_OPS:
        raise ValueError(f"Unrecognized final_op {final_op!r}: expected Id or Div")
    attrs = _group_attrs(group_size, group_key, instance_key, communication_hint, timeout)
    attrs.update(merge_op=merge_op, final_op=final_op, subdiv_offsets=[int(o) for o in subdiv_offsets], wait_for=[])
    return make_op("CollectiveReduce", [convert_to_tensor(t)], attrs, name=name or "CollectiveReduce").outputs[0]


def all_reduce_packed(tensors, group_size, group_key, instance_key, merge_op="Add", final_op="Id",
                      bytes_per_pack=PACK_BYTES, communication_hint="auto", timeout=0, name=None) -> list:
    """The all-reduce of each of `tensors` (fully known shapes), fused: tensors of one dtype are
    flattened and concatenated, in order, into packs of at most `bytes_per_pack` (a larger
    tensor is a pack of its own), each pack one CollectiveReduce under the instance keys
    instance_key, instance_key + 1, ... (every member must pack the same list alike); the results
    are split and reshaped back, in the order given. So a model with many small variables pays
    one round per pack rather than per tensor (TF's strategies pack gradients so,
    cross_device_utils.pack_by_size)."""
    tensors = [convert_to_tensor(t) for t in tensors]
    for t in tensors:
        if not t.shape.is_fully_defined():
            raise ValueError(f"all_reduce_packed needs fully known shapes, {t.name} has shape {t.shape}")
    packs: list = []   # [dtype, [indices], bytes]
    for i, t in enumerate(tensors):
        nbytes = t.shape.num_elements() * t.dtype.size
        pack = next((p for p in packs if p[0] == t.dtype and p[2] + nbytes <= bytes_per_pack), None)
        if pack is None:
            packs.append([t.dtype, [i], nbytes])
        else:
            pack[1].append(i)
            pack[2] += nbytes
    out: list = [None] * len(tensors)
    for key, (_, members, _) in enumerate(packs):
        flat = [reshape(tensors[i], [-1]) for i in members]
        packed = concat(flat, 0) if len(flat) > 1 else flat[0]
        reduced = all_reduce(packed, group_size, group_key, instance_key + key, merge_op, final_op,
                             communication_hint=communication_hint, timeout=timeout, name=name)
        parts = split(reduced, [tensors[i].shape.num_elements() for i in members]) if len(flat) > 1 else [reduced]
        for i, part in zip(members, parts):
            out[i] = reshape(part, tensors[i].shape)
    return out


def all_gather(t, group_size, group_key, instance_key, communication_hint="auto", timeout=0, name=None):
    """collective_ops.all_gather: the members' `t` concatenated in rank order along dimension 0."""
    t = convert_to_tensor(t)
    attrs = _group_attrs(group_size, group_key, instance_key, communication_hint, timeout)
    attrs["shape"] = t.shape
    return make_op("CollectiveGather", [t], attrs, name=name or "CollectiveGather").outputs[0]


def broadcast_send(t, shape, dtype, group_size, group_key, instance_key, communication_hint="auto", timeout=0,
                   name=None):
    """collective_ops.broadcast_send: sends `t` (of `shape` and `dtype`) to the group's other
    members, which run broadcast_recv; returns `t`."""
    t = convert_to_tensor(t)
    shape, dtype = as_shape(shape), dtypes.as_dtype(dtype)
    if t.dtype != dtype:
        raise ValueError(f"Type mismatch: broadcast_send of a {t.dtype.name} tensor declared as {dtype.name}")
    if not t.shape.is_compatible_with(shape):
        raise ValueError(f"Shape mismatch: broadcast_send of a tensor of shape {t.shape} declared as {shape}")
    attrs = _group_attrs(group_size, group_key, instance_key, communication_hint, timeout)
    attrs["shape"] = shape
    return make_op("CollectiveBcastSend", [t], attrs, name=name or "CollectiveBcastSend").outputs[0]


def broadcast_recv(shape, dtype, group_size, group_key, instance_key, communication_hint="auto", timeout=0,
                   name=None):
    """collective_ops.broadcast_recv: the tensor of `shape` and `dtype` that one member of the
    group sends with broadcast_send."""
    attrs = _group_attrs(group_size, group_key, instance_key, communication_hint, timeout)
    attrs.update(shape=as_shape(shape), T=dtypes.as_dtype(dtype))
    return make_op("CollectiveBcastRecv", [], attrs, name=name or "CollectiveBcastRecv").outputs[0]


# -- kernels ------------------------------------------------------------------------------------
def _link(ctx, node, step):
    """The link to the other members of the node's group for this run (group of one: none)."""
    size = int(node.attr["group_size"])
    if size < 1:
        raise invalid(node, f"group_size must be at least 1, got {size}")
    service = ctx.services.get("collectives")
    if service is None:
        if size == 1:
            return _Alone()
        raise errors.FailedPreconditionError(
            node, node.name, f"{node.op} {node.name} with group_size {size} needs the distributed runtime: it runs "
                             f"only on a task of a cluster (tf.train.Server)")
    return service.instance(node, step, size, int(node.attr["group_key"]), int(node.attr["instance_key"]),
                            float(node.attr.get("timeout_seconds", 0.0) or 0.0))


class _Alone(CollectiveLink):
    """The link of a group of one member."""

    rank, size = 0, 1

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _reduce_kernel(node, ctx):
    merge_op, final_op = node.attr["merge_op"], node.attr["final_op"]
    if merge_op not in MERGE_OPS:
        raise invalid(node, f"merge_op must be one of {sorted(MERGE_OPS)}, got {merge_op!r}")
    if final_op not in FINAL_OPS:
        raise invalid(node, f"final_op must be Id or Div, got {final_op!r}")
    merge = MERGE_OPS[merge_op]
    size = int(node.attr["group_size"])
    final = (lambda v: final_divide(v, size)) if final_op == "Div" else None

    def run(step, x):
        with _link(ctx, node, step) as link:
            return hierarchical_all_reduce(np.asarray(x), link, merge, final, node=node)
    return run


def _gather_infer(op):
    shape = op.inputs[0].shape
    if shape.ndims is None:
        return [(op.inputs[0].dtype, unknown_shape())]
    if shape.ndims == 0:
        raise ValueError(f"CollectiveGather {op.name} needs an input of rank at least 1, got a scalar")
    rows = shape.as_list()[0]   # (TF's shape function: group_size times the rows, when known)
    return [(op.inputs[0].dtype, TensorShape([None if rows is None else rows * op.get_attr("group_size")]
                                             + shape.as_list()[1:]))]


def _gather_kernel(node, ctx):
    # Members whose graphs know the rows must all have that many (the static output shape says
    # group_size times them); otherwise they may differ.
    shape = node.attr.get("shape")
    equal_rows = shape is not None and as_shape(shape).ndims and as_shape(shape).as_list()[0] is not None

    def run(step, x):
        with _link(ctx, node, step) as link:
            return all_gather_values(np.asarray(x), link, node, bool(equal_rows)) if link.size > 1 else np.array(x)
    return run


def _bcast_send_kernel(node, ctx):
    def run(step, x):
        x = np.asarray(x)
        with _link(ctx, node, step) as link:
            for peer in range(link.size):
                if peer != link.rank:
                    link.send(peer, "bcast", x, anonymous=True)
        return x
    return run


def _bcast_recv_infer(op):
    return [(op.get_attr("T"), op.get_attr("shape"))]


def _bcast_recv_kernel(node, ctx):
    dtype = dtypes.as_dtype(node.attr["T"]).as_numpy_dtype
    shape = as_shape(node.attr["shape"])

    def run(step):
        with _link(ctx, node, step) as link:
            if link.size == 1:
                raise invalid(node, "a broadcast_recv in a group of one member has no sender")
            v = link.recv(None, "bcast")   # (from whichever member sends)
        if not isinstance(v, np.ndarray) or v.dtype != dtype or not shape.is_compatible_with(TensorShape(v.shape)):
            raise invalid(node, f"received {getattr(v, 'dtype', '?')} {getattr(v, 'shape', '?')} where "
                                f"{np.dtype(dtype)} {shape} was declared")
        return v
    return run


register("CollectiveReduce", lambda op: [(op.inputs[0].dtype, op.inputs[0].shape)], _reduce_kernel, grad=None,
         dtypes=_REDUCE_DTYPES, dtype_param="input", stateful=True, needs_step=True, blocking=True)
register("CollectiveGather", _gather_infer, _gather_kernel, grad=None, dtypes=_GATHER_DTYPES, dtype_param="input",
         stateful=True, needs_step=True, blocking=True)
register("CollectiveBcastSend", lambda op: [(op.inputs[0].dtype, op.inputs[0].shape)], _bcast_send_kernel,
         grad=None, dtypes=_BCAST_DTYPES, dtype_param="input", stateful=True, needs_step=True, blocking=True)
register("CollectiveBcastRecv", _bcast_recv_infer, _bcast_recv_kernel, grad=None, stateful=True, needs_step=True,
         blocking=True)
