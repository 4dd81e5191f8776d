"""Helpers every op module may use. A leaf: it imports framework/ and nothing of ops/, so any
op family can import it without caring about the order families load in."""
from __future__ import annotations

import ctypes
import ctypes.util
import math
from typing import Callable, Optional

import numpy as np

from tensorweave.framework import dtypes, errors, limits
from tensorweave.framework.graph import Operation, Tensor, get_default_graph
from tensorweave.framework.graph_def import NodeDef
from tensorweave.framework.indexed_slices import IndexedSlices
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tensor_util import constant_value

try:   # the extra `gpu`: a GPU's tensors are CuPy arrays
    import cupy
except ImportError:   # (a missing CUDA library is an ImportError too)
    cupy = None


def array_module(*values):
    """numpy, or CuPy when any of `values` is a CuPy array: the `xp` a kernel written once for
    both devices computes with (runtime/devices.py)."""
    if cupy is not None:
        for v in values:
            if isinstance(v, cupy.ndarray):
                return cupy
    return np


def conjugate(x):
    """x's complex conjugate: x itself when it is real (no copy). numpy's or CuPy's array."""
    return x.conj() if x.dtype.kind == "c" else x


def adjoint(x):
    """The conjugate transpose of x's last two axes (a view when x is real)."""
    return conjugate(x.swapaxes(-1, -2))


def accumulate_rows(ufunc, out, ids, rows) -> None:
    """numpy's ufunc.at(out, ids, rows) (CuPy's namesake for a CuPy `out`; `ids` may be in host
    memory) for row ids (rows broadcast to ids.shape + out.shape[1:]): each row combined into
    out[id] in the order of the ids, every element as .at combines it, so the same bits (TF's
    UnsortedSegmentSum and ScatterAdd add in that order too). Distinct ids take one fancy-indexed
    pass; repeated ones run .at over the flattened elements, its one-dimensional loop (five times
    faster than .at over rows of 200: a sparse gradient's rows). A tuple of index arrays (N-d
    positions) goes to .at as it is."""
    xp = array_module(out)
    if xp is not np:
        getattr(xp, ufunc.__name__).at(out, ids if isinstance(ids, tuple) else xp.asarray(ids), rows)
        return
    if not isinstance(ids, tuple):
        ids = np.asarray(ids)
    if isinstance(ids, tuple) or out.ndim < 2 or not out.flags.c_contiguous or ids.size < 2:
        ufunc.at(out, ids, rows)
        return
    flat_ids = ids.reshape(-1).astype(np.int64, copy=False)
    rows = np.broadcast_to(rows, ids.shape + out.shape[1:]).reshape((flat_ids.size,) + out.shape[1:])
    ordered = np.sort(flat_ids)
    if (ordered[1:] != ordered[:-1]).all():
        out[flat_ids] = ufunc(out[flat_ids], rows)
        return
    width = math.prod(out.shape[1:])
    elements = (flat_ids[:, None] * width + np.arange(width)).reshape(-1)
    ufunc.at(out.reshape(-1), elements, rows.reshape(-1))


# -- dtype families (TF's allowed type lists) --------------------------------------------------
FLOATS = (dtypes.float16, dtypes.float32, dtypes.float64)
COMPLEX = (dtypes.complex64, dtypes.complex128)
SIGNED_INTS = (dtypes.int8, dtypes.int16, dtypes.int32, dtypes.int64)
INTS = (dtypes.uint8, dtypes.uint16, dtypes.uint32, dtypes.uint64) + SIGNED_INTS
REAL = FLOATS + INTS
NUMERIC = REAL + COMPLEX
FLOAT_COMPLEX = FLOATS + COMPLEX
BOOL = (dtypes.bool,)
INDEX = (dtypes.int32, dtypes.int64)


def c_function(name: str, arity: int = 1) -> Optional[np.ufunc]:
    """The C library's math function `name` (log, sin, pow; float32's logf, sinf, powf) as a
    numpy ufunc over objects, loaded once; None without a C library to load. TF's kernels call
    these where they compute one element at a time, and numpy's own vector versions round apart
    from them (on AVX-512 numpy's pow is one: a fifth of float32 values an ulp apart)."""
    fn = _C_FUNCTIONS.get(name)
    if fn is None:
        try:
            lib = ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6")
        except OSError:
            return None
        c_type = ctypes.c_float if name.endswith("f") else ctypes.c_double
        c_fn = getattr(lib, name)
        c_fn.restype, c_fn.argtypes = c_type, [c_type] * arity
        fn = _C_FUNCTIONS[name] = np.frompyfunc(c_fn, arity, 1)
    return fn


