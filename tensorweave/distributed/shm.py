"""Shared memory for large tensors between processes on one host (the Unix-socket transport):
the sender copies a tensor into a buffer of its pool, the message names the buffer and its
generation, and the receiver's array is a read-only view of the buffer.

A buffer is a file (a 64-byte header: state, generation; then the data) in a directory private
to this user: /dev/shm/tensorweave-<uid>, or under the temporary directory. Plain files rather
than multiprocessing.shared_memory: no resource-tracker process, an owner (pid and start time)
in the name that anyone can check, and fallocate (a full /dev/shm is an error at allocation,
never a SIGBUS). The name is checked on open (a fixed pattern, no symlinks, a regular file of
this user).

Lifetimes: the sender (`Pool.put`) takes a free buffer, bumps its generation and marks it in
use; the receiver (`Attached.take`) checks that generation, and the buffer is free again when
the receiver's last array over it goes, so it is never reused while read. A buffer whose
receiver died is taken back; one whose message was never delivered is given back
(`Pool.release`). A process unlinks its files at exit; a killed one's are deleted by the next
`sweep()` (a pool's start, a Unix connection's end).

Buffers a process uses itself (`Pool.local`: the collective ring's output and its scratch
chunks, ops/collective_ops.py): a writable array over a buffer of the pool, in use while any
array over it lives, so a step's output that nobody holds any more is the next step's, its pages
already mapped. Sending a part of one copies nothing in two cases: a scratch array (`hand_over`)
sent whole becomes the receiver's, as if `put` had copied it there (it is sent once, and not
read after); an array `lend`ing (`Pool.lend`) is read in place by its receivers (a reference
with an offset, whose receiver's array frees nothing), and its owner must know every receiver
is done with it before it lends no more and writes it again.

Reading and writing a peer's memory in place (`reaches_peers`, `read_peer`, `write_peer`):
Linux's cross-memory attach (process_vm_readv(2), process_vm_writev) copies between an array of
this process and another process of this user, with no buffer between, where the kernel's
ptrace rule allows it (no Yama, or its ptrace_scope 0; TENSORWEAVE_CMA=0 turns it off). The
collective all-reduce on one host reads the other members' inputs so (ops/collective_ops.py)
where they do not lie in the members' arenas (distributed/arena.py, read where they lie): the
kernel pins and copies each page, a third of memcpy's speed.

An output the members of a collective share (`Pool.group_output`, `Attached.group_output`): a
buffer of the first member's pool, after its data one holder word per member (its pid while an
array of it over the buffer lives, written by that member only); the first member reuses one
whose words are all clear or name processes that are gone, and never lends it for anything else.

A board the members of a collective on one host meet at (`Pool.board`, `Attached.board`, `Board`):
a small buffer of the first member's, a slot of words per member that only that member writes, and
a bell (a futex word, futex(2), x86-64 Linux) that the member completing a round rings: the others
sleep on it, and each wakes once a round. Meeting there costs a store and a wake-up, where a
message costs a socket write, the receiver's transport thread and a hand-off to the waiting one.

Limits: tensors of at least TENSORWEAVE_SHM_MIN_BYTES (256 KiB) take this path; a process's
buffers total at most TENSORWEAVE_SHM_POOL_BYTES (1 GiB; 0: off). Past it, or without a usable
directory, tensors travel in the socket.
"""
from __future__ import annotations

import atexit
import ctypes
import errno
import itertools
import mmap
import os
import platform
import re
import sys
import stat
import tempfile
import threading
from typing import Optional

import numpy as np

from tensorweave.distributed import sockets

MIN_BYTES = int(os.environ.get("TENSORWEAVE_SHM_MIN_BYTES", str(256 << 10)))
POOL_BYTES = int(os.environ.get("TENSORWEAVE_SHM_POOL_BYTES", str(1 << 30)))
HEADER = 64
_PAGE = 1 << 16                       # buffer sizes are rounded up to this
_NAME = re.compile(r"^[0-9]{1,10}-[0-9]{1,20}-[0-9]{1,12}$")
_FREE, _BUSY = 0, 1
_POPULATE = getattr(mmap, "MAP_POPULATE", 0)
_MAX_ATTACHED = 512                   # mappings a receiver keeps open
_SEQ = itertools.count(1)             # buffer numbers, per process: two pools of one process never share a name


