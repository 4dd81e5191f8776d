"""A task's side of the collective ops (ops/collective_ops.py): who the members of a group are,
and the link by rank over which one run of an instance sends and receives.

Groups. A member learns the group (group_key, group_size) once and keeps it: it pushes a join
("collective_join": [its task, group_key, group_size, nonce, its incarnation]) to the group leader,
the cluster's /job:chief/task:0, else /job:worker/task:0, else its first task (TF's
MultiWorkerMirroredStrategy picks the same leader). The leader's service answers once `group_size`
tasks joined: every member gets the members in (job, task index) order, their rank order, a fresh
epoch and the members' incarnations, pushed to its rendezvous under its nonce. A run that fails
forgets the group, so the next run joins afresh (a restarted member and the survivors meet again
under a new epoch; stale values of the old epoch are never taken, and expire with the
rendezvous' TTL).

Instances. The n-th run of (group_key, instance_key) on a task meets the n-th run on the other
members (a step id differs between the members' sessions, so it cannot name the meeting): its
values travel as ordinary tensor pushes into the receiver's rendezvous (worker._send, over the
transport the peer's address selects: Unix socket and shared memory on one host, TCP between
hosts) under the tensor name "collective/<epoch>/<group>/<instance>/<run>/<tag>" and a step id
of their own (negative, never a real step's). On one host a large all-reduce's data travels in no
message: the members read and write one another's memory in place (Link.in_place / read / write,
over shm.read_peer / write_peer), each member's process known from the Unix connection that
reaches it (worker's peer_pid: the socket's credentials), never from a message. From an
instance's second run on, its members meet at a board in shared memory (shm.Board: Link.board,
meet), not through messages: the first run's address swap names it, and every member keeps it
for the runs of that instance in that epoch. The runs of one instance on a task take turns, in
their order (a run starts once the one before it ended there), so that every member's n-th run
sees the same board.

Faults. A receive waits within the op's timeout_seconds and the step's deadline
(RunOptions.timeout_in_ms, ConfigProto.operation_timeout_in_ms), whichever comes first, and the
step's cancellation (ending a little before the step's deadline, so that the client hears why);
past it the run fails with UnavailableError naming the member that sent nothing (dead, or not
running the op). Without any timeout it still never hangs on a dead member: every PROBE_S of
waiting it pings the member it waits for. "Gone for good" is one rule (shared with
MonitoredSession's recovery, docs/INTERNALS.md): a task seen up here (a member of a group this task
was in) whose host refuses the ping's connection is gone (its process is), and the wait fails at
once, whether the group is running or forming again; so does one that does not answer within
PROBE_TIMEOUT_S, or answers as another incarnation (restarted quicker than the ping noticed: the
group it joined is no more). A task never seen up may still be starting: its refusals are waited
out for sockets.recovery_timeout_s() (TENSORWEAVE_RECOVERY_TIMEOUT_S) from the wait's start, then
it is gone too. While a group forms, a member pings the leader and in turn the other members of the
group's last forming, and the leader pings a member of it that has not joined again (else, at the
first forming, a chief/worker task that has not joined, when those are the group). The leader's
join given up on completes no group; when it was given up on because a member is gone, the members
that joined are told so (their joins fail at once, not when the leader's own session gives up). A
run that fails here aborts the run on the other members ("collective_abort", one-way: their waits
raise the same UnavailableError at once), so one member seeing a death fails the whole group's
step. A wait at a board keeps these rules (the deadline, the step's cancellation, a member's abort,
the pings), each slice of WAIT_SLICE_S, and fails at once when the process of the member it waits
for is gone. Whether a restarted task is waited for is the caller's: a MonitoredSession runs the step
again until its recovery timeout.
"""
from __future__ import annotations

import errno
import itertools
import secrets
import threading
import time
from typing import Callable, Optional

from tensorweave.distributed import arena, shm, sockets, wire
from tensorweave.distributed.cluster import ClusterSpec, parse_task_name
from tensorweave.framework import errors
from tensorweave.framework.device import task_name
from tensorweave.ops.collective_ops import CollectiveLink
from tensorweave.ops.sendrecv import RendezvousKey
from tensorweave.runtime.rendezvous import WAIT_SLICE_S, Rendezvous

