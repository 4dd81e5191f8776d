"""Fusion of elementwise chains: TF's XLA auto-clustering (`global_jit_level`) for a Plan.

When a plan is built, maximal trees of elementwise ops whose intermediate values nobody else
reads (not fetched, not read by another op, not a control input) become one step: a numexpr
program evaluated in one pass, which replaces one numpy call per op (~0.5 us each, most of a
small op's cost) by one call for the tree. Only the ops whose numexpr form gives the bits of
their numpy kernel are fused (checked in tests/unit/test_fusion.py against the kernels, NaN,
inf and signed zeros included): + - * / neg abs sqrt floor ceil square maximum minimum relu and
TF's SigmoidGrad, TanhGrad, SqrtGrad, RsqrtGrad and ReciprocalGrad on float32/float64, and + - *
neg square maximum minimum relu on int32/int64. Exp, Log, Tanh, Sigmoid and the like are left
alone: numexpr's libm results differ from numpy's in the last bit.

numexpr runs an element several times slower than numpy's vectorized loops on the machines
measured (docs/PERFORMANCE.md), so a fused step takes the one-pass program only while its inputs
are small (at most _NUMEXPR_MAX_ELEMENTS elements each) and of the planned dtypes; otherwise it
calls its members' own kernels in order, which is the unfused computation without the
executor's per-op dispatch. A member that fails is rerun that way, so its error names it.

ConfigProto.graph_options.optimizer_options.global_jit_level and
tf.contrib.compiler.jit.experimental_jit_scope decide which ops may fuse, as they decide XLA's
clusters in TF (see fuse()).

What a traced step reports for a fused step, as TF's XLA clusters do: one node,
`cluster_<k>/xla_run` (TF's name for an XLA cluster's run), on the members' device. Inside the
plan that node's inputs are what the tree reads (and its members' control inputs), its op is its
root's (an elementwise op: what a scheduler asks of an op, it answers as its members would), its
"_members" attr the members' names; the plan's node table holds it beside the members
(`Plan.nodes` still lists the members).

Before the trees, each Conv2D -> BiasAdd (-> Relu) chain whose intermediates nobody else reads
becomes one step, grappler's _FusedConv2D: oneDNN's convolution with the bias and ReLU as
post-ops where that gives the three ops' bits (_fuse_convolutions); a convolution layer's
gradients of one out_backprop (filter, input, bias) become one step that runs them at once, each
on one thread, where that gives the team's bits (_group_convolution_grads); a ReluGrad whose gradient input nothing else
reads writes over it (_relu_grads_in_place)."""
from __future__ import annotations

import threading
from typing import Callable, Iterator, Optional, Sequence

import numpy as np

from tensorweave.framework import dtypes
from tensorweave.framework.graph_def import NodeDef, parse_input
from tensorweave.ops import registry
from tensorweave.ops.nn.activations import relu_grad_into_gradient
from tensorweave.ops.nn.conv import conv2d_bias_kernel, conv2d_grads_kernel

MEMBERS = "_members"   # the attr that marks a fused step's node, naming its members
JIT_OFF = -1   # OptimizerOptions.OFF: ConfigProto.graph_options.optimizer_options.global_jit_level

_NUMEXPR_MAX_ELEMENTS = 128   # above this numpy's loops beat numexpr's (docs/PERFORMANCE.md)
_MAX_MEMBERS = 64             # numexpr compiles in time quadratic in the tree (150 ops: 200 ms)
_MAX_EXPANDED = 96            # ops in the expression, repeated operands counted each time
_MAX_LEAVES = 24              # numexpr's inputs are numpy iterator operands (NPY_MAXARGS: 32 before numpy 2)
_MODE_ONE, _MODE_MANY, _MODE_ONE_2, _MODE_ONE_1 = 0, 1, 3, 4   # executor.Plan's step modes this pass reads and writes

