"""The While op's kernel: it iterates the plans of its cond and body functions.

Five things about the body are worked out once, when the step's plan is made:
- **The loop variables it computes.** The step's plan tells the op which of its outputs nobody
  reads (runtime/executor.py, attr "_unread_outputs"); a variable whose value leaves the loop
  unread, that the condition does not read and that no computed variable or recorded value is
  computed from is left out (a gradient loop's sum of a dropout mask's gradient). Not when that
  would skip a stateful op.
- **Its loop-invariant ops.** An op computed only from the loop's captured values (and
  constants), with no stateful op or control input among them, gives the same value at every
  iteration: it runs once, at the loop's first iteration, and its value is fed to the body's
  iterations (the LSTM's Splits of its kernels into gates, the Shapes of its dropout masks).
- **The products it sums.** A loop variable each iteration adds a product a_t^T b_t to (a gradient
  loop's sum of a weight's gradient: `AddN(v, MatMul(a, b, transpose_a=True))`, or such products
  side by side in a Concat), that nothing else in the body or the condition reads, is summed after
  the loop as one product of the factors stacked over the iterations: the loop records a_t and
  b_t instead (_SummedProducts).
- **The weights it multiplies by.** A value the same at every iteration that the body reads only
  as a MatMul operand, always in one layout, is given to it laid out densely for that read, once
  a loop run (_dense_operands): in Fortran order where it is read transposed (a gradient loop's
  product by a kernel), in row order where it is a slice of columns (the LSTM cell's gates of a
  kernel, Splits hoisted as loop-invariant).
- **Its side part.** Loop variables that none of the others nor the condition is computed from
  (a gradient loop's sums, its list of the input's gradients; or a layer of a 2-layer LSTM, the
  upper one's step in the forward loop, the lower one's in the gradient loop: see _Split), with
  the recorded values computed from them, are computed, iteration after iteration, on a thread of
  the step's inter-op pool while the loop's own thread goes on with the next iterations of the
  rest. Each part runs the same kernels on the same values in the same order, so the results are
  the serial loop's bits. As inter-op parallelism (runtime/inter_op.py) decides for
  a plan, the op decides by measurement: its first runs alternate serial and pipelined loops, and
  the faster by its best run is kept. The second core may have been taken by another process
  while it measured, so a close or changed choice is measured again soon (after _FIRST_RECHECK
  runs), a clear one later and less and less often while trials confirm it (up to every
  _RECHECK runs);
  TENSORWEAVE_INTER_OP=parallel pipelines from the first run, =serial never. A pool of one
  thread, a traced step or a GPU loop runs serially.
"""
from __future__ import annotations

import collections
import contextlib
import os
import threading
import time

import numpy as np

from tensorweave.framework import errors
from tensorweave.framework.graph_def import needed_nodes, parse_input, tensor_key
from tensorweave.ops import intra_op, registry
from tensorweave.ops.control_flow.tensor_list import TensorListValue

_TRIALS = 3        # pipelined runs (and as many serial ones) before the choice
_FIRST_RECHECK = 8  # runs after which a changed or close choice is measured again ...
_CLEAR_RECHECK = 64  # ... a clear one at least after this many, doubling while trials confirm it,
_RECHECK = 500     # ... up to this (the load changes)
_MIN_SIDE_OPS = 8  # a smaller side part costs more to hand over than it saves
_PRODUCT_OPS = 20  # what a product weighs, in ops, when the parts are balanced
_CHUNK_MULTIPLY_ADDS = (1 << 25) - 1   # the most a chunk's product takes (below 2^25 oneDNN gives its caller's bits)


