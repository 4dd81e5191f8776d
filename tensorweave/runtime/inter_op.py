"""Inter-op parallelism (TF's `ConfigProto.inter_op_parallelism_threads`): the ready ops of one
step run at once on a pool of threads, the step's own thread being one of them.

Python runs one thread's bytecode at a time, so concurrency pays only where kernels release the GIL
(numpy's large loops, BLAS and oneDNN, waits on queues and Recvs), and a hand-off between threads
costs 10-50 us. A plan therefore runs in parallel only when that was measured to pay (`_Choice`):
its first steps run serially, three of them timing each op (one as a parallel step's thread would
run it, on its share of the cores: oneDNN's team of two on one); a plan whose long ops (>= _LONG_S)
sit on independent branches, so that their critical path at those times is clearly shorter than the
serial step, or that falls in two parts whose own model is, then alternates serial and parallel
steps and keeps the faster (parallel, where the plan has no blocking op, the fastest of three ways
measured in its first trial: long ops handed off one by one, `_Offload`; every ready op to a free
thread, `_Run`; and where the plan falls in two parts by its fetches and targets, each part on a
thread of its own, `_Halves`). Another process may have held the second core while it measured:
after a close or changed choice the trial comes again soon (after _FIRST_RECHECK steps), after a
clear one later, less and less often while trials confirm it; once serial steps win, the next
trial measures every way again. A parallel step gives its threads short turns at the GIL
(`intra_op.short_switches`). A plan with two independent blocking ops that are not Recvs (queue ops that may wait on
each other) runs in parallel from its first step, as TF would run it. TENSORWEAVE_INTER_OP=parallel
runs every plan given a pool of several threads in parallel from its first step (=serial: only
those with such blocking ops); unset or "auto", the measurement decides. With one thread (or -1, or
a negative count) a plan runs exactly as before: the serial loop of `Plan._execute`. A partition of
a distributed step (a plan with a Recv from another task) always runs serially: its Recvs wait on
other tasks' steps, which may wait on this plan's Sends, and with one pool shared by the steps a
task serves at once, every thread could be waiting in a Recv while the Sends that would free them
are queued (a cluster's deadlock, seen in the CIFAR-10 ps job); the serial order sends before it
receives.

Kernels keep their own intra-op teams (oneDNN's OpenMP threads, BLAS): a team's size changes
how some products add up, and a step gives the same numbers whichever way it runs. OpenMP's
threads wait passively (ops/onednn.py), so two teams on two cores take turns rather than spin,
and a plan whose parallel steps are slower for it stays serial by the measurement. numpy's
split elementwise kernels (ops/intra_op.py), whose results do not depend on the split, use
only a thread's share of the cores while a step runs in parallel.

Pools follow TF 1.15's DirectSession: `session_inter_op_thread_pool` entries (a `global_name`
shares one pool between sessions), else a pool of the session's own with
`use_per_session_threads`, else one global pool sized by the first session that makes it;
`RunOptions.inter_op_thread_pool` picks an entry (-1: the caller's thread alone).
"""
from __future__ import annotations

import collections
import os
import threading
import time
import weakref
from typing import Optional

import numpy as np

from tensorweave.framework import denormals, errors
from tensorweave.framework.graph_def import live_inputs
from tensorweave.framework.limits import available_cores
from tensorweave.ops import registry
from tensorweave.ops import intra_op

_LONG_S = 100e-6        # an op this long or longer is worth running beside another
_PROFILE_STEPS = 4      # serial steps before the choice: a warm-up, three timed op by op (the second on a share)
_TRIAL_STEPS = 8        # then twice this many steps alternating serial and parallel
_GAIN = 0.9             # parallel is tried when its estimate is below this share of serial (and kept: intra_op.KEEP)
_HAND_OFF_S = 30e-6     # what one hand-off between threads costs, in the estimate
_FIRST_RECHECK = 50     # a changed or close measured choice is measured again after this many steps,
_CLEAR_RECHECK = 400    # a clear one at least after this many, doubling while trials confirm it,
_RECHECK_STEPS = 2000   # up to this (the load changes)
_RECVS = frozenset(("_Recv", "_HostRecv"))


# -- how many threads (the cores: framework/limits.available_cores) ----------------------------
def inter_op_threads(config) -> int:
    """TF's NumInterOpThreadsFromSessionOptions: inter_op_parallelism_threads when positive,
    else $TF_NUM_INTEROP_THREADS when positive, else the cores the process may use."""
    if config.inter_op_parallelism_threads > 0:
        return config.inter_op_parallelism_threads
    try:
        env = int(os.environ.get("TF_NUM_INTEROP_THREADS", "0"))
    except ValueError:
        env = 0
    return env if env > 0 else available_cores()