def _start_time(pid: int) -> Optional[int]:
    """The process's start time (clock ticks since boot, /proc/<pid>/stat field 22), which
    tells a pid reused by another process apart; None when no such process runs."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return None
    except OSError:
        return 0
    try:
        return int(data[data.rindex(b")") + 2:].split()[19])
    except (ValueError, IndexError):
        return 0


def gone(pid: int) -> bool:
    """Whether no process `pid` runs (known where /proc is; elsewhere False)."""
    return os.path.isdir("/proc") and _start_time(pid) is None


def _owner_alive(pid: int, start: int) -> bool:
    if os.path.isdir("/proc"):
        now = _start_time(pid)
        return now is not None and (now == start or start == 0 or now == 0)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        pass
    return True


def _primary_dir() -> str:
    base = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else tempfile.gettempdir()
    return os.path.join(base, f"tensorweave-{os.getuid()}")


def directory() -> Optional[str]:
    """This user's buffer directory (sockets.private_dir: 0700, ours, no link, checked with
    lstat on every call; a squatted one is replaced by a private one), or None when none can
    be made (tensors then travel in the socket)."""
    try:
        return sockets.private_dir(_primary_dir())
    except OSError:
        return None


def sweep() -> int:
    """Deletes the buffer files of processes that are gone; returns how many."""
    d = directory()
    if d is None:
        return 0
    removed = 0
    try:
        names = os.listdir(d)
    except OSError:
        return 0
    for name in names:
        if not _NAME.match(name):
            continue
        pid, start, _ = (int(x) for x in name.split("-"))
        if pid == os.getpid() or _owner_alive(pid, start):
            continue
        try:
            os.unlink(os.path.join(d, name))
            removed += 1
        except OSError:
            pass
    return removed


def encoder_for(peer_pid: int) -> tuple:
    """(pool, receiver pid) for wire.encode_shared over a same-host connection to the process
    `peer_pid` (uds.peer_cred, read once per connection): (None, 0) when shared memory is off
    here."""
    p = pool()
    return (p, peer_pid) if p is not None else (None, 0)


def _header(mm: mmap.mmap) -> np.ndarray:
    return np.frombuffer(mm, dtype=np.uint64, count=2)   # [state, generation]


# -- the sending side ---------------------------------------------------------------------------
class _Buffer:
    __slots__ = ("name", "capacity", "mm", "head", "data", "addr", "peer", "hand_over", "lent")

    def __init__(self, name: str, capacity: int, mm: mmap.mmap):
        self.name = name
        self.capacity = capacity
        self.mm = mm
        self.head = _header(mm)
        self.data = np.frombuffer(mm, dtype=np.uint8, count=capacity, offset=HEADER)
        self.addr = self.data.__array_interface__["data"][0]
        self.peer = 0
        self.hand_over = False   # (a local scratch buffer: sent whole, it becomes the receiver's)
        self.lent = False        # (a local buffer its receivers read in place)


class _Local:
    """What a local array's memory belongs to (Pool.local): when the last array over it goes,
    the buffer is free again, unless it was handed over (its generation moved on)."""

    __slots__ = ("__array_interface__", "_pool", "_buf", "_gen")

    def __init__(self, pool: "Pool", buf: _Buffer, dtype: np.dtype, n: int):
        self._pool, self._buf, self._gen = pool, buf, int(buf.head[1])
        self.__array_interface__ = {"data": (buf.addr, False), "shape": (n,), "typestr": dtype.str, "version": 3}

    def __del__(self):
        buf = self._buf
        if int(buf.head[1]) == self._gen:   # (not handed over, nor taken again since)
            self._pool._locals.pop(buf.addr, None)
            buf.lent = buf.hand_over = False
            buf.head[0] = _FREE


class Pool:
    """One process's buffers for the tensors it sends. Thread safe."""

    def __init__(self, limit_bytes: int = POOL_BYTES):
        self.limit_bytes = limit_bytes
        self.dir = directory()
        self._lock = threading.Lock()
        self._buffers: list[_Buffer] = []
        self._by_name: dict[str, _Buffer] = {}
        self._bytes = 0
        self._locals: dict[int, _Buffer] = {}   # data address -> buffer, of the local arrays alive
        self._outputs: list = []   # [(buffer, data bytes, members)] of the group outputs this pool holds
        self._pid = os.getpid()
        self._prefix = f"{self._pid}-{_start_time(self._pid) or 0}-"
        if self.dir is not None:
            sweep()

    def put(self, arr: np.ndarray, peer_pid: int = 0) -> Optional[tuple]:
        """Copies a C-contiguous array into a free buffer, marked in use for `peer_pid`;
        returns (file name, generation), or None when it must travel in the socket."""
        if self.dir is None or self._pid != _PID:
            return None
        need = arr.nbytes
        if self._locals:
            ref = self._put_local(arr, peer_pid)
            if ref is not None:
                return ref
        buf = self._take(need, peer_pid)
        if buf is None:
            return None
        np.copyto(buf.data[:need], arr.reshape(-1).view(np.uint8))
        return buf.name, int(buf.head[1])

    def local(self, n: int, dtype, hand_over: bool = False) -> Optional[np.ndarray]:
        """A writable array of `n` elements over a buffer of the pool, for this process's own
        use (module docstring), or None when there is none to be had (make one with numpy).
        `hand_over`: a scratch array, which becomes its receiver's when sent whole."""
        dtype = np.dtype(dtype)
        if self.dir is None or self._pid != _PID or n * dtype.itemsize < MIN_BYTES:
            return None
        buf = self._take(n * dtype.itemsize, 0)
        if buf is None:
            return None
        buf.hand_over = hand_over
        self._locals[buf.addr] = buf
        return np.asarray(_Local(self, buf, dtype, n))

    def lend(self, arr: np.ndarray, on: bool) -> bool:
        """Starts (`on`) or ends the lending of the local array `arr` (module docstring);
        False when `arr` is no local array of this pool (its parts are then copied when sent)."""
        buf = self._locals.get(arr.__array_interface__["data"][0])
        if buf is None:
            return False
        buf.lent = on and not buf.hand_over
        return buf.lent

    def _put_local(self, arr: np.ndarray, peer_pid: int) -> Optional[tuple]:
        """put() of (a part of) a local array that needs no copy: (name, generation) of a
        scratch array handed over, (name, generation, offset) of a lent one; else None."""
        addr = arr.__array_interface__["data"][0]
        for buf in list(self._locals.values()):
            if buf.addr <= addr and addr + arr.nbytes <= buf.addr + buf.capacity and arr.flags.c_contiguous:
                if buf.lent:
                    return buf.name, int(buf.head[1]), addr - buf.addr
                if buf.hand_over and addr == buf.addr:
                    with self._lock:
                        self._locals.pop(buf.addr, None)
                        buf.hand_over = False
                        buf.head[1] += 1
                        buf.head[0] = _BUSY
                        buf.peer = peer_pid
                    return buf.name, int(buf.head[1])
                return None
        return None

    def group_output(self, nbytes: int, members: int) -> Optional[tuple]:
        """(the first member of a collective on one host) A buffer of `nbytes` for the output the
        group's `members` share (module docstring), none of them holding it, held by this
        process now: (its reference, 3 ints that name it, a writable byte array over it), or
        None when there is none to be had (shared memory off, too small, no room)."""
        if self.dir is None or self._pid != _PID or nbytes < MIN_BYTES:
            return None
        need = _rounded(_holders_at(nbytes) + 8 * members)
        with self._lock:
            buf = next((b for b, size, k in self._outputs if (size, k) == (nbytes, members) and _unheld(b, size, k)),
                       None)
            if buf is None:
                if self._bytes + need > self.limit_bytes:
                    for entry in [e for e in self._outputs if _unheld(*e)]:   # (free ones of other sizes go first)
                        if self._bytes + need <= self.limit_bytes:
                            break
                        self._outputs.remove(entry)
                        self._drop(entry[0])
                    self._reclaim()
                    self._evict_free(need)
                    if self._bytes + need > self.limit_bytes:
                        return None
                buf = self._create(need)
                if buf is None:
                    return None
                buf.head[0] = _BUSY   # (never a put's nor a local's)
                self._outputs.append((buf, nbytes, members))
            out = _held(buf.mm, nbytes, members, 0)
        return tuple(int(x) for x in buf.name.split("-")), out

    def board(self, members: int) -> Optional[tuple]:
        """(the first member of a collective on one host) A new board for `members` (module
        docstring): (its reference, 3 ints that name it; the Board, this process member 0), or
        None when there is none to be had (shared memory or futexes off, no room). Never reused
        for anything else; `drop_board` deletes its file."""
        if self.dir is None or self._pid != _PID or _futex() is None:
            return None
        with self._lock:
            if self._bytes + _rounded(Board.bytes_for(members)) > self.limit_bytes:
                return None
            buf = self._create(Board.bytes_for(members))
            if buf is None:
                return None
            buf.head[0] = _BUSY   # (never a put's nor a local's)
        return tuple(int(x) for x in buf.name.split("-")), Board(buf.mm, members, 0)

    def drop_board(self, ref) -> None:
        """Deletes the file of the board `ref` made here (the members' mappings stay valid)."""
        with self._lock:
            buf = self._by_name.get("-".join(str(int(x)) for x in ref))
            if buf is not None:
                self._drop(buf)

    def release(self, name: str, generation: int) -> None:
        """Gives back a buffer whose message never reached its receiver."""
        buf = self._by_name.get(name)
        if buf is not None and int(buf.head[1]) == generation:
            buf.head[0] = _FREE

    def _take(self, need: int, peer_pid: int) -> Optional[_Buffer]:
        with self._lock:
            buf = self._free_buffer(need)
            if buf is None and self._bytes + _rounded(need) > self.limit_bytes:
                self._reclaim()
                buf = self._free_buffer(need)
                if buf is None:
                    self._evict_free(_rounded(need))
                    if self._bytes + _rounded(need) > self.limit_bytes:
                        return None
            if buf is None:
                buf = self._create(need)
                if buf is None:
                    return None
            buf.head[1] += 1
            buf.head[0] = _BUSY
            buf.peer = peer_pid
            return buf

    def _free_buffer(self, need: int) -> Optional[_Buffer]:
        best = None
        for b in self._buffers:
            # (a buffer far larger than needed is left for a tensor of its size)
            if need <= b.capacity <= 2 * need + _PAGE and b.head[0] == _FREE:
                if best is None or b.capacity < best.capacity:
                    best = b
        return best

    def _reclaim(self) -> None:
        """Frees the buffers held for receivers that died."""
        alive: dict = {}
        for b in self._buffers:
            if b.head[0] == _BUSY and b.peer:
                if b.peer not in alive:
                    alive[b.peer] = _start_time(b.peer) is not None
                if not alive[b.peer]:
                    b.head[0] = _FREE

    def _evict_free(self, room: int) -> None:
        for b in sorted((b for b in self._buffers if b.head[0] == _FREE), key=lambda b: -b.capacity):
            if self._bytes + room <= self.limit_bytes:
                return
            self._drop(b)

    def _drop(self, b: _Buffer) -> None:
        self._buffers.remove(b)
        del self._by_name[b.name]
        self._bytes -= b.capacity
        try:
            os.unlink(os.path.join(self.dir, b.name))
        except OSError:
            pass

    def _create(self, need: int) -> Optional[_Buffer]:
        capacity = _rounded(need)
        name = f"{self._prefix}{next(_SEQ)}"
        if directory() != self.dir:
            return None   # (its directory is no longer private: the tensor travels in the socket)
        path = os.path.join(self.dir, name)
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        except OSError:
            return None
        try:
            try:
                os.posix_fallocate(fd, 0, HEADER + capacity)   # no space: an error now, not a SIGBUS later
            except (AttributeError, OSError):
                os.unlink(path)
                return None
            mm = mmap.mmap(fd, HEADER + capacity, flags=mmap.MAP_SHARED | _POPULATE)
        except OSError:
            os.unlink(path)
            return None
        finally:
            os.close(fd)
        buf = _Buffer(name, capacity, mm)
        self._buffers.append(buf)
        self._by_name[name] = buf
        self._bytes += capacity
        return buf

    def close(self) -> None:
        """Deletes this process's buffer files (mappings others hold stay valid)."""
        with self._lock:
            for b in list(self._buffers):
                self._drop(b)

    @property
    def bytes(self) -> int:
        return self._bytes


