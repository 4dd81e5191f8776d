"""Fused optimizer updates (TF's ResourceApply* / ResourceSparseApply* ops) on resource variables,
and the same kernels as TF1's Apply* / SparseApply* on ref variables (ref_variables.py): a ref
input's runtime value is the same VariableResource a handle's is, so one kernel serves both and the
ref form only also outputs its variable (TF's `out: Ref(T)`).

Each op reads a variable and its slots, applies one optimizer step in numpy and stores the results.
Gradient descent, Adam, RMSProp, Momentum, Adagrad and Adadelta on float32 and float64 arrays run
as one compiled pass over memory instead (_fused_updates.c, as TF's kernels; numpy's 2-13 passes
read var and its slots cold in a step), with the numpy formula's bits; where it was not built, the
formula runs. Dense forms replace the stored arrays. Sparse forms first sum the rows of repeated
indices (TF's optimizers do so before calling the kernel; SGD's adds each index's row in turn, as
TF's ResourceScatterAdd does), then write only the rows looked up, into the stored arrays
themselves while nothing else holds them (VariableResource.updating: a value already read, or in
flight to another task, never changes).

On a GPU the same kernels run on CuPy arrays (the variable, its slots, grad and the scalars in device
memory; handles and a sparse update's indices in host memory, where they are checked). The
formulas take their constants as the variable dtype's scalars (`var.dtype.type(1)`), which numpy
and CuPy arrays both combine with, and numpy's in-place fast paths apply to numpy arrays only.
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass
from functools import partial
from typing import Callable

import numpy as np

from tensorweave.framework import dtypes, errors
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.ops import intra_op
from tensorweave.ops.helpers import TFNodes, accumulate_rows, array_module, c_pow, make_op, tf_pow
from tensorweave.ops.registry import register, register_gpu
from tensorweave.ops.state.variable_ops import (as_array, check_indices, handle_shape, locked, returning_variable,
                                                shape_str)

try:   # setup.py builds it where there is a C compiler; without it the formulas below run in numpy
    from tensorweave.ops.state import _fused_updates
except ImportError:
    _fused_updates = None
_COMPILED_TYPES = (np.dtype(np.float32), np.dtype(np.float64))


@dataclass(frozen=True)
class _Rule:
    """One optimizer's update: `fn(var, *slots, *scalars, grad, **attrs) -> (var, *slots)`."""
    op_type: str
    n_slots: int
    scalars: tuple
    fn: Callable
    grad_first: bool = False   # Ftrl takes grad (and indices) before its scalars
    attrs: tuple = ("use_locking",)
    # TF's sparse kernels where their order differs from the dense kernel's: for rows of several
    # elements (Eigen's chips), and for rows of one element (their scalar branch)
    sparse_fn: Callable = None
    scalar_rows_fn: Callable = None
    # `compiled(*scalars, **attrs) -> (loop, constants)`: the update as one compiled pass,
    # loop(*arrays, *outputs, *constants) (_fused_updates.c), or None where it has none
    compiled: Callable = None


# -- the update formulas (TF 1.15 training_ops.cc) --------------------------------------------
def _sgd(var, alpha, grad):
    step = alpha * grad
    if type(step) is np.ndarray and step.shape == var.shape and step.dtype == var.dtype:
        # var - step into step's fresh buffer: one pass and one allocation fewer, the same numbers
        return (np.subtract(var, step, out=step),)
    return (var - step,)


def _sgd_compiled(alpha):
    return _fused_updates.sgd, (alpha,)


def _momentum(var, accum, lr, grad, momentum, use_nesterov=False):
    accum = accum * momentum + grad
    if use_nesterov:
        return var - (grad * lr + accum * momentum * lr), accum
    return var - lr * accum, accum


def _momentum_compiled(lr, momentum, use_nesterov=False):
    return _fused_updates.momentum, (lr, momentum, use_nesterov)


def _in_place(*arrays) -> bool:
    """Whether an update may write its intermediates into buffers of its own: all arrays of at
    least one dimension (0-d ones' arithmetic gives numpy scalars). The kernel has cast every
    input to the variable's dtype, so each in-place step rounds as the expression it replaces."""
    return all(type(a) is np.ndarray and a.ndim for a in arrays)


def _moving_average(avg, x, one_minus_decay, difference: bool = False):
    """avg + (x - avg) * (1 - decay) into x's buffer (x: a fresh array of this update's own, or
    with `difference` the fresh x - avg itself: one pass fewer than copying x first)."""
    if not difference:
        x -= avg
    x *= one_minus_decay
    return np.add(avg, x, out=x)


def _adam_lr(lr, beta1_power, beta2_power):
    """Adam's bias-corrected learning rate, lr * sqrt(1 - beta2^t) / (1 - beta1^t)."""
    one = lr.dtype.type(1)
    return lr * np.sqrt(one - beta2_power) / (one - beta1_power)


