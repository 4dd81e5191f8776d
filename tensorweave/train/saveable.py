"""What a Saver saves: SaveableObjects (a name, one or more SaveSpecs of tensor + slice, and how
to restore them) built from the var_list a Saver is given, with TF's naming rules: a variable
is saved under its op name, a partition under its full variable's name and slice spec, a dict
under its keys."""
from __future__ import annotations

from typing import Optional

from tensorweave.framework.api import GraphKeys
from tensorweave.framework.graph import Tensor, get_default_graph
from tensorweave.ops.array.core import identity, reshape
from tensorweave.ops.state.partitioned_variables import PartitionedVariable
from tensorweave.ops.state.variable_ops import assign_variable_op, colocated_with_handle, read_variable_op
from tensorweave.ops.state.variables import Variable, global_variables


class SaveSpec:
    """One tensor to save: the tensor, its slice spec ('' for whole) and its checkpoint name."""

    def __init__(self, tensor, slice_spec: str, name: str, dtype=None, device: Optional[str] = None):
        self._tensor = tensor
        self.slice_spec = slice_spec
        self.name = name
        self.dtype = dtype if dtype is not None else tensor.dtype
        self.device = device if device is not None else tensor.device

    @property
    def tensor(self):
        return self._tensor() if callable(self._tensor) else self._tensor


class SaveableObject:
    """Something a Saver saves and restores (TF's BaseSaverBuilder.SaveableObject)."""

    def __init__(self, op, specs: list, name: str):
        self.op = op
        self.specs = specs
        self.name = name

    @property
    def device(self) -> str:
        return self.specs[0].device

    def restore(self, restored_tensors: list, restored_shapes: Optional[list]):
        raise NotImplementedError


class VariableSaveable(SaveableObject):
    """A resource variable: saved from a read on its own task, restored by an assign there."""

    def __init__(self, var: Variable, slice_spec: str, name: str):
        self._var = var

        def read():
            with colocated_with_handle(var.handle):
                return read_variable_op(var.handle, var.dtype, name="Read/ReadVariableOp")
        spec = SaveSpec(read, slice_spec, name, dtype=var.dtype, device=var.device)
        super().__init__(var, [spec], name)

    def restore(self, restored_tensors, restored_shapes):
        value = restored_tensors[0]
        var = self._var
        with colocated_with_handle(var.handle):
            if restored_shapes is not None:
                value = reshape(value, restored_shapes[0])
            value = identity(value)
            if var.shape.is_fully_defined():
                value.set_shape(var.shape)
            return assign_variable_op(var.handle, value)


class CheckpointedSaveable(SaveableObject):
    """An object that says what to save of it (`checkpoint_tensors()`: [(name, tensor)]) and
    how to restore it (`restore_from(tensors)`): a mutable lookup table, saved as TF saves it."""

    def __init__(self, obj, name: str):
        self._obj = obj
        specs = [SaveSpec(tensor, "", spec_name) for spec_name, tensor in obj.checkpoint_tensors()]
        super().__init__(obj, specs, name)

    def restore(self, restored_tensors, restored_shapes):
        return self._obj.restore_from(list(restored_tensors))


def _is_saveable_variable(v) -> bool:
    return isinstance(v, Variable)


def all_saveable_objects(scope=None) -> list:
    """The default var_list of a Saver: global variables and the SAVEABLE_OBJECTS collection."""
    return global_variables(scope) + get_default_graph().get_collection(GraphKeys.SAVEABLE_OBJECTS, scope)


def _variable_name(var) -> str:
    if isinstance(var, Tensor):
        op = var.op
        if op.type == "ReadVariableOp":
            op = op.inputs[0].op
        if op.type != "VarHandleOp":
            raise TypeError(f"Variable to save is not a Variable: {var}")
        return op.name
    return var.op.name


