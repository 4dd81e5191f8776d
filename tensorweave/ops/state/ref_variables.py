"""TF1's reference variables, for graphs TensorFlow 1.x wrote (tf.import_graph_def of a GraphDef
with `VariableV2`): VariableV2 (and the older `Variable`), Assign, AssignAdd, AssignSub,
IsVariableInitialized, RefIdentity and CountUpTo. The fused optimizer updates on refs
(ApplyGradientDescent, ApplyMomentum, ApplyAdam, ...) share their ResourceApply* kernels in
optimizer_updates.py. tf.Variable keeps building resource variables (variable_ops.py); these ops
have no public wrapper, they run what TF1 programs exported.

How a ref is read. A VariableV2's output is the variable itself: the same `VariableResource` a
VarHandleOp finds, held by the task's ResourceManager under (container, shared_name or the node
name), so its value persists across steps and Session.reset drops it as it drops resource
variables. The ops that take a ref (registered with `ref_inputs`) receive that object and update
it; an op that takes a value (MatMul on the variable, its `read` Identity, SaveV2, a _Send, a
fetch) gets the stored array, read by the executor when that op runs (`ref_outputs`,
runtime/executor._reading_refs), which is TF's ref semantics: a read ordered after an Assign sees
the assigned value. The read hands out the stored array itself (no copy): stored arrays are
read-only, and an update replaces the array or writes into it only while nothing else holds it
(VariableResource.updating), so a value already read (or in flight to another task) never changes.
Assign and the Apply* ops output their ref too (TF's `output_ref`), so `sess.run(assign)` returns
the new value.

Refs and resource variables of one (container, name) are one variable here; TensorFlow keeps the
two kinds apart (a TF1 graph and a TF2 graph that both name a variable `w` on one server share it
in tensorweave only).
"""
from __future__ import annotations

import numpy as np

from tensorweave.framework import dtypes, errors
from tensorweave.framework.shapes import TensorShape, as_shape
from tensorweave.ops.helpers import np_dtype
from tensorweave.ops.registry import register, register_gpu
from tensorweave.ops.state.variable_ops import (as_array, count_up_to_kernel, frozen, locked, shape_str,
                                                variable_kernel)


# -- VariableV2 ---------------------------------------------------------------------------------
for _op_type in ("VariableV2", "Variable"):
    register(_op_type, lambda op: [(op.get_attr("dtype"), as_shape(op.get_attr("shape")))], variable_kernel,
             grad=None, stateful=True, ref_outputs=(0,))
register_gpu("VariableV2", "Variable")   # (a ref is the variable itself: the executor reads it where its reader runs)


# -- Assign, AssignAdd, AssignSub -----------------------------------------------------------------
def _check_value_dtype(op) -> None:
    ref, value = op.inputs[0], op.inputs[1]
    if value.dtype != ref.dtype:
        raise TypeError(f"Input 'value' of '{op.type}' Op has type {value.dtype.name} that does not match type "
                        f"{ref.dtype.name} of argument 'ref'.")


def _assign_infer(op):
    """TF's shape of Assign: the value's, merged with the variable's under validate_shape."""
    _check_value_dtype(op)
    ref, value = op.inputs[0], op.inputs[1]
    if not op.get_attr("validate_shape"):
        return [(ref.dtype, value.shape)]
    return [(ref.dtype, ref.shape.merge_with(value.shape))]


def _assign_kernel(node, ctx):
    np_dt = np_dtype(node, "T")
    validate = node.attr.get("validate_shape", True)

    def assign(res, value):
        arr = frozen(value, np_dt)
        if validate:
            cur = res.current()
            want = cur.shape if cur is not None else res.shape
            if want is not None and None not in want and tuple(want) != arr.shape:
                raise errors.InvalidArgumentError(
                    node, node.name, f"Assign requires shapes of both tensors to match. lhs shape= "
                    f"{shape_str(want)} rhs shape= {shape_str(arr.shape)}")
        with res.lock:   # (whatever use_locking says: an update writing into the array holds it)
            res.value = arr
        return res
    return assign


register("Assign", _assign_infer, _assign_kernel, grad=None, stateful=True, ref_inputs=(0,), ref_outputs=(0,))
register_gpu("Assign")


def _update_infer(op):
    _check_value_dtype(op)
    return [(op.inputs[0].dtype, op.inputs[0].shape.merge_with(op.inputs[1].shape))]


def _update_kernel(fn):
    def factory(node, ctx):
        np_dt = np_dtype(node, "T")
        locking = node.attr.get("use_locking", False)

        def update(res, delta):
            with locked([res], locking):
                old = res.read(node.name)
                delta = as_array(delta)
                if delta.shape != old.shape:
                    raise errors.InvalidArgumentError(node, node.name, "Parameters and update must be the same size")
                res.store(as_array(fn(old, delta), np_dt))
            return res
        return update
    return factory


register("AssignAdd", _update_infer, _update_kernel(np.add), grad=None, stateful=True, ref_inputs=(0,),
         ref_outputs=(0,))
register("AssignSub", _update_infer, _update_kernel(np.subtract), grad=None, stateful=True, ref_inputs=(0,),
         ref_outputs=(0,))
register_gpu("AssignAdd", "AssignSub")


# -- reads that keep the ref ----------------------------------------------------------------------
register("IsVariableInitialized", lambda op: [(dtypes.bool, TensorShape([]))],
         lambda node, ctx: (lambda res: np.bool_(res.value is not None)), grad=None, stateful=True,
         ref_inputs=(0,))
register_gpu("IsVariableInitialized", host_outputs=(0,))
register("RefIdentity", lambda op: [(op.inputs[0].dtype, op.inputs[0].shape)], lambda node, ctx: (lambda res: res),
         grad=lambda op, g: [g], stateful=True, ref_inputs=(0,), ref_outputs=(0,))
register_gpu("RefIdentity")
register("CountUpTo", lambda op: [(op.inputs[0].dtype, op.inputs[0].shape)], count_up_to_kernel, grad=None,
         stateful=True, ref_inputs=(0,))