def _adam(var, m, v, beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad, use_nesterov=False):
    one = var.dtype.type(1)
    lr_t = _adam_lr(lr, beta1_power, beta2_power)
    if not use_nesterov and _in_place(var, m, v, grad):
        # the expressions below, in as many passes and four allocations instead of ten
        m = _moving_average(m, np.subtract(grad, m), one - beta1, difference=True)
        v = _moving_average(v, grad * grad, one - beta2)
        denom = np.sqrt(v)
        denom += epsilon
        step = lr_t * m
        step /= denom
        return np.subtract(var, step, out=step), m, v
    m = m + (grad - m) * (one - beta1)
    v = v + (grad * grad - v) * (one - beta2)
    if use_nesterov:
        return var - lr_t * (m * beta1 + (one - beta1) * grad) / (np.sqrt(v) + epsilon), m, v
    return var - lr_t * m / (np.sqrt(v) + epsilon), m, v


def _adam_compiled(beta1_power, beta2_power, lr, beta1, beta2, epsilon, use_nesterov=False):
    one = lr.dtype.type(1)
    return _fused_updates.adam, (_adam_lr(lr, beta1_power, beta2_power), one - beta1, one - beta2, epsilon, beta1,
                                 use_nesterov)


def _adagrad(var, accum, lr, grad, update_slots=True, scalar_rows=False):
    # grad * lr * rsqrt(accum) as TF's kernel; a sparse update's rows of one element (its scalar
    # branch) lr * grad / sqrt(accum). (`scalar_rows` likewise below.)
    if update_slots:
        accum = accum + grad * grad
    if scalar_rows:
        return var - lr * grad / np.sqrt(accum), accum
    return var - grad * lr * (var.dtype.type(1) / np.sqrt(accum)), accum


def _adagrad_compiled(lr, update_slots=True):
    return _fused_updates.adagrad, (lr, update_slots)


def _rmsprop(var, ms, mom, lr, rho, momentum, epsilon, grad):
    if _in_place(var, ms, mom, grad):
        # the expressions below, in as many passes and four allocations instead of eight
        ms = _moving_average(ms, grad * grad, var.dtype.type(1) - rho)
        denom = ms + epsilon
        np.sqrt(denom, out=denom)
        step = lr * grad
        step /= denom
        mom = mom * momentum
        mom += step
        return np.subtract(var, mom, out=step), ms, mom
    ms = ms + (grad * grad - ms) * (var.dtype.type(1) - rho)
    mom = mom * momentum + lr * grad / np.sqrt(ms + epsilon)
    return var - mom, ms, mom


def _rmsprop_compiled(lr, rho, momentum, epsilon):
    return _fused_updates.rmsprop, (lr, lr.dtype.type(1) - rho, momentum, epsilon)


def _sparse_rmsprop(var, ms, mom, lr, rho, momentum, epsilon, grad):
    # TF's SparseApplyRMSProp: ms * rho + grad^2 (1 - rho), and rsqrt(ms + epsilon) * lr * grad
    # (its rows of more than 4 elements take Eigen's vectorized rsqrt, an approximation)
    one = var.dtype.type(1)
    ms = ms * rho + grad * grad * (one - rho)
    mom = mom * momentum + one / np.sqrt(ms + epsilon) * lr * grad
    return var - mom, ms, mom


def _sparse_centered_rmsprop(var, mg, ms, mom, lr, rho, momentum, epsilon, grad):
    one = var.dtype.type(1)
    ms = ms * rho + grad * grad * (one - rho)
    mg = mg * rho + grad * (one - rho)
    mom = mom * momentum + one / np.sqrt(ms + epsilon - mg * mg) * lr * grad
    return var - mom, mg, ms, mom


def _centered_rmsprop(var, mg, ms, mom, lr, rho, momentum, epsilon, grad):
    one = var.dtype.type(1)
    mg = mg + (grad - mg) * (one - rho)
    ms = ms + (grad * grad - ms) * (one - rho)
    mom = mom * momentum + lr * grad / np.sqrt(ms - mg * mg + epsilon)
    return var - mom, mg, ms, mom


def _adadelta(var, accum, accum_update, lr, rho, epsilon, grad):
    # accum = accum * rho + grad * grad * (1 - rho); update = sqrt(accum_update + epsilon) /
    # sqrt(accum + epsilon) * grad; accum_update = accum_update * rho + update * update * (1 - rho);
    # var - update * lr: the same operations in the same order, in place on four new arrays
    # instead of eleven (a Keras CNN's 1.2M-weight Dense layer: 7 ms a step before).
    one_minus_rho = var.dtype.type(1) - rho
    square = np.multiply(grad, grad, out=np.empty_like(var))   # (out=: arrays also for a scalar var)
    square *= one_minus_rho
    accum = np.multiply(accum, rho, out=np.empty_like(var))
    accum += square
    update = np.add(accum_update, epsilon, out=np.empty_like(var))
    np.sqrt(update, out=update)
    denom = np.add(accum, epsilon, out=square)
    update /= np.sqrt(denom, out=denom)
    update *= grad
    np.multiply(update, update, out=square)
    square *= one_minus_rho
    accum_update = np.multiply(accum_update, rho, out=np.empty_like(var))
    accum_update += square
    np.multiply(update, lr, out=update)
    return np.subtract(var, update, out=update), accum, accum_update