def while_kernel(node, ctx):
    # On a GPU the loop's values stay in its memory from one iteration to the next (the functions
    # run there); the predicate and the iteration bound are read back once per iteration, as TF's
    # GPU While reads its cond output. Recorded iterations go to host memory: their consumers (the
    # gradient loop's TensorList ops) are host ops.
    cond_plan = ctx.function_plan(node.attr["cond"], node.device)
    body = ctx.function_def(node.attr["body"])
    n = len(node.attr["T"])
    nc, nb = node.attr["num_cond_captures"], node.attr["num_body_captures"]
    has_max = node.attr["has_maximum_iterations"]
    recording = node.attr.get("record_history", False)
    nrec = node.attr.get("num_recorded", 0)
    recorded_outputs = tuple(body.outputs[n:])
    cond = ctx.function_def(node.attr["cond"])
    cond_reads = _inputs_read(cond, cond.outputs, n)
    computed = _computed_loop_vars(node, body, n, cond_reads)
    computed = computed or tuple(range(n))
    outputs = tuple(body.outputs[k] for k in computed) + recorded_outputs
    body_plan = ctx.function_plan(node.attr["body"], node.device, outputs)
    sums = _summed_products(node, ctx, body, n, computed, cond_reads) if body_plan.device is None else ()
    if sums:
        computed = tuple(k for k in computed if k not in {s.k for s in sums})
        recorded_outputs += tuple(t for s in sums for t in s.factors)
        outputs = tuple(body.outputs[k] for k in computed) + recorded_outputs
        body_plan = ctx.function_plan(node.attr["body"], node.device, outputs)
    hoisted = _loop_invariants(body, n, outputs) if body_plan.device is None else ()
    dense = _dense_operands(body, n, hoisted) if body_plan.device is None else ()
    if hoisted:
        body_plan = ctx.function_plan(node.attr["body"], node.device, outputs, hoisted)
        hoist_plan = ctx.function_plan(node.attr["body"], node.device, hoisted)
    keep = ctx.to_host if body_plan.device is not None else (lambda v: v)
    split: list = [] if body_plan.device is None else [None]   # (made when a pool could run it first)
    choice = _Choice()

    def serial(vs, bc, step, history):
        outs = body_plan.run(vs + bc, step)
        for k, v in zip(computed, outs):
            vs[k] = v
        for h, v in zip(history, outs[len(computed):]):
            h.append(keep(v))

    def run(step, *args):
        vs = list(args[:n])
        cc = list(args[n:n + nc])
        bc = list(args[n + nc:n + nc + nb])
        for k, columns in dense:   # (the same values, laid out for their products: see _dense_operands)
            if k < n:
                vs[k] = _laid_out(vs[k], columns)
            elif k < n + nb:
                bc[k - n] = _laid_out(bc[k - n], columns)
        fed = list(bc)   # (the captures, then the loop-invariant values once computed)
        limit = int(args[-1]) if has_max else None
        history: list = [[] for _ in recorded_outputs]
        pool = step.pool
        if not split and pool is not None and pool.threads > 1:
            made = _Split(node, ctx, body, n, computed, cond_reads, hoisted, recorded_outputs)
            split.append(made if made.side else None)
        pipelined = split and split[0] is not None and step.trace is None and pool is not None \
            and pool.threads > 1 and choice.pipelined()
        # (a pipelined loop's side part holds the pool's thread: its chunks are that thread's too)
        chunks = _SumsInChunks(sums, history[nrec:], pool if pool is not None and pool.threads > 1 and
                               step.trace is None and not pipelined else None) if sums else None
        side = _SideWork(split[0], vs, fed, step, pool, history, chunks and chunks.iterated) if pipelined else None
        at_once = side is not None or chunks is not None and chunks.pool is not None   # (threads besides this one)
        with intra_op.short_switches if at_once else contextlib.nullcontext():
            start = time.perf_counter()
            i = 0
            try:
                while limit is None or i < limit:
                    c = cond_plan.run(vs + cc, step)[0]
                    if np.ndim(c) != 0:
                        raise errors.InvalidArgumentError(
                            node, node.name, f"The loop condition of '{node.name}' must be a scalar, but it has "
                                             f"shape {list(np.shape(c))}")
                    if not c:
                        break
                    if hoisted and i == 0:
                        fed.extend(hoist_plan.run(vs + bc, step))
                        for k, columns in dense:
                            if k >= n + nb:
                                fed[k - n] = _laid_out(fed[k - n], columns)
                    if side is None:
                        serial(vs, fed, step, history)
                    else:
                        side.iterate(vs, history)
                    i += 1
                    if chunks is not None and side is None:
                        chunks.iterated()
                    if step.cancelled.is_set():
                        raise errors.CancelledError(node, node.name, f"Step was cancelled inside loop '{node.name}'")
                    if step.deadline is not None and time.monotonic() > step.deadline:
                        raise errors.DeadlineExceededError(node, node.name,
                                                           f"Timed out in loop '{node.name}' after {i} iterations")
            except BaseException:
                if side is not None:
                    side.abandon()
                if chunks is not None:
                    chunks.abandon()
                raise
            if side is not None:
                side.finish(vs)
            if split and split[0] is not None:
                choice.ran(bool(pipelined), time.perf_counter() - start)
            if chunks is not None:
                chunks.finish(vs, i)
        if recording:
            vs = list(vs) + [np.int32(i)] + [TensorListValue(tuple(h)) for h in history[:nrec]]
        return vs[0] if len(vs) == 1 else tuple(vs)
    return run