_C_FUNCTIONS: dict = {}


def c_pow(x, y):
    """x ** y elementwise by the C library's pow (powf for float32), as TF's scalar code computes
    it (Eigen's numext::pow: its kernels' loops over single elements, a tensor smaller than a
    vector). Other dtypes: numpy's power."""
    x, y = np.asarray(x), np.asarray(y)
    dtype = np.result_type(x, y)
    fn = c_function("powf" if dtype == np.float32 else "pow", 2) if dtype in _AVX_ELEMENTS else None
    if fn is None:
        return np.power(x, y)
    out = np.asarray(fn(x.astype(dtype, copy=False), y.astype(dtype, copy=False))).astype(dtype)
    return out[()] if out.ndim == 0 else out


def tf_pow(x, y):
    """TF's CPU Pow: Eigen's vector pow over whole vectors of AVX (8 float32, 4 float64: TF's
    CPU build's) and the C library's pow (c_pow) for the elements after the last whole vector
    (all of a tensor smaller than one), whose bits TF's then are; numpy's power for the vectors,
    which rounds as Eigen's does not either. Chunks of a multiple of a vector give the whole's
    elements. A GPU's arrays: CuPy's power."""
    if array_module(x, y) is not np:
        return np.power(x, y)
    x, y = np.asarray(x), np.asarray(y)
    out = np.asarray(np.power(x, y))
    tail = out.size % _AVX_ELEMENTS.get(out.dtype, 1)
    if tail:
        x, y = (np.broadcast_to(v, out.shape).reshape(-1)[-tail:] for v in (x, y))
        out.reshape(-1)[-tail:] = c_pow(x, y)
    return out[()] if out.ndim == 0 else out


_AVX_ELEMENTS = {np.dtype(np.float32): 8, np.dtype(np.float64): 4}   # (one AVX vector of each)


def make_op(op_type: str, inputs: list, attrs: Optional[dict] = None, name: Optional[str] = None) -> Operation:
    """Creates one op in the default graph; a `name` ending in '/' is taken verbatim."""
    return get_default_graph().create_op(op_type, inputs, attrs or {}, name=name)


def grad_op(op_type: str, a: Tensor, b: Tensor, attrs: Optional[dict] = None) -> Tensor:
    """The output of a gradient op of two inputs (TF's ReluGrad, SigmoidGrad, ...), named after its type."""
    return make_op(op_type, [a, b], attrs, name=op_type).outputs[0]


def invalid(node, msg: str) -> errors.InvalidArgumentError:
    """A kernel's InvalidArgumentError, naming the op type and node."""
    return errors.InvalidArgumentError(node, node.name, f"{node.op} ({node.name}): {msg}")


def check_output_size(op, dims) -> None:
    """Before an op allocates an output whose size it computes from its inputs' values: in its
    shape function (`op` an Operation, `dims` a TensorShape or dims that may hold None: checked
    once all are known) and in its kernel (`op` the NodeDef): ResourceExhaustedError naming
    limits.OP_OUTPUT_ELEMENTS when the output would hold more elements than it allows."""
    if dims is not None and not isinstance(dims, (list, tuple)):
        dims = dims.as_tuple_or_none()
    if dims is None or any(d is None for d in dims):
        return
    limits.check_elements(dims, op.name, lambda: f"{op.type if isinstance(op, Operation) else op.op} output of "
                                                 f"shape {list(dims)}")


def check_dtype(op_type: str, param: str, t: Tensor, allowed) -> None:
    """TF's type error for a composite function (an op declares its dtypes at registration)."""
    if allowed is not None and t.dtype not in allowed:
        names = ", ".join(d.name for d in allowed)
        raise TypeError(f"Value passed to parameter '{param}' has DataType {t.dtype.name} not in list of "
                        f"allowed values: {names} (op '{op_type}')")