# -- pools -------------------------------------------------------------------------------------
class InterOpPool:
    """Up to `threads` ops of a step at once: the step's own thread and `threads - 1` pool
    threads (started when first needed, daemons), shared by every step given the pool."""

    def __init__(self, threads: int, name: str = "Compute"):
        self.threads = max(1, int(threads))
        self.name = name
        self._jobs: collections.deque = collections.deque()
        self._cond = threading.Condition(threading.Lock())
        self._started = 0
        self._idle = 0
        self._closed = False
        # The parts an intra-op split may use on a thread of a parallel step: the cores shared
        # between the pool's threads (oneDNN's and BLAS's teams keep their size: it decides how
        # they add up, and a parallel step gives the serial step's numbers).
        self.intra_op_share = max(1, available_cores() // self.threads)
        _every_pool.add(self)

    def _forked(self) -> None:
        """In a forked child: the parent's threads are not there; new ones start when asked."""
        self._cond = threading.Condition(threading.Lock())
        self._jobs.clear()
        self._started = self._idle = 0

    def submit(self, job) -> None:
        """Runs job() on a pool thread."""
        with self._cond:
            self._jobs.append(job)
            if self._idle:
                self._cond.notify()
            elif self._started < self.threads - 1 and not self._closed:
                self._started += 1
                threading.Thread(target=self._serve, name=f"tensorweave-{self.name}-{self._started}",
                                 daemon=True).start()

    def _serve(self) -> None:
        denormals.flush_this_thread()
        intra_op.cap_parts(self.intra_op_share)
        _serving.pool = self
        cond, jobs = self._cond, self._jobs
        while True:
            with cond:
                while not jobs:
                    if self._closed:
                        self._started -= 1
                        return
                    self._idle += 1
                    cond.wait()
                    self._idle -= 1
                job = jobs.popleft()
            job()
            job = None   # (the job holds its step's values: they must not wait here for the next job)

    def close(self) -> None:
        """Its threads end once the jobs given them are done (a session's own pool, at close)."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()


_every_pool: weakref.WeakSet = weakref.WeakSet()
_serving = threading.local()   # .pool: the pool whose thread this is


def _after_fork() -> None:
    global _pools_lock
    _pools_lock = threading.Lock()
    for pool in list(_every_pool):
        pool._forked()


os.register_at_fork(after_in_child=_after_fork)
_pools_lock = threading.Lock()
_global_pool: Optional[InterOpPool] = None
_named_pools: dict = {}   # global_name -> (num_threads asked, InterOpPool)


def global_pool(config) -> InterOpPool:
    """The process's pool (TF's ComputePool): sized by the first session that asks for it."""
    global _global_pool
    with _pools_lock:
        if _global_pool is None:
            _global_pool = InterOpPool(inter_op_threads(config))
        return _global_pool


def session_pools(config) -> tuple[list, list]:
    """(pools, the ones the session owns and closes) for a session with ConfigProto `config`,
    as TF 1.15's DirectSession makes them. A negative inter_op_parallelism_threads runs every
    op on the caller's thread: no pool."""
    if config.inter_op_parallelism_threads < 0:
        return [None], []
    if config.session_inter_op_thread_pool:
        pools, owned = [], []
        for i, options in enumerate(config.session_inter_op_thread_pool):
            num_threads = _field(options, "num_threads", 0)
            name = _field(options, "global_name", "")
            threads = num_threads if num_threads > 0 else inter_op_threads(config)
            if not name:
                pools.append(InterOpPool(threads, f"Compute{i}"))
                owned.append(pools[-1])
                continue
            with _pools_lock:
                asked, pool = _named_pools.get(name, (None, None))
                if pool is None:
                    pool = InterOpPool(threads, f"Compute{i}")
                    _named_pools[name] = (num_threads, pool)
                elif asked != num_threads:
                    raise errors.InvalidArgumentError(
                        None, None, f"Pool {name} configured previously with num_threads={asked}; cannot "
                                    f"re-configure with num_threads={num_threads}")
            pools.append(pool)
        return pools, owned
    if config.use_per_session_threads:
        pool = InterOpPool(inter_op_threads(config))
        return [pool], [pool]
    return [global_pool(config)], []


def server_pool(config) -> Optional[InterOpPool]:
    """A tf.train.Server's pool for the steps its task runs, sized by its ConfigProto (TF: the
    server's default_session_config); None (serial steps) for a negative count."""
    if config is None:
        return InterOpPool(inter_op_threads(_NO_CONFIG))
    return None if config.inter_op_parallelism_threads < 0 else InterOpPool(inter_op_threads(config))


class _NO_CONFIG:
    inter_op_parallelism_threads = 0


def _field(options, name: str, default):
    """A ThreadPoolOptionProto's field: given as a message-like object or a dict."""
    if isinstance(options, dict):
        unknown = set(options) - {"num_threads", "global_name"}
        if unknown:
            raise ValueError(f"Protocol message ThreadPoolOptionProto has no \"{sorted(unknown)[0]}\" field.")
        return options.get(name, default)
    return getattr(options, name, default)