_FLOATS = frozenset((dtypes.float32, dtypes.float64))
_INTS = frozenset((dtypes.int32, dtypes.int64))
_NAN_MAX = "where(({0} > {1}) | ({0} != {0}), {0}, {1})"   # np.maximum: NaN wins, the first of two, else the
_NAN_MIN = "where(({0} < {1}) | ({0} != {0}), {0}, {1})"   # second of equals (-0.0 and 0.0 too)
# op -> (its numexpr form for floats, for ints (None: floats only), for floats when the second
# operand is a constant without NaN (None: the same)); "{zero}" and the other _CONSTANTS are that
# value in the dtype
_FORMS = {
    "Add": ("({0} + {1})", "({0} + {1})", None),
    "AddV2": ("({0} + {1})", "({0} + {1})", None),
    "Sub": ("({0} - {1})", "({0} - {1})", None),
    "Mul": ("({0} * {1})", "({0} * {1})", None),
    "RealDiv": ("({0} / {1})", None, None),
    "Div": ("({0} / {1})", None, None),
    "Neg": ("(-{0})", "(-{0})", None),
    "Abs": ("abs({0})", None, None),
    "Sqrt": ("sqrt({0})", None, None),
    "Floor": ("floor({0})", None, None),
    "Ceil": ("ceil({0})", None, None),
    "Square": ("({0} * {0})", "({0} * {0})", None),
    "Maximum": (_NAN_MAX, "where({0} > {1}, {0}, {1})", "where({0} <= {1}, {1}, {0})"),
    "Minimum": (_NAN_MIN, "where({0} < {1}, {0}, {1})", "where({0} >= {1}, {1}, {0})"),
    "Relu": ("where({0} <= {zero}, {zero}, {0})", "where({0} > {zero}, {0}, {zero})", None),
    # TF's gradient ops of y = f(x), from (y, dy), in their kernels' order (ops/math/unary.py)
    "SigmoidGrad": ("({1} * ({0} * ({one} - {0})))", None, None),
    "TanhGrad": ("({1} * ({one} - {0} * {0}))", None, None),
    "SqrtGrad": ("({1} * ({half} / {0}))", None, None),
    "RsqrtGrad": ("(({minus_half} * ({1} * {0})) * ({0} * {0}))", None, None),
    "ReciprocalGrad": ("(-({1} * ({0} * {0})))", None, None),
}
_CONSTANTS = {"zero": 0.0, "one": 1.0, "half": 0.5, "minus_half": -0.5}   # "{name}" in a form: that constant


def _form(op: str, dtype: np.dtype, second) -> str:
    """The numexpr form of `op` in `dtype`; `second`: the value of a constant second operand, else
    None (a form may then name its first operand fewer times: a tree repeats it less)."""
    floats, ints, number_second = _FORMS[op]
    if dtype.kind != "f":
        return ints
    if number_second is not None and second is not None and not np.isnan(second).any():
        return number_second
    return floats


_LAZY = object()      # a fused kernel's program before its first small call
_PROGRAMS: dict = {}  # (expression, signature) -> (numexpr program, lock), or None: cannot compile
_MAX_PROGRAMS = 4096
_NUMPY_VALUES = frozenset((np.ndarray, np.float32, np.float64, np.int32, np.int64))
_numexpr = None