def _inputs_read(fdef, outputs, n: int) -> set:
    """The positions among the first `n` inputs of function `fdef` (its loop variables) that its
    tensors `outputs` are computed from."""
    inputs = [tensor_key(t) for t in fdef.inputs[:n]]
    fed = set(map(tensor_key, fdef.inputs))
    keys = {tensor_key(t) for t in outputs}
    for nd in needed_nodes({b.name: b for b in fdef.node}, fed, outputs, ()).values():
        keys.update(tensor_key(i) for i in nd.input if not i.startswith("^"))
    return {k for k, t in enumerate(inputs) if t in keys}


def _loop_invariants(body, n: int, outputs: tuple) -> tuple:
    """The tensors of function `body` (its first `n` inputs the loop variables, the rest captured
    values) computed only from captured values and constants, by ops neither stateful nor with a
    control input, that the rest of the body computing `outputs` reads (or that are among them):
    the values the loop computes once (see the module's doc). Constants are not among them."""
    by_name = {b.name: b for b in body.node}
    fed = set(map(tensor_key, body.inputs))
    captures = fed - set(map(tensor_key, body.inputs[:n]))
    needed = needed_nodes(by_name, fed, outputs, ())
    invariant: set = set()
    grown = True
    while grown:   # (to a fixed point: a body's nodes need not be in order)
        grown = False
        for name, nd in needed.items():
            if name not in invariant and nd.op != "Placeholder" and not registry.lookup(nd.op).stateful and all(
                    not i.startswith("^") and (tensor_key(i) in captures or parse_input(i)[0] in invariant)
                    for i in nd.input):
                invariant.add(name)
                grown = True
    read = [tensor_key(i) for name, nd in needed.items() if name not in invariant for i in nd.input
            if not i.startswith("^")] + [tensor_key(t) for t in outputs]
    hoisted = {t for t in read if parse_input(t)[0] in invariant}
    return tuple(sorted(t for t in hoisted if by_name[parse_input(t)[0]].op != "Const"))


def _computed_loop_vars(node, body, n: int, cond_reads: set):
    """The loop variables the body must compute when the plan reads none of the op's outputs
    `node.attr["_unread_outputs"]` (see the module's doc), in order; None for all of them."""
    unread = set(node.attr.get("_unread_outputs", ())) & set(range(n))
    if not unread:
        return None
    live = (set(range(n)) - unread) | cond_reads | _inputs_read(body, body.outputs[n:], n)
    while True:
        grown = live | _inputs_read(body, [body.outputs[k] for k in live], n)
        if grown == live:
            break
        live = grown
    if len(live) == n:
        return None
    kept = sorted(live)
    by_name = {b.name: b for b in body.node}
    fed = set(map(tensor_key, body.inputs))
    dropped = set(needed_nodes(by_name, fed, body.outputs, ())) - set(
        needed_nodes(by_name, fed, [body.outputs[k] for k in kept] + list(body.outputs[n:]), ()))
    if any(registry.lookup(by_name[name].op).stateful for name in dropped):
        return None
    return tuple(kept)