def pool_for_run(pools: list, options) -> Optional[InterOpPool]:
    """The pool RunOptions.inter_op_thread_pool picks (0 by default; -1: the caller's thread)."""
    index = options.inter_op_thread_pool if options is not None else 0
    if index < -1 or index >= len(pools):
        raise errors.InvalidArgumentError(None, None, f"Invalid inter_op_thread_pool: {index}")
    return None if index == -1 else pools[index]


# -- a plan's dependencies -----------------------------------------------------------------------
def step_slots(step: tuple) -> tuple:
    """(input slots, output slots) of one of Plan's steps (mode, fn, a, b, c; executor._MODE_*)."""
    mode, _, a, b, c = step
    if mode == 3:
        return (a, b), (c,)
    if mode == 4:
        return (a,), (c,)
    if mode == 0:
        return a, (b,)
    if mode == 2:
        return a, ()
    return a, tuple(o for o in b if o >= 0)


class _Graph:
    """The steps of a plan as a dependency graph: data edges by slot, control edges (and the
    edges through nodes that have no step: constants, pruned nodes) by node."""

    def __init__(self, plan):
        steps, names = plan._steps, plan._names
        n = len(steps)
        producer: dict = {}
        io = [step_slots(st) for st in steps]
        for i, (_, outs) in enumerate(io):
            for s in outs:
                producer[s] = i
        # a node's own step: its last before the fetches' copies (the copies a node's inputs need
        # come before it, named after it)
        node_step = {node.name: i for i, node in enumerate(names[:plan._node_steps])}
        through = _Through(plan._by_name, plan._feed_set, node_step)
        preds: list = []
        for i, (ins, _) in enumerate(io):
            p = {producer[s] for s in ins if s in producer and producer[s] < i}
            if i < plan._node_steps and node_step[names[i].name] == i:
                p |= through.preds(names[i].name)
            p.discard(i)
            preds.append(p)
        succ: list = [[] for _ in range(n)]
        for i, p in enumerate(preds):
            for j in p:
                succ[j].append(i)
        self.n = n
        self.preds = preds
        self.succ = [tuple(s) for s in succ]
        self.npred = [len(p) for p in preds]
        # (blocking ops are taken last, as the serial order runs them: a thread waiting in one
        # while an op that would end the wait is queued behind it gains nothing)
        self.blocking = [i < plan._node_steps and registry.lookup(node.op).blocking for i, node in enumerate(names)]
        self.roots = sorted((i for i in range(n) if not preds[i]), key=self.blocking.__getitem__)
        self._ancestors: Optional[list] = None
        blocking = [i for i, node in enumerate(names[:plan._node_steps])
                    if node_step[node.name] == i and self.blocking[i]]
        self.must_overlap = len(blocking) > 1 and self._independent_pair(blocking)

    def ancestors(self) -> list:
        """Each step's ancestors as a bit set (steps are in topological order)."""
        if self._ancestors is None:
            anc = [0] * self.n
            for i, p in enumerate(self.preds):
                bits = 0
                for j in p:
                    bits |= anc[j] | (1 << j)
                anc[i] = bits
            self._ancestors = anc
        return self._ancestors

    def _independent_pair(self, steps: list) -> bool:
        anc = self.ancestors()
        return any(not (anc[b] >> a) & 1 for k, a in enumerate(steps) for b in steps[k + 1:])

    def estimate(self, cost: list, threads: int) -> float:
        """A step's time in parallel, from each op's time on a thread's share of the cores: no less
        than the longest path, nor than the short ops (they hold the GIL) plus the long ones spread
        over the threads."""
        finish = [0.0] * self.n
        for i, p in enumerate(self.preds):
            finish[i] = cost[i] + max((finish[j] for j in p), default=0.0)
        long_ops = [c for c in cost if c >= _LONG_S]
        short = sum(cost) - sum(long_ops)
        return max(max(finish, default=0.0), short + sum(long_ops) / threads) + _HAND_OFF_S * len(long_ops)


class _Through:
    """The steps a node waits for, looking through nodes without a step of their own."""

    def __init__(self, by_name: dict, fed: set, node_step: dict):
        self.by_name, self.fed, self.node_step = by_name, fed, node_step
        self.memo: dict = {}

    def preds(self, name: str) -> set:
        by_name, node_step, memo = self.by_name, self.node_step, self.memo
        out: set = set()
        stack = []
        for src in live_inputs(by_name[name], by_name, self.fed):
            if src in node_step:
                out.add(node_step[src])
            elif src in by_name:
                stack.append(src)
        while stack:   # (iterative: a pruned gradient chain may be thousands of nodes long)
            top = stack[-1]
            if top in memo:
                stack.pop()
                continue
            srcs = list(live_inputs(by_name[top], by_name, self.fed))
            todo = [s for s in srcs if s not in node_step and s in by_name and s not in memo]
            if todo:
                stack.extend(todo)
                continue
            acc = {node_step[s] for s in srcs if s in node_step}
            for s in srcs:
                if s in memo:
                    acc |= memo[s]
            memo[top] = acc
            stack.pop()
        for src in live_inputs(by_name[name], by_name, self.fed):
            if src not in node_step and src in memo:
                out |= memo[src]
        return out