def _adadelta_compiled(lr, rho, epsilon):
    return _fused_updates.adadelta, (lr, rho, epsilon, lr.dtype.type(1) - rho)


def _ftrl_core(var, accum, linear, grad, shrunk_grad, lr, l1, l2, lr_power, scalar_rows=False):
    # linear + (grad - sigma var) as TF's kernels (Eigen) add; a sparse update's rows of one element
    # (TF's scalar branch) add (linear + grad) - sigma var, with sigma from the C library's pow at
    # every power (its pow(x, 0.5) is not always sqrt's rounding) and the quadratic term from sqrt
    new_accum = accum + grad * grad
    if scalar_rows or lr_power != -0.5:
        power = c_pow if scalar_rows else tf_pow
        new_root, old_root = power(new_accum, -lr_power), power(accum, -lr_power)
    else:
        new_root, old_root = np.sqrt(new_accum), np.sqrt(accum)
    sigma = (new_root - old_root) / lr
    quadratic = (np.sqrt(new_accum) if lr_power == -0.5 else new_root) / lr + 2 * l2
    linear = linear + shrunk_grad - sigma * var if scalar_rows else linear + (shrunk_grad - sigma * var)
    pre_shrink = (np.sign(linear) * l1 - linear) / quadratic
    var = np.where(np.abs(linear) > l1, pre_shrink, np.zeros((), var.dtype)).astype(var.dtype)
    return var, new_accum, linear


def _ftrl(var, accum, linear, grad, lr, l1, l2, lr_power, scalar_rows=False):
    return _ftrl_core(var, accum, linear, grad, grad, lr, l1, l2, lr_power, scalar_rows)


def _ftrl_v2(var, accum, linear, grad, lr, l1, l2, l2_shrinkage, lr_power, scalar_rows=False):
    return _ftrl_core(var, accum, linear, grad, grad + 2 * l2_shrinkage * var, lr, l1, l2, lr_power, scalar_rows)


def _proximal_step(prox_var, lr, l1, l2, scalar_rows=False):
    """TF's proximal step: soft-threshold prox_var by lr * l1 (when l1 > 0), then shrink by
    1 + lr * l2. TF's loop over rows of one element divides by 1.0 + lr * l2 in double (a C++
    double literal), rounding only the quotient to the variable's type."""
    if l1 > 0:
        prox_var = np.sign(prox_var) * np.maximum(np.abs(prox_var) - lr * l1, np.zeros((), prox_var.dtype))
    if scalar_rows:
        return (prox_var.astype(np.float64) / (1.0 + (lr * l2).astype(np.float64))).astype(prox_var.dtype)
    return prox_var / (np.ones((), prox_var.dtype) + lr * l2)


def _proximal_sgd(var, alpha, l1, l2, grad):
    return (_proximal_step(var - alpha * grad, alpha, l1, l2),)


def _proximal_adagrad(var, accum, lr, l1, l2, grad, scalar_rows=False):
    accum = accum + grad * grad
    learning_rate = lr / np.sqrt(accum) if scalar_rows else lr * (var.dtype.type(1) / np.sqrt(accum))
    return _proximal_step(var - grad * learning_rate, learning_rate, l1, l2, scalar_rows), accum


def _adagrad_da(var, gradient_accum, gradient_squared_accum, grad, lr, l1, l2, global_step):
    gradient_accum = gradient_accum + grad
    gradient_squared_accum = gradient_squared_accum + grad * grad
    numerator = gradient_accum
    if l1 > 0:
        numerator = np.sign(gradient_accum) * np.maximum(np.abs(gradient_accum) - l1 * global_step,
                                                         np.zeros((), var.dtype))
    var = -lr * numerator / (l2 * global_step * lr + np.sqrt(gradient_squared_accum))
    return var, gradient_accum, gradient_squared_accum