def fuse(steps: list, nodes: list, fetch_slots: Sequence[int], template: Sequence[tuple], by_name: dict,
         feed_set: set, as_op_error: Callable, task: str, jit_level: int = 0) -> tuple[list, list]:
    """`steps` (executor.Plan's (mode, fn, a, b, c) program, `nodes` its node per step) with each
    fusible tree of two or more members replaced by one step at its root's place. `template`:
    (slot, value) of the plan's constants, taken into the fused kernels; `as_op_error(e, node,
    task)`: the executor's error for a failing kernel. `jit_level`: ConfigProto's
    global_jit_level; DEFAULT (0), ON_1 and ON_2 fuse (it measures faster and changes no bit),
    OFF (-1) fuses only the ops of an experimental_jit_scope() (their `_XlaCompile` is True).
    An op whose `_XlaCompile` is False is never fused; ops of different `_XlaScope`s never
    share a tree."""
    global _numexpr
    steps, nodes = _read_shapes_in_place(steps, nodes, fetch_slots)
    steps, nodes = _fuse_convolutions(steps, nodes, fetch_slots, by_name, feed_set, as_op_error, task)
    steps, nodes = _group_convolution_grads(steps, nodes, by_name, feed_set, as_op_error, task)
    steps = _relu_grads_in_place(steps, nodes, fetch_slots, by_name, feed_set)
    types = [_fusible(step, node, by_name, feed_set, jit_level) for step, node in zip(steps, nodes)]
    plain = [t is not None for t in types]
    if sum(plain) < 2:
        return steps, nodes
    if _numexpr is None:
        try:
            import numexpr
        except ImportError:   # (a dependency; without it plans run unfused)
            return steps, nodes
        _numexpr = numexpr
    constants = dict(template)
    readers, control_sources = _consumers(steps, nodes)
    kept = set(fetch_slots)

    root: dict = {}      # step -> the step whose value its tree computes
    members: dict = {}   # root -> its steps
    leaves: dict = {}    # root -> the keys of its inputs (a constant's value counts once)
    times: dict = {}     # step -> how often its expression appears in its root's (maximum(x + 1, y): twice)
    expanded: dict = {}  # root -> the ops its expression spells out
    for i in reversed(range(len(steps))):
        if not plain[i]:
            continue
        out, ins = steps[i][4], _inputs(steps[i])
        into = readers.get(out, ())
        r = i
        if len(into) == 1 and out not in kept and nodes[i].name not in control_sources:
            j, pos = into[0]
            if j in root and len(members[root[j]]) < _MAX_MEMBERS and nodes[j].device == nodes[i].device \
                    and nodes[j].attr.get("_XlaScope") == nodes[i].attr.get("_XlaScope"):   # (never across devices)
                j_ins = _inputs(steps[j])
                form = _form(nodes[j].op, types[j], constants.get(j_ins[1]) if len(j_ins) > 1 else None)
                n = times[j] * form.count("{%d}" % pos)   # (the tree repeats an operand's expression)
                grown = (leaves[root[j]] - {("slot", out)}) | {_leaf_key(s, constants) for s in ins}
                if len(grown) <= _MAX_LEAVES and expanded[root[j]] + n <= _MAX_EXPANDED:
                    r = root[j]
                    leaves[r], times[i] = grown, n
                    expanded[r] += n
        if r == i:
            leaves[i], times[i], expanded[i] = {_leaf_key(s, constants) for s in ins}, 1, 1
            members[i] = []
        root[i] = r
        members[r].append(i)

    fused: dict = {}
    for r, group in sorted(members.items()):   # (numbered in plan order)
        if len(group) > 1:
            name = f"cluster_{len(fused)}/xla_run"
            while name in by_name:   # (a graph's own node of that name keeps it)
                name += "_"
            try:
                fused[r] = _FusedKernel(sorted(group), steps, nodes, types, constants, as_op_error, task, name)
            except _NotFused:
                continue
            by_name[name] = fused[r].node   # (the plan's node table: who reads the tree's node finds it)
    if not fused:
        return steps, nodes
    new_steps, new_nodes = [], []
    for i, (step, node) in enumerate(zip(steps, nodes)):
        if i in fused:
            k = fused[i]
            if len(k.runtime_slots) == 1:
                new_steps.append((_MODE_ONE_1, k.run_one, k.runtime_slots[0], None, step[4]))
            else:
                new_steps.append((_MODE_ONE, k.run, tuple(k.runtime_slots), step[4], None))
            new_nodes.append(k.node)
        elif root.get(i, i) == i or root[i] not in fused:
            new_steps.append(step)
            new_nodes.append(node)
    return new_steps, new_nodes


def _read_shapes_in_place(steps: list, nodes: list, fetch_slots: Sequence[int]) -> tuple[list, list]:
    """Each SumToShape(g, Shape(x)) (the gradient of a broadcasting op whose input's shape was not
    known when the graph was built: an LSTM's backward loop runs ~60 an iteration) as one step
    reading x, which returns g without making x's shape an array when g already has it (most calls);
    a Shape that nothing else reads, fetches or waits for then has no step of its own."""
    shapes = {st[4]: i for i, (st, node) in enumerate(zip(steps, nodes))
              if node.op == "Shape" and st[0] == _MODE_ONE_1 and st[4] >= 0 and "GPU:" not in node.device}
    merged = {i: shapes[st[3]] for i, (st, node) in enumerate(zip(steps, nodes))
              if node.op == "SumToShape" and st[0] == _MODE_ONE_2 and st[3] in shapes and "GPU:" not in node.device}
    if not merged:
        return steps, nodes
    steps = list(steps)
    for i, j in merged.items():
        _, sum_to_shape, g, _, out = steps[i]
        steps[i] = (_MODE_ONE_2, _sum_to_shape_of(sum_to_shape, steps[j][1]), g, steps[j][2], out)
    read = set(fetch_slots)
    for step in steps:
        read.update(_slots_read(step))
    control_sources = _consumers(steps, nodes)[1]
    unread = {j for j in merged.values() if steps[j][4] not in read and nodes[j].name not in control_sources}
    return [st for i, st in enumerate(steps) if i not in unread], [n for i, n in enumerate(nodes) if i not in unread]