PROBE_S = 2.0            # a wait pings the member it waits for this often
PROBE_TIMEOUT_S = 10.0   # ... which must answer within this
MAX_BOARDS = 64          # boards a task makes for its groups' instances (64 KiB each); past it, messages
STEP_MARGIN_S = 2.0      # a run's waits end this long (at most a quarter of the time left) before its step's deadline


def group_leader(cluster: ClusterSpec) -> str:
    """The task that resolves the cluster's collective groups."""
    for job in ("chief", "worker"):
        if job in cluster.jobs and cluster.task_indices(job):
            return task_name(job, min(cluster.task_indices(job)))
    return cluster.task_names()[0]


def _step_key(*parts) -> int:
    """A negative step id for one run's values (ints hash alike in every process)."""
    return -1 - (hash(parts) & ((1 << 62) - 1))


class _Wait:
    """What a rendezvous receive reads of a step, with the collective's own deadline; between
    its slices it pings `peer` (the member waited for) every PROBE_S, which must answer as the
    incarnation that joined the group (`incarnations`, once the group is known). A peer in
    `seen` (up once) whose host refuses the ping is gone at once (`gone` names it); one never
    seen is waited for up to the recovery timeout (it may be starting)."""

    __slots__ = ("_step", "deadline", "cancelled", "wait_remote", "peer", "_probe", "_probed", "incarnations",
                 "to_ping", "seen", "started", "gone")

    def __init__(self, step, deadline: Optional[float], probe: Callable[[str, float], Optional[int]],
                 seen: frozenset = frozenset()):
        self._step = step
        self.deadline = deadline
        self.cancelled = step.cancelled
        self.wait_remote = step.wait_remote
        self.peer: Optional[str] = None
        self._probe = probe
        self.started = self._probed = time.monotonic()
        self.incarnations: dict = {}
        self.to_ping: Optional[Callable[[], Optional[str]]] = None   # (a join: whom to ping now)
        self.seen = seen
        self.gone: Optional[str] = None

    def on_wait(self) -> None:
        if self._step.on_wait is not None:
            self._step.on_wait()
        now = time.monotonic()
        if now - self._probed < PROBE_S:
            return
        peer = self.peer if self.to_ping is None else self.to_ping()
        if peer is not None:
            left = self.time_left()   # (a ping never outlasts the wait's deadline)
            answered = self._ping(peer, PROBE_TIMEOUT_S if left is None else max(min(PROBE_TIMEOUT_S, left), 0.01))
            joined = self.incarnations.get(peer)
            if answered is not None and joined is not None and answered != joined:
                self.gone = peer
                raise errors.UnavailableError(None, None, f"{peer} was restarted (incarnation {joined} is "
                                                          f"gone, {answered} answers): the group it joined is no more")
        self._probed = time.monotonic()

    def _ping(self, peer: str, timeout_s: float) -> Optional[int]:
        """The peer's incarnation; UnavailableError when it is gone (the module's rule)."""
        try:
            return self._probe(peer, timeout_s)
        except errors.UnavailableError as e:
            waited = time.monotonic() - self.started
            if peer in self.seen or peer in self.incarnations:
                self.gone = peer
                raise
            if waited < sockets.recovery_timeout_s():
                return None   # (never up: it may be starting)
            self.gone = peer
            raise errors.UnavailableError(None, None, f"{e.message}; not up after {waited:.0f} s of waiting "
                                                      f"(TENSORWEAVE_RECOVERY_TIMEOUT_S="
                                                      f"{sockets.recovery_timeout_s():g})") from None

    def waiting_for(self, peer: str) -> "_Wait":
        if peer != self.peer:
            self.peer, self._probed = peer, time.monotonic()
        return self

    @property
    def error(self):
        return self._step.error

    def time_left(self) -> Optional[float]:
        return None if self.deadline is None else self.deadline - time.monotonic()


