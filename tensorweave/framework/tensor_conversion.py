"""convert_to_tensor: Tensors, registered types (Variables, IndexedSlices) and Python values to
Tensors. The op layer registers how Python values become constants and how lists holding
tensors are packed (TF's constant_op and array_ops do the same), so this layer creates no op
itself."""
from __future__ import annotations

from typing import Callable

from tensorweave.framework import dtypes as _dtypes
from tensorweave.framework.graph import Tensor
from tensorweave.framework.tf_export import tf_export


@tf_export("is_tensor")
def is_tensor(x) -> bool:
    return isinstance(x, Tensor) or getattr(x, "_is_tensor_like", False)


_conversion_functions: list = []  # (priority, type, fn(value, dtype=None, name=None) -> Tensor)


@tf_export("register_tensor_conversion_function")
def register_tensor_conversion_function(base_type, conversion_func: Callable, priority: int = 100) -> None:
    """tf.register_tensor_conversion_function(base_type, conversion_func, priority=100): lower
    priorities are tried first; a function may return NotImplemented to pass."""
    _conversion_functions.append((priority, base_type, conversion_func))
    _conversion_functions.sort(key=lambda e: e[0])


def convert_to_tensor(value, dtype=None, name=None, preferred_dtype=None, dtype_hint=None) -> Tensor:
    """Converts Tensors, Variables, numpy arrays and Python values into a Tensor (TF1 semantics):
    `preferred_dtype` (alias dtype_hint) is tried first and dropped when the value does not fit."""
    dtype = _dtypes.as_dtype(dtype) if dtype is not None else None
    if isinstance(value, Tensor):
        if dtype is not None and value.dtype != dtype:
            raise ValueError(f"Tensor conversion requested dtype {dtype.name} for Tensor with dtype "
                             f"{value.dtype.name}: {value!r}")
        return value
    preferred = preferred_dtype or dtype_hint
    preferred = _dtypes.as_dtype(preferred) if dtype is None and preferred is not None else None
    for _, base_type, fn in _conversion_functions:
        if not isinstance(value, base_type):
            continue
        if preferred is not None:
            try:
                result = fn(value, dtype=preferred, name=name)
            except (TypeError, ValueError):
                result = NotImplemented
            if result is not NotImplemented:
                return result
        result = fn(value, dtype=dtype, name=name)
        if result is not NotImplemented:
            return result
    raise TypeError(f"Failed to convert object of type {type(value).__name__} to Tensor. Contents: {value!r}.")


def convert_n_to_tensor(values, dtype=None, name=None) -> list:
    return [convert_to_tensor(v, dtype=dtype) for v in values]


def internal_convert_to_tensor(value, dtype=None, name=None, **_):
    return convert_to_tensor(value, dtype=dtype, name=name)