def _readers(body) -> dict:
    """Tensor key -> what reads it in function `body`: (node, input position) for each input of
    its ops that names it, in order, then (None, k) for each of its outputs k that is it."""
    readers: dict = collections.defaultdict(list)
    for nd in body.node:
        for pos, i in enumerate(nd.input):
            readers[tensor_key(i)].append((nd, pos))
    for k, t in enumerate(body.outputs):
        readers[tensor_key(t)].append((None, k))
    return readers


def _dense_operands(body, n: int, hoisted: tuple) -> tuple:
    """(position, in columns) for each value the loop gives function `body` the same at every
    iteration (positions: its inputs, `n` loop variables then the captures, then the `hoisted`
    loop-invariant tensors) that every op of the body reads as a MatMul operand in one layout:
    oneDNN reads a dense operand's rows in place fastest, so the loop gives it the same values
    laid out that way, once a loop run (_laid_out). Read transposed (a gradient loop's
    `MatMul(dgates, kernel, transpose_b=True)`), in Fortran order: sgemm then reads w^T's rows
    ("N", "N"), 10-15% faster than its transposed read for an LSTM's [32, 800] x [800, 400]. Read
    as it is, in row order: a Split of a kernel into gates is a slice of its columns, rows 4x
    their length apart, which sgemm reads 30-40% slower ([32, 128] x [128, 128], docs/
    PERFORMANCE.md). A loop variable the body changes is not the same at every iteration. What
    also leaves the body (a recorded value) leaves as the copy: the same values, so every op gives
    what it gave (a MatMul's summation order is not defined)."""
    by_name = {b.name: b for b in body.node}
    readers = _readers(body)
    found = []
    for k, key in enumerate([tensor_key(t) for t in body.inputs] + list(hoisted)):
        if k < n:
            out = body.outputs[k]
            src = by_name.get(parse_input(out)[0])
            if tensor_key(out) != key and not (src is not None and src.op == "Identity"
                                               and tuple(map(tensor_key, src.input)) == (key,)):
                continue   # (a loop variable the body changes)
        reads = [(nd, pos) for nd, pos in readers[key] if nd is not None and not (
            k < n and nd.op == "Identity" and tensor_key(body.outputs[k]) == f"{nd.name}:0")]
        layouts = {bool(nd.attr.get("transpose_b" if pos else "transpose_a")) if nd.op == "MatMul" else None
                   for nd, pos in reads}
        if reads and len(layouts) == 1 and None not in layouts:
            found.append((k, layouts.pop()))
    return tuple(found)


def _laid_out(value, columns: bool):
    """A float32 matrix's values laid out densely, column by column (Fortran order) when `columns`,
    else row by row (others as they are)."""
    if type(value) is np.ndarray and value.ndim == 2 and value.dtype == np.float32:
        if columns and not value.flags.f_contiguous:
            return np.asfortranarray(value)
        if not columns and not value.flags.c_contiguous:
            return np.ascontiguousarray(value)
    return value