def _sparse_adagrad_da(var, gradient_accum, gradient_squared_accum, grad, lr, l1, l2, global_step):
    # TF's SparseApplyAdagradDA on rows of several elements: -sign(a) max(|a| / t - l1, 0) / (l2 + sqrt(s) / (t lr))
    gradient_accum = gradient_accum + grad
    gradient_squared_accum = gradient_squared_accum + grad * grad
    averaged = gradient_accum / global_step
    if l1 > 0:
        averaged = np.sign(gradient_accum) * np.maximum(np.abs(gradient_accum) / global_step - l1,
                                                        np.zeros((), var.dtype))
    var = -var.dtype.type(1) * averaged / (l2 + np.sqrt(gradient_squared_accum) / (global_step * lr))
    return var, gradient_accum, gradient_squared_accum


def _scalar_adagrad_da(var, gradient_accum, gradient_squared_accum, grad, lr, l1, l2, global_step):
    # TF's SparseApplyAdagradDA on rows of one element computes in double (its scalars, the global
    # step and each gradient converted), rounding to the variable's type what it stores: the two
    # accumulators and var; sqrt is the stored float's (C++'s float overload)
    f8 = np.float64
    g = grad.astype(f8)
    gradient_accum = (gradient_accum.astype(f8) + g).astype(var.dtype)
    gradient_squared_accum = (gradient_squared_accum.astype(f8) + g * g).astype(var.dtype)
    lr, l1, l2, step = f8(lr), f8(l1), f8(l2), f8(global_step)
    denominator = step * l2 * lr + np.sqrt(gradient_squared_accum).astype(f8)
    if l1 > 0:
        numerator = np.sign(-gradient_accum).astype(f8) * lr * np.maximum(
            np.abs(gradient_accum).astype(f8) - step * l1, 0.0)
    else:
        numerator = -gradient_accum.astype(f8) * lr
    return (numerator / denominator).astype(var.dtype), gradient_accum, gradient_squared_accum


_RULES = [
    _Rule("GradientDescent", 0, ("alpha",), _sgd, compiled=_sgd_compiled),
    _Rule("Momentum", 1, ("lr", "momentum"), _momentum, attrs=("use_locking", "use_nesterov"),
          compiled=_momentum_compiled),
    _Rule("Adam", 2, ("beta1_power", "beta2_power", "lr", "beta1", "beta2", "epsilon"), _adam,
          attrs=("use_locking", "use_nesterov"), compiled=_adam_compiled),
    _Rule("Adagrad", 1, ("lr",), _adagrad, attrs=("use_locking", "update_slots"),
          scalar_rows_fn=partial(_adagrad, scalar_rows=True), compiled=_adagrad_compiled),
    _Rule("RMSProp", 2, ("lr", "rho", "momentum", "epsilon"), _rmsprop, sparse_fn=_sparse_rmsprop,
          scalar_rows_fn=_sparse_rmsprop, compiled=_rmsprop_compiled),
    _Rule("CenteredRMSProp", 3, ("lr", "rho", "momentum", "epsilon"), _centered_rmsprop,
          sparse_fn=_sparse_centered_rmsprop, scalar_rows_fn=_sparse_centered_rmsprop),
    _Rule("Adadelta", 2, ("lr", "rho", "epsilon"), _adadelta, compiled=_adadelta_compiled),
    _Rule("Ftrl", 2, ("lr", "l1", "l2", "lr_power"), _ftrl, grad_first=True,
          scalar_rows_fn=partial(_ftrl, scalar_rows=True)),
    _Rule("FtrlV2", 2, ("lr", "l1", "l2", "l2_shrinkage", "lr_power"), _ftrl_v2, grad_first=True,
          scalar_rows_fn=partial(_ftrl_v2, scalar_rows=True)),
    _Rule("ProximalGradientDescent", 0, ("alpha", "l1", "l2"), _proximal_sgd),
    _Rule("ProximalAdagrad", 1, ("lr", "l1", "l2"), _proximal_adagrad,
          scalar_rows_fn=partial(_proximal_adagrad, scalar_rows=True)),
    # global_step is TF's int64 input; the kernel uses it as T (TF's static_cast<T>)
    _Rule("AdagradDA", 2, ("lr", "l1", "l2", "global_step"), _adagrad_da, grad_first=True,
          sparse_fn=_sparse_adagrad_da, scalar_rows_fn=_scalar_adagrad_da),
]
# Momentum's grad comes before its `momentum` scalar (TF's input order): lr, grad, momentum.
_GRAD_AFTER = {"Momentum": 1}


def _input_names(rule: _Rule, sparse: bool) -> list:
    slots = [f"slot{i}" for i in range(rule.n_slots)]
    g = ["grad", "indices"] if sparse else ["grad"]
    if rule.grad_first:
        return ["var"] + slots + g + list(rule.scalars)
    k = _GRAD_AFTER.get(rule.op_type, len(rule.scalars))
    return ["var"] + slots + list(rule.scalars[:k]) + g + list(rule.scalars[k:])


def _rows(node, indices, nrows: int) -> np.ndarray:
    """`indices` (in host memory on any device) as a vector, checked against the variable's rows."""
    indices = np.asarray(indices).reshape(-1)
    check_indices(node, indices, nrows)
    return indices


