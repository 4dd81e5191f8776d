"""tf.scan, tf.map_fn, tf.foldl, tf.foldr: while loops over the first dimension of `elems`.

Elements are read from, and results accumulated into, tensor lists (tensor_list.py), so loop
iterations need no in-place state, and the loops are differentiable like any while_loop.
"""
from __future__ import annotations

from tensorweave.framework import dtypes, nest
from tensorweave.framework.graph import Tensor, get_default_graph
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.core import constant
from tensorweave.ops.control_flow import tensor_list
from tensorweave.ops.control_flow.while_loop import while_loop
from tensorweave.ops.math.binary import add


_from_tensor = tensor_list.from_tensor
_length = tensor_list.length
_get = tensor_list.get_like
_empty = tensor_list.empty
_push = tensor_list.push_back


def _stack(lst: Tensor, like: Tensor, n, reverse: bool) -> Tensor:
    return tensor_list.stack_like(lst, like, n, reverse)


def _prepare(elems, name_fn: str):
    flat = [convert_to_tensor(e, name="elems") for e in nest.flatten(elems)]
    if not flat:
        raise ValueError(f"{name_fn}: elems must be a Tensor or (possibly nested) sequence of tensors.")
    for e in flat:
        if e.shape.ndims == 0:
            raise ValueError(f"{name_fn}: elements in elems must be 1+ dimensional Tensors, not scalars "
                             f"({e.name})")
    n_static = None
    for e in flat:
        if e.shape.ndims is not None and e.shape[0].value is not None:
            n_static = e.shape[0].value
    lists = [_from_tensor(e) for e in flat]
    return flat, lists, n_static


def _loop(fn_name, fn, elems, initializer, reverse, accumulate, name, parallel_iterations=10, back_prop=True):
    """The one loop behind scan/foldl/foldr: acc = fn(acc, elems[i]) over i (reversed if asked);
    with `accumulate` every acc is also pushed and stacked in index order."""
    if not callable(fn):
        raise TypeError(f"{fn_name}: fn must be callable.")
    g = get_default_graph()
    with g.name_scope(name or fn_name):
        flat, lists, n_static = _prepare(elems, fn_name)
        n = _length(lists[0])
        if initializer is None:
            first = add(n, -1) if reverse else constant(0)
            acc0 = [_get(lst, first, e) for lst, e in zip(lists, flat)]
            acc_struct = elems
            start = add(n, -2) if reverse else constant(1)
            count = add(n, -1)
        else:
            acc_struct = initializer
            acc0 = [convert_to_tensor(a) for a in nest.flatten(initializer)]
            start = add(n, -1) if reverse else constant(0)
            count = n
        nacc = len(acc0)
        outs0 = []
        if accumulate:
            outs0 = [_empty() for _ in acc0]
            if initializer is None:
                outs0 = [_push(o, a) for o, a in zip(outs0, acc0)]
        step = -1 if reverse else 1

        def body(i, *state):
            accs, outs = list(state[:nacc]), list(state[nacc:])
            x = nest.pack_sequence_as(elems, [_get(lst, i, e) for lst, e in zip(lists, flat)])
            new = fn(nest.pack_sequence_as(acc_struct, accs), x)
            nest.assert_same_structure(acc_struct, new, check_types=False)
            new_flat = [convert_to_tensor(a) for a in nest.flatten(new)]
            outs = [_push(o, a) for o, a in zip(outs, new_flat)]
            return [add(i, step)] + new_flat + outs

        res = while_loop(lambda *_: constant(True), body, [start] + acc0 + outs0, back_prop=back_prop,
                         maximum_iterations=count, parallel_iterations=parallel_iterations,
                         return_same_structure=True)
        accs = res[1:1 + nacc]
        if not accumulate:
            return nest.pack_sequence_as(acc_struct, accs)
        stacked = [_stack(o, a, n_static, reverse) for o, a in zip(res[1 + nacc:], accs)]
        return nest.pack_sequence_as(acc_struct, stacked)


@tf_export("scan")
def scan(fn, elems, initializer=None, parallel_iterations=10, back_prop=True, swap_memory=False,
         infer_shape=True, reverse=False, name=None):
    """tf.scan(fn, elems, initializer=None, ..., reverse=False, name=None): the stacked
    accumulators of `acc = fn(acc, x)` over the first dimension of `elems` (which may be a
    nested structure). Without an initializer the first element starts the accumulation
    and is the first output."""
    return _loop("scan", fn, elems, initializer, reverse, True, name, parallel_iterations, back_prop)


@tf_export("foldl")
def foldl(fn, elems, initializer=None, parallel_iterations=10, back_prop=True, swap_memory=False, name=None):
    """tf.foldl(fn, elems, initializer=None, ...): the final `acc = fn(acc, x)` over the first
    dimension of `elems`, left to right."""
    return _loop("foldl", fn, elems, initializer, False, False, name, parallel_iterations, back_prop)


@tf_export("foldr")
def foldr(fn, elems, initializer=None, parallel_iterations=10, back_prop=True, swap_memory=False, name=None):
    """tf.foldr(fn, elems, initializer=None, ...): as foldl, right to left."""
    return _loop("foldr", fn, elems, initializer, True, False, name, parallel_iterations, back_prop)


@tf_export("map_fn")
def map_fn(fn, elems, dtype=None, parallel_iterations=None, back_prop=True, swap_memory=False,
           infer_shape=True, name=None):
    """tf.map_fn(fn, elems, dtype=None, ...): stacks `fn(x)` for each x along the first dimension
    of `elems`. `dtype` gives fn's output structure (of dtypes) when it differs from elems'."""
    if not callable(fn):
        raise TypeError("fn must be callable.")
    g = get_default_graph()
    with g.name_scope(name or "map"):
        flat, lists, n_static = _prepare(elems, "map_fn")
        out_struct = elems if dtype is None else dtype
        nout = len(nest.flatten(out_struct))
        n = _length(lists[0])
        results: dict = {}

        def body(i, *outs):
            x = nest.pack_sequence_as(elems, [_get(lst, i, e) for lst, e in zip(lists, flat)])
            r = fn(x)
            try:
                nest.assert_same_structure(out_struct, r, check_types=False)
            except (TypeError, ValueError) as e:
                raise ValueError(f"map_fn: the structure of fn's output does not match dtype/elems: {e}") from None
            r_flat = [convert_to_tensor(v) for v in nest.flatten(r)]
            if dtype is not None:
                for v, dt in zip(r_flat, nest.flatten(dtype)):
                    if v.dtype != dtypes.as_dtype(dt):
                        raise TypeError(f"map_fn: fn returned {v.dtype.name} where dtype says "
                                        f"{dtypes.as_dtype(dt).name} ({v.name})")
            results["like"] = r_flat
            return [add(i, 1)] + [_push(o, v) for o, v in zip(outs, r_flat)]

        res = while_loop(lambda *_: constant(True), body, [constant(0)] + [_empty() for _ in range(nout)],
                         back_prop=back_prop,
                         maximum_iterations=n, parallel_iterations=parallel_iterations or 10,
                         return_same_structure=True)
        stacked = [_stack(o, like, n_static, False) for o, like in zip(res[1:], results["like"])]
        return nest.pack_sequence_as(out_struct, stacked)
