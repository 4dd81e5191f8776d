"""Fractional pooling (FractionalMaxPool, FractionalAvgPool and their gradients): pooling
regions of random (or pseudo-random) sizes k or k + 1 along rows and columns so that the
output is input / pooling_ratio, as Graham's "Fractional Max-Pooling" describes and TF does.
Each op returns the row and column boundaries it used; the gradients reuse them."""
from __future__ import annotations

import math

import numpy as np

from tensorweave.framework import dtypes
from tensorweave.framework.shapes import TensorShape, unknown_shape
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tensor_util import constant_value_as_shape
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.helpers import check_output_size, invalid, make_op
from tensorweave.ops.nn.util import shape_tensor
from tensorweave.ops.random import op_generator, seed_attrs
from tensorweave.ops.registry import register


def _sequence(rng: np.random.Generator, input_length: int, output_length: int, pseudo_random: bool) -> np.ndarray:
    """Region boundaries 0 = b0 < b1 < ... < b_out = input_length, each step k or k + 1."""
    k = input_length // output_length
    if input_length % output_length == 0:
        return np.arange(output_length + 1, dtype=np.int64) * k
    if pseudo_random:
        alpha = input_length / output_length
        max_u = min((k + 2) / alpha - 1, (input_length + 1 - k) / alpha - (output_length - 1))
        u = rng.random() * max_u
        seq = [0] + [int(math.ceil(alpha * (i + u))) - int(math.ceil(alpha * u)) for i in range(1, output_length)]
        return np.asarray(seq + [input_length], np.int64)
    diff = np.full(output_length, k, np.int64)
    diff[:input_length % output_length] += 1
    rng.shuffle(diff)
    return np.concatenate([[0], np.cumsum(diff)]).astype(np.int64)


def _regions(seq: np.ndarray, length: int, overlapping: bool) -> list:
    """[start, end) of each pooling region along one axis."""
    return [(int(seq[i]), min(int(seq[i + 1]) + (1 if overlapping else 0), length)) for i in range(len(seq) - 1)]


def _pool(x: np.ndarray, rows: np.ndarray, cols: np.ndarray, overlapping: bool, kind: str) -> np.ndarray:
    n, h, w, c = x.shape
    out = np.zeros((n, len(rows) - 1, len(cols) - 1, c), x.dtype)
    for i, (r0, r1) in enumerate(_regions(rows, h, overlapping)):
        for j, (c0, c1) in enumerate(_regions(cols, w, overlapping)):
            block = x[:, r0:r1, c0:c1]
            out[:, i, j] = block.max(axis=(1, 2)) if kind == "max" else block.mean(axis=(1, 2))
    return out


def _fractional(op_type: str, value, pooling_ratio, pseudo_random, overlapping, deterministic, seed, seed2, name):
    ratio = [float(r) for r in pooling_ratio]
    if len(ratio) != 4 or ratio[0] != 1.0 or ratio[3] != 1.0 or min(ratio) < 1.0:
        raise ValueError(f"pooling_ratio must be [1.0, row_ratio >= 1, col_ratio >= 1, 1.0], got {pooling_ratio}")
    x = convert_to_tensor(value, name="value")
    attrs = {"pooling_ratio": ratio, "pseudo_random": bool(pseudo_random), "overlapping": bool(overlapping),
             "deterministic": bool(deterministic), "T": x.dtype}
    # As TF: seed 0 draws fresh sequences; another seed combines with the graph seed.
    attrs.update({"seed": 0, "seed2": 0} if not seed else seed_attrs(int(seed)))
    op = make_op(op_type, [x], attrs, name=name or op_type)
    return tuple(op.outputs)


@tf_export("nn.fractional_max_pool")
def fractional_max_pool(value, pooling_ratio, pseudo_random=False, overlapping=False, deterministic=False, seed=0,
                        seed2=0, name=None):
    """tf.nn.fractional_max_pool(value, pooling_ratio, pseudo_random=False, overlapping=False,
    deterministic=False, seed=0, seed2=0, name=None) -> (output, row_pooling_sequence,
    col_pooling_sequence): max pooling of NHWC value over regions of fractional average size
    pooling_ratio[1] x pooling_ratio[2] (overlapping regions share their boundary)."""
    return _fractional("FractionalMaxPool", value, pooling_ratio, pseudo_random, overlapping, deterministic, seed,
                       seed2, name)


@tf_export("nn.fractional_avg_pool")
def fractional_avg_pool(value, pooling_ratio, pseudo_random=False, overlapping=False, deterministic=False, seed=0,
                        seed2=0, name=None):
    """tf.nn.fractional_avg_pool(value, pooling_ratio, ...) -> (output, row_pooling_sequence,
    col_pooling_sequence): as fractional_max_pool with the mean of each region."""
    return _fractional("FractionalAvgPool", value, pooling_ratio, pseudo_random, overlapping, deterministic, seed,
                       seed2, name)