def _consumers(steps: list, nodes: list) -> tuple[dict, set]:
    """(each slot -> the (step, input position) pairs that read it, the names of the nodes some
    node waits for by a control input)."""
    readers: dict = {}
    for i, step in enumerate(steps):
        for pos, slot in enumerate(_slots_read(step)):
            readers.setdefault(slot, []).append((i, pos))
    return readers, {parse_input(inp)[0] for n in nodes for inp in n.input if inp.startswith("^")}


def _fuse_convolutions(steps: list, nodes: list, fetch_slots: Sequence[int], by_name: dict, feed_set: set,
                       as_op_error: Callable, task: str) -> tuple[list, list]:
    """Each NHWC Conv2D whose output only a BiasAdd reads (and that BiasAdd's only a Relu, where
    one does), none of them fetched nor waited for, as one step at the last one's place: oneDNN's
    convolution with the bias and ReLU as post-ops (conv.conv2d_bias_kernel: two passes over the
    output fewer), or where that does not apply the members' kernels in order. Grappler's remapper
    fuses the same chains into TF's _FusedConv2D, at every jit level. The step's node is the last
    member's (TF names the fused op so too), the members' names in its MEMBERS attr."""
    if not any(node.op == "Conv2D" for node in nodes):
        return steps, nodes
    chains: dict = {}   # the last member's step -> the chain's steps
    readers, control_sources = _consumers(steps, nodes)
    kept = set(fetch_slots)

    def plain(i: int, op: str, mode: int) -> bool:
        node = nodes[i]
        return node.op == op and steps[i][0] == mode and steps[i][4] >= 0 and "GPU:" not in node.device and \
            _format(node) == "NHWC" and not _reads_refs(node, by_name, feed_set)

    def sole_reader(i: int, op: str, mode: int) -> Optional[int]:
        """The step of `op` whose first input is step i's output, when nothing else reads it (but
        for its shape)."""
        out = steps[i][4]
        into = [(j, pos) for j, pos in readers.get(out, ()) if not _reads_shape_only(steps[j], pos)]
        if len(into) != 1 or into[0][1] != 0 or out in kept or nodes[i].name in control_sources:
            return None
        j = into[0][0]
        return j if plain(j, op, mode) and nodes[j].device == nodes[i].device else None

    for i in range(len(steps)):
        if plain(i, "Conv2D", _MODE_ONE_2) and (j := sole_reader(i, "BiasAdd", _MODE_ONE_2)) is not None:
            k = sole_reader(j, "Relu", _MODE_ONE_1)
            chain = [i, j] + ([] if k is None else [k])
            # a step reading a member's value for its shape reads the chain's output instead (the
            # same shape), which it must then come after
            if all(r > chain[-1] for m in chain[:-1] for r, pos in readers.get(steps[m][4], ())
                   if _reads_shape_only(steps[r], pos)):
                chains[chain[-1]] = chain
    if not chains:
        return steps, nodes
    steps = list(steps)
    for chain in chains.values():
        for m in chain[:-1]:
            for r, pos in readers.get(steps[m][4], ()):
                if _reads_shape_only(steps[r], pos):
                    mode, fn, g, _, out = steps[r]
                    steps[r] = (mode, fn, g, steps[chain[-1]][4], out)
    inner = {m for chain in chains.values() for m in chain[:-1]}
    new_steps, new_nodes = [], []
    for i, (step, node) in enumerate(zip(steps, nodes)):
        if i in chains:
            chain = chains[i]
            conv, bias = steps[chain[0]], steps[chain[1]]
            kernel = _FusedConvolution([(steps[m][1], nodes[m]) for m in chain], as_op_error, task)
            new_steps.append((_MODE_ONE, kernel.run, (conv[2], conv[3], bias[3]), step[4], None))
            new_nodes.append(NodeDef(node.name, node.op, node.input, node.device,
                                     {**node.attr, MEMBERS: [nodes[m].name for m in chain]}))
        elif i not in inner:
            new_steps.append(step)
            new_nodes.append(node)
    return new_steps, new_nodes


