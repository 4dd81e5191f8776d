"""Python functions as graph ops: tf.py_func / tf.numpy_function (PyFunc, PyFuncStateless: the
function gets and returns numpy arrays) and tf.py_function (EagerPyFunc: it gets values it can
call `.numpy()` on, as TF's EagerTensors).

As in TF, the function stays in the process that built the graph: a registry of callables keyed
by token ("pyfunc_N"), the op holding only the token. Nothing about the function crosses a wire
or a file; a PyFunc run on another process's task finds no callable under its token and fails as
TF's does ("callback pyfunc_N is not found"). The kernel calls the function on the thread that
runs the step, as every other kernel (a py_func inside a tf.data map runs on the map's threads).
TF's errors: a function that raises gives the Python exception and its traceback in the message
(InvalidArgumentError for ValueError/TypeError, OutOfRangeError for StopIteration,
ResourceExhaustedError for MemoryError, UnimplementedError for NotImplementedError,
UnknownError otherwise); a wrong number or dtype of results is InvalidArgumentError."""
from __future__ import annotations

import itertools
import operator
import threading
import traceback
import weakref
from typing import Callable

import numpy as np

from tensorweave.framework import dtypes, errors
from tensorweave.framework.api import name_scope
from tensorweave.framework.graph import get_default_graph
from tensorweave.framework.shapes import TensorShape, unknown_shape
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.helpers import invalid, make_op
from tensorweave.ops.registry import NotDifferentiable, register

_CALLBACKS: dict[str, Callable] = {}   # token -> the Python callable, in this process only
_TOKENS = itertools.count()
_LOCK = threading.Lock()


def _register_callback(func: Callable, graph) -> str:
    """A new token for `func`, dropped from the registry when `graph` is gone (as TF's); a body
    graph (cond branch, loop body) lives as long as its outermost graph, which keeps it."""
    while getattr(graph, "outer_graph", None) is not None:
        graph = graph.outer_graph
    with _LOCK:
        token = f"pyfunc_{next(_TOKENS)}"
        _CALLBACKS[token] = func
    weakref.finalize(graph, _CALLBACKS.pop, token, None)
    return token


def _tf_type_name(dtype) -> str:
    """TF's DataTypeString, which its messages use: float, double, half, int32, ..."""
    return {"float32": "float", "float64": "double", "float16": "half"}.get(dtype.name, dtype.name)


def _make_py_func(op_type: str, func, inp, Tout, name):
    if not callable(func):
        raise TypeError(f"func must be callable, got {func!r}")
    single = not isinstance(Tout, (list, tuple))
    out_types = [dtypes.as_dtype(t) for t in ([Tout] if single else Tout)]
    with name_scope(name, op_type, inp) as scope:
        inputs = [convert_to_tensor(x) for x in (inp or [])]
        token = _register_callback(func, get_default_graph())
        attrs = {"token": token, "Tin": [t.dtype for t in inputs], "Tout": out_types}
        if op_type == "EagerPyFunc":
            attrs["is_async"] = False
        op = make_op(op_type, inputs, attrs, name=scope)
    if single:
        return op.outputs[0]
    return list(op.outputs) if op.outputs else op


@tf_export("py_func")
def py_func(func, inp, Tout, stateful=True, name=None):
    """tf.py_func(func, inp, Tout, stateful=True, name=None): an op that calls the Python
    function `func` on the numpy values of `inp` and returns its results as tensors of the
    dtypes `Tout` (a dtype: one tensor; a list: a list). Shapes are unknown. It runs in the
    process that built the graph (pin it to a device of a server in that process); it has no
    gradient unless one is given through gradient_override_map."""
    return _make_py_func("PyFunc" if stateful else "PyFuncStateless", func, inp, Tout, name)


@tf_export("numpy_function")
def numpy_function(func, inp, Tout, name=None):
    """tf.numpy_function(func, inp, Tout, name=None): tf.py_func, always stateful."""
    return _make_py_func("PyFunc", func, inp, Tout, name)


@tf_export("py_function")
def py_function(func, inp, Tout, name=None):
    """tf.py_function(func, inp, Tout, name=None): like py_func, but `func` receives eager-style
    values (`.numpy()`, `.dtype`, `.shape`, numpy arithmetic) and may return those, numpy arrays
    or Python values, converted to `Tout`."""
    return _make_py_func("EagerPyFunc", func, inp, Tout, name)


class EagerTensor:
    """What tf.py_function's function receives: a computed value with TF's EagerTensor face
    (`numpy()`, `dtype`, `shape`, `ndim`), usable with numpy (`np.asarray(t)`) and its
    arithmetic (results are EagerTensors again)."""

    __slots__ = ("_value",)

    def __init__(self, value):
        self._value = np.asarray(value)

    def numpy(self) -> np.ndarray:
        return self._value

    @property
    def dtype(self):
        return dtypes.as_dtype(self._value.dtype if self._value.dtype != object else dtypes.string)

    @property
    def shape(self) -> TensorShape:
        return TensorShape(list(self._value.shape))

    @property
    def ndim(self) -> int:
        return self._value.ndim

    def __array__(self, dtype=None, copy=None):
        return self._value if dtype is None else self._value.astype(dtype)

    def __len__(self):
        return len(self._value)

    def __iter__(self):
        return (EagerTensor(v) for v in self._value)

    def __getitem__(self, key):
        return EagerTensor(self._value[key])

    def __bool__(self):
        return bool(self._value)

    def __int__(self):
        return int(self._value)

    def __float__(self):
        return float(self._value)

    def __index__(self):
        return operator.index(self._value.item())

    def __repr__(self):
        return f"<tf.Tensor: shape={self.shape}, dtype={self.dtype.name}, numpy={self._value!r}>"