def _dedup(node, grad, indices, nrows: int):
    """(the sorted distinct rows of `indices`, the rows of `grad` summed per row), in grad's
    memory."""
    indices = _rows(node, indices, nrows)
    unique, inverse = np.unique(indices, return_inverse=True)
    grad = as_array(grad)
    xp = array_module(grad)
    if unique.size == indices.size:
        order = np.argsort(indices, kind="stable")
        return xp.asarray(unique), grad[xp.asarray(order)]
    summed = xp.zeros((unique.size,) + grad.shape[1:], dtype=grad.dtype)
    accumulate_rows(np.add, summed, inverse.reshape(-1), grad)
    return xp.asarray(unique), summed


def _make_kernel(rule: _Rule, sparse: bool) -> Callable:
    names = _input_names(rule, sparse)
    n_res = 1 + rule.n_slots
    scalar_pos = [names.index(s) for s in rule.scalars]
    grad_pos = names.index("grad")
    idx_pos = names.index("indices") if sparse else -1

    def factory(node, ctx):
        attrs = {a: bool(node.attr.get(a, a == "update_slots")) for a in rule.attrs if a != "use_locking"}
        use_locking = bool(node.attr.get("use_locking", False))

        def step(inputs) -> None:
            res = inputs[:n_res]
            values = [r.read(node.name) for r in res]
            var = values[0]
            dtype = var.dtype
            scalars = [as_array(inputs[i]).astype(dtype) for i in scalar_pos]
            grad = as_array(inputs[grad_pos]).astype(dtype, copy=False)
            for i in range(1, n_res):
                if values[i].shape != var.shape:
                    raise errors.InvalidArgumentError(
                        node, node.name, f"var and {names[i]} do not have the same shape"
                        f"{list(var.shape)} {list(values[i].shape)}")
            if not sparse:
                if grad.shape != var.shape:
                    raise errors.InvalidArgumentError(
                        node, node.name, f"var and grad do not have the same shape{list(var.shape)} "
                        f"{list(grad.shape)}")
                if intra_op.in_chunks([*values, grad]) and all(v.flags.c_contiguous for v in values):
                    del values, var   # (with use_locking the op holds the locks already)
                    with locked(res, not use_locking), _written_where_they_are(res, node.name) as arrays:
                        _apply(rule, arrays, scalars, grad, attrs, out=arrays)
                    return
                for r, v in zip(res, _apply(rule, values, scalars, grad, attrs)):
                    r.store(v)
                return
            if var.ndim == 0:
                raise errors.InvalidArgumentError(node, node.name, "var must be at least 1 dimensional")
            if rule.op_type == "GradientDescent":
                rows = _rows(node, inputs[idx_pos], var.shape[0])
                if grad.shape != rows.shape + var.shape[1:]:   # (ResourceScatterAdd's message)
                    raise errors.InvalidArgumentError(
                        node, node.name, f"Must have updates.shape = indices.shape + params.shape[1:] or "
                        f"updates.shape = [], got updates.shape {shape_str(grad.shape)}, indices.shape "
                        f"{shape_str(rows.shape)}, params.shape {shape_str(var.shape)}")
                del values, var
                with res[0].updating(node.name) as out:   # TF's sparse SGD: ResourceScatterAdd of -grad * lr
                    accumulate_rows(np.add, out, rows, -grad * scalars[0])   # (repeated rows in turn)
                return
            rows, g = _dedup(node, grad, inputs[idx_pos], var.shape[0])
            if rule.op_type == "Adam" and intra_op.in_chunks([var]):   # (an Embedding's)
                del values, var
                with _written_where_they_are(res, node.name) as arrays:
                    _sparse_adam_in_chunks(*arrays, rows, g, scalars)
                return
            if rule.op_type == "Adam":
                for r, v in zip(res, _sparse_adam(values, scalars, rows, g)):
                    r.store(v)
                return
            fn = rule.scalar_rows_fn if var.size == var.shape[0] else rule.sparse_fn   # (None: rule.fn)
            new_rows = _apply(rule, [v[rows] for v in values], scalars, g, attrs, fn)
            del values, var   # (the variables alone hold their arrays now: the rows are written into them)
            for r, nv in zip(res, new_rows):
                with r.updating(node.name) as out:
                    out[rows] = nv

        if not (use_locking or sparse):   # (a sparse update may write into the arrays: it holds their locks)
            return lambda *inputs: step(inputs)

        def step_locked(*inputs):
            with locked(list(inputs[:n_res]), True):
                step(inputs)
        return step_locked
    return factory