def op_list_to_dict(op_list, convert_variable_to_tensor: bool = True) -> dict:
    """{checkpoint name: variable, list of partitions, PartitionedVariable or SaveableObject}
    of a var_list given as a list (TF's op_list_to_dict)."""
    if not isinstance(op_list, (list, tuple, set)):
        raise TypeError(f"Variables to save should be passed in a dict or a list: {op_list}")
    out: dict = {}
    for var in sorted(op_list, key=lambda x: x.name):
        if isinstance(var, SaveableObject):
            out[var.name] = var
        elif hasattr(var, "checkpoint_tensors"):    # a mutable lookup table
            if var.name in out:
                raise ValueError(f"At least two variables have the same name: {var.name}")
            out[var.name] = CheckpointedSaveable(var, var.name)
        elif hasattr(var, "_saveable_for") and var.primary._get_save_slice_info() is not None:
            out.setdefault(var.primary._get_save_slice_info().full_name, []).append(var)   # a mirrored partition
        elif hasattr(var, "_saveable_for"):      # a variable of several copies (tf.distribute's mirrored)
            name = var.primary.op.name
            if name in out:
                raise ValueError(f"At least two variables have the same name: {name}")
            out[name] = var._saveable_for(name)
        elif isinstance(var, PartitionedVariable):
            if var.name in out:
                raise ValueError(f"At least two variables have the same name: {var.name}")
            out[var.name] = var
        elif isinstance(var, Variable) and var._get_save_slice_info() is not None:
            name = var._get_save_slice_info().full_name
            if name in out:
                if not isinstance(out[name], list):
                    raise ValueError(f"Mixing slices and non-slices with the same name: {name}")
                out[name].append(var)
            else:
                out[name] = [var]
        else:
            if not isinstance(var, (Variable, Tensor)):
                raise TypeError(f"Variable to save is not a Variable: {var}")
            name = _variable_name(var)
            if name in out:
                raise ValueError(f"At least two variables have the same name: {name}")
            out[name] = var
    return out


def _resolve(var):
    """A Tensor naming a variable's handle or read back to its Variable (for dict var_lists)."""
    if isinstance(var, Tensor):
        for v in get_default_graph().get_collection(GraphKeys.GLOBAL_VARIABLES) + \
                get_default_graph().get_collection(GraphKeys.LOCAL_VARIABLES):
            if v.op.name == _variable_name(var):
                return v
        raise TypeError(f"Can not convert a {type(var).__name__} into a saveable variable: {var}")
    return var


def saveables_for(name: str, op) -> list:
    """The SaveableObjects of one var_list entry."""
    if isinstance(op, SaveableObject):
        return [op]
    if hasattr(op, "_saveable_for"):
        return [op._saveable_for(name)]
    if isinstance(op, (list, tuple, PartitionedVariable)):
        out = []
        for part in op:
            if hasattr(part, "_saveable_for"):   # a partition mirrored by a tf.distribute strategy
                out.append(part._saveable_for(name, part.primary._get_save_slice_info().spec))
                continue
            part = _resolve(part)
            info = part._get_save_slice_info() if isinstance(part, Variable) else None
            if info is None:
                raise ValueError(f"Slices of {name} must be partitions of one variable (with save_slice_info); "
                                 f"{part} is not")
            out.append(VariableSaveable(part, info.spec, name))
        return out
    var = _resolve(op)
    if not isinstance(var, Variable):
        raise TypeError(f"names_to_saveables must be a dict mapping string names to Variables, lists of "
                        f"partitions or saveable objects, got {type(op).__name__} for {name}")
    return [VariableSaveable(var, "", name)]


def validate_and_slice_inputs(names_to_saveables) -> list:
    """The SaveableObjects of a var_list (list or dict); ValueError on duplicates."""
    if not isinstance(names_to_saveables, dict):
        names_to_saveables = op_list_to_dict(names_to_saveables)
    saveables, seen = [], set()
    for name, op in sorted(names_to_saveables.items(), key=lambda x: x[0]):
        for s in saveables_for(name, op):
            key = id(s.op)
            if key in seen:
                raise ValueError(f"The same saveable will be restored with two names: {name}")
            seen.add(key)
            saveables.append(s)
    return saveables