def _operand(x):
    return x._value if isinstance(x, EagerTensor) else x


def _like(t: "EagerTensor", other) -> np.ndarray:
    """The other operand of an arithmetic op in t's dtype, as TF converts it."""
    return np.asarray(_operand(other), dtype=t._value.dtype)


for _name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or", "xor",
              "lt", "le", "gt", "ge", "eq", "ne"):
    _fn = getattr(operator, _name if _name not in ("and", "or") else _name + "_")
    setattr(EagerTensor, f"__{_name}__", lambda a, b, f=_fn: EagerTensor(f(a._value, _like(a, b))))
    if _name not in ("lt", "le", "gt", "ge", "eq", "ne"):
        setattr(EagerTensor, f"__r{_name}__", lambda a, b, f=_fn: EagerTensor(f(_like(a, b), a._value)))
for _name in ("neg", "pos", "abs", "invert"):
    setattr(EagerTensor, f"__{_name}__", lambda a, f=getattr(operator, _name): EagerTensor(f(a._value)))
EagerTensor.__hash__ = None


# -- the kernel --------------------------------------------------------------------------------
_EXCEPTION_CODES = ((StopIteration, errors.OutOfRangeError), (MemoryError, errors.ResourceExhaustedError),
                    (NotImplementedError, errors.UnimplementedError), ((ValueError, TypeError),
                                                                       errors.InvalidArgumentError))


def _raised(node, e: BaseException) -> errors.OpError:
    """TF's error for an exception from the function: the same code for an OpError, else by the
    exception's class, with "Type: message", the traceback and the message again."""
    if isinstance(e, errors.OpError):
        return type(e)(node, node.name, e.message)
    cls = next((c for kinds, c in _EXCEPTION_CODES if isinstance(e, kinds)), errors.UnknownError)
    text = f"{type(e).__name__}: {e}\n" + "".join(traceback.format_exception(type(e), e, e.__traceback__))
    return cls(node, node.name, text)


def _as_output(node, token: str, index: int, value, dtype, eager: bool) -> np.ndarray:
    """A returned value as an array of `dtype`: py_func's must have that dtype already (numpy's
    own conversion of a Python value: int -> int64, float -> float64, as TF); py_function's
    Python values are converted to it."""
    value = _operand(value)
    if dtype == dtypes.string:
        array = np.asarray(value, dtype=object)
        if array.dtype == object and all(isinstance(v, (bytes, str)) for v in array.reshape(-1)):
            return np.vectorize(lambda v: v.encode() if isinstance(v, str) else v, otypes=[object])(array) \
                if array.size else array
        got = "a non-string value"
    else:
        if eager and not isinstance(value, np.ndarray) and not isinstance(value, np.generic):
            try:
                return np.asarray(value, dtype=dtype.as_numpy_dtype)
            except (TypeError, ValueError):
                pass
        array = np.asarray(value)
        if array.dtype == dtype.as_numpy_dtype:
            return array
        got = _tf_type_name(dtypes.as_dtype(dtypes.string if array.dtype.kind in "OSU" else array.dtype)) \
            if array.dtype.kind != "V" else str(array.dtype)
    raise invalid(node, f"{index}-th value returned by {token} is {got}, but expects {_tf_type_name(dtype)}")


def _py_func_kernel(node, ctx):
    token = node.attr["token"]
    out_types = [dtypes.as_dtype(t) for t in node.attr["Tout"]]
    eager = node.op == "EagerPyFunc"

    def run(*args):
        func = _CALLBACKS.get(token)
        if func is None:  # TF's FuncRegistry: another process's function (or a graph gone)
            raise errors.InvalidArgumentError(node, node.name, f"ValueError: callback {token} is not found")
        # copies: the function may write into its arguments, and our values are shared
        values = [EagerTensor(np.array(a)) if eager else np.array(a) for a in args]
        try:
            result = func(*values)
        except Exception as e:  # every exception becomes the op's error, as TF's
            raise _raised(node, e) from e
        if result is None:
            result = []
        elif not isinstance(result, (list, tuple)):
            result = [result]
        if len(result) != len(out_types) and not (eager and len(result) > len(out_types)):
            raise invalid(node, f"{token} returns {len(result)} values, but expects to see {len(out_types)} values.")
        outputs = tuple(_as_output(node, token, i, v, t, eager) for i, (v, t) in enumerate(zip(result, out_types)))
        return None if not outputs else outputs if len(outputs) > 1 else outputs[0]
    return run


def _py_func_infer(op):
    return [(dtypes.as_dtype(t), unknown_shape()) for t in op.get_attr("Tout")]


register("PyFunc", _py_func_infer, _py_func_kernel, stateful=True)
register("PyFuncStateless", _py_func_infer, _py_func_kernel)
register("EagerPyFunc", _py_func_infer, _py_func_kernel, stateful=True)
NotDifferentiable("PyFunc")
NotDifferentiable("PyFuncStateless")