@contextlib.contextmanager
def _written_where_they_are(resources: list, op_name: str):
    """The arrays of `resources` to write (VariableResource.updating: a copy of one another
    holds), stored when the block ends: a large variable's update writes them where they are, as
    TF's kernels write a variable's buffer, not a second variable and slots at the step's peak.
    The caller holds the resources' locks."""
    with contextlib.ExitStack() as stack:
        yield [stack.enter_context(r.updating(op_name)) for r in resources]


def _sparse_adam_terms(scalars: list, g) -> tuple:
    """(lr_t, beta1, beta2, epsilon, the gradient rows' terms of m and of v) of a sparse Adam."""
    beta1_power, beta2_power, lr, beta1, beta2, epsilon = scalars
    one = g.dtype.type(1)
    lr_t = _adam_lr(lr, beta1_power, beta2_power)
    # (g * g) * (1 - beta2) as TF runs it: Grappler multiplies the scalar in first
    return lr_t, beta1, beta2, epsilon, g * (one - beta1), g * (g * (one - beta2))


def _sparse_adam(values: list, scalars: list, rows, g) -> list:
    """TF1's AdamOptimizer._apply_sparse and Keras's sparse Adam: every row of m and v decays and
    every row of var moves; only the looked-up rows receive the gradient (not 'lazy' Adam)."""
    var, m, v = values
    lr_t, beta1, beta2, epsilon, g_m, g_v = _sparse_adam_terms(scalars, g)
    m, v = intra_op.elementwise_chunks(lambda m, v: [m * beta1, v * beta2], [m, v])
    m[rows] += g_m
    v[rows] += g_v
    var, = intra_op.elementwise_chunks(lambda var, m, v: [var - lr_t * m / (np.sqrt(v) + epsilon)], [var, m, v])
    return [as_array(var, var.dtype), m, v]


def _sparse_adam_in_chunks(var, m, v, rows, g, scalars: list) -> None:
    """_sparse_adam of a large variable (an Embedding's, of intra_op.in_chunks's size) into its
    own arrays, as TF's Assign ops write a variable's buffer, in chunks of rows on the intra-op
    threads: each chunk's m and v decay, take their looked-up rows' terms (`rows` sorted, each
    once) and move var while they are in the cache, one pass over memory where the whole-array
    form makes two, and no new arrays. The same operations on each element, in the same order."""
    lr_t, beta1, beta2, epsilon, g_m, g_v = _sparse_adam_terms(scalars, g)
    bounds = intra_op.row_chunks(var.shape)
    cuts = np.searchsorted(rows, bounds).tolist()

    def chunk(k: int) -> None:
        a, b, first, last = bounds[k], bounds[k + 1], cuts[k], cuts[k + 1]
        m_c = np.multiply(m[a:b], beta1, out=m[a:b])
        v_c = np.multiply(v[a:b], beta2, out=v[a:b])
        if last > first:
            m_c[rows[first:last] - a] += g_m[first:last]
            v_c[rows[first:last] - a] += g_v[first:last]
        step = lr_t * m_c
        denom = np.sqrt(v_c)
        denom += epsilon
        step /= denom
        np.subtract(var[a:b], step, out=var[a:b])
    intra_op.run_calls([lambda k=k: chunk(k) for k in range(len(bounds) - 1)])


def _apply(rule: _Rule, values: list, scalars: list, grad, attrs: dict, fn: Callable = None, out=None) -> list:
    # the rule's compiled pass or its formula (or `fn`), a large variable's in chunks on the
    # intra-op threads (into `out`: values themselves); each is elementwise
    if fn is None and rule.compiled and _compiles(values, grad):
        if not (grad.flags.c_contiguous and grad.flags.aligned):   # (a gradient off the wire may be unaligned)
            grad = np.require(grad, requirements="CA")
        loop, constants = rule.compiled(*scalars, **attrs)
        out = [np.empty_like(v) for v in values] if out is None else out
        intra_op.elementwise_into(lambda *arrays: loop(*arrays, *constants), [*values, grad], out)
        return out
    return intra_op.elementwise_chunks(
        lambda *chunks: _apply_whole(rule, list(chunks[:-1]), scalars, chunks[-1], attrs, fn), [*values, grad], out)


def _compiles(values: list, grad) -> bool:
    """Whether the compiled loops take these operands: built, numpy arrays of one float32 or
    float64 type, the variable's and its slots' C-contiguous and aligned (the kernel has checked
    their shapes)."""
    dtype = grad.dtype
    return (_fused_updates is not None and dtype in _COMPILED_TYPES and type(grad) is np.ndarray
            and all(type(a) is np.ndarray and a.dtype == dtype and a.flags.c_contiguous and a.flags.aligned
                    for a in values))


