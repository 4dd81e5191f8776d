"""NN losses' primitives and classification ops: l2_loss, the softmax cross-entropy ops
(dense and sparse labels) and in_top_k."""
from __future__ import annotations

import numpy as np

from tensorweave.framework import dtypes
from tensorweave.framework.shapes import TensorShape, unknown_shape
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.core import expand_dims
from tensorweave.ops.gradients.gradients import is_stand_in_zeros
from tensorweave.ops.helpers import INDEX, array_module, invalid, make_op
from tensorweave.ops.math.binary import add, multiply, subtract
from tensorweave.ops.math.reduction import reduce_sum
from tensorweave.ops.math.unary import negative
from tensorweave.ops.nn.activations import log_softmax_np, log_softmax, softmax
from tensorweave.ops.intra_op import parallel_ranges
from tensorweave.ops.nn.util import dims
from tensorweave.ops.registry import pure, register, register_gpu


# -- l2_loss -----------------------------------------------------------------------------------
@tf_export("nn.l2_loss")
def l2_loss(t, name=None):
    """tf.nn.l2_loss(t, name=None): sum(t ** 2) / 2, a scalar of t's dtype."""
    return make_op("L2Loss", [convert_to_tensor(t)], name=name or "L2Loss").outputs[0]


def _l2_loss_kernel(x):
    flat = x.reshape(-1)
    return (np.dot(flat, flat) / 2).astype(x.dtype) if x.dtype.kind == "f" else \
        array_module(x).asarray(np.sum(np.square(x)) / 2).astype(x.dtype)


register("L2Loss", lambda op: [(op.inputs[0].dtype, TensorShape([]))], pure(_l2_loss_kernel),
         grad=lambda op, g: [multiply(op.inputs[0], g)])
register_gpu("L2Loss")


# -- softmax cross-entropy ---------------------------------------------------------------------
def _xent_infer(op):
    logits, labels = op.inputs
    fd, ld = dims(logits.shape), dims(labels.shape)
    for d in (fd, ld):
        if d is not None and len(d) != 2:
            raise ValueError(f"Shape must be rank 2 but is rank {len(d)}")
    if fd is not None and ld is not None:
        for a, b in zip(fd, ld):
            if a is not None and b is not None and a != b and a != 1 and b != 1:
                raise ValueError(f"Dimensions must be equal, but are {a} and {b}")
    d = fd or ld
    batch = None if d is None else d[0]
    return [(logits.dtype, TensorShape([batch])), (logits.dtype, TensorShape(d) if d else unknown_shape(2))]


def _xent_kernel(features, labels):
    features, labels = np.broadcast_arrays(features, labels)
    logp = log_softmax_np(features)
    loss = -np.sum(labels * logp, axis=-1)
    return loss.astype(features.dtype, copy=False), (np.exp(logp) - labels).astype(features.dtype, copy=False)


def broadcast_mul(vec, mat):
    """vec[:, None] * mat, as TF's _BroadcastMul."""
    return multiply(expand_dims(vec, -1), mat)


def _xent_grad(op, grad_loss, grad_grad):
    logits = op.inputs[0]
    g = broadcast_mul(grad_loss, op.outputs[1])
    if not is_stand_in_zeros(grad_grad):   # TF skips the zeros tf.gradients stands in (_is_zeros_tensor)
        s = softmax(logits)
        g = add(g, multiply(subtract(grad_grad, reduce_sum(multiply(grad_grad, s), -1, keepdims=True)), s))
    return [g, broadcast_mul(grad_loss, negative(log_softmax(logits)))]


register("SoftmaxCrossEntropyWithLogits", _xent_infer, pure(_xent_kernel), grad=_xent_grad)
register_gpu("SoftmaxCrossEntropyWithLogits")


def _sparse_xent_infer(op):
    logits, labels = op.inputs
    fd, ld = dims(logits.shape), dims(labels.shape)
    if fd is not None and len(fd) != 2:
        raise ValueError(f"Shape must be rank 2 but is rank {len(fd)}")
    if ld is not None and len(ld) != 1:
        raise ValueError(f"Shape must be rank 1 but is rank {len(ld)}")
    batch = fd[0] if fd is not None else None
    if ld is not None and ld[0] is not None:
        if batch is not None and batch != ld[0]:
            raise ValueError(f"Dimensions must be equal, but are {batch} and {ld[0]}")
        batch = ld[0]
    classes = fd[1] if fd is not None else None
    return [(logits.dtype, TensorShape([batch])), (logits.dtype, TensorShape([batch, classes]))]