# -- the choice between serial and parallel ---------------------------------------------------------
_PROFILE, _TRIAL, _SERIAL, _PARALLEL = 0, 1, 2, 3


class _Choice:
    """Per plan and thread count: profile, trial, then serial or parallel, tried again now and
    then (`chose`) where a trial chose. The plan's graph is built when first needed (a plan run
    once never needs it). A plan without blocking ops has several parallel ways (`_OFFLOAD`,
    `_HALVES` where it has two parts, `_RUN`): its first trial measures each beside serial steps,
    later ones the fastest of them against serial."""

    __slots__ = ("mode", "runs", "graph", "cost", "shared_cost", "times", "measured", "interval", "chosen", "halves",
                 "ways", "every_way")

    def __init__(self, plan):
        names = plan._names[:plan._node_steps]
        distributed = any(n.op in _RECVS for n in names)   # (a distributed step's partition: module docstring)
        setting = "serial" if distributed else os.environ.get("TENSORWEAVE_INTER_OP", "auto")
        blocking = 0 if distributed else sum(registry.lookup(n.op).blocking for n in names)
        self.graph: Optional[_Graph] = _Graph(plan) if blocking > 1 or setting == "parallel" else None
        if setting == "parallel" or self.graph is not None and self.graph.must_overlap:
            self.mode = _PARALLEL
        else:
            self.mode = _SERIAL if setting == "serial" else _PROFILE
        self.runs = 0
        self.cost: Optional[list] = None          # each op's time in the serial step
        self.shared_cost: Optional[list] = None   # ... on a parallel step's share of the cores
        self.halves: Optional[_Halves] = None   # the plan's two parts, where it has them (see _Halves)
        self.ways: tuple = (_RUN,)     # the parallel ways a trial measures (the first of them runs the parallel steps)
        self.every_way: tuple = self.ways   # the ways the plan has
        self.times: tuple = ()         # serial's step times in a trial, then each way's
        self.measured = False          # the mode was chosen by a trial (and is tried again later)
        self.interval = 0              # steps from a trial's choice to the next trial
        self.chosen = None             # the last trial's choice

    def counted(self) -> None:
        """One more step in a measured mode: after `interval` steps, a new trial."""
        self.runs += 1
        if self.runs >= self.interval:
            self.trial()

    def trial(self) -> None:
        self.runs, self.times, self.mode = 0, tuple([] for _ in range(len(self.ways) + 1)), _TRIAL

    def chose(self) -> None:
        """(After a trial) the faster mode by each's best step (on a shared machine other
        processes only ever add time), and when to try again; of the parallel ways, the faster,
        which alone later trials measure while a parallel way is kept (where serial steps are
        chosen, the next trial measures every way again: eight steps of each on a busy machine
        may have ranked them wrongly)."""
        serial, *ways = (min(t) for t in self.times)
        par = min(ways)
        previous = None if self.chosen is None else self.chosen == _PARALLEL
        parallel, self.interval = intra_op.measured_choice(par / serial, previous, self.interval,
                                                           (_FIRST_RECHECK, _CLEAR_RECHECK, _RECHECK_STEPS))
        self.ways = (self.ways[ways.index(par)],) if parallel else self.every_way
        self.mode = self.chosen = _PARALLEL if parallel else _SERIAL
        self.runs, self.measured = 0, True


_OFFLOAD, _HALVES, _RUN = 0, 1, 2   # a plan's parallel ways: _Offload, _Halves, _Run