def _rounded(n: int) -> int:
    return max(_PAGE, (n + _PAGE - 1) // _PAGE * _PAGE)


_POOL: Optional[Pool] = None
_POOL_LOCK = threading.Lock()
_PID = os.getpid()   # this process's, kept current across forks (a getpid(2) per message costs)


def _forked() -> None:
    global _PID
    _PID = os.getpid()


os.register_at_fork(after_in_child=_forked)


def pool() -> Optional[Pool]:
    """This process's pool, or None when shared memory is off or unusable here."""
    global _POOL
    p = _POOL
    if p is not None and p._pid == _PID:
        return p if p.dir is not None else None
    if POOL_BYTES <= 0:
        return None
    with _POOL_LOCK:
        if _POOL is None or _POOL._pid != os.getpid():
            _POOL = Pool()
        return _POOL if _POOL.dir is not None else None


@atexit.register
def _close_pool() -> None:
    p = _POOL
    if p is not None and p._pid == os.getpid():
        p.close()


# -- the receiving side -------------------------------------------------------------------------
class ShmError(ValueError):
    """A reference to a buffer that cannot be used: says which and why."""


class _View:
    """What a received array's memory belongs to: when the last array over it goes, the
    buffer is marked free for its sender to reuse."""

    __slots__ = ("__array_interface__", "_keep", "_head", "_gen", "handed_out")

    def __init__(self, data: np.ndarray, head: np.ndarray, generation: int, dtype: np.dtype, shape: tuple):
        self._keep = data
        self._head = head
        self._gen = generation
        self.handed_out = False
        self.__array_interface__ = {"data": (data.__array_interface__["data"][0], True), "shape": shape,
                                    "typestr": dtype.str, "version": 3}

    def __del__(self):
        if int(self._head[1]) == self._gen:
            self._head[0] = _FREE


class _Owned:
    """A writable alias of a received array, for the one caller that owns it."""

    __slots__ = ("__array_interface__", "_view")

    def __init__(self, view: _View):
        self._view = view   # (the buffer stays in use while either array lives)
        self.__array_interface__ = dict(view.__array_interface__, data=(view.__array_interface__["data"][0], False))


def owned(arr: np.ndarray) -> Optional[np.ndarray]:
    """A writable array over the same memory as `arr`, a whole array received in shared
    memory, the first time it is asked for (the receiver's copy is private to it: its sender
    reuses the buffer only once every array over it is gone); None otherwise (copy it)."""
    view = arr.base
    if type(view) is not _View or view.handed_out or arr.shape != view.__array_interface__["shape"] \
            or arr.__array_interface__["data"][0] != view.__array_interface__["data"][0]:
        return None
    view.handed_out = True
    return np.asarray(_Owned(view))


def _holders_at(nbytes: int) -> int:
    """Where a group output's holder words (one a member, its pid while it holds the buffer)
    start in its data: after the output, 64-byte aligned."""
    return (nbytes + 63) // 64 * 64


def _unheld(buf: _Buffer, nbytes: int, members: int) -> bool:
    """Whether no member holds the group output `buf` (each word clear, or naming a process
    that is gone: a member killed while it held it)."""
    words = np.frombuffer(buf.mm, np.uint64, count=members, offset=HEADER + _holders_at(nbytes))
    return all(w == 0 or gone(int(w)) for w in words.tolist())


class _Held:
    """What a group output's memory belongs to in one member: its holder word names this
    process until the last array over the buffer goes."""

    __slots__ = ("__array_interface__", "_keep", "_word")

    def __init__(self, data: np.ndarray, word: np.ndarray):
        self._keep, self._word = data, word
        word[0] = _PID
        self.__array_interface__ = {"data": (data.__array_interface__["data"][0], False), "shape": (data.size,),
                                    "typestr": "|u1", "version": 3}

    def __del__(self):
        self._word[0] = 0


def _held(mm: mmap.mmap, nbytes: int, members: int, rank: int) -> np.ndarray:
    at = HEADER + _holders_at(nbytes)
    if at + 8 * members > len(mm):
        raise ShmError(f"a shared group output of {len(mm) - HEADER} bytes cannot hold {nbytes} for {members} members")
    word = np.frombuffer(mm, np.uint64, count=1, offset=at + 8 * rank)
    return np.asarray(_Held(np.frombuffer(mm, np.uint8, count=nbytes, offset=HEADER), word))


class Attached:
    """A receiver's mappings of its peers' buffers, by file name. Thread safe."""

    def __init__(self):
        self._maps: dict[str, mmap.mmap] = {}
        self._mapped = 0
        self._lock = threading.Lock()

    def take(self, name: str, generation: int, dtype: np.dtype, shape: tuple, nbytes: int,
             offset: Optional[int] = None) -> np.ndarray:
        """The read-only array a sender put in buffer `name` at `generation`; with an `offset`,
        the part at that offset of a buffer its sender lends (Pool.lend: this array frees
        nothing, and is read before the receiver tells the sender it is done)."""
        mm = self._map(name)
        start = HEADER + (offset or 0)
        if start + nbytes > len(mm):
            raise ShmError(f"shared buffer {name} holds {len(mm) - HEADER} bytes, not the {nbytes} of its tensor"
                           + (f" at offset {offset}" if offset is not None else ""))
        head = _header(mm)
        if int(head[0]) != _BUSY or int(head[1]) != generation:
            raise ShmError(f"shared buffer {name} is not in use at generation {generation}")
        data = np.frombuffer(mm, dtype=np.uint8, count=nbytes, offset=start)
        if offset is not None:
            lent = data.view(dtype).reshape(shape)
            lent.flags.writeable = False
            return lent
        return np.asarray(_View(data, head, generation, dtype, shape))

    def group_output(self, ref, nbytes: int, members: int, rank: int) -> np.ndarray:
        """The writable byte array over the group output that the group's first member named
        `ref` (Pool.group_output), held by this process (member `rank` of `members`) while it
        lives."""
        return _held(self._map("-".join(str(int(x)) for x in ref)), nbytes, members, rank)

    def board(self, ref, members: int, rank: int) -> "Board":
        """The board the group's first member named `ref` (Pool.board), as member `rank` sees it."""
        if _futex() is None:
            raise ShmError("futexes are not available here")
        return Board(self._map("-".join(str(int(x)) for x in ref)), members, rank)

    def _map(self, name: str) -> mmap.mmap:
        mm = self._maps.get(name)
        if mm is not None:
            return mm
        d = directory()
        if d is None or type(name) is not str or not _NAME.match(name):
            raise ShmError(f"bad shared buffer name {name!r:.80}")
        fd = None
        for folder in [d] + [f for f in sockets.trusted_dirs(_primary_dir(), os.getuid()) if f != d]:
            try:   # (a sender whose private directory is another of this user's, made at the same time)
                fd = os.open(os.path.join(folder, name), os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC)
                break
            except FileNotFoundError as e:
                error = e
            except OSError as e:
                raise ShmError(f"shared buffer {name} cannot be opened ({e.strerror})") from None
        if fd is None:
            raise ShmError(f"shared buffer {name} cannot be opened ({error.strerror})") from None
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid() or st.st_size < HEADER:
                raise ShmError(f"shared buffer {name} is not a buffer file of this user")
            mm = mmap.mmap(fd, st.st_size, flags=mmap.MAP_SHARED | _POPULATE)
        finally:
            os.close(fd)
        with self._lock:
            if len(self._maps) >= _MAX_ATTACHED or self._mapped + len(mm) > max(POOL_BYTES, 1 << 28):
                self._forget_gone(d)
            self._maps[name] = mm
            self._mapped += len(mm)
        return mm

    def _forget_gone(self, d: str) -> None:
        """Drops the mappings of files their owners deleted (the arrays over them keep theirs,
        and an entry dropped by mistake is mapped again when next named)."""
        for n in [n for n in self._maps if not os.path.exists(os.path.join(d, n))]:
            self._mapped -= len(self._maps.pop(n))
        while len(self._maps) >= _MAX_ATTACHED:
            self._mapped -= len(self._maps.pop(next(iter(self._maps))))


_ATTACHED = Attached()


def attached() -> Attached:
    return _ATTACHED



# -- a board the members of a collective meet at (futex) -----------------------------------------
class _Timespec(ctypes.Structure):
    _fields_ = [("sec", ctypes.c_long), ("nsec", ctypes.c_long)]


_FUTEX_WAIT, _FUTEX_WAKE, _SYS_FUTEX_X86_64 = 0, 1, 202
_FUTEX: list = []   # [libc's syscall, typed, or None], once


def _futex():
    """libc's syscall(2) typed for futex(2) on x86-64 Linux (whose stores other cores see in
    program order: a slot's words before its bell), None elsewhere or with
    TENSORWEAVE_SHM_BOARD=0."""
    if not _FUTEX:
        fn = None
        if sys.platform.startswith("linux") and platform.machine() == "x86_64" \
                and os.environ.get("TENSORWEAVE_SHM_BOARD", "1") != "0":
            try:
                fn = ctypes.CDLL(None, use_errno=True).syscall
                fn.restype = ctypes.c_long
                fn.argtypes = [ctypes.c_long, ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_void_p,
                               ctypes.c_void_p, ctypes.c_int]
            except (OSError, AttributeError):
                fn = None
        _FUTEX.append(fn)
    return _FUTEX[0]


class Board:
    """A board (module docstring) over the mapping `mm`, as member `rank` of `members` sees it: a
    bell (a 32-bit futex word, its own cache line), then a slot of SLOT int64 words per member.
    `post(word, value, record)` writes the record (words 2 and up of this member's slot), then
    `value` at `word` (0 or 1: a count that only grows), and rings the bell when every member's
    word holds it now; `behind(word, value)` is the first member whose word holds less, None when
    none; `wait(rung, timeout_s)` sleeps while the bell still holds `rung` (read before `behind`
    looked), up to timeout_s. The ring is never missed: a poster's futex call orders its store
    before its look at the others' (the kernel's barrier in FUTEX_WAKE), so of the members
    posting at once the last to pass that barrier sees every word and rings (and a wait is a
    slice at most, after which its caller looks again)."""

    SLOT = 16
    _BELL_BYTES = 64

    @staticmethod
    def bytes_for(members: int) -> int:
        return Board._BELL_BYTES + members * Board.SLOT * 8

    def __init__(self, mm: mmap.mmap, members: int, rank: int):
        if HEADER + self.bytes_for(members) > len(mm):
            raise ShmError(f"a board of {len(mm) - HEADER} bytes cannot hold {members} members")
        self._mm = mm
        self.members, self.rank = members, rank
        self.bell = np.frombuffer(mm, np.int32, count=1, offset=HEADER)
        self._bell = self.bell.__array_interface__["data"][0]
        self.slots = np.frombuffer(mm, np.int64, count=members * self.SLOT,
                                   offset=HEADER + self._BELL_BYTES).reshape(members, self.SLOT)

    def post(self, word: int, value: int, record=()) -> None:
        slot = self.slots[self.rank]
        if len(record):
            slot[2:2 + len(record)] = record
        slot[word] = value
        futex = _futex()
        futex(_SYS_FUTEX_X86_64, self._bell, _FUTEX_WAKE, 0, None, None, 0)   # (the barrier: wakes nobody)
        if self.behind(word, value) is None:
            # (a ring no waiter can have seen before: the poster, the word and the value in it)
            self.bell[0] = ((value * 2 + word) * self.members + self.rank) & 0x7FFFFFFF
            futex(_SYS_FUTEX_X86_64, self._bell, _FUTEX_WAKE, 0x7FFFFFFF, None, None, 0)

    def behind(self, word: int, value: int) -> Optional[int]:
        late = np.flatnonzero(self.slots[:, word] < value)
        return int(late[0]) if late.size else None

    def wait(self, rung: int, timeout_s: float) -> None:
        ts = _Timespec(int(timeout_s), int((timeout_s % 1) * 1e9))
        _futex()(_SYS_FUTEX_X86_64, self._bell, _FUTEX_WAIT, rung, ctypes.byref(ts), None, 0)


# -- reading a peer's memory in place (cross-memory attach) ---------------------------------------
class _IoVec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]