def _summed_products(node, ctx, body, n: int, computed: tuple, cond_reads: set) -> tuple:
    """The loop variables of `computed` that the body sums products into (see the module's doc):
    `AddN(v, MatMul(a, b, transpose_a=True))` or `AddN(v, ConcatV2(such MatMuls..., axis))` of
    floats, where v is read by that AddN alone (not by the condition, another op or another
    output) and each product and the Concat by their consumer alone, none with a control input."""
    by_name = {b.name: b for b in body.node}
    readers = _readers(body)
    inputs = [tensor_key(t) for t in body.inputs[:n]]

    def read_by(t: str) -> list:
        return [None if nd is None else nd.name for nd, _ in readers[tensor_key(t)]]

    def only_read_by(t: str, name) -> bool:
        return read_by(t) == [name]

    def product(t: str, reader: str):
        nd = by_name.get(parse_input(t)[0])
        if (nd is None or nd.op != "MatMul" or parse_input(t)[1] != 0 or not only_read_by(t, reader)
                or not nd.attr.get("transpose_a") or nd.attr.get("transpose_b")
                or str(nd.attr.get("T")) not in ("float32", "float64") or any(i.startswith("^") for i in nd.input)):
            return None
        return nd

    found = []
    for k in computed:
        add = by_name.get(parse_input(body.outputs[k])[0])
        if (k in cond_reads or add is None or add.op != "AddN" or len(add.input) != 2
                or any(i.startswith("^") for i in add.input) or read_by(body.outputs[k]) != [None]
                or inputs[k] not in map(tensor_key, add.input) or not only_read_by(inputs[k], add.name)):
            continue
        first = tensor_key(add.input[0]) == inputs[k]
        term = add.input[1 if first else 0]
        products = [product(term, add.name)]
        concat = None
        if products[0] is None:
            concat = by_name.get(parse_input(term)[0])
            if (concat is None or concat.op != "ConcatV2" or not only_read_by(term, add.name)
                    or any(i.startswith("^") for i in concat.input)):
                continue
            products = [product(t, concat.name) for t in concat.input[:-1]]
            if None in products:
                continue
        found.append(_SummedProducts(k, first, add, products, concat, ctx))
    return tuple(found)


def _named(node, ctx):
    """Node `node`'s kernel, run outside its plan: its errors name it as the plan's would."""
    kernel = registry.kernel_for(node.op)(node, ctx)

    def run(*args):
        try:
            return kernel(*args)
        except errors.OpError as e:
            raise type(e)(node, node.name, f"{e.message}\n\t [[node {node.name} (op: {node.op}) on {ctx.task}]]") \
                from None
    return run


