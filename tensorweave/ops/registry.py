"""The op registry: one table per rule kind, keyed by TF op name.

Every op module defines an op's shape function, accepted dtypes, numpy kernel and gradient side
by side and registers them here with `register`. The graph builder asks
`framework.op_def_registry.lookup(op_type)` (shape function, dtypes), the executor asks
`kernel_for(op_type, device_type)`, `tf.gradients` asks `gradient_for`.

- infer(op) -> list of (dtype, shape) per output, from op.inputs and op.get_attr(...). Raise
  ValueError on incompatible inputs; the graph adds the op's name and input shapes.
- kernel(node, ctx) -> callable, built once per planned partition. `node` is a plain NodeDef
  (attrs as plain data); `ctx` is the runtime.executor.KernelContext (resources, task,
  function library). The callable takes the input values and returns the output value (one
  output), a tuple (several) or None (none). With `needs_step` it also takes the StepContext
  first. Kernels never mutate their inputs: values are shared between consumers.
- grad(op, *output_grads) -> one gradient (or None) per input, built from graph ops. A gradient
  that needs ops its module may not import is registered from that family's
  `gradients/*_grad.py` module with `RegisterGradient`.
- tf_lowering(op) -> list of framework.graph_def NodeDefs (attributes as the op's own: DTypes,
  TensorShapes, numpy arrays): for an op type TensorFlow lacks (or whose inputs differ from TF's
  op of that name, as PrintV2's), the TF ops computing the same, which `Graph.as_graph_def`
  (ops/graph_export.py) writes in its place so that TensorFlow imports the graph; the last keeps
  the op's name (its consumers' inputs still resolve), the others are named "<op name>/...".
  Build them with `helpers.TFNodes`.

The library's modules are imported on demand: the first time anything asks about an op type (its
OpDef, a kernel, its gradient, its lowering, its host memory), `load` imports the modules that
register it, from the table tools/generate_op_table.py writes (`_op_table.py`). So a process
imports only the op modules of the ops its graphs hold, whether it built them or received them
(a server, `import_graph_def`). Code that reads the tables directly calls `load` (or `load_all`).
"""
from __future__ import annotations

import importlib
import pkgutil
import sys
from typing import Callable, Optional

from tensorweave.framework import errors
from tensorweave.framework.op_def_registry import OP_DEFS, OpDef, lookup, register_op_loader  # noqa: F401
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops._op_table import OP_MODULES

class _Dead:
    """The value of a tensor no step computes: an output of an untaken TF 1 Switch, and of every op
    that reads one (ops/control_flow/switch_merge.py; runtime/executor.py propagates it). Reading
    it as a ref gives itself, so a dead ref output stays dead."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "DEAD"

    def read(self, op_name: str = None) -> "_Dead":
        return self


DEAD = _Dead()
KERNELS: dict[tuple[str, str], Callable] = {}   # (op type, device type) -> kernel factory
GRADIENTS: dict[str, Optional[Callable]] = {}   # op type -> gradient fn; None = not differentiable
TF_LOWERINGS: dict[str, Callable] = {}          # op type TF lacks -> its TF ops in a GraphDef
HOST_MEMORY: dict[str, tuple] = {}              # op type -> (input, output indices) a GPU kernel keeps on the host
#                                                 (or ALL; negative ones from the end: host_memory resolves them)


_LOADED: set = set()   # op types whose modules are imported
_ALL_LOADED = False


def load(op_type: str) -> None:
    """Imports the modules that register `op_type`, once. For a type the table lacks (not the
    library's, or registered by a module newer than the table, which tests/unit/test_op_table.py
    reports) every op module, so that whatever registers it is found. Marked loaded only after
    the imports: another thread asking meanwhile waits on Python's import lock."""
    if op_type not in _LOADED:
        modules = OP_MODULES.get(op_type)
        if modules is None:
            load_all()
        else:
            for module in modules:
                importlib.import_module(module)
        _LOADED.add(op_type)


def load_all() -> None:
    """Imports every module of the op library, once: for what lists the tables."""
    global _ALL_LOADED
    if not _ALL_LOADED:
        package = sys.modules[__name__.rpartition(".")[0]]
        for module in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            importlib.import_module(module.name)
        _ALL_LOADED = True


register_op_loader(load)