def _process_vm(name: str):
    """libc's process_vm_readv or process_vm_writev, typed; None where there is none."""
    if not sys.platform.startswith("linux") or os.environ.get("TENSORWEAVE_CMA", "1") == "0":
        return None
    try:
        fn = getattr(ctypes.CDLL(None, use_errno=True), name)
    except (OSError, AttributeError):
        return None
    fn.restype = ctypes.c_ssize_t
    fn.argtypes = [ctypes.c_int, ctypes.POINTER(_IoVec), ctypes.c_ulong, ctypes.POINTER(_IoVec), ctypes.c_ulong,
                   ctypes.c_ulong]
    return fn


def _ptrace_allows_peers() -> bool:
    """Whether the kernel lets a process read a sibling of the same user (Yama's ptrace_scope 1
    and up allow only descendants; without Yama, the plain same-user rule)."""
    try:
        with open("/proc/sys/kernel/yama/ptrace_scope") as f:
            return f.read().strip() == "0"
    except FileNotFoundError:
        return True
    except OSError:
        return False


_VM: dict = {}                 # "read" / "write": libc's process_vm_readv / process_vm_writev
_REACHES: Optional[tuple] = None   # (pid, whether it works) once checked in this process


def reaches_peers() -> bool:
    """Whether this process may read and write the memory of its peers on this host with
    read_peer / write_peer (checked once per process: the rule above, and a read and a write of
    its own memory)."""
    global _REACHES
    if _REACHES is None or _REACHES[0] != _PID:
        works = False
        if _ptrace_allows_peers():
            _VM.update(read=_process_vm("process_vm_readv"), write=_process_vm("process_vm_writev"))
        if _VM.get("read") is not None and _VM.get("write") is not None:
            probe, got = np.arange(4, dtype=np.int64), np.zeros(4, np.int64)
            try:
                _move("read", _PID, probe.__array_interface__["data"][0], got)
                _move("write", _PID, probe.__array_interface__["data"][0], got + 1)
                works = bool(np.array_equal(probe, got + 1))
            except OSError:
                pass
        _REACHES = (_PID, works)
    return _REACHES[1]


