"""Slot variables: per-variable optimizer state (Adam's m and v, Momentum's accumulator, ...).

A slot lives next to its primary variable (same device, same colocation group, so a ps-held
variable's slots stay on that ps) and is named "<primary>/<OptimizerName>", uniquified
("Variable/Adam", "Variable/Adam_1") as TF's slot_creator does."""
from __future__ import annotations

from typing import Optional

from tensorweave.framework import dtypes
from tensorweave.framework.graph import Tensor, get_default_graph
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.ops.array.core import constant, shape
from tensorweave.ops.array.fill import fill
from tensorweave.ops.state.variable_scope import get_variable_scope
from tensorweave.ops.state.variables import Variable


def _primary_name(primary) -> str:
    op = getattr(primary, "op", None)
    return op.name if op is not None else primary.name.split(":")[0]


def _make_slot(primary, initial_value, name: str, dtype, colocate_with_primary: bool):
    g = getattr(primary, "graph", None) or get_default_graph()
    # TF names slots by variable scope, independent of the caller's name scope and control deps: the
    # caller's variable scope, then the primary's name ("outer/dnn/w/Adagrad" when minimize runs
    # inside variable_scope("outer"), as the premade Estimators' model_fns do).
    outer = get_variable_scope().name
    with g.as_default(), g.name_scope(None), g.control_dependencies(None):
        slot_name = f"{outer}/{_primary_name(primary)}/{name}" if outer else f"{_primary_name(primary)}/{name}"
        mirrored = getattr(primary, "_distributed_container", None)
        if colocate_with_primary and mirrored is not None:
            # a tf.distribute variable of copies: a slot copy beside each copy (TF's slot_creator
            # asks the strategy, colocate_vars_with, rather than colocating with one copy)
            with mirrored.distribute_strategy.extended.colocate_vars_with(mirrored):
                slot = Variable(initial_value, trainable=False, name=slot_name, dtype=dtype,
                                validate_shape=_static_shape(primary) is not None)
        elif colocate_with_primary:
            with g.colocate_with(primary.op):
                slot = Variable(initial_value, trainable=False, name=slot_name, dtype=dtype,
                                validate_shape=_static_shape(primary) is not None)
        else:
            slot = Variable(initial_value, trainable=False, name=slot_name, dtype=dtype,
                            validate_shape=_static_shape(primary) is not None)
    _partition_like(primary, slot)
    return slot


def _partition_like(primary, slot) -> None:
    """A slot of a partition is a partition of the full variable's slot ("emb/Adam" of
    "emb"), so checkpoints hold one sliced tensor per slot, as TF's do."""
    info = getattr(primary, "_save_slice_info", None)
    if info is None:
        return
    real_slot_name = slot.op.name[len(primary.op.name + "/"):]
    n = slot.shape.ndims
    if n is None or n > 0:
        slot._set_save_slice_info(Variable.SaveSliceInfo(info.full_name + "/" + real_slot_name, info.full_shape[:n],
                                                         info.var_offset[:n], info.var_shape[:n]))


def _static_shape(primary) -> Optional[list]:
    shape = primary.get_shape()
    return shape.as_list() if shape.is_fully_defined() else None


def create_slot(primary, val, name: str, colocate_with_primary: bool = True):
    """A slot for `primary` initialized to the tensor `val`."""
    val = convert_to_tensor(val)
    return _make_slot(primary, val, name, val.dtype, colocate_with_primary)


def create_slot_with_initializer(primary, initializer, shape, dtype, name: str,
                                 colocate_with_primary: bool = True):
    """A slot for `primary` initialized by `initializer(shape, dtype)` (run where the slot lives)."""
    dtype = dtypes.as_dtype(dtype)
    shape_list = list(shape.as_list()) if hasattr(shape, "as_list") else list(shape)
    return _make_slot(primary, lambda: initializer(shape_list, dtype=dtype), name, dtype, colocate_with_primary)


def _fill_like(primary, value: float, dtype):
    """An initializer callable: `value` everywhere, shaped like primary (static or runtime)."""
    static = _static_shape(primary)

    def init(*_args, **_kwargs) -> Tensor:
        if static is not None:
            return fill(convert_to_tensor(static, dtype=dtypes.int32),
                                  constant(value, dtype=dtype))
        src = primary.initialized_value() if hasattr(primary, "initialized_value") else primary
        return fill(shape(src), constant(value, dtype=dtype))
    return init


def create_zeros_slot(primary, name: str, dtype=None, colocate_with_primary: bool = True):
    """A slot for `primary` initialized to zeros of its shape."""
    return create_constant_slot(primary, 0.0, name, dtype, colocate_with_primary)


def create_constant_slot(primary, value: float, name: str, dtype=None, colocate_with_primary: bool = True):
    """A slot for `primary` initialized to `value` everywhere."""
    dtype = dtypes.as_dtype(dtype or primary.dtype.base_dtype)
    return _make_slot(primary, _fill_like(primary, value, dtype), name, dtype, colocate_with_primary)