def register(op_type: str, infer: Callable, kernel: Optional[Callable] = None,
             grad: Optional[Callable] = ..., *, dtypes=None, dtype_param: str = "x",
             stateful: bool = False, needs_step: bool = False, blocking: bool = False,
             ref_outputs: tuple = (), ref_inputs: tuple = (), device_type: str = "CPU",
             tf_lowering: Optional[Callable] = None) -> None:
    """Registers an op's rules. `dtypes`: the dtypes input 0 (parameter `dtype_param`) accepts,
    or {input index: (parameter name, dtypes)}. grad=None marks the op not differentiable;
    omitted leaves it to a `*_grad` module. `ref_outputs`/`ref_inputs`: the indices of TF1 ref
    outputs (whose runtime value is a variable, with `read(op_name)`) and of inputs that take one.
    `tf_lowering`: for an op TensorFlow does not have, the TF ops that stand in for it in a
    GraphDef (module docstring)."""
    if dtypes is not None and not isinstance(dtypes, dict):
        dtypes = {0: (dtype_param, tuple(dtypes))}
    constraints = tuple((i, param, tuple(allowed)) for i, (param, allowed) in sorted((dtypes or {}).items()))
    OP_DEFS[op_type] = OpDef(op_type, infer, stateful, needs_step, blocking, constraints, tuple(ref_outputs),
                              tuple(ref_inputs))
    if kernel is not None:
        KERNELS[(op_type, device_type)] = kernel
    if grad is not ...:
        GRADIENTS[op_type] = grad
    if tf_lowering is not None:
        TF_LOWERINGS[op_type] = tf_lowering


class _All:
    """`ALL` as host_inputs/host_outputs: every one of them, however many a node has (ShapeN's
    outputs, ConcatOffset's inputs and outputs); `i in ALL` holds for every index."""

    def __contains__(self, index) -> bool:
        return True

    def __repr__(self) -> str:
        return "ALL"


ALL = _All()


def register_gpu(*op_types: str, host_inputs=(), host_outputs=(), kernel: Optional[Callable] = None) -> None:
    """Gives each of `op_types` a GPU kernel: `kernel`, or by default its CPU kernel, whose code
    is written against its inputs' array module (runtime/devices.array_module) and so runs on
    CuPy arrays too. `host_inputs`/`host_outputs`: the indices of the inputs it reads and the
    outputs it writes in host memory (TF's HostMemory: shapes, axes, sizes); a negative index
    counts from the end (ConcatV2's axis follows its N values), `ALL` names every one."""
    for op_type in op_types:
        KERNELS[(op_type, "GPU")] = kernel or KERNELS[(op_type, "CPU")]
        if host_inputs or host_outputs:
            HOST_MEMORY[op_type] = tuple(given if given is ALL else tuple(given)
                                         for given in (host_inputs, host_outputs))


def host_memory(op_type: str, n_inputs: int, n_outputs: int) -> tuple:
    """(input indices, output indices) that a node of `op_type` with that many inputs and outputs
    keeps in host memory on a GPU, as non-negative indices."""
    load(op_type)
    spec = HOST_MEMORY.get(op_type)
    if spec is None:
        return (), ()
    return tuple(tuple(range(n)) if given is ALL else tuple(i % n for i in given if -n <= i < n)
                 for given, n in zip(spec, (n_inputs, n_outputs)))


def has_kernel(op_type: str, device_type: str) -> bool:
    load(op_type)
    return (op_type, device_type) in KERNELS or (device_type != "GPU" and (op_type, "CPU") in KERNELS)


def kernel_for(op_type: str, device_type: str = "CPU") -> Callable:
    load(op_type)
    try:
        return KERNELS[(op_type, device_type)]
    except KeyError:
        if device_type != "GPU" and (op_type, "CPU") in KERNELS:
            return KERNELS[(op_type, "CPU")]
        raise errors.NotFoundError(
            None, None, f"No registered kernel for op '{op_type}' on device type {device_type}") from None


def gradient_for(op) -> Optional[Callable]:
    """The gradient function of `op` (honouring gradient_override_map); LookupError if none."""
    op_type = op._attrs.get("_gradient_op_type", op.type)
    if op_type not in GRADIENTS:   # (registered with the op, or a name given at run time: custom_gradient's)
        load(op_type)
    if op_type not in GRADIENTS:
        raise LookupError(f"No gradient defined for operation '{op.name}' (op type: {op.type})")
    return GRADIENTS[op_type]


def tf_lowering_for(op_type: str) -> Optional[Callable]:
    """The TF lowering of an op type TensorFlow lacks (module docstring); None for the others."""
    load(op_type)
    return TF_LOWERINGS.get(op_type)


def pure(fn: Callable) -> Callable:
    """Kernel factory for an op whose kernel is a plain function of its inputs."""
    return lambda node, ctx: fn


@tf_export("RegisterGradient")
class RegisterGradient:
    """Decorator registering a gradient function for an op type (TF1 `tf.RegisterGradient`)."""

    def __init__(self, op_type: str):
        if not isinstance(op_type, str):
            raise TypeError("op_type must be a string")
        self._op_type = op_type

    def __call__(self, f: Callable) -> Callable:
        if self._op_type in OP_MODULES:
            load(self._op_type)   # (the library's own gradient of it, if any, registered first)
        if self._op_type in GRADIENTS:
            raise KeyError(f"Registering two gradient with name '{self._op_type}'!")
        GRADIENTS[self._op_type] = f
        return f


@tf_export("NoGradient", "NotDifferentiable", "no_gradient")
def NotDifferentiable(op_type: str) -> None:
    if op_type in OP_MODULES:
        load(op_type)   # (so that loading the op's module later does not register its gradient over this)
    GRADIENTS[op_type] = None


NoGradient = NotDifferentiable