def read_peer(pid: int, addr: int, dst: np.ndarray) -> None:
    """Copies dst.nbytes bytes at address `addr` of the process `pid` into the C-contiguous
    array `dst`. OSError: ESRCH when that process is gone, EFAULT for an address it does not
    map, EPERM when not allowed."""
    _peer_move("read", pid, addr, dst)


def write_peer(pid: int, addr: int, src: np.ndarray) -> None:
    """Copies the C-contiguous array `src` to address `addr` of the process `pid`; the errors
    of read_peer."""
    _peer_move("write", pid, addr, src)


def _peer_move(way: str, pid: int, addr: int, arr: np.ndarray) -> None:
    try:
        _move(way, pid, addr, arr)
    except OSError as e:
        if e.errno != errno.ESRCH and _start_time(pid) is None:
            raise OSError(errno.ESRCH, os.strerror(errno.ESRCH)) from None
        raise


def _move(way: str, pid: int, addr: int, arr: np.ndarray) -> None:
    fn, base, total, done = _VM[way], arr.__array_interface__["data"][0], arr.nbytes, 0
    while done < total:   # (a copy stops short only where the remote mapping does)
        local, remote = _IoVec(base + done, total - done), _IoVec(addr + done, total - done)
        got = fn(pid, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)
        if got <= 0:
            err = ctypes.get_errno() if got < 0 else errno.EFAULT
            raise OSError(err, os.strerror(err))
        done += got