def _group_convolution_grads(steps: list, nodes: list, by_name: dict, feed_set: set, as_op_error: Callable,
                             task: str) -> tuple[list, list]:
    """Each Conv2DBackpropFilter with the Conv2DBackpropInput and the BiasAddGrad of the same
    out_backprop (a convolution layer's gradients; one of the two at least) as one step at the
    last one's place, which runs them at once, each on a thread of its own, the short bias
    gradient on the thread free first (conv.conv2d_grads_kernel), or where that does not apply
    their kernels in order. Not where a step before that place reads an earlier member's
    output, nor where a node waits for a member by a control input. The step's node is the
    last member's, the members' names in its MEMBERS attr."""
    if not any(node.op == "Conv2DBackpropFilter" for node in nodes):
        return steps, nodes
    readers, control_sources = _consumers(steps, nodes)

    def out_of(i: int) -> int:
        return steps[i][3] if steps[i][0] == _MODE_ONE else steps[i][4]

    def plain(i: int, op: str, mode: int) -> bool:
        node, out = nodes[i], out_of(i)
        return node.op == op and steps[i][0] == mode and out is not None and out >= 0 and "GPU:" not in node.device \
            and _format(node) == "NHWC" and node.name not in control_sources \
            and not _reads_refs(node, by_name, feed_set)

    producers = _producers(steps)

    def source(slot: int) -> int:
        """The slot whose value reaches `slot` through SumToShape or Identity steps (BiasAdd's
        gradient passes the bias's gradient on to the convolution so)."""
        for _, slot in _passed_through(slot, steps, nodes, producers):
            pass
        return slot

    by_dy: dict = {}   # out_backprop's source slot -> {op: its step}
    for i in range(len(steps)):
        if plain(i, "Conv2DBackpropInput", _MODE_ONE) or plain(i, "Conv2DBackpropFilter", _MODE_ONE):
            by_dy.setdefault(source(steps[i][2][2]), {}).setdefault(nodes[i].op, i)
        elif plain(i, "BiasAddGrad", _MODE_ONE_1):
            by_dy.setdefault(source(steps[i][2]), {}).setdefault("BiasAddGrad", i)
    groups: dict = {}   # the last member's step -> the members' steps (filter, input or None, bias or None)
    for found in by_dy.values():
        j = found.get("Conv2DBackpropFilter")
        if j is None or len(found) < 2:
            continue
        members = [found.get(op) for op in ("Conv2DBackpropFilter", "Conv2DBackpropInput", "BiasAddGrad")]
        present = [m for m in members if m is not None]
        last = max(present)
        if all(nodes[m].device == nodes[j].device for m in present) and \
                all(r > last for m in present if m != last for r, _ in readers.get(out_of(m), ())):
            groups[last] = members
    if not groups:
        return steps, nodes
    inner = {m for members in groups.values() for m in members if m is not None} - set(groups)
    new_steps, new_nodes = [], []
    for k, (step, node) in enumerate(zip(steps, nodes)):
        if k in groups:
            j, i, b = groups[k]
            kernel = _ConvolutionGrads([(steps[m][1], nodes[m]) if m is not None else None for m in (j, i, b)],
                                       as_op_error, task)
            # (x, filter_sizes, dy[, input_sizes, w][, the bias gradient's input]): each member reads its own
            ins = steps[j][2] + (steps[i][2][:2] if i is not None else ()) + ((steps[b][2],) if b is not None else ())
            outs = tuple(out_of(m) for m in (j, i, b) if m is not None)
            new_steps.append((_MODE_MANY, kernel.run, ins, outs, None))
            new_nodes.append(NodeDef(node.name, node.op, node.input, node.device,
                                     {**node.attr, MEMBERS: [nodes[m].name for m in (j, i, b) if m is not None]}))
        elif k not in inner:
            new_steps.append(step)
            new_nodes.append(node)
    return new_steps, new_nodes


class _ConvolutionGrads:
    """A convolution's gradients of one out_backprop as one step: run(x, filter_sizes, dy[,
    input_sizes, filter][, bias_dy]) -> (dw[, dx][, db]); `members`: (kernel, node) of the filter
    gradient, the input gradient and the bias gradient, None for those not in the step."""

    def __init__(self, members: list, as_op_error: Callable, task: str):
        self._members, self._as_op_error, self._task = members, as_op_error, task
        (_, filter_node), inputs, bias = members
        self._fast = conv2d_grads_kernel(filter_node, inputs and inputs[1], bias and bias[0])

    def run(self, x, filter_sizes, dy, *rest):
        input_and_filter = rest[:2] if self._members[1] is not None else (None, None)
        bias_dy = rest[-1] if self._members[2] is not None else None
        try:
            out = self._fast(x, filter_sizes, dy, *input_and_filter, bias_dy)
        except Exception:  # noqa: BLE001 - operands the kernels refuse: their own kernels say why
            out = None
        if out is not None:
            return tuple(v for v, m in zip(out, self._members) if m is not None)
        results, node = [], None
        try:
            for member, args in zip(self._members, ((x, filter_sizes, dy), (*input_and_filter, dy), (bias_dy,))):
                if member is not None:
                    fn, node = member
                    results.append(fn(*args))
        except Exception as e:  # noqa: BLE001 - a member's failure is its own error, naming it
            raise self._as_op_error(e, node, self._task) from None
        return tuple(results)


