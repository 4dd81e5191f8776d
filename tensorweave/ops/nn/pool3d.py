"""3-D pooling ops: MaxPool3D, AvgPool3D and their gradients MaxPool3DGrad, AvgPool3DGrad
(kernels in pool3d_kernels.py); the max_pool3d and avg_pool3d wrappers."""
from __future__ import annotations

from tensorweave.framework.shapes import TensorShape
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tensor_util import constant_value_as_shape
from tensorweave.framework import dtypes
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.helpers import check_output_size, invalid, make_op
from tensorweave.ops.nn import pool3d_kernels as kernels
from tensorweave.ops.nn.conv3d import (check_format_5d, check_padding_5d, five, fmt_dims, from_last, geometry,
                                       last_dims, rank5, spatial, to_last)
from tensorweave.ops.nn.util import as_str, shape_tensor, window_out
from tensorweave.ops.registry import register


_POOL_DTYPES = (dtypes.float16, dtypes.float32)   # TF has no float64 3-D pooling kernels


def _attrs(ksize, strides, padding, data_format, op_name: str) -> dict:
    fmt = check_format_5d(data_format, op_name)
    ks, st = five(ksize, fmt, "ksize", op_name), five(strides, fmt, "strides", op_name)
    c_axis = 1 if fmt == "NCDHW" else 4
    if ks[0] != 1 or ks[c_axis] != 1 or st[0] != 1 or st[c_axis] != 1:
        raise ValueError(f"{op_name}: Pooling is not yet supported on the batch nor channel dimension.")
    if min(ks) < 1 or min(st) < 1:
        raise ValueError(f"{op_name}: ksize and strides must be positive, got {ks} and {st}")
    return {"ksize": ks, "strides": st, "padding": check_padding_5d(padding, op_name), "data_format": fmt}


def _window(attrs_or_node_attr) -> tuple:
    a = attrs_or_node_attr
    fmt = as_str(a["data_format"])
    return fmt, spatial(a["ksize"], fmt), spatial(a["strides"], fmt), as_str(a["padding"])


def _pool(op_type: str, input, ksize, strides, padding, data_format, name):
    input = convert_to_tensor(input)
    attrs = dict(_attrs(ksize, strides, padding, data_format, op_type), T=input.dtype)
    return make_op(op_type, [input], attrs, name=name or op_type).outputs[0]


@tf_export("nn.max_pool3d")
def max_pool3d(input, ksize, strides, padding, data_format="NDHWC", name=None):
    """tf.nn.max_pool3d(input, ksize, strides, padding, data_format='NDHWC', name=None): the
    maximum over [depth, height, width] windows of a 5-D input (ksize/strides of 1, 3 or 5 ints)."""
    return _pool("MaxPool3D", input, ksize, strides, padding, data_format, name)


@tf_export("nn.avg_pool3d")
def avg_pool3d(input, ksize, strides, padding, data_format="NDHWC", name=None):
    """tf.nn.avg_pool3d(input, ksize, strides, padding, data_format='NDHWC', name=None): the mean
    over windows of a 5-D input; padded cells are not counted."""
    return _pool("AvgPool3D", input, ksize, strides, padding, data_format, name)


def _op_attrs(op) -> dict:
    return {k: op.get_attr(k) for k in ("ksize", "strides", "padding", "data_format")}


def _pool_shape(attrs, xd) -> TensorShape:
    fmt, ks, st, pad = _window(attrs)
    n, *sp, c = last_dims(xd, fmt)
    outs = [window_out(s, k, stv, 1, pad) for s, k, stv in zip(sp, ks, st)]
    return TensorShape(fmt_dims([n, *outs, c], fmt))


def _pool_infer(op):
    x = op.inputs[0]
    return [(x.dtype, _pool_shape(_op_attrs(op), rank5(x.shape, "input")))]


def _pool_kernel(fn):
    def factory(node, ctx):
        fmt, ks, st, pad = _window(node.attr)

        def run(x):
            x = to_last(x, fmt)
            g, outs = geometry(x.shape[1:4], ks, st, [1, 1, 1], pad)
            return from_last(fn(x, ks, st, g.pads, outs), fmt)
        return run
    return factory


def _max_pool_grad(op, grad):
    x, y = op.inputs[0], op.outputs[0]
    return [make_op("MaxPool3DGrad", [x, y, grad], dict(_op_attrs(op), T=x.dtype, TInput=x.dtype),
                    name="MaxPool3DGrad").outputs[0]]


def _avg_pool_grad(op, grad):
    x = op.inputs[0]
    return [make_op("AvgPool3DGrad", [shape_tensor(x), grad], dict(_op_attrs(op), T=x.dtype),
                    name="AvgPool3DGrad").outputs[0]]


register("MaxPool3D", _pool_infer, _pool_kernel(kernels.max_pool), grad=_max_pool_grad, dtypes=_POOL_DTYPES,
         dtype_param="input")
register("AvgPool3D", _pool_infer, _pool_kernel(kernels.avg_pool), grad=_avg_pool_grad, dtypes=_POOL_DTYPES,
         dtype_param="input")


def _max_grad_kernel(node, ctx):
    fmt, ks, st, pad = _window(node.attr)

    def run(x, y, dy):
        x, y, dy = to_last(x, fmt), to_last(y, fmt), to_last(dy, fmt)
        g, outs = geometry(x.shape[1:4], ks, st, [1, 1, 1], pad)
        if list(y.shape[1:4]) != outs or y.shape != dy.shape:
            raise invalid(node, f"MaxPool3DGrad: orig_output {list(y.shape)} and grad {list(dy.shape)} do not fit "
                                f"orig_input {list(x.shape)}")
        return from_last(kernels.max_pool_grad(x, y, dy, ks, st, g.pads), fmt)
    return run


def _avg_grad_kernel(node, ctx):
    fmt, ks, st, pad = _window(node.attr)

    def run(sizes, dy):
        xs = last_dims([int(v) for v in sizes], fmt)
        check_output_size(node, xs)
        dy = to_last(dy, fmt)
        g, outs = geometry(xs[1:4], ks, st, [1, 1, 1], pad)
        if list(dy.shape) != [xs[0], *outs, xs[4]]:
            raise invalid(node, f"AvgPool3DGrad: grad {list(dy.shape)} does not fit orig_input_shape {list(sizes)}")
        return from_last(kernels.avg_pool_grad(xs, dy, ks, st, g.pads), fmt)
    return run


def _avg_grad_infer(op):
    named = constant_value_as_shape(op.inputs[0])
    check_output_size(op, named)
    return [(op.inputs[1].dtype, named if named.ndims is not None else TensorShape([None] * 5))]


def _avg_grad_grad(op, grad):
    return [None, make_op("AvgPool3D", [grad], dict(_op_attrs(op), T=grad.dtype), name="AvgPool3D").outputs[0]]


register("MaxPool3DGrad", lambda op: [(op.inputs[2].dtype, op.inputs[0].shape)], _max_grad_kernel, grad=None)
register("AvgPool3DGrad", _avg_grad_infer, _avg_grad_kernel, grad=_avg_grad_grad)