def execute(plan, vals: list, step, pool: InterOpPool) -> None:
    """Runs `plan`'s steps over `vals` serially or on `pool`, as its _Choice says; serially on a
    thread of `pool` itself (a py_func's Session.run inside a parallel step): what it handed to
    the pool would wait behind the very thread that waits for it."""
    if getattr(_serving, "pool", None) is pool:
        plan._execute_serial(vals, step)
        return
    choices = plan.__dict__.setdefault("_inter_op_choices", {})
    choice = choices.get(pool.threads)
    if choice is None:
        choice = choices[pool.threads] = _Choice(plan)
    mode = choice.mode
    if mode == _SERIAL:
        plan._execute_serial(vals, step)
        if choice.measured:
            choice.counted()
    elif mode == _PARALLEL:
        _parallel(plan, choice, vals, step, pool, choice.ways[0])
        if choice.measured:
            choice.counted()
    elif mode == _PROFILE:
        choice.runs += 1
        if choice.runs == 1 or step is not None and step.trace is not None:
            plan._execute_serial(vals, step)
            return
        if choice.cost is not None and choice.shared_cost is None:   # (the second timed step, or after a failed one)
            # (a convolution that runs on oneDNN's team of two in the serial step takes twice as
            # long beside another op: the CIFAR-10 net's trial measured its parallel steps 25 ms
            # against 18 serial, and its products and convolutions are a graph of branches)
            cap = intra_op.cap_parts(pool.intra_op_share)
            try:
                choice.shared_cost = _timed(plan, vals)
            finally:
                intra_op.cap_parts(cap)
        else:
            cost = _timed(plan, vals)
            choice.cost = cost if choice.cost is None else [min(a, b) for a, b in zip(choice.cost, cost)]
        if choice.runs >= _PROFILE_STEPS and choice.shared_cost is not None:
            if choice.graph is None:
                choice.graph = _Graph(plan)
            serial, blocking = sum(choice.cost), any(choice.graph.blocking)
            if pool.threads == 2 and not blocking:
                choice.halves = _Halves.of(plan, choice.graph, choice.shared_cost, serial)
            # (a step in two parts hands off a few times, not once per long op: its own model admits it)
            if choice.halves is None and choice.graph.estimate(choice.shared_cost, pool.threads) >= _GAIN * serial:
                choice.runs, choice.mode = 0, _SERIAL
                return
            if not blocking:
                choice.ways = choice.every_way = \
                    (_OFFLOAD, _RUN) if choice.halves is None else (_OFFLOAD, _HALVES, _RUN)
            choice.trial()
    else:
        way = choice.runs % (len(choice.ways) + 1)
        choice.runs += 1
        start = time.perf_counter()
        if way:
            _parallel(plan, choice, vals, step, pool, choice.ways[way - 1])
        else:
            plan._execute_serial(vals, step)
        choice.times[way].append(time.perf_counter() - start)
        if choice.runs >= len(choice.times) * _TRIAL_STEPS:
            choice.chose()


def _parallel(plan, choice: _Choice, vals: list, step, pool: InterOpPool, way: int) -> None:
    """One parallel step, by `way`: _Halves or _Offload (for plans without blocking ops whose
    ops' times are known) where the step is not traced, else _Run; with short turns at the GIL
    (intra_op.short_switches)."""
    untraced = step is None or step.trace is None
    with intra_op.short_switches:
        if way == _HALVES and untraced:
            choice.halves.run(vals, pool)
        elif way == _OFFLOAD and untraced:
            offload = plan.__dict__.get("_inter_op_offload")
            if offload is None or offload.threads != pool.threads:
                offload = plan.__dict__["_inter_op_offload"] = _Offload(plan, choice.graph, choice.cost, pool.threads)
            offload.run(vals, pool)
        else:
            _Run(plan, choice.graph, vals, step, pool).run()


class _Offload:
    """A parallel step with few hand-offs, for plans without blocking ops: the step's thread
    runs the ops in the plan's order, several at a time where nothing is handed off (one call,
    as the serial loop); a long op (its profiled time >= _LONG_S) with a later long op
    independent of it is handed to an idle pool thread, and until it is done the ops that
    depend on it wait while the others go on. Only long ops change threads: _Run's
    bookkeeping per op (a lock, a queue, a pool thread woken whenever two ops are ready) cost
    more than the overlap gained on a step of many small ops (docs/PERFORMANCE.md, "Whole
    programs")."""

    def __init__(self, plan, graph: _Graph, cost: list, threads: int):
        self.plan, self.threads = plan, threads
        n = graph.n
        self.anc = graph.ancestors()
        long_ops = [i for i in range(n) if cost[i] >= _LONG_S]
        # a long op is handed off only when a later long op could run beside it
        self.candidates = [i for k, i in enumerate(long_ops)
                           if any(not (self.anc[j] >> i) & 1 for j in long_ops[k + 1:])]
        self.is_candidate = [False] * n
        for i in self.candidates:
            self.is_candidate[i] = True
        # from step i, the next candidate at or after it (n: none)
        self.next_candidate = [n] * (n + 1)
        for i in range(n - 1, -1, -1):
            self.next_candidate[i] = i if self.is_candidate[i] else self.next_candidate[i + 1]

    def run(self, vals: list, pool: InterOpPool) -> None:
        plan, steps, anc, n = self.plan, self.plan._steps, self.anc, len(self.plan._steps)
        execute, next_candidate, is_candidate = plan._execute, self.next_candidate, self.is_candidate
        done: collections.deque = collections.deque()   # (op, error) of handed-off ops, appended by pool threads
        arrived = threading.Semaphore(0)
        errstate = np.geterr()

        def hand_off(j: int) -> None:
            def job():
                error = None
                with np.errstate(**errstate):
                    try:
                        execute(vals, steps[j:j + 1], j)
                    except BaseException as e:   # noqa: BLE001 - raised by the step's thread
                        error = e
                done.append((j, error))
                arrived.release()
            pool.submit(job)

        free = self.threads - 1
        blocked = 0      # bits of the ops handed off and not done, and of the ops waiting
        waiting: list = []   # ops waiting for a handed-off op, in plan order
        recheck = False      # whether a waiting op may have become ready (an op they wait for is done)
        error: Optional[BaseException] = None
        i = 0
        cap = intra_op.cap_parts(pool.intra_op_share)
        try:
            while True:
                while done:   # (the pool's finished ops)
                    j, e = done.popleft()
                    arrived.acquire()
                    blocked &= ~(1 << j)
                    free += 1
                    recheck = True
                    error = error or e
                if error is not None:
                    if free == self.threads - 1:
                        raise error
                    arrived.acquire()
                    arrived.release()
                    continue
                j = -1
                if recheck:
                    for k, w in enumerate(waiting):
                        if not anc[w] & blocked:
                            j = waiting.pop(k)
                            blocked &= ~(1 << j)   # (and the ops waiting for it may follow)
                            break
                    else:
                        recheck = False
                if j < 0 and i < n:
                    if not blocked:
                        stop = next_candidate[i]
                        if stop > i:   # the ops up to the next candidate, in one call
                            execute(vals, steps[i:stop], i)
                            i = stop
                            continue
                    j, i = i, i + 1
                    if anc[j] & blocked:
                        waiting.append(j)
                        blocked |= 1 << j
                        continue
                if j < 0:
                    if i >= n and not waiting and free == self.threads - 1:
                        return
                    arrived.acquire()   # (nothing can run until a handed-off op is done)
                    arrived.release()
                    continue
                if is_candidate[j] and free:
                    free -= 1
                    blocked |= 1 << j
                    hand_off(j)
                else:
                    try:
                        execute(vals, steps[j:j + 1], j)
                    except BaseException as e:   # noqa: BLE001 - raised once the handed-off ops are done
                        error = e
        finally:
            intra_op.cap_parts(cap)