def _apply_whole(rule: _Rule, values: list, scalars: list, grad, attrs: dict, fn: Callable = None) -> list:
    """rule's update (or `fn`, taking its arguments) of the whole arrays."""
    var, slots, fn = values[0], values[1:], fn or rule.fn
    if rule.grad_first:
        out = fn(var, *slots, grad, *scalars, **attrs)
    else:
        k = _GRAD_AFTER.get(rule.op_type, len(scalars))
        out = fn(var, *slots, *scalars[:k], grad, *scalars[k:], **attrs)
    return [as_array(o, var.dtype) for o in out]


def _var_shape(t):
    """The static shape of a variable input: its handle's variable, or the ref tensor's own."""
    return handle_shape(t) if t.dtype is dtypes.resource else t.shape


def _make_infer(rule: _Rule, sparse: bool) -> Callable:
    """TF's shape function for ResourceApply* (no outputs) and Apply* (the variable's shape):
    scalars are scalars, var and slots agree, grad has var's shape (sparse: indices are a
    vector, grad is [len(indices)] + var.shape[1:])."""
    names = _input_names(rule, sparse)

    def infer(op):
        ins = dict(zip(names, op.inputs))
        out = (lambda shape: []) if ins["var"].dtype is dtypes.resource else (lambda shape: [(ins["var"].dtype, shape)])
        for n in rule.scalars:
            if ins[n].shape.ndims not in (None, 0):
                raise ValueError(f"Shape must be rank 0 but is rank {ins[n].shape.ndims}")
        var = _var_shape(ins["var"])
        for i in range(rule.n_slots):
            var = var.merge_with(_var_shape(ins[f"slot{i}"]))
        grad = ins["grad"].shape
        if not sparse:
            if var.ndims is not None and grad.ndims is not None and var.ndims != grad.ndims:
                raise ValueError(f"Shapes must be equal rank, but are {var.ndims} and {grad.ndims}")
            var = var.merge_with(grad)
            return out(var)
        indices = ins["indices"].shape
        if indices.ndims not in (None, 1):
            raise ValueError(f"Shape must be rank 1 but is rank {indices.ndims}")
        if grad.ndims is not None and var.ndims is not None:
            if grad.ndims != var.ndims:
                raise ValueError(f"Shapes must be equal rank, but are {grad.ndims} and {var.ndims}")
            grad[1:].merge_with(var[1:])
        if grad.ndims is not None and indices.ndims is not None:
            grad[:1].merge_with(indices)
        return out(var)
    return infer


# -- TF's forms of the sparse updates TensorFlow has no op for (Graph.as_graph_def writes them) ----
def _sparse_sgd_tf(op) -> list:
    """TF1's GradientDescentOptimizer._resource_apply_sparse: var[indices] += -grad * lr
    (ResourceScatterAdd adds the rows of repeated indices)."""
    b, dtype = TFNodes(op), op.get_attr("T")
    delta = b.node("delta", "Mul", [b.node("neg_grad", "Neg", [b.input(2)], T=dtype), b.input(1)], T=dtype)
    b.node(None, "ResourceScatterAdd", [b.input(0), b.input(3), delta], dtype=dtype, Tindices=op.get_attr("Tindices"))
    return b.nodes


def _sparse_adam_tf(op) -> list:
    """TF1's AdamOptimizer._resource_apply_sparse after the optimizer sums the rows of repeated
    indices: m and v decay whole, the rows receive the gradient (ResourceScatterAdd), var moves
    by lr_t * m / (sqrt(v) + epsilon)."""
    b, dtype, int32 = TFNodes(op), op.get_attr("T"), dtypes.int32
    var, m, v, beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad, indices = (
        b.input(i) for i in range(11))
    unique = b.node("unique_indices", "Unique", [indices], T=op.get_attr("Tindices"), out_idx=int32)
    count = b.node("num_unique", "Size", [unique], T=op.get_attr("Tindices"), out_type=int32)
    grad = b.node("summed_grad", "UnsortedSegmentSum", [grad, unique + ":1", count], T=dtype, Tindices=int32,
                  Tnumsegments=int32)
    one = b.const("one", 1, dtype)

    def binary(name, op_type, x, y):
        return b.node(name, op_type, [x, y], T=dtype)

    def update(slot, name, beta, rows_value):
        decayed = binary(f"{name}_decayed", "Mul", b.node(f"{name}_read", "ReadVariableOp", [slot], dtype=dtype), beta)
        assign = b.node(f"{name}_assign", "AssignVariableOp", [slot, decayed], dtype=dtype)
        added = binary(f"{name}_scaled_grad", "Mul", rows_value, binary(f"one_minus_{name}_beta", "Sub", one, beta))
        scatter = b.node(f"{name}_scatter", "ResourceScatterAdd", [slot, unique, added, "^" + assign], dtype=dtype,
                         Tindices=op.get_attr("Tindices"))
        return b.node(f"{name}_t", "ReadVariableOp", [slot, "^" + scatter], dtype=dtype)

    m_t = update(m, "m", beta1, grad)
    v_t = update(v, "v", beta2, b.node("grad_squared", "Square", [grad], T=dtype))
    lr_t = binary("lr_t", "RealDiv",
                  binary("lr_scaled", "Mul", lr, b.node("bias_correction", "Sqrt",
                                                        [binary("one_minus_beta2_power", "Sub", one, beta2_power)],
                                                        T=dtype)),
                  binary("one_minus_beta1_power", "Sub", one, beta1_power))
    denominator = binary("denominator", "AddV2", b.node("v_sqrt", "Sqrt", [v_t], T=dtype), epsilon)
    step = binary("step", "RealDiv", binary("lr_m", "Mul", lr_t, m_t), denominator)
    b.node(None, "AssignSubVariableOp", [var, step], dtype=dtype)
    return b.nodes