class Collectives:
    """One task's groups, run counters and leader bookkeeping. `send(dst_task, key, value)`
    pushes a value into another task's rendezvous, `push(dst_task, method, args)` a one-way
    message to its service (neither waits); `probe(task, timeout_s)` pings a task and gives its
    incarnation (None: not known, in process; UnavailableError when it does not answer, at once
    when its host refuses the connection).
    `incarnation` is this task's; `peer_pid(task)` the pid of a task's process when a
    connection on this host says it (the one whose memory the all-reduce reaches in place)."""

    def __init__(self, task: str, cluster: ClusterSpec, rendezvous: Rendezvous,
                 send: Callable[[str, RendezvousKey, object], None], push: Callable[[str, str, object], None],
                 probe: Callable[[str, float], Optional[int]], incarnation: int = 0,
                 peer_pid: Optional[Callable[[str], Optional[int]]] = None):
        self.task = task
        self.incarnation = incarnation
        self.leader = group_leader(cluster)
        self.cluster = cluster
        self._cluster_tasks = frozenset(cluster.task_names())
        self._rendezvous = rendezvous
        self._send = send
        self._push = push
        self._probe = probe
        self._peer_pid = peer_pid
        self._lock = threading.Lock()
        self._groups: dict = {}       # group_key -> (members, epoch, {member: incarnation})
        self._resolving: dict = {}    # group_key -> lock held by the run that joins for it
        self._runs: dict = {}         # (group_key, instance_key) -> runs started
        self._joins: dict = {}        # (leader) group_key -> (group_size, {task: (nonce, incarnation)})
        self._formed: dict = {}       # group_key -> the members of its last group
        self._seen: frozenset = frozenset()   # tasks that were members of a group with this one (up once)
        self._boards: dict = {}       # (epoch, group_key, instance_key) -> the board its members meet at
        self._made: dict = {}         # (epoch, group_key, instance_key) -> a board's reference, made here
        self._turns: dict = {}        # (epoch, group_key, instance_key) -> the run whose turn it is here
        self._turn = threading.Condition(self._lock)

    # -- a run ----------------------------------------------------------------------------------
    def instance(self, node, step, size: int, group_key: int, instance_key: int, timeout_s: float) -> "Link":
        """The link of this task's next run of (group_key, instance_key), its group resolved."""
        now = time.monotonic()
        deadline = now + timeout_s if timeout_s > 0 else None
        if step is not None and step.deadline is not None:
            # Ends before the step's own deadline, so that its UnavailableError reaches the
            # client before the client gives up on the step (DeadlineExceededError).
            ours = step.deadline - min(STEP_MARGIN_S, 0.25 * max(step.deadline - now, 0.0))
            deadline = ours if deadline is None else min(deadline, ours)
        wait = _Wait(step, deadline, self._probe, self._seen)
        members, epoch, wait.incarnations = self._group(node, wait, size, group_key)
        with self._lock:
            run = self._runs.get((group_key, instance_key), 0)
            self._runs[(group_key, instance_key)] = run + 1
        link = Link(self, node, wait, members, epoch, group_key, instance_key, run)
        self._take_turn(link, wait)
        return link

    def _take_turn(self, link: "Link", wait: _Wait) -> None:
        """Waits until the run before the link's, on this task, ended (module docstring)."""
        node, error = link._node, None
        with self._turn:
            while error is None and self._turns.get(link.key, 0) < link.run:
                left, group = wait.time_left(), self._groups.get(link.key[1])
                if group is None or group[1] != link.key[0]:   # (a run before it failed: the group is no more)
                    error = errors.UnavailableError(node, node.name, f"{node.op} {node.name}: run {link.run - 1} "
                                                                     f"of the instance failed on this task")
                elif left is not None and left <= 0:
                    error = errors.UnavailableError(node, node.name, f"{node.op} {node.name}: run {link.run - 1} of "
                                                                     f"the instance on this task did not end in time")
                elif wait.cancelled.is_set():
                    error = errors.CancelledError(node, node.name, f"{node.op} {node.name}: the step was cancelled")
                else:
                    self._turn.wait(WAIT_SLICE_S if left is None else min(WAIT_SLICE_S, left))
        if error is not None:
            self.failed(link.key[1])   # (its turn never comes: the group starts again, turns and all)
            raise error

    def _end_turn(self, link: "Link") -> None:
        with self._turn:
            if self._turns.get(link.key, 0) == link.run:
                self._turns[link.key] = link.run + 1
                self._turn.notify_all()

    def failed(self, group_key: int) -> None:
        """A run of the group failed here: forget the group, its run counters and boards."""
        with self._lock:
            self._groups.pop(group_key, None)
            for k in [k for k in self._runs if k[0] == group_key]:
                del self._runs[k]
            for k in [k for k in self._boards if k[1] == group_key]:
                del self._boards[k]
            made = [self._made.pop(k) for k in list(self._made) if k[1] == group_key]
            for k in [k for k in self._turns if k[1] == group_key]:
                del self._turns[k]
            self._turn.notify_all()   # (runs waiting for their turn in the group fail)
        pool = shm.pool()
        for ref in made:
            if pool is not None:
                pool.drop_board(ref)

    def take_abort(self, args) -> Optional[tuple]:
        """A member's "collective_abort" [step id, message]: (step id, message) of the run to
        fail here with UnavailableError (only runs' own negative step ids)."""
        wire.expect(args, list, "collective abort")
        if len(args) != 2:
            raise wire.WireError(f"a collective abort carries 2 fields, got {len(args)}")
        step_id, message = wire.expect(args[0], int, "step id"), wire.expect(args[1], str, "message")
        if step_id >= 0:
            raise wire.WireError("a collective abort names a step of its own (a negative id)")
        return step_id, message[:1000]

    def _abort_others(self, link: "Link", error: BaseException) -> None:
        message = getattr(error, "message", None) or f"{type(error).__name__}: {error}"
        for member in link.members:
            if member != self.task:
                try:
                    self._push(member, "collective_abort", [link.step_id, f"{member} aborted by {self.task}: "
                                                                          f"{message}"])
                except errors.OpError:
                    pass   # (gone: it has no run to fail)

    def _group(self, node, wait: _Wait, size: int, group_key: int) -> tuple:
        with self._lock:
            known = self._groups.get(group_key)
            gate = self._resolving.setdefault(group_key, threading.Lock())
        if known is None:
            with gate:   # (one join per group at a time; the others find its result)
                with self._lock:
                    known = self._groups.get(group_key)
                if known is None:
                    known = self._join(node, wait, size, group_key)
                    with self._lock:
                        self._groups[group_key] = known
                        self._formed[group_key] = known[0]
                        self._seen = self._seen | set(known[0])
        members = known[0]
        if len(members) != size:
            raise errors.InvalidArgumentError(
                node, node.name, f"{node.op} {node.name}: group {group_key} has {len(members)} members, "
                                 f"but the op says group_size {size}")
        return known

    def _join(self, node, wait: _Wait, size: int, group_key: int) -> tuple:
        nonce = secrets.randbits(48)
        try:
            self._push(self.leader, "collective_join", [self.task, group_key, size, nonce, self.incarnation])
        except errors.OpError as e:
            raise errors.UnavailableError(node, node.name, f"{node.op} {node.name}: the collective group leader "
                                                           f"{self.leader} is unreachable: {e.message}") from None
        key = RendezvousKey(self.leader, self.task, f"collective-group/{group_key}/{nonce}", _step_key(nonce))
        if self.task == self.leader:
            wait.to_ping = lambda: self._absent(group_key, size)
        else:   # (and the leader stays the peer of a broadcast's anonymous receive: it sends them)
            wait.waiting_for(self.leader).to_ping = self._in_turn(group_key)
        try:
            answer = _receive(self._rendezvous, key, wait, node,
                              f"group {group_key} of {size} members: the leader {self.leader} did not gather every "
                              f"member (a member is down or does not run the op)")
        except errors.OpError as e:
            if self.task == self.leader:   # (its join, waited for no more, must not complete a group)
                self._withdraw(group_key, nonce, wait.gone and f"group {group_key} cannot form: {e.message}")
            raise
        finally:
            wait.to_ping = None
        members, epoch, incarnations = answer
        if self.task not in members:
            raise errors.InternalError(node, node.name, f"group {group_key} was resolved without {self.task}")
        return tuple(members), int(epoch), dict(zip(members, incarnations))

    def _in_turn(self, group_key: int) -> Callable[[], str]:
        """(a member's join) Whom to ping next: the leader, then in turn each other member of the
        group's last forming (one gone fails the forming here too, whatever the leader saw)."""
        order = [self.leader, *(m for m in self._formed.get(group_key, ()) if m not in (self.task, self.leader))]
        turn = itertools.count()
        return lambda: order[next(turn) % len(order)]

    # -- the leader -----------------------------------------------------------------------------
    def take_join(self, args) -> None:
        """(leader) A member's join [task, group_key, group_size, nonce, incarnation]; once
        group_size tasks joined, each gets [members, epoch, their incarnations] (pushed from a
        thread: this runs on the IO role). A member's later join replaces its earlier one (a
        restarted member's old process never runs the group)."""
        wire.expect(args, list, "collective join")
        if len(args) != 5:
            raise wire.WireError(f"a collective join carries 5 fields, got {len(args)}")
        member = wire.expect(args[0], str, "member")
        group_key, size, nonce, incarnation = (wire.expect(a, int, w) for a, w in
                                               zip(args[1:], ("group_key", "size", "nonce", "incarnation")))
        if member not in self._cluster_tasks or size < 1:
            raise wire.WireError(f"collective join from {member:.80} (group size {size}) refused")
        with self._lock:
            want, joined = self._joins.setdefault(group_key, (size, {}))
            if want != size:   # (a new group size starts over: members that disagree time out)
                want, joined = self._joins[group_key] = (size, {})
            joined[member] = (nonce, incarnation)
            if len(joined) < size:
                return
            del self._joins[group_key]
            members = self._formed[group_key] = sorted(joined, key=parse_task_name)
        epoch = secrets.randbits(48)
        answers = [(t, RendezvousKey(self.task, t, f"collective-group/{group_key}/{n}", _step_key(n)))
                   for t, (n, _) in joined.items()]
        incarnations = [joined[m][1] for m in members]
        threading.Thread(target=self._answer, args=(answers, [members, epoch, incarnations]), daemon=True,
                         name="tw-collective-group").start()

    def _absent(self, group_key: int, size: int) -> Optional[str]:
        """(leader) A member of the group's last forming that has not joined it again, else
        (its first forming) a chief or worker task that has not joined when those are the
        group (the MultiWorkerMirroredStrategy's), else None."""
        expected = self._formed.get(group_key)
        if expected is None:
            expected = [t for t in self.cluster.task_names() if parse_task_name(t)[0] in ("chief", "worker")]
            expected = expected if len(expected) == size else ()
        with self._lock:
            joined = self._joins.get(group_key, (0, {}))[1]
            return next((m for m in expected if m != self.task and m not in joined), None)

    def _withdraw(self, group_key: int, nonce: int, gone: Optional[str]) -> None:
        """(leader) Its own join `nonce` is waited for no more: the others that join meanwhile
        wait for its next one, rather than meet in a group whose leader never runs it; when it
        was given up on because a member is gone (`gone` says so), the joins waiting are failed
        with that, so that every member's run fails now, as the leader's did."""
        with self._lock:
            joins = self._joins.get(group_key)
            if joins is None or joins[1].get(self.task, (None,))[0] != nonce:
                return
            del joins[1][self.task]
            waiting = list(joins[1].items()) if gone else []
            if gone:
                del self._joins[group_key]
        for member, (member_nonce, _) in waiting:
            try:
                self._push(member, "collective_abort", [_step_key(member_nonce), f"{member} told by {self.task}: "
                                                                                f"{gone}"])
            except errors.OpError:
                pass   # (gone too)

    def _answer(self, answers: list, value: list) -> None:
        for member, key in answers:
            try:
                self._send(member, key, value)
            except errors.OpError:
                pass   # (that member is gone: the others' runs time out with UnavailableError)