# -- shape functions ---------------------------------------------------------------------------
def same_as_input(index: int = 0) -> Callable:
    """Shape function of an op whose one output has input `index`'s dtype and shape."""
    return lambda op: [(op.inputs[index].dtype, op.inputs[index].shape)]


def static_int(t) -> Optional[int]:
    """A scalar tensor's value when known at build time."""
    v = constant_value(t)
    return None if v is None or np.ndim(v) != 0 else int(v)


def static_ints(t) -> Optional[list]:
    """An int tensor's values, flattened, when known at build time."""
    v = constant_value(t)
    return None if v is None else [int(x) for x in np.reshape(v, -1)]


def dims_with_rank(t: Tensor, rank: int, what: str) -> list:
    """A shape function's view of input `t`: its dims (None where unknown) at rank `rank`; TF's
    "Shape must be rank R but is rank K for 'what'" ValueError for another known rank."""
    d = t.shape.as_tuple_or_none()
    if d is None:
        return [None] * rank
    if len(d) != rank:
        raise ValueError(f"Shape must be rank {rank} but is rank {len(d)} for '{what}'")
    return list(d)


def check_axis(axis: int, ndims, op_name: str, extra: int = 0) -> int:
    """Normalises `axis` into [0, ndims+extra); ValueError when out of range."""
    if ndims is None:
        return axis
    n = ndims + extra
    if not -n <= axis < n:
        raise ValueError(f"{op_name}: axis {axis} is out of range [{-n}, {n}) for a tensor of rank {ndims}")
    return axis % n if n else axis


# -- kernels -----------------------------------------------------------------------------------
def np_dtype(node, key: str):
    """The numpy dtype of a NodeDef's dtype attr."""
    return dtypes.as_dtype(node.attr[key]).as_numpy_dtype


def dense(grad):
    """A gradient as a dense Tensor: IndexedSlices are summed into place (through the conversion
    the math family registers); anything else is returned as it is."""
    return convert_to_tensor(grad) if isinstance(grad, IndexedSlices) else grad


# -- string tensors (object arrays of bytes; a 0-d value may arrive as plain bytes) -------------
def string_array(x) -> np.ndarray:
    """A string tensor's value as an object ndarray of bytes."""
    if isinstance(x, np.ndarray) and x.dtype == object:
        return x
    return np.asarray(x, dtype=object)


def string_result(items, shape=()) -> object:
    """Bytes items as a string tensor value of `shape` (a 0-d result is the bytes object)."""
    out = np.empty(len(items), dtype=object)
    out[:] = items
    shape = tuple(shape)
    return out[0] if shape == () else out.reshape(shape)


def as_string_tensor(x, name: Optional[str] = None) -> Tensor:
    """A string op's input: a Tensor as it is (the op's declared dtypes give TF's TypeError for
    another dtype), any other value converted to a string tensor."""
    return x if isinstance(x, Tensor) else convert_to_tensor(x, dtype=dtypes.string, name=name)


class TFNodes:
    """Builds an op's TF lowering (`registry.register(tf_lowering=...)`): the NodeDefs of TF's ops
    that compute what `op` computes, written by Graph.as_graph_def in its place. Each is on the
    op's device, after the op's control inputs, named "<op name>/<suffix>"; the last, made with
    `node(None, ...)`, takes the op's name, so consumers' inputs still resolve. Attributes are
    given as an op holds them (DTypes, numpy arrays), every one TF's OpDef requires."""

    def __init__(self, op: Operation):
        self.op, self.nodes = op, []
        self._controls = tuple("^" + c.name for c in op.control_inputs)

    def input(self, index: int) -> str:
        """The op's input `index` as a NodeDef input ("node" or "node:1")."""
        return self.op.inputs[index]._as_node_def_input()

    def node(self, suffix: Optional[str], op_type: str, inputs, **attrs) -> str:
        """Adds a node (control inputs "^x" last in `inputs`); returns its name."""
        name = self.op.name if suffix is None else f"{self.op.name}/{suffix}"
        self.nodes.append(NodeDef(name, op_type, tuple(inputs) + self._controls, self.op.device, attrs))
        return name

    def const(self, suffix: str, value, dtype: dtypes.DType) -> str:
        return self.node(suffix, "Const", [], value=np.asarray(value, dtype.as_numpy_dtype), dtype=dtype)