class _Halves:
    """A parallel step of two parts, each on a thread of its own, for a plan of two threads whose
    fetches and targets fall in groups with work of their own (the generator's and the
    discriminator's updates of a GAN step; two optimizers' var_lists): the "side" part is what
    only the side's group of sinks (ops nothing reads) needs, on the pool's thread; the step's
    thread runs the rest, the shared work included. Nothing the step's thread runs reads the
    side part, so it never waits for it (but at the end); the side waits only where it reads a
    value of the step's thread not made yet. Each thread runs its ops in the plan's order, in
    runs of several between those waits: no hand-off per op, where _Offload hands off each
    long op and keeps the short ones (a GAN's 250) on one thread. Each thread has its share of the
    cores, and all of them while the other waits for it or is done: a run of ops starts before
    each long op, and takes the cores then where the other thread waits (it cannot stop waiting
    before this thread's run ends), so a product on the critical path runs on oneDNN's team while
    the other part has nothing to do (a GAN's generator before the discriminator's half can go
    on). A plan's first trial measures it beside _Offload, _Run and serial steps (_Choice)."""

    __slots__ = ("plan", "main", "side")

    def __init__(self, plan, main: list, side: list):
        self.plan = plan
        # main: (steps, names, the position in main its end is, for the side's waits, or -1);
        # side: (the main position it waits for, steps, names)
        self.main, self.side = main, side

    @staticmethod
    def of(plan, graph: _Graph, cost: list, serial: float) -> Optional["_Halves"]:
        """The plan's best split by its ops' profiled times on a thread's share of the cores,
        `cost` (the shortest modelled step: the step's thread runs its part in plan order, the
        side its own after what it reads), or None where none models below _GAIN of the serial
        step's time `serial` (a GAN's discriminator part: 0.75; two products that take twice as
        long on a share: none)."""
        n = graph.n
        sinks = [i for i in range(n) if not graph.succ[i]]
        if len(sinks) < 2:
            return None
        anc = graph.ancestors()
        below = {t: anc[t] | (1 << t) for t in sinks}
        groups = [(t,) for t in sinks] + ([(a, b) for k, a in enumerate(sinks) for b in sinks[k + 1:]]
                                          if len(sinks) <= 8 else [])
        best = None
        for group in groups:
            mine = others = 0
            for t in sinks:
                if t in group:
                    mine |= below[t]
                else:
                    others |= below[t]
            if not mine & ~others:
                continue
            in_side = [c == "1" for c in reversed(bin(mine & ~others)[2:].zfill(n))]
            position, main_end, clock = {}, [], 0.0
            for i in range(n):
                if not in_side[i]:
                    position[i] = len(main_end)
                    clock += cost[i]
                    main_end.append(clock)
            wait, side_clock, waits = -1, 0.0, []
            for i in range(n):
                if in_side[i]:
                    wait = max([wait] + [position[p] for p in graph.preds[i] if p in position])
                    side_clock = max(side_clock, main_end[wait] + _HAND_OFF_S if wait >= 0 else 0.0) + cost[i]
                    waits.append((i, wait))
            span = max(clock, side_clock + _HAND_OFF_S)
            if span < _GAIN * serial and (best is None or span < best[0]):
                best = (span, position, waits)
        if best is None:
            return None
        _, position, waits = best
        steps, names = plan._steps, plan._names
        cuts = set(w for _, w in waits if w >= 0)
        in_main = list(position)   # (made in position order)
        # each thread's ops in runs: a run ends where the side waits for the step's thread, and
        # before each long op (there a thread whose partner waits takes the cores: run)
        main: list = []
        for k, i in enumerate(in_main):
            if not main or main[-1][2] >= 0 or cost[i] >= _LONG_S:
                main.append(([], [], -1))
            main[-1][0].append(steps[i])
            main[-1][1].append(names[i])
            if k in cuts:
                main[-1] = main[-1][:2] + (k,)
        side: list = []
        for i, w in waits:
            if not side or side[-1][0] != w or cost[i] >= _LONG_S:
                side.append((w, [], []))
            side[-1][1].append(steps[i])
            side[-1][2].append(names[i])
        return _Halves(plan, main, side)

    def run(self, vals: list, pool: InterOpPool) -> None:
        execute = self.plan._execute
        cond = threading.Condition(threading.Lock())
        progress = [-1]       # the last main position done (inf: the step failed, stop waiting)
        side_waits = [-1]     # the main position the side waits for (-1: it runs; inf: it is done)
        main_done = [False]
        failed: list = []     # the first failure
        done = threading.Event()
        started = threading.Lock()   # (taken by whichever thread runs the side part)
        errstate = np.geterr()
        share = pool.intra_op_share

        def side() -> None:
            if not started.acquire(blocking=False):
                return   # (the step's thread ran it: the pool's thread came too late)
            cap = intra_op.cap_parts(share)
            try:
                with np.errstate(**errstate):
                    for wait, steps, names in self.side:
                        if progress[0] < wait:
                            with cond:
                                side_waits[0] = wait
                                while progress[0] < wait:
                                    cond.wait()
                        if failed:
                            return
                        intra_op.cap_parts(None if main_done[0] else share)
                        execute(vals, steps, 0, names)
            except BaseException as e:   # noqa: BLE001 - raised by the step's thread
                with cond:
                    failed.append(e)
            finally:
                intra_op.cap_parts(cap)
                side_waits[0] = float("inf")
                done.set()

        pool.submit(side)
        cap = intra_op.cap_parts(share)
        try:
            for steps, names, end in self.main:
                if failed:
                    break
                intra_op.cap_parts(None if side_waits[0] > progress[0] else share)
                execute(vals, steps, 0, names)
                if end >= 0:
                    with cond:
                        progress[0] = end
                        if side_waits[0] <= end:
                            side_waits[0] = -1
                        cond.notify()
        except BaseException as e:   # noqa: BLE001 - raised once the side is done
            with cond:
                failed.append(e)
        finally:
            main_done[0] = True
            intra_op.cap_parts(cap)
            with cond:   # (a side still waiting stops: the step failed)
                if failed:
                    progress[0] = float("inf")
                cond.notify()
            side()   # (when no pool thread has taken it: busy with another step's work)
            done.wait()
        if failed:
            raise failed[0]