_SPARSE_TF_LOWERINGS = {"GradientDescent": _sparse_sgd_tf, "Adam": _sparse_adam_tf}
# The updates whose formulas are array-module clean (the others compare hyperparameters in Python)
_ON_GPU = frozenset(("GradientDescent", "Momentum", "Adam", "Adagrad", "RMSProp", "CenteredRMSProp", "Adadelta"))

for _rule in _RULES:
    register(f"ResourceApply{_rule.op_type}", _make_infer(_rule, False), _make_kernel(_rule, False), grad=None,
             stateful=True)
    register(f"ResourceSparseApply{_rule.op_type}", _make_infer(_rule, True), _make_kernel(_rule, True),
             grad=None, stateful=True, tf_lowering=_SPARSE_TF_LOWERINGS.get(_rule.op_type))
    _handles = tuple(range(1 + _rule.n_slots))
    if _rule.op_type in _ON_GPU:
        register_gpu(f"ResourceApply{_rule.op_type}", host_inputs=_handles)
        register_gpu(f"ResourceSparseApply{_rule.op_type}",
                     host_inputs=_handles + (_input_names(_rule, True).index("indices"),))

    refs = tuple(range(1 + _rule.n_slots))
    register(f"Apply{_rule.op_type}", _make_infer(_rule, False), returning_variable(_make_kernel(_rule, False)),
             grad=None, stateful=True, ref_inputs=refs, ref_outputs=(0,))
    if _rule.op_type in _ON_GPU:
        register_gpu(f"Apply{_rule.op_type}")
    if _rule.op_type not in ("GradientDescent", "Adam"):   # (TF has no SparseApply of these two)
        register(f"SparseApply{_rule.op_type}", _make_infer(_rule, True), returning_variable(_make_kernel(_rule, True)),
                 grad=None, stateful=True, ref_inputs=refs, ref_outputs=(0,))
        if _rule.op_type in _ON_GPU:
            register_gpu(f"SparseApply{_rule.op_type}", host_inputs=(_input_names(_rule, True).index("indices"),))

_BY_NAME = {r.op_type: r for r in _RULES}


# -- Python wrappers ---------------------------------------------------------------------------
def _apply_op(kind: str, sparse: bool, inputs: dict, attrs: dict, name=None):
    """Creates ResourceApply<kind> (or its sparse form) from named inputs."""
    rule = _BY_NAME[kind]
    order = _input_names(rule, sparse)
    tensors = []
    for n in order:
        v = inputs[n]
        tensors.append(v if hasattr(v, "op") else convert_to_tensor(v))
    op_type = f"ResourceSparseApply{kind}" if sparse else f"ResourceApply{kind}"
    all_attrs = {"T": inputs["grad"].dtype}
    all_attrs.update(attrs)
    if sparse:
        all_attrs["Tindices"] = inputs["indices"].dtype
    return make_op(op_type, tensors, all_attrs, name=name or op_type)


def resource_apply(kind: str, var, slots: list, scalars: list, grad, use_locking: bool = False,
                   name=None, **attrs):
    """ResourceApply<kind>(var, *slots, *scalars, grad) with the scalars in the rule's order."""
    rule = _BY_NAME[kind]
    inputs = {"var": var, "grad": grad}
    inputs.update({f"slot{i}": s for i, s in enumerate(slots)})
    inputs.update(dict(zip(rule.scalars, scalars)))
    return _apply_op(kind, False, inputs, dict(use_locking=use_locking, **attrs), name)


def resource_sparse_apply(kind: str, var, slots: list, scalars: list, grad, indices,
                          use_locking: bool = False, name=None, **attrs):
    """ResourceSparseApply<kind>: the update of `kind` on the rows `indices` only."""
    rule = _BY_NAME[kind]
    inputs = {"var": var, "grad": grad, "indices": indices}
    inputs.update({f"slot{i}": s for i, s in enumerate(slots)})
    inputs.update(dict(zip(rule.scalars, scalars)))
    return _apply_op(kind, True, inputs, dict(use_locking=use_locking, **attrs), name)
