"""Op definitions by TF op name: what the graph builder needs to add an op (its shape function,
the dtypes its inputs accept, and how the runtime must schedule it).

`tensorweave.ops.registry.register` fills this table beside the kernel and gradient tables; the
framework reads it without knowing about kernels, as TF's Graph reads its OpDef registry. The op
library registers an op when the module defining it is imported, and that may be on the first
lookup: `lookup` asks the loader the op library registers (`register_op_loader`) for a type it lacks.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

from tensorweave.framework import errors


@dataclass(frozen=True)
class OpDef:
    type: str
    infer: Callable
    stateful: bool = False
    needs_step: bool = False   # kernel callable gets the StepContext as first argument
    blocking: bool = False     # may wait on another task or thread (Recv, dequeue): schedule late
    # (input index, parameter name, allowed dtypes) for each input whose dtype is constrained
    dtypes: tuple = ()
    # TF1 reference edges (ops/state/ref_variables.py): the outputs that hand out a variable
    # itself rather than a value, and the inputs that take one; the executor reads a ref output's
    # current value for every other input (and for a fetch) when the consumer runs
    ref_outputs: tuple = ()
    ref_inputs: tuple = ()

    def check_input_dtypes(self, inputs) -> None:
        """TF's build-time error for an input dtype outside the op's allowed list."""
        for index, param, allowed in self.dtypes:
            if index < len(inputs) and inputs[index].dtype not in allowed:
                names = ", ".join(d.name for d in allowed)
                raise TypeError(f"Value passed to parameter '{param}' has DataType {inputs[index].dtype.name} "
                                f"not in list of allowed values: {names} (op '{self.type}')")


OP_DEFS: dict[str, OpDef] = {}
_load_op: Optional[Callable[[str], None]] = None   # imports what registers an op type


def register_op_loader(fn: Callable[[str], None]) -> None:
    """Sets the function `lookup` calls with an op type it lacks (ops/registry.py's `load`)."""
    global _load_op
    _load_op = fn


def lookup(op_type: str) -> OpDef:
    try:
        return OP_DEFS[op_type]
    except KeyError:
        pass
    if _load_op is not None:
        _load_op(op_type)
    try:
        return OP_DEFS[op_type]
    except KeyError:
        raise errors.NotFoundError(None, None, f"Op type not registered '{op_type}'") from None
