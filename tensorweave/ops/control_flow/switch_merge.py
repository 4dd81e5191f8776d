"""TF 1's dataflow control flow, for graphs TensorFlow 1.x wrote (tf.import_graph_def of a frozen
model whose dropout or batch normalisation sits behind an `is_training` cond, or with a
tf.while_loop): Switch, RefSwitch, Merge, and the while loop frames' Enter, RefEnter, Exit,
NextIteration and LoopCond. tf.cond and tf.while_loop in tensorweave build the functional If and While
(cond.py, while_loop.py); these ops have no public wrapper.

Switch(data, pred) forwards `data` to output 1 when `pred` is true, else to output 0; the other
output is the registry's DEAD value. An op reading a dead tensor, through a data or a control
edge, is dead too and does not run (runtime/executor._dead_aware); Merge forwards its first live
input with that input's index, and is dead only when all of them are. RefSwitch is Switch of a
ref variable (an Assign inside a TF 1 cond branch): its live output is the variable itself.

A while loop frame is folded into a While before it runs (runtime/tf1_loops.py). No gradients:
tf.gradients through an imported TF 1 cond or loop raises LookupError naming an op (TF builds them
from the control flow's context, which a GraphDef does not carry).
"""
from __future__ import annotations

import numpy as np

from tensorweave.framework import dtypes, errors
from tensorweave.framework.shapes import TensorShape, unknown_shape
from tensorweave.ops.registry import DEAD, register, register_gpu


def _switch_infer(op):
    data, pred = op.inputs
    if pred.shape.ndims not in (None, 0):
        raise ValueError(f"Shape must be rank 0 but is rank {pred.shape.ndims}")
    return [(data.dtype, data.shape)] * 2


def _switch_kernel(node, ctx):
    def switch(data, pred):
        if np.ndim(pred) != 0:
            raise errors.InvalidArgumentError(node, node.name, f"The second input must be a scalar, but it has shape "
                                              f"{list(np.shape(pred))}")
        return (DEAD, data) if pred else (data, DEAD)
    return switch


register("Switch", _switch_infer, _switch_kernel, dtypes={1: ("pred", (dtypes.bool,))})
register("RefSwitch", _switch_infer, _switch_kernel, dtypes={1: ("pred", (dtypes.bool,))}, stateful=True,
         ref_inputs=(0,), ref_outputs=(0, 1))
register_gpu("Switch", "RefSwitch", host_inputs=(1,))   # (TF's GPU Switch reads its predicate in host memory)


def _merge_infer(op):
    """TF's shape of Merge: the inputs' shape where they agree, unknown where they differ."""
    first = op.inputs[0]
    for t in op.inputs[1:]:
        if t.dtype != first.dtype:
            raise TypeError(f"Merge: input {t.name} has type {t.dtype.name}, not {first.dtype.name} as the first")
    shapes = [t.shape for t in op.inputs]
    ranks = {s.ndims for s in shapes}
    if None in ranks or len(ranks) > 1:
        shape = unknown_shape()
    else:
        dims = zip(*(s.as_list() for s in shapes))
        shape = TensorShape([d[0] if all(x == d[0] for x in d) else None for d in dims])
    return [(first.dtype, shape), (dtypes.int32, TensorShape([]))]


def _merge_kernel(node, ctx):
    def merge(*inputs):
        for i, value in enumerate(inputs):
            if value is not DEAD:
                return value, np.int32(i)
        return DEAD, DEAD
    return merge


register("Merge", _merge_infer, _merge_kernel)
register_gpu("Merge", host_outputs=(1,))   # (value_index in host memory, as TF's GPU Merge)


# -- while loop frames ----------------------------------------------------------------------------
# Enter, Exit and NextIteration never run: runtime/tf1_loops.py folds each frame into a While
# (its functions hold the frame's other nodes) before a plan is built. LoopCond runs in the
# folded cond function and passes the predicate on.
def _enter_infer(op):
    """TF's shape of Enter: its input's for a constant (a value the loop reads), else unknown (a
    loop variable may change shape from one iteration to the next)."""
    return [(op.inputs[0].dtype, op.inputs[0].shape if op.get_attr("is_constant") else unknown_shape())]


register("Enter", _enter_infer, grad=None)
register("RefEnter", _enter_infer, grad=None, ref_inputs=(0,), ref_outputs=(0,))   # a variable a body updates
register("Exit", lambda op: [(op.inputs[0].dtype, op.inputs[0].shape)], grad=None)
register("NextIteration", lambda op: [(op.inputs[0].dtype, op.inputs[0].shape)], grad=None)


def _loop_cond_infer(op):
    if op.inputs[0].shape.ndims not in (None, 0):
        raise ValueError(f"Shape must be rank 0 but is rank {op.inputs[0].shape.ndims}")
    return [(dtypes.bool, TensorShape([]))]


register("LoopCond", _loop_cond_infer, lambda node, ctx: (lambda pred: pred), grad=None,
         dtypes={0: ("input", (dtypes.bool,))})
register_gpu("LoopCond", host_inputs=(0,), host_outputs=(0,))
