"""Math ops that make sequences of numbers: tf.range (math, as in TF: it casts its arguments to
one dtype), tf.linspace and tf.math.sobol_sample."""
from __future__ import annotations

import warnings

import numpy as np

from tensorweave.framework import dtypes
from tensorweave.framework.api import name_scope
from tensorweave.framework.graph import Tensor
from tensorweave.framework.shapes import TensorShape
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tensor_util import constant_value
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.core import index_tensor
from tensorweave.ops.helpers import check_output_size, invalid, make_op, static_int
from tensorweave.ops.math.cast import cast
from tensorweave.ops.registry import register, register_gpu



# -- Range, LinSpace ---------------------------------------------------------------------------
_RANGE_DTYPES = [dtypes.int32, dtypes.int64, dtypes.float32, dtypes.float64]


@tf_export("range")
def range(start, limit=None, delta=1, dtype=None, name: str = "range") -> Tensor:
    """tf.range(start, limit=None, delta=1, dtype=None, name='range'); tf.range(n) counts from 0.
    Without `dtype` the result takes the widest of the arguments' dtypes (int32 < int64 <
    float32 < float64)."""
    if limit is None:
        start, limit = 0, start
    with name_scope(name, "Range", [start, limit, delta]) as scope:
        args = [start, limit, delta]
        names = ["start", "limit", "delta"]
        if dtype is None:
            found = [a.dtype if isinstance(a, Tensor) else dtypes.dtype_of_value(a) for a in args]
            for f in found:
                if f not in _RANGE_DTYPES:
                    raise TypeError(f"range: argument dtype {f.name} is not one of int32, int64, float32, float64")
            dtype = max(found, key=_RANGE_DTYPES.index)
        dtype = dtypes.as_dtype(dtype)
        tensors = []
        for a, n in zip(args, names):
            if isinstance(a, Tensor):
                tensors.append(a if a.dtype == dtype else cast(a, dtype))
            else:
                tensors.append(convert_to_tensor(a, dtype=dtype, name=n))
        return make_op("Range", tensors, {"Tidx": dtype}, name=scope).outputs[0]


def _range_infer(op):
    vals = [constant_value(t) for t in op.inputs]
    dt = op.get_attr("Tidx")
    for t in op.inputs:
        if t.shape.ndims not in (None, 0):
            raise ValueError(f"Range: start, limit and delta must be scalars, got shape {t.shape}")
    if any(v is None for v in vals):
        return [(dt, TensorShape([None]))]
    start, limit, delta = (v.item() for v in vals)
    _range_check(start, limit, delta, ValueError)
    n = _range_len(start, limit, delta, dt)
    check_output_size(op, [n])
    return [(dt, TensorShape([n]))]


def _range_check(start, limit, delta, exc):
    if delta == 0:
        raise exc(f"Requires delta != 0: {delta}")
    if delta > 0 and start > limit:
        raise exc(f"Requires start <= limit when delta > 0: {start}/{limit}")
    if delta < 0 and start < limit:
        raise exc(f"Requires start >= limit when delta < 0: {start}/{limit}")


def _range_len(start, limit, delta, dt) -> int:
    if dt.is_integer:
        return int(abs(limit - start) + abs(delta) - 1) // int(abs(delta))
    return int(np.ceil(abs((limit - start) / delta)))


def _range_kernel(node, ctx):
    dt = dtypes.as_dtype(node.attr["Tidx"])

    def run(start, limit, delta):
        start, limit, delta = (np.asarray(v).item() for v in (start, limit, delta))
        try:
            _range_check(start, limit, delta, ValueError)
        except ValueError as e:
            raise invalid(node, str(e)) from None
        n = _range_len(start, limit, delta, dt)
        check_output_size(node, [n])
        return (start + np.arange(n, dtype=np.float64 if dt.is_floating else np.int64) * delta).astype(
            dt.as_numpy_dtype)
    return run


register("Range", _range_infer, _range_kernel, grad=None)
register_gpu("Range", host_inputs=(0, 1, 2))   # made on the host, then moved (its output: device memory, as TF's)