def _infer(op):
    x = op.inputs[0]
    s = x.shape.with_rank(4) if x.shape.ndims is not None else unknown_shape(4)
    ratio = op.get_attr("pooling_ratio")
    out = [None if d.value is None else int(d.value / r) for d, r in zip(s.dims, ratio)]
    return [(x.dtype, TensorShape(out)), (dtypes.int64, TensorShape([None if out[1] is None else out[1] + 1])),
            (dtypes.int64, TensorShape([None if out[2] is None else out[2] + 1]))]


def _kernel(kind: str):
    def factory(node, ctx):
        ratio = list(node.attr["pooling_ratio"])
        pseudo, overlapping = bool(node.attr["pseudo_random"]), bool(node.attr["overlapping"])
        rng = op_generator(node, ctx)
        # deterministic: one pair of sequences per input shape for the op's life in the session
        fixed: dict = ctx.resources.lookup_or_create("_fractional_pool", f"{node.name}/{node.op}", dict)

        def run(x):
            x = np.asarray(x)
            if x.ndim != 4:
                raise invalid(node, f"input must be 4-dimensional, got shape {list(x.shape)}")
            out_h, out_w = int(x.shape[1] / ratio[1]), int(x.shape[2] / ratio[2])
            if out_h < 1 or out_w < 1:
                raise invalid(node, f"pooling_ratio {ratio} is too large for an input of shape {list(x.shape)}")
            key = x.shape[1:3]
            if node.attr.get("deterministic") and key in fixed:
                rows, cols = fixed[key]
            else:
                rows = _sequence(rng, x.shape[1], out_h, pseudo)
                cols = _sequence(rng, x.shape[2], out_w, pseudo)
                fixed[key] = rows, cols
            return _pool(x, rows, cols, overlapping, kind), rows, cols
        return run
    return factory


def _max_grad_kernel(node, ctx):
    overlapping = bool(node.attr["overlapping"])

    def run(x, y, g, rows, cols):
        x, g = np.asarray(x), np.asarray(g)
        n, h, w, c = x.shape
        dx = np.zeros(x.shape, g.dtype)
        for i, (r0, r1) in enumerate(_regions(rows, h, overlapping)):
            for j, (c0, c1) in enumerate(_regions(cols, w, overlapping)):
                block = x[:, r0:r1, c0:c1].reshape(n, -1, c)
                first = np.argmax(block, axis=1)   # the first maximum of each region gets the gradient
                rr, cc = np.unravel_index(first, (r1 - r0, c1 - c0))
                b_idx, c_idx = np.meshgrid(np.arange(n), np.arange(c), indexing="ij")
                np.add.at(dx, (b_idx, rr + r0, cc + c0, c_idx), g[:, i, j])
        return dx
    return run


def _avg_grad_kernel(node, ctx):
    overlapping = bool(node.attr["overlapping"])

    def run(in_shape, g, rows, cols):
        g = np.asarray(g)
        n, h, w, c = [int(d) for d in np.reshape(in_shape, -1)]
        check_output_size(node, [n, h, w, c])
        dx = np.zeros((n, h, w, c), g.dtype)
        for i, (r0, r1) in enumerate(_regions(rows, h, overlapping)):
            for j, (c0, c1) in enumerate(_regions(cols, w, overlapping)):
                dx[:, r0:r1, c0:c1] += (g[:, i, j] / ((r1 - r0) * (c1 - c0)))[:, None, None, :]
        return dx
    return run


def _max_grad(op, grad, *unused):
    return [make_op("FractionalMaxPoolGrad", [op.inputs[0], op.outputs[0], grad, op.outputs[1], op.outputs[2]],
                    {"overlapping": op.get_attr("overlapping"), "T": grad.dtype}).outputs[0]]


def _avg_grad(op, grad, *unused):
    return [make_op("FractionalAvgPoolGrad", [shape_tensor(op.inputs[0]), grad, op.outputs[1], op.outputs[2]],
                    {"overlapping": op.get_attr("overlapping"), "T": grad.dtype}).outputs[0]]


register("FractionalMaxPool", _infer, _kernel("max"), grad=_max_grad, stateful=True)
register("FractionalAvgPool", _infer, _kernel("avg"), grad=_avg_grad, stateful=True)
register("FractionalMaxPoolGrad", lambda op: [(op.inputs[2].dtype, op.inputs[0].shape)], _max_grad_kernel, grad=None)
def _avg_grad_infer(op):
    out = constant_value_as_shape(op.inputs[0])
    check_output_size(op, out)
    return [(op.inputs[1].dtype, out)]


register("FractionalAvgPoolGrad", _avg_grad_infer, _avg_grad_kernel, grad=None)