def _relu_grads_in_place(steps: list, nodes: list, fetch_slots: Sequence[int], by_name: dict, feed_set: set) -> list:
    """`steps` with each ReluGrad on the CPU whose gradient input no other step reads and nobody
    fetches given the kernel that writes over that input where nothing else holds it
    (activations.relu_grad_into_gradient: TF's buffer forwarding, the same bits). The gradient
    may come through SumToShape or Identity steps that return their input itself: their inputs'
    slots hold the same array, which is no reference to fear where no other step reads them."""
    readers = _consumers(steps, nodes)[0]
    kept = set(fetch_slots)
    producers = _producers(steps)
    steps = list(steps)
    for i, (step, node) in enumerate(zip(steps, nodes)):
        if node.op != "ReluGrad" or step[0] != _MODE_ONE_2 or "GPU:" in node.device or step[2] == step[3] \
                or min(step[2], step[3]) < 0 or step[2] in kept or readers.get(step[2]) != [(i, 0)] \
                or _reads_refs(node, by_name, feed_set):
            continue
        dead = 0
        for p, src in _passed_through(step[2], steps, nodes, producers):
            # (a step reading a TF1 variable's ref passes on the variable's array, not its slot's value)
            if src < 0 or src in kept or readers.get(src) != [(p, 0)] or _reads_refs(nodes[p], by_name, feed_set):
                break
            dead += 1
        steps[i] = (_MODE_ONE_2, relu_grad_into_gradient(dead), step[2], step[3], step[4])
    return steps


_PASS_THROUGH = frozenset(("SumToShape", "Identity"))   # ops whose kernels may return their first input itself


def _producers(steps: list) -> dict:
    """Each slot a step of one output and one or two inputs writes -> that step."""
    return {st[4]: i for i, st in enumerate(steps) if st[0] in (_MODE_ONE_2, _MODE_ONE_1)}


def _passed_through(slot: int, steps: list, nodes: list, producers: dict) -> Iterator:
    """(step, its first input's slot) of each SumToShape or Identity step (_PASS_THROUGH) that
    passes a value on to `slot`, the nearest first."""
    while (p := producers.get(slot)) is not None and nodes[p].op in _PASS_THROUGH:
        slot = steps[p][2]
        yield p, slot


def _format(node: NodeDef) -> str:
    fmt = node.attr.get("data_format", "NHWC")
    return fmt.decode() if isinstance(fmt, bytes) else fmt


class _FusedConvolution:
    """Conv2D, BiasAdd (and Relu) as one step: run(x, w, bias)."""

    def __init__(self, members: list, as_op_error: Callable, task: str):
        self._members, self._as_op_error, self._task = members, as_op_error, task
        self._fast = conv2d_bias_kernel(members[0][1], relu=len(members) == 3)

    def run(self, x, w, bias):
        try:
            y = self._fast(x, w, bias)
        except Exception:  # noqa: BLE001 - operands the convolution refuses: its own kernel says why
            y = None
        if y is not None:
            return y
        node = None
        try:
            for k, (fn, node) in enumerate(self._members):
                y = fn(x, w) if k == 0 else fn(y, bias) if k == 1 else fn(y)
        except Exception as e:  # noqa: BLE001 - a member's failure is its own error, naming it
            raise self._as_op_error(e, node, self._task) from None
        return y


def _sum_to_shape_of(sum_to_shape: Callable, shape: Callable) -> Callable:
    """SumToShape's kernel given the tensor whose shape it reduces to (its Shape's input)."""
    def run(g, x):
        if type(g) is np.ndarray and type(x) is np.ndarray and g.shape == x.shape:
            return g   # (what SumToShape returns for a shape g has)
        return sum_to_shape(g, shape(x))
    run.reads_shape_of = 1   # (its input x is read for its shape alone)
    return run


def _reads_shape_only(step: tuple, pos: int) -> bool:
    """Whether a step reads its input `pos` for that value's shape alone (a merged SumToShape's x)."""
    return getattr(step[1], "reads_shape_of", None) == pos


def _slots_read(step: tuple) -> tuple:
    """The slots one of executor.Plan's steps reads."""
    mode, _, a, b, _ = step
    return (a, b) if mode == _MODE_ONE_2 else (a,) if mode == _MODE_ONE_1 else a or ()