@tf_export("lin_space", "linspace")
def linspace(start, stop, num, name=None) -> Tensor:
    """tf.linspace(start, stop, num, name=None) (also tf.lin_space): `num` evenly spaced values
    from `start` to `stop` inclusive."""
    start = convert_to_tensor(start)
    stop = convert_to_tensor(stop, dtype=start.dtype)
    num = index_tensor(num)
    return make_op("LinSpace", [start, stop, num], name=name or "LinSpace").outputs[0]


lin_space = linspace


def _linspace_infer(op):
    start, stop, num = op.inputs
    if not start.dtype.is_floating:
        raise ValueError(f"LinSpace: start must be a floating point tensor, got {start.dtype.name}")
    n = static_int(num)
    if n is not None and n <= 0:
        raise ValueError(f"Requires num > 0: {n}")
    check_output_size(op, [n])
    return [(start.dtype, TensorShape([n]))]


def _linspace_kernel(node, ctx):
    def run(start, stop, num):
        num = int(num)
        if num <= 0:
            raise invalid(node, f"Requires num > 0: {num}")
        check_output_size(node, [num])
        dt = np.asarray(start).dtype
        start, stop = dt.type(start), dt.type(stop)
        if num == 1:
            return np.array([start], dtype=dt)
        step = dt.type((stop - start) / dt.type(num - 1))   # TF computes in the output dtype
        return (start + np.arange(num, dtype=dt) * step).astype(dt)
    return run


register("LinSpace", _linspace_infer, _linspace_kernel, grad=None, dtypes=(dtypes.float32, dtypes.float64),
         dtype_param="start")


# -- SobolSample -----------------------------------------------------------------------------------
_SOBOL_MAX_DIM = 21200   # TF's direction numbers (Joe and Kuo's), as scipy's


@tf_export("math.sobol_sample")
def sobol_sample(dim, num_results, skip=0, dtype=dtypes.float32, name=None) -> Tensor:
    """tf.math.sobol_sample(dim, num_results, skip=0, dtype=tf.float32, name=None): points
    [num_results, dim] of the (unscrambled) Sobol sequence in [0, 1)^dim, after its first
    `skip` points (the all-zero point never among them)."""
    dtype = dtypes.as_dtype(dtype)
    if dtype not in (dtypes.float32, dtypes.float64):
        raise ValueError(f"sobol_sample: dtype must be float32 or float64, not {dtype.name}")
    with name_scope(name, "sobol", [dim, num_results, skip]) as scope:
        inputs = [convert_to_tensor(v, dtype=dtypes.int32, name=n)
                  for v, n in ((dim, "dim"), (num_results, "num_results"), (skip, "skip"))]
        return make_op("SobolSample", inputs, {"dtype": dtype}, name=scope).outputs[0]


def _sobol_infer(op):
    dim, num = (static_int(t) for t in op.inputs[:2])
    return [(op.get_attr("dtype"), TensorShape([num, dim]))]


def _sobol_kernel(node, ctx):
    np_dt = dtypes.as_dtype(node.attr["dtype"]).as_numpy_dtype

    def run(dim, num_results, skip):
        from scipy.stats import qmc   # scipy on first use: importing tensorweave stays fast
        dim, num_results, skip = int(dim), int(num_results), int(skip)
        for ok, message in ((dim >= 1, "dim must be at least one"),
                            (num_results >= 1, "num_results must be at least one"),
                            (skip >= 0, "skip must be non-negative"),
                            (dim <= _SOBOL_MAX_DIM, f"dim must be at most {_SOBOL_MAX_DIM}")):
            if not ok:
                raise invalid(node, message)
        check_output_size(node, [num_results, dim])
        engine = qmc.Sobol(dim, scramble=False)
        engine.fast_forward(skip + 1)   # TF's sequence starts after the all-zero point
        with warnings.catch_warnings():   # scipy's note that balance needs 2**m points: TF takes any count
            warnings.simplefilter("ignore", UserWarning)
            return engine.random(num_results).astype(np_dt)
    return run


register("SobolSample", _sobol_infer, _sobol_kernel, grad=None)