def _timed(plan, vals: list) -> list:
    """Runs the plan serially, op by op; returns each op's time."""
    steps, execute_steps, clock = plan._steps, plan._execute, time.perf_counter
    cost = []
    for i in range(len(steps)):
        start = clock()
        execute_steps(vals, steps[i:i + 1], i)
        cost.append(clock() - start)
    return cost


# -- one parallel step ------------------------------------------------------------------------------
class _Run:
    """One step on several threads. Whoever finishes an op decrements its successors' counts,
    keeps one op that became ready and queues the rest; the step's thread takes queued ops too
    and pool threads are asked for help while ops are queued. The first failure is the step's
    error: the step is cancelled (its blocking ops give up), nothing more starts, and the step
    ends once no thread is inside one of its ops."""

    __slots__ = ("plan", "graph", "vals", "step", "pool", "pending", "left", "ready", "lock", "cond", "error",
                 "in_op", "asked", "caller_waiting", "trace", "errstate")

    def __init__(self, plan, graph: _Graph, vals: list, step, pool: InterOpPool):
        self.plan, self.graph, self.vals, self.pool = plan, graph, vals, pool
        self.step = vals[0] if plan.needs_step else step
        self.trace = step.trace if step is not None else None
        if self.step is not None and (self.step.on_wait is not None or self.step.wait_remote is not None):
            _serialize_hooks(self.step)
        self.pending = graph.npred.copy()
        self.left = graph.n
        self.ready = collections.deque(graph.roots)
        self.lock = threading.Lock()
        self.cond = threading.Condition(self.lock)
        self.error: Optional[BaseException] = None
        self.in_op = 0          # threads taking this step's ops now
        self.asked = 0          # pool threads asked for help that have not come yet
        self.caller_waiting = False
        self.errstate = np.geterr()   # (numpy's error handling is per thread: the pool's take the step's)

    def run(self) -> None:
        if not self.graph.n:
            return
        with self.lock:
            first = self.ready.popleft()
            self.in_op = 1
            helpers = self._spread()
        self._ask(helpers)
        cap = intra_op.cap_parts(self.pool.intra_op_share)
        try:
            self._loop(first)
            with self.lock:
                while True:
                    if self.left == 0 and self.error is None:
                        return
                    if self.error is not None and self.in_op == 0:
                        break
                    if self.error is None and self.ready:
                        first = self.ready.popleft()
                        self.in_op += 1
                        self.lock.release()
                        try:
                            self._loop(first)
                        finally:
                            self.lock.acquire()
                        continue
                    self.caller_waiting = True
                    self.cond.wait()
                    self.caller_waiting = False
        except BaseException as e:   # (an interrupt of this thread: the step's other ops stop too)
            self._fail(e)
            raise
        finally:
            intra_op.cap_parts(cap)
            # (a pool thread may hold the run a moment longer: not the step's values, which are
            # freed with the step, device memory included)
            self.vals = None
        raise self._taken_error()

    def _taken_error(self) -> BaseException:
        """The step's error, which the run lets go of: the error's traceback holds the frames that
        hold the run, and a cycle would keep the step's values (device memory included) until a
        garbage collection. (Not a local of run's frame, for the same reason.)"""
        error, self.error = self.error, None
        return error

    def _help(self) -> None:
        """A pool thread's share: the queued ops it finds."""
        with self.lock:
            self.asked -= 1
            if self.error is not None or not self.ready:
                return
            first = self.ready.popleft()
            self.in_op += 1
        with np.errstate(**self.errstate):
            self._loop(first)

    def _loop(self, i: int) -> None:
        """Runs op i and then what it readies, while there is any; leaves in_op counted down."""
        plan, steps, succ, pending, ready, lock = (self.plan, self.plan._steps, self.graph.succ, self.pending,
                                                   self.ready, self.lock)
        blocking = self.graph.blocking
        trace = self.trace
        while True:
            failed = None
            try:
                if trace is None:
                    plan._execute(self.vals, steps[i:i + 1], i)
                else:
                    plan._execute_traced(self.vals, i, trace)
            except BaseException as e:  # noqa: BLE001 - the step's error, raised by its thread
                failed = e
            helpers = 0
            with lock:
                nxt = None
                if failed is not None:
                    self._record(failed)
                    failed = None   # (no cycle through this frame: see run)
                elif self.error is None:
                    for j in succ[i]:
                        pending[j] -= 1
                        if not pending[j]:
                            if blocking[j]:
                                ready.append(j)
                            elif nxt is None:
                                nxt = j
                            else:
                                ready.appendleft(j)
                    self.left -= 1
                    if nxt is None and ready:
                        nxt = ready.popleft()
                    if ready:
                        helpers = self._spread()
                if nxt is None or self.error is not None:
                    self.in_op -= 1
                    if self.caller_waiting and (self.in_op == 0 or self.left == 0):
                        self.cond.notify()
                    return
            self._ask(helpers)
            i = nxt

    def _spread(self) -> int:
        """(Under the lock, with ops queued) wakes the step's thread if it waits, and says how
        many pool threads to ask for the rest."""
        queued = len(self.ready)
        if self.caller_waiting:
            self.cond.notify()
            queued -= 1
        free = self.pool.threads - self.in_op - self.asked - (1 if self.caller_waiting else 0)
        n = max(0, min(queued - self.asked, free))
        self.asked += n
        return n

    def _ask(self, n: int) -> None:
        for _ in range(n):
            self.pool.submit(self._help)

    def _record(self, e: BaseException) -> None:
        """(Under the lock) the first failure is the step's; the step is cancelled."""
        if self.error is None:
            self.error = e
            if self.step is not None:   # (a copy without the traceback: the step is in its frames' values)
                self.step.cancel(errors.make_error(e.error_code, e.message) if isinstance(e, errors.OpError) else None)
            self.ready.clear()

    def _fail(self, e: BaseException) -> None:
        with self.lock:
            self._record(e)


def _serialize_hooks(step) -> None:
    """A distributed step's Recv hooks read the replies of the thread that runs the step: with
    Recvs on several threads, one at a time calls them."""
    lock = threading.Lock()
    on_wait, wait_remote = step.on_wait, step.wait_remote
    if on_wait is not None:
        def locked_on_wait():
            with lock:
                on_wait()
        step.on_wait = locked_on_wait
    if wait_remote is not None:
        def locked_wait_remote(timeout: float) -> bool:
            with lock:
                return wait_remote(timeout)
        step.wait_remote = locked_wait_remote