def _sparse_xent_kernel(node, ctx):
    def run(features, labels):
        n, c = features.shape
        if labels.shape[0] != n:
            raise invalid(node, f"logits and labels must have the same first dimension, got logits shape "
                                  f"{list(features.shape)} and labels shape {list(labels.shape)}")
        xp = array_module(features, labels)
        bad = None
        if xp is np:
            if n and ((labels < 0).any() or (labels >= c).any()):
                value = labels[(labels < 0) | (labels >= c)][0]
                raise invalid(node, f"Received a label value of {value} which is outside the valid range of "
                                      f"[0, {c}).  Label values: {' '.join(map(str, labels.tolist()))}")
            if features.dtype.kind == "f" and features.ndim == 2:
                return _sparse_xent_rows(features, labels)
        else:   # TF's GPU kernel: NaN rows for labels out of range, no wait for the device to check them
            bad = (labels < 0) | (labels >= c)
            labels = xp.where(bad, 0, labels)
        logp = log_softmax_np(features)
        rows = xp.arange(n)
        loss = -logp[rows, labels]
        back = np.exp(logp)
        back[rows, labels] -= 1
        if bad is not None:
            loss, back = xp.where(bad, np.nan, loss), xp.where(bad[:, None], np.nan, back)
        return loss.astype(features.dtype, copy=False), back.astype(features.dtype, copy=False)
    return run


_XENT_BLOCK_BYTES = 1 << 18   # rows a block: two blocks' temporaries stay in a core's L2 cache


def _sparse_xent_rows(features: np.ndarray, labels: np.ndarray) -> tuple:
    """The sparse cross-entropy's loss and backprop on the CPU: log_softmax_np's and the general
    path's operations, in their order (the same bits), a block of rows at a time into the output,
    the blocks split over the intra-op threads: one pass over memory instead of seven."""
    n, c = features.shape
    loss = np.empty(n, features.dtype)
    back = np.empty((n, c), features.dtype)
    block = max(1, _XENT_BLOCK_BYTES // max(1, c * features.itemsize))

    def part(a: int, b: int) -> None:
        for r in range(a, b, block):
            e = min(r + block, b)   # (never past the part: the next part's thread writes those rows)
            x, out = features[r:e], back[r:e]
            s = np.subtract(x, x.max(axis=-1, keepdims=True))
            np.exp(s, out=out)
            np.subtract(s, np.log(out.sum(axis=-1, keepdims=True)), out=s)   # log-probabilities
            rows, lab = np.arange(len(s)), labels[r:e]
            loss[r:e] = -s[rows, lab]
            np.exp(s, out=out)
            out[rows, lab] -= 1
    parallel_ranges(n, n * c, part)
    return loss, back


def _sparse_xent_grad(op, grad_loss, grad_grad):
    g = broadcast_mul(grad_loss, op.outputs[1])
    if not is_stand_in_zeros(grad_grad):
        s = softmax(op.inputs[0])
        g = add(g, multiply(subtract(grad_grad, reduce_sum(multiply(grad_grad, s), -1, keepdims=True)), s))
    return [g, None]


register("SparseSoftmaxCrossEntropyWithLogits", _sparse_xent_infer, _sparse_xent_kernel,
         grad=_sparse_xent_grad, dtypes={1: ("labels", INDEX)})
register_gpu("SparseSoftmaxCrossEntropyWithLogits")


# -- in_top_k ----------------------------------------------------------------------------------
@tf_export("math.in_top_k", "nn.in_top_k")
def in_top_k(predictions, targets, k, name=None):
    """tf.nn.in_top_k(predictions, targets, k, name=None): whether targets[i] is among the top k
    predictions of row i (ties count in its favour; non-finite rows are False)."""
    predictions = convert_to_tensor(predictions)
    targets = convert_to_tensor(targets)
    k = convert_to_tensor(k, dtype=targets.dtype)
    return make_op("InTopKV2", [predictions, targets, k], {"T": targets.dtype}, name=name or "InTopKV2").outputs[0]


def _in_top_k_infer(op):
    p, t, k = op.inputs
    pd, td = dims(p.shape), dims(t.shape)
    if pd is not None and len(pd) != 2:
        raise ValueError(f"Shape must be rank 2 but is rank {len(pd)}")
    if td is not None and len(td) != 1:
        raise ValueError(f"Shape must be rank 1 but is rank {len(td)}")
    if k.shape.ndims not in (None, 0):
        raise ValueError(f"Shape must be rank 0 but is rank {k.shape.ndims}")
    n = pd[0] if pd is not None else None
    if td is not None and td[0] is not None:
        if n is not None and n != td[0]:
            raise ValueError(f"Dimensions must be equal, but are {n} and {td[0]}")
        n = td[0]
    return [(dtypes.bool, TensorShape([n]))]


def _in_top_k_kernel(node, ctx):
    def run(pred, targets, k):
        n, c = pred.shape
        if targets.shape[0] != n:
            raise invalid(node, f"First dimension of predictions {n} must match length of targets {targets.shape[0]}")
        valid = (targets >= 0) & (targets < c)
        safe = np.where(valid, targets, 0)
        target_val = pred[array_module(pred).arange(n), safe]
        larger = (pred > target_val[:, None]).sum(axis=1)
        finite = np.isfinite(pred).all(axis=1)
        return valid & finite & (larger < int(k))   # k: host memory
    return run


register("InTopKV2", _in_top_k_infer, _in_top_k_kernel, grad=None)
register_gpu("InTopKV2", host_inputs=(2,))