def _fusible(step: tuple, node: NodeDef, by_name: dict, feed_set: set, jit_level: int) -> Optional[np.dtype]:
    """The numpy dtype of a one-output kernel of a fusible op and dtype on the CPU that reads no TF1
    variable's ref and that its jit level and scope let fuse; None for any other step."""
    form = _FORMS.get(node.op)
    if form is None or step[0] not in (_MODE_ONE_2, _MODE_ONE_1) or step[4] < 0 or "GPU:" in node.device:
        return None
    compile_attr = node.attr.get("_XlaCompile")
    if compile_attr is False or (compile_attr is not True and jit_level == JIT_OFF):
        return None
    dtype = dtype_of(node, by_name)
    if dtype not in _FLOATS and (dtype not in _INTS or form[1] is None):   # (form: _FORMS's entry)
        return None
    return None if _reads_refs(node, by_name, feed_set) else np.dtype(dtype.as_numpy_dtype)


def _reads_refs(node: NodeDef, by_name: dict, feed_set: set) -> bool:
    """Whether the node reads a TF1 variable's ref output (its step reads the variable's value)."""
    for inp in node.input:
        src, idx, is_ctrl = parse_input(inp)
        producer = by_name.get(src)
        if not is_ctrl and f"{src}:{idx}" not in feed_set and producer is not None \
                and idx in registry.lookup(producer.op).ref_outputs:
            return True
    return False


def dtype_of(node: NodeDef, by_name: dict):
    """The dtype an elementwise node computes in: its "T", else (a Relu built without one) its first
    input's, from that node's "T", "dtype" or "DstT"; None if unknown. (The fused kernel checks
    its inputs' dtypes on every call, so a wrong answer here costs speed, never a bit.)"""
    for _ in range(16):
        if node is None:
            return None
        for attr in (("T",) if node.op in _FORMS else ("T", "dtype", "DstT")):
            if attr in node.attr:
                try:
                    return dtypes.as_dtype(node.attr[attr])
                except (TypeError, ValueError):
                    return None
        data = [inp for inp in node.input if not inp.startswith("^")]
        if node.op not in _FORMS or not data:
            return None
        node = by_name.get(parse_input(data[0])[0])
    return None


def _inputs(step: tuple) -> tuple:
    return (step[2], step[3]) if step[0] == _MODE_ONE_2 else (step[2],)


def _leaf_key(slot: int, constants: dict):
    """A constant input by its value (one input of the program however many ops add 1.0), else its slot."""
    value = constants.get(slot)
    if isinstance(value, (np.ndarray, np.generic)) and value.size <= 16:
        return ("const", value.dtype.str, value.shape, value.tobytes())
    return ("slot", slot)


class _NotFused(Exception):
    pass