class _SummedProducts:
    """Loop variable k, which each iteration t adds a product a_t^T b_t to (or products side by
    side, a Concat): the loop records the factors, and the variable becomes its initial value plus
    the products of the factors stacked over the iterations, sum_t a_t^T b_t = A^T B with A and B
    the a_t and b_t one under another: the same sums of the same products in another order (a
    MatMul's summation order is not defined), in fewer, larger products. The iterations are taken
    in chunks of a fixed number (`chunk`, from the factors' shapes: a chunk's product is as large
    as a product the calling thread runs alone) and the chunks' products added in order, so the
    sum does not depend on which thread computed which chunk (_SumsInChunks)."""

    def __init__(self, k: int, first: bool, add, products: list, concat, ctx):
        self.k, self.first = k, first
        self.products = [_named(nd, ctx) for nd in products]
        self.factors = tuple(tensor_key(i) for nd in products for i in nd.input)
        self.add = _named(add, ctx)
        self.concat = _named(concat, ctx) if concat is not None else None
        if concat is not None:
            self.factors += (tensor_key(concat.input[-1]),)

    def chunk(self, factors: list) -> tuple:
        """(iterations a chunk, the factors' shapes) from the first iteration's `factors`."""
        shapes = [(np.shape(factors[2 * j][0]), np.shape(factors[2 * j + 1][0])) for j in range(len(self.products))]
        most = max(int(np.prod(a)) * (b[-1] if b else 1) for a, b in shapes)
        return max(1, _CHUNK_MULTIPLY_ADDS // max(1, most)), shapes

    def partial(self, factors: list, shapes: list, begin: int, end: int):
        """The summed products of iterations [begin, end) (a list, one a product), their factors
        let go of; None where the factors' shapes are not the first iteration's `shapes` or do not
        line up (the iterations are then summed one by one: the ops' own errors)."""
        terms = []
        for j, matmul in enumerate(self.products):
            a, b = factors[2 * j][begin:end], factors[2 * j + 1][begin:end]
            first_a, first_b = shapes[j]
            if len(first_a) != 2 or len(first_b) != 2 or first_a[0] != first_b[0] or any(
                    np.shape(x) != first_a for x in a) or any(np.shape(x) != first_b for x in b):
                return None
            terms.append(matmul(np.concatenate(a), np.concatenate(b)))
        for f in factors[:2 * len(self.products)]:
            f[begin:end] = [None] * (end - begin)   # (a long loop's gate gradients are not all kept)
        return terms

    def total(self, v, factors: list, chunks: list):
        """v plus the chunks' products ((begin, end, partial) each, in order), in order."""
        terms = None
        for begin, end, part in chunks:
            steps = [part] if part is not None else [
                [matmul(factors[2 * j][t], factors[2 * j + 1][t]) for j, matmul in enumerate(self.products)]
                for t in range(begin, end)]
            for step in steps:
                terms = step if terms is None else [self.add(x, y) for x, y in zip(terms, step)]
        term = terms[0] if self.concat is None else self.concat(*terms, factors[-1][-1])
        return self.add(v, term) if self.first else self.add(term, v)


class _SumsInChunks:
    """One loop run's _SummedProducts: each chunk's products computed as soon as the loop has
    recorded its iterations, on a pool thread while the loop goes on (without a pool, by the
    thread that recorded them: the loop's, or the side part's thread of a pipelined loop), what
    has not started when the loop ends on the loop's thread."""

    def __init__(self, sums: tuple, factors: list, pool):
        self.sums, self.pool = sums, pool
        self.factors = []
        for s in sums:
            self.factors.append(factors[:len(s.factors)])
            factors = factors[len(s.factors):]
        self.chunks: list = [None] * len(sums)   # (iterations a chunk, the first iteration's shapes)
        self.jobs: list = [[] for _ in sums]     # ((begin, end), _Job) a chunk

    def iterated(self) -> None:
        """Starts the chunks whose iterations' factors are all recorded (by the loop's thread, or
        by the side part's where it computes some of them)."""
        for n, (s, factors) in enumerate(zip(self.sums, self.factors)):
            recorded = min(map(len, factors))
            if not recorded:
                continue
            if self.chunks[n] is None:
                self.chunks[n] = s.chunk(factors)
            chunk = self.chunks[n][0]
            while (len(self.jobs[n]) + 1) * chunk <= recorded:
                self._start(n, len(self.jobs[n]) * chunk, (len(self.jobs[n]) + 1) * chunk)

    def _start(self, n: int, begin: int, end: int) -> None:
        job = _Job(lambda: self.sums[n].partial(self.factors[n], self.chunks[n][1], begin, end))
        self.jobs[n].append(((begin, end), job))
        if self.pool is not None:
            self.pool.submit(job)
        else:
            job()

    def finish(self, vs: list, i: int) -> None:
        """The loop ran i iterations: each variable's sum into `vs`."""
        if not i:
            return
        self.iterated()
        for n, s in enumerate(self.sums):
            done = len(self.jobs[n]) * self.chunks[n][0]
            if done < i:
                self._start(n, done, i)
            vs[s.k] = s.total(vs[s.k], self.factors[n], [(b, e, job.result()) for (b, e), job in self.jobs[n]])

    def abandon(self) -> None:
        """The loop failed: the chunks not started are not."""
        for jobs in self.jobs:
            for _, job in jobs:
                job.claim()


class _Job:
    """A function run once, by whichever thread calls first; result() waits for it."""

    def __init__(self, fn):
        self.fn, self.value, self.error = fn, None, None
        self.started = threading.Lock()
        self.done = threading.Event()

    def claim(self) -> bool:
        return self.started.acquire(blocking=False)

    def __call__(self) -> None:
        if not self.claim():
            return
        try:
            self.value = self.fn()
        except BaseException as e:  # noqa: BLE001 - result() raises it
            self.error = e
        finally:
            self.fn = None
            self.done.set()

    def result(self):
        self()
        self.done.wait()
        if self.error is not None:
            raise self.error
        return self.value


class _Split:
    """The body as two plans: the critical part (the loop variables the condition reads and those
    they are computed from, the recorded values computed from them, and the tensors the side part
    takes from it, `cut`) and the side part (loop variables that none of the critical part's is
    computed from, with the recorded values computed from them, fed the critical part's `cut`).
    Of the ways to choose the side part (each loop variable with those computed from it, or the
    variables that no other one is computed from), the one that balances the two parts' ops best
    (a product counted as _PRODUCT_OPS): a 2-layer LSTM's gradient loop runs the lower layer's
    step beside the upper layer's. `side` is empty where the body has no side part free of
    stateful ops and control edges."""

    def __init__(self, node, ctx, body, n: int, computed: tuple, cond_reads: set, hoisted: tuple, recorded: tuple):
        self.side: tuple = ()
        deps = {k: _inputs_read(body, [body.outputs[k]], n) for k in computed}
        by_name = {b.name: b for b in body.node}
        fed = set(map(tensor_key, body.inputs)) | set(hoisted)
        best = None
        for side, leaves in _side_parts(computed, deps, cond_reads):
            critical = tuple(k for k in computed if k not in side)
            side_rec = tuple(r for r, t in enumerate(recorded) if _inputs_read(body, [t], n) & side)
            critical_rec = tuple(r for r in range(len(recorded)) if r not in side_rec)
            side_outputs = tuple(body.outputs[k] for k in sorted(side)) + tuple(recorded[r] for r in side_rec)
            critical_nodes = needed_nodes(by_name, fed, [body.outputs[k] for k in critical] +
                                          [recorded[r] for r in critical_rec], ())
            side_only = [nd for name, nd in needed_nodes(by_name, fed, side_outputs, ()).items()
                         if name not in critical_nodes]
            if len(side_only) < _MIN_SIDE_OPS or any(
                    registry.lookup(nd.op).stateful or any(i.startswith("^") for i in nd.input) for nd in side_only):
                continue
            weight = min(_ops_weight(side_only), _ops_weight(critical_nodes.values()))
            if (leaves or weight >= _MIN_SIDE_OPS) and (best is None or weight > best[0]):   # (each worth a thread)
                best = (weight, side, critical, side_rec, critical_rec, side_outputs, critical_nodes, side_only)
        if best is None:
            return
        _, side, critical, self.side_rec, self.critical_rec, side_outputs, critical_nodes, side_only = best
        cut = {tensor_key(t) for t in side_outputs if parse_input(t)[0] in critical_nodes}
        for nd in side_only:
            for inp in nd.input:
                src = parse_input(inp)[0]
                if src in critical_nodes and by_name[src].op != "Const" and tensor_key(inp) not in fed:
                    cut.add(tensor_key(inp))
        self.cut = tuple(sorted(cut))
        self.hoisted = hoisted
        self.critical, self.side, self.n = critical, tuple(sorted(side)), n
        self.critical_plan = ctx.function_plan(node.attr["body"], node.device, tuple(
            body.outputs[k] for k in critical) + tuple(recorded[r] for r in self.critical_rec) + self.cut, hoisted)
        self.side_plan = ctx.function_plan(node.attr["body"], node.device, side_outputs, hoisted + self.cut)


def _side_parts(computed: tuple, deps: dict, cond_reads: set) -> list:
    """The sets of loop variables a side part may compute (none that the condition reads, and
    with each variable every one computed from it), each with whether it is the set of those no
    other variable is computed from (sums of their own: a side part however small the rest)."""
    def closed(start: set):
        part, grown = set(start), True
        while grown:
            more = {j for j in computed if deps[j] & part} - part
            grown = bool(more)
            part |= more
        return None if part & cond_reads else frozenset(part)
    leaves = frozenset(k for k in computed if k not in cond_reads and not any(k in deps[j] for j in computed
                                                                              if j != k))
    parts = {closed({k}) for k in computed if k not in cond_reads} - {None, leaves}
    return [(part, False) for part in sorted(parts, key=sorted)] + ([(leaves, True)] if leaves else [])


def _ops_weight(nodes) -> int:
    return sum(_PRODUCT_OPS if nd.op in ("MatMul", "BatchMatMulV2") else 1 for nd in nodes if nd.op != "Const")


class _SideWork:
    """One run's side part: the loop's thread runs the critical part of each iteration and queues
    the iteration's values for the side part, which a pool thread runs in order; what that thread
    has not started when the loop ends, the loop's thread runs itself (in order: one at a time)."""

    def __init__(self, split: _Split, vs: list, bc: list, step, pool, history: list, progress):
        self.split, self.bc, self.step = split, bc, step
        self.history, self.progress = history, progress   # (progress: called after each side iteration)
        self.state = [vs[k] for k in split.side]
        self.items: collections.deque = collections.deque()
        self.ready = threading.Condition(threading.Lock())
        self.turn = threading.Lock()   # held while an iteration's side part runs
        self.closed = False
        self.error = None
        self.errstate = np.geterr()   # (the step's, which the pool thread takes)
        pool.submit(self._serve)

    def iterate(self, vs: list, history: list) -> None:
        split = self.split
        outs = split.critical_plan.run(vs + self.bc, self.step)
        item = (list(vs), outs[len(outs) - len(split.cut):])
        for k, v in zip(split.critical, outs):
            vs[k] = v
        for r, v in zip(split.critical_rec, outs[len(split.critical):len(outs) - len(split.cut)]):
            history[r].append(v)
        with self.ready:
            self.items.append(item)
            self.ready.notify()
        if self.error is not None:
            raise self.error

    def _serve(self) -> None:
        with np.errstate(**self.errstate):
            while self._next(wait=True):
                pass

    def _next(self, wait: bool) -> bool:
        with self.turn:
            with self.ready:
                while wait and not self.items and not self.closed:
                    self.ready.wait()
                if not self.items or self.error is not None:
                    return False
                vs, cut = self.items.popleft()
            for k, v in zip(self.split.side, self.state):
                vs[k] = v
            split = self.split
            try:
                outs = split.side_plan.run(vs + self.bc + cut, self.step)
                self.state = outs[:len(split.side)]
                for r, v in zip(split.side_rec, outs[len(split.side):]):
                    self.history[r].append(v)
                if self.progress is not None:
                    self.progress()
            except BaseException as e:  # noqa: BLE001 - the loop's thread raises it
                self.error = e
                return False
            return True

    def abandon(self) -> None:
        """The loop failed: the side part stops after the iteration it is running."""
        with self.ready:
            self.closed = True
            self.items.clear()
            self.ready.notify_all()

    def finish(self, vs: list) -> None:
        """The side part's iterations done (on this thread what the pool's has not started), its
        loop variables' values into `vs`; its error raised."""
        with self.ready:
            self.closed = True
            self.ready.notify_all()
        while self._next(wait=False):
            pass
        if self.error is not None:
            raise self.error
        for k, v in zip(self.split.side, self.state):
            vs[k] = v


class _Choice:
    """Serial or pipelined runs of one While op, by measurement (see the module's doc)."""

    def __init__(self):
        self.forced = {"parallel": True, "serial": False}.get(os.environ.get("TENSORWEAVE_INTER_OP", "auto"))
        self.runs = 0
        self.best = {False: float("inf"), True: float("inf")}
        self.tried = {False: 0, True: 0}
        self.decided = None
        self.since = 0       # runs since the choice
        self.interval = 0    # runs between the choice and its next trial

    def pipelined(self) -> bool:
        if self.forced is not None:
            return self.forced
        if self.decided is not None and self.since < self.interval:
            return self.decided
        return self.runs >= 1 and self.tried[True] <= self.tried[False]   # (the first run warms up)

    def ran(self, pipelined: bool, seconds: float) -> None:
        self.runs += 1
        if self.decided is not None and self.since < self.interval:
            self.since += 1
        elif self.runs > 1:
            self.tried[pipelined] += 1
            self.best[pipelined] = min(self.best[pipelined], seconds)
            if self.tried[True] >= _TRIALS and self.tried[False] >= _TRIALS:
                self.decided, self.interval = intra_op.measured_choice(
                    self.best[True] / self.best[False], self.decided, self.interval,
                    (_FIRST_RECHECK, _CLEAR_RECHECK, _RECHECK))
                self.since = 0
                self.best = {False: float("inf"), True: float("inf")}
                self.tried = {False: 0, True: 0}