def _receive(rendezvous: Rendezvous, key: RendezvousKey, wait: _Wait, node, what: str):
    """A value from the rendezvous within the wait's deadline; past it, or when the member
    waited for does not answer a ping, UnavailableError."""
    try:
        return rendezvous.recv(key, wait, node.name)
    except errors.DeadlineExceededError:
        raise errors.UnavailableError(
            node, node.name, f"{node.op} {node.name}: nothing from {key.send_device} within the collective's "
                             f"timeout: {what}") from None
    except errors.UnavailableError as e:
        raise errors.UnavailableError(node, node.name, f"{node.op} {node.name}: {e.message}") from None


class Link(CollectiveLink):
    """One run's link to the group's members by rank (ops/collective_ops.py's `link`); used as a
    context manager: a run that fails makes the task forget the group."""

    def __init__(self, owner: Collectives, node, wait: _Wait, members: tuple, epoch: int, group_key: int,
                 instance_key: int, run: int):
        self._owner = owner
        self._node = node
        self._wait = wait
        self.members = members
        self.size = len(members)
        self.hosts = [owner.cluster.address_of(m).rpartition(":")[0] for m in members]   # (hierarchical)
        self.rank = members.index(owner.task)
        self._group_key = group_key
        self._prefix = f"collective/{epoch}/{group_key}/{instance_key}/{run}/"
        self.step_id = _step_key(epoch, group_key, instance_key, run)
        self.key, self.run = (epoch, group_key, instance_key), run
        self._offered = None   # (the first member) a board it named in this run's swap, not yet kept

    def __enter__(self) -> "Link":
        return self

    def __exit__(self, kind, exc, tb) -> bool:
        if self._offered is not None and shm.pool() is not None:   # (named, but not kept: the ring ran)
            shm.pool().drop_board(self._offered[0])
        self._owner._end_turn(self)
        if kind is not None:
            self._owner.failed(self._group_key)
            self._owner._abort_others(self, exc)
        return False

    # -- a board the members meet at (shm.Board), from an instance's second run on -------------
    def board(self):
        """The board this instance's members meet at in this run, None before they have one."""
        return self._owner._boards.get(self.key)

    def offer_board(self) -> tuple:
        """(the first member, before its swap) 3 ints naming a new board for the members to keep
        (keep_board), zeros when there is none to be had."""
        pool = shm.pool()
        if pool is None or len(self._owner._made) >= MAX_BOARDS:   # (instances past that meet in messages)
            return 0, 0, 0
        self._offered = pool.board(self.size)
        return (0, 0, 0) if self._offered is None else self._offered[0]

    def keep_board(self, ref) -> None:
        """Every member, once the swap says they all reach one another: keeps the board the first
        member named (`ref`; zeros: none) for the instance's next runs."""
        if not any(int(x) for x in ref):
            return
        if self.rank == 0:
            (made, board), self._offered = self._offered, None
            self._owner._made[self.key] = made
        else:
            try:
                board = shm.attached().board(ref, self.size, self.rank)
            except (OSError, shm.ShmError) as e:
                node = self._node
                raise errors.InternalError(node, node.name, f"{node.op} {node.name}: the board {self.members[0]} "
                                                            f"named cannot be mapped ({e})") from None
        self._owner._boards[self.key] = board

    def meet(self, board, word: int, record=()) -> None:
        """Posts `record` (int64 words) and this run at `word` of this member's slot of `board`,
        then waits until every member posted this run there (the faults' rules of the module
        docstring)."""
        value, checked = self.run + 1, time.monotonic()
        board.post(word, value, record)
        while True:
            rung = int(board.bell[0])
            late = board.behind(word, value)
            if late is None:
                return
            now = time.monotonic()
            self._still_waiting(late, now - checked >= WAIT_SLICE_S)
            if now - checked >= WAIT_SLICE_S:
                checked = now
            board.wait(rung, WAIT_SLICE_S)

    def _still_waiting(self, rank: int, probe: bool) -> None:
        """Raises what a wait for member `rank` meets: the rendezvous's rules (its deadline, the
        step's cancellation, an abort: Rendezvous.still_waiting); with `probe`, its process gone,
        or a ping's answer (_Wait.on_wait)."""
        node, member = self._node, self.members[rank]
        wait = self._wait.waiting_for(member)
        self._owner._rendezvous.still_waiting(self.step_id, wait, lambda: errors.UnavailableError(
            node, node.name, f"{node.op} {node.name}: nothing from {member} within the collective's timeout: "
                             f"{member} is down, or does not run instance {self.key[2]} of group {self.key[1]}"),
            f"{node.op} {node.name}: the step was cancelled", node, node.name)
        if not probe:
            return
        if shm.gone(self._pids[rank]):
            raise errors.UnavailableError(node, node.name, f"{node.op} {node.name}: {member} is gone (its process "
                                                           f"ended)")
        try:
            wait.on_wait()
        except errors.UnavailableError as e:
            raise errors.UnavailableError(node, node.name, f"{node.op} {node.name}: {e.message}") from None

    # -- buffers (the ring's data path: shm.Pool.local / lend, when this process has a pool) ------
    def local(self, n: int, dtype, hand_over: bool = False):
        """A writable array of `n` elements in shared memory (None: none to be had): the ring's
        output (a part of it lent sends as a reference) or, `hand_over`, a scratch chunk that
        becomes its receiver's when sent (no copy)."""
        pool = shm.pool()
        return None if pool is None else pool.local(n, dtype, hand_over)

    def lend(self, arr, on: bool) -> bool:
        """Starts or ends lending the local array `arr`: its parts sent meanwhile are read in
        place by their receivers (shm.Pool.lend)."""
        pool = shm.pool()
        return pool is not None and pool.lend(arr, on)

    # -- the other members' memory, reached in place (one host: shm.read_peer / write_peer) ------
    def in_place(self) -> bool:
        """Whether this member may read and write every other member's memory in place: cross-
        memory attach works here (shm.reaches_peers) and each member's process is known from
        the connection that reaches it (never from what a message says)."""
        peer_pid = self._owner._peer_pid
        if peer_pid is None or not shm.reaches_peers():
            return False
        try:
            self._pids = {r: peer_pid(m) for r, m in enumerate(self.members) if m != self._owner.task}
        except errors.OpError:
            return False
        return all(self._pids.values())

    def shared_output(self, nbytes: int):
        """(the first member) (reference, writable byte array) of an output buffer of `nbytes`
        the members share (shm.Pool.group_output), or None when there is none to be had."""
        pool = shm.pool()
        return None if pool is None else pool.group_output(nbytes, self.size)

    def attach_output(self, ref, nbytes: int):
        """The writable byte array over the shared output the first member named `ref`; an
        error naming the first member when it cannot be mapped."""
        try:
            return shm.attached().group_output(ref, nbytes, self.size, self.rank)
        except (OSError, shm.ShmError) as e:
            node, error = self._node, errors.InternalError
            if shm.gone(self._pids[0]):
                error = errors.UnavailableError   # (its process is gone, and its files may be with it)
            raise error(node, node.name, f"{node.op} {node.name}: the output {self.members[0]} shares cannot be "
                                         f"mapped ({e})") from None

    def input_ref(self, arr) -> tuple:
        """3 ints that name `arr` in this process's arena (distributed/arena.py), zeros where it
        does not lie there."""
        return arena.ref(arr)

    def peer_input(self, rank: int, ref, n: int, dtype):
        """The read-only array of `n` elements member `rank` named by input_ref, its arena mapped
        here; None where it named none or it cannot be mapped (read it then)."""
        return arena.peer_array(self._pids[rank], ref, n, dtype)

    def read(self, rank: int, addr: int, dst) -> None:
        """Copies dst.nbytes bytes at `addr` of member `rank` into `dst` (after in_place());
        UnavailableError naming the member when its process is gone."""
        self._in_place(shm.read_peer, rank, addr, dst)

    def write(self, rank: int, addr: int, src) -> None:
        """Copies `src` to `addr` of member `rank`, as `read` does the other way."""
        self._in_place(shm.write_peer, rank, addr, src)

    def _in_place(self, move, rank: int, addr: int, arr) -> None:
        node, member = self._node, self.members[rank]
        try:
            move(self._pids[rank], int(addr), arr)
        except OSError as e:
            if e.errno in (errno.ESRCH, errno.EFAULT):   # (EFAULT: its run failed, its memory is no more)
                raise errors.UnavailableError(node, node.name, f"{node.op} {node.name}: {member} is gone or its run "
                                                               f"failed (reaching its memory: {e.strerror})") from None
            raise errors.InternalError(node, node.name, f"{node.op} {node.name}: reaching the memory of {member} "
                                                        f"failed ({e.strerror}); TENSORWEAVE_CMA=0 on every member "
                                                        f"turns reaching it in place off") from None

    def send(self, dst_rank: int, tag: str, value, anonymous: bool = False) -> None:
        src = self.members[0] if anonymous else self._owner.task
        dst = self.members[dst_rank]
        try:
            self._owner._send(dst, RendezvousKey(src, dst, self._prefix + tag, self.step_id), value)
        except errors.OpError as e:
            raise errors.UnavailableError(self._node, self._node.name,
                                          f"{self._node.op} {self._node.name}: sending to {dst} failed: "
                                          f"{e.message}") from None

    def recv(self, src_rank: Optional[int], tag: str):
        src = self.members[0 if src_rank is None else src_rank]
        key = RendezvousKey(src, self._owner.task, self._prefix + tag, self.step_id)
        who = "the sender" if src_rank is None else src
        wait = self._wait if src_rank is None else self._wait.waiting_for(src)
        return _receive(self._owner._rendezvous, key, wait, self._node,
                        f"{who} is down, or does not run instance {self._prefix.split('/')[3]} of group "
                        f"{self._group_key}")