class _FusedKernel:
    """One tree of members as one kernel: a numexpr program over its inputs, or its members'
    kernels in order when the inputs are large or not of the planned dtypes."""

    def __init__(self, group: list, steps: list, nodes: list, types: list, constants: dict,
                 as_op_error: Callable, task: str, name: str):
        self._as_op_error, self._task = as_op_error, task
        produced = {steps[i][4]: i for i in group}
        self.runtime_slots: list = []   # the step's arguments
        self._dtypes: list = []         # ... and the dtype each must have for the program
        self._baked: list = []          # the constants' values, passed after them
        names: dict = {}                # leaf key -> ("v", n) runtime input n or ("c", k) constant k
        exprs: dict = {}                # member step -> its numexpr expression

        def leaf(key, value, dtype) -> str:
            if key not in names:
                if key[0] == "const" and np.asarray(value).dtype != dtype:
                    raise _NotFused   # (a graph TF would refuse; its kernels say what they do)
                if key[0] == "const":
                    names[key] = ("c", len(self._baked))
                    self._baked.append(value)
                else:
                    names[key] = ("v", len(self.runtime_slots))
                    self.runtime_slots.append(key[1])
                    self._dtypes.append(dtype)
            return "%s%d" % names[key]

        arg_names = []   # per member, its operands' leaf names (None: another member's output)
        for i in group:
            node, dtype = nodes[i], types[i]
            operands, leaf_args = [], []
            for slot in _inputs(steps[i]):
                if slot in produced:
                    operands.append(exprs[produced[slot]])
                    leaf_args.append(produced[slot])
                else:
                    operands.append(leaf(_leaf_key(slot, constants), constants.get(slot), dtype))
                    leaf_args.append(operands[-1])
            slots = _inputs(steps[i])
            form = _form(node.op, dtype, constants.get(slots[1]) if len(slots) > 1 else None)
            for word, number in _CONSTANTS.items():
                if "{%s}" % word in form:
                    value = np.full((), number, dtype)
                    form = form.replace("{%s}" % word, leaf(("const", dtype.str, (), value.tobytes()), value, dtype))
            exprs[i] = form.format(*operands)
            arg_names.append(leaf_args)
        # the members' own kernels, over local values: runtime inputs, constants, then the members' outputs
        n_in = len(self.runtime_slots) + len(self._baked)

        def local(name) -> int:
            if isinstance(name, int):
                return n_in + group.index(name)
            return int(name[1:]) + (len(self.runtime_slots) if name[0] == "c" else 0)
        self._members = [(steps[i][1], tuple(local(a) for a in args), nodes[i]) for i, args in zip(group, arg_names)]
        signature = [(f"v{n}", _numexpr_type(d)) for n, d in enumerate(self._dtypes)] + \
                    [(f"c{k}", _numexpr_type(np.asarray(v).dtype)) for k, v in enumerate(self._baked)]
        self._source = (exprs[group[-1]], tuple(signature))
        self._entry = _LAZY   # (numexpr program, its lock) from the first small call; None: no program
        names = [nodes[i].name for i in group]
        inputs = dict.fromkeys(inp for i in group for inp in nodes[i].input if parse_input(inp)[0] not in names)
        self.node = NodeDef(name, nodes[group[-1]].op, tuple(inputs), nodes[group[-1]].device, {MEMBERS: names})

    def run_one(self, x):
        """run(x) for a tree of one input (the executor's one-argument step)."""
        entry = self._entry
        if entry is not None and x.__class__ in _NUMPY_VALUES and x.dtype is self._dtypes[0] \
                and x.size <= _NUMEXPR_MAX_ELEMENTS:
            return self._evaluate(entry, (x,))
        return self._run_members((x,))

    def run(self, *args):
        entry = self._entry
        if entry is not None:
            for v, d in zip(args, self._dtypes):
                if v.__class__ not in _NUMPY_VALUES or v.dtype is not d or v.size > _NUMEXPR_MAX_ELEMENTS:
                    return self._run_members(args)
            return self._evaluate(entry, args)
        return self._run_members(args)

    def _evaluate(self, entry, args):
        if entry is _LAZY:
            entry = self._entry = _program(self._source)
            if entry is None:
                return self._run_members(args)
        program, busy = entry
        # A numexpr program keeps its temporaries in itself: one thread at a time runs it, and a
        # thread finding it busy (a QueueRunner's threads share plans) runs the members instead.
        if not busy.acquire(False):
            return self._run_members(args)
        try:
            out = program(*args, *self._baked)
        except Exception:  # noqa: BLE001 - numexpr refuses (shapes that do not broadcast): the members say why
            return self._run_members(args)
        finally:
            busy.release()
        return out[()] if out.ndim == 0 else out

    def _run_members(self, args):
        vals = [*args, *self._baked]
        node = None
        try:
            for fn, ins, node in self._members:
                vals.append(fn(*[vals[k] for k in ins]))
        except Exception as e:  # noqa: BLE001 - a member's failure is its own error, naming it
            raise self._as_op_error(e, node, self._task) from None
        return vals[-1]


def _program(source: tuple):
    """The numexpr program (and its lock) of (expression, signature), compiled once a process:
    numexpr's compiler takes ~2 ms for 10 ops and ~65 ms for 100 (it hashes subtrees
    recursively), so trees are compiled when first run small, and plans of the same graph share
    them. None when numexpr cannot compile it (its members' kernels run)."""
    entry = _PROGRAMS.get(source, _LAZY)
    if entry is _LAZY:
        try:
            entry = (_numexpr.NumExpr(source[0], list(source[1])), threading.Lock())
        except Exception:  # noqa: BLE001 - a form numexpr cannot compile leaves the members' kernels
            entry = None
        if len(_PROGRAMS) >= _MAX_PROGRAMS:
            _PROGRAMS.clear()
        entry = _PROGRAMS.setdefault(source, entry)
    return entry


def _numexpr_type(dtype: np.dtype):
    """numexpr's name for a dtype in a signature (its own: `float` is float32)."""
    return {"f4": float, "f8": np.float64, "i4": np.int32, "i8": np.int64}[np.dtype(dtype).str[1:]]

