"""Math ops, linear-algebra family: matmul (MatMul, BatchMatMulV2), tensordot, einsum, norm,
conj, trace, eye (built from MatrixDiagV2 and minimum, as TF's linalg_ops.eye); gathered for
tf.linalg by tensorweave/linalg.py."""
from __future__ import annotations

import re
import string

import numpy as np

import tensorweave.ops.onednn as onednn
from tensorweave.framework import dtypes, errors, limits
from tensorweave.framework.api import name_scope
from tensorweave.framework.graph import Tensor
from tensorweave.framework.shapes import Dimension, TensorShape, broadcast_shapes, unknown_shape
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.dispatch import add_dispatch_support
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.concat import concat, stack
from tensorweave.ops.array.core import expand_dims, identity, index_tensor, rank, reshape, shape, squeeze, transpose
from tensorweave.ops.array.diag import matrix_diag, matrix_diag_part
from tensorweave.ops.array.fill import ones
from tensorweave.ops.array.gather import gather
from tensorweave.ops.array.sort import setdiff1d
from tensorweave.ops.helpers import COMPLEX, FLOATS, REAL, adjoint, array_module, invalid, make_op, same_as_input
from tensorweave.ops.math.binary import binary_inputs, minimum, multiply, pow, realdiv
from tensorweave.ops.math.cast import cast
from tensorweave.ops.math.reduction import reduce_max, reduce_prod, reduce_sum, resolve_keepdims
from tensorweave.ops.math.sequences import range as range_
from tensorweave.ops.math.unary import abs, sqrt, unary
from tensorweave.ops.registry import register, register_gpu


_MATMUL_TYPES = FLOATS + (dtypes.int32, dtypes.int64) + COMPLEX


@tf_export("math.conj", "conj")
def conj(x, name=None):
    """tf.conj(x, name=None): complex conjugate; real tensors are returned unchanged."""
    x = convert_to_tensor(x)
    if x.dtype not in COMPLEX:
        return x
    return unary("Conj", x, name, "Conj")


register("Conj", same_as_input(), lambda node, ctx: np.conj,
         grad=lambda op, g: [conj(g)], dtypes=COMPLEX)


# -- matmul ------------------------------------------------------------------------------------
@tf_export("linalg.matmul", "matmul")
@add_dispatch_support
def matmul(a, b, transpose_a=False, transpose_b=False, adjoint_a=False, adjoint_b=False,
           a_is_sparse=False, b_is_sparse=False, name=None) -> Tensor:
    """tf.matmul(a, b, transpose_a=False, transpose_b=False, adjoint_a=False, adjoint_b=False,
    a_is_sparse=False, b_is_sparse=False, name=None): a @ b over the last two dims; inputs of
    rank > 2 are batches whose leading dims broadcast."""
    with name_scope(name, "MatMul", [a, b]) as scope:
        if transpose_a and adjoint_a:
            raise ValueError("Only one of transpose_a and adjoint_a can be True.")
        if transpose_b and adjoint_b:
            raise ValueError("Only one of transpose_b and adjoint_b can be True.")
        a, b = binary_inputs(a, b, "MatMul")
        ra, rb = a.shape.ndims, b.shape.ndims
        if ra is None or rb is None or ra > 2 or rb > 2:
            # BatchMatMulV2 has only adjoint flags: transpose(x) == adjoint(conj(x)).
            if transpose_a:
                a, adjoint_a = conj(a), True
            if transpose_b:
                b, adjoint_b = conj(b), True
            return make_op("BatchMatMulV2", [a, b], {"adj_x": bool(adjoint_a), "adj_y": bool(adjoint_b), "T": a.dtype},
                           name=scope).outputs[0]
        if adjoint_a:
            a, transpose_a = conj(a), True
        if adjoint_b:
            b, transpose_b = conj(b), True
        attrs = {"transpose_a": bool(transpose_a), "transpose_b": bool(transpose_b), "T": a.dtype}
        return make_op("MatMul", [a, b], attrs, name=scope).outputs[0]


def _matmul_infer(op):
    a, b = op.inputs
    ta, tb = op.get_attr("transpose_a"), op.get_attr("transpose_b")
    for s in (a.shape, b.shape):
        if s.ndims is not None and s.ndims != 2:
            raise ValueError(f"Shape must be rank 2 but is rank {s.ndims}")
    sa = a.shape if a.shape.ndims is not None else unknown_shape(2)
    sb = b.shape if b.shape.ndims is not None else unknown_shape(2)
    m_, ka = (sa[1], sa[0]) if ta else (sa[0], sa[1])
    kb, n_ = (sb[1], sb[0]) if tb else (sb[0], sb[1])
    if not ka.is_compatible_with(kb):
        raise ValueError(f"Dimensions must be equal, but are {ka} and {kb}")
    return [(a.dtype, TensorShape([m_, n_]))]


def _matmul_kernel(node, ctx):
    ta, tb = bool(node.attr.get("transpose_a")), bool(node.attr.get("transpose_b"))

    def run(a, b):
        if array_module(a, b) is np:   # oneDNN's GEMM on the CPU; a GPU's arrays go to np.matmul (CuPy's cuBLAS)
            a, b = np.asarray(a), np.asarray(b)
            if (c := onednn.matmul(a, b, ta, tb)) is not None:
                return c
        try:
            return np.matmul(a.T if ta else a, b.T if tb else b)
        except ValueError:
            raise _matmul_error(node, a, b, ta, tb) from None
    return run


def _matmul_error(node, a: np.ndarray, b: np.ndarray, ta: bool, tb: bool) -> errors.InvalidArgumentError:
    """TF's run-time messages for MatMul inputs that are not matrices or do not line up."""
    for i, x in enumerate((a, b)):
        if x.ndim != 2:
            return errors.InvalidArgumentError(node, node.name, f"In[{i}] is not a matrix. Instead it has shape "
                                                                f"[{','.join(map(str, x.shape))}]")
    return errors.InvalidArgumentError(
        node, node.name, f"Matrix size-incompatible: In[0]: [{','.join(map(str, a.shape))}], "
                         f"In[1]: [{','.join(map(str, b.shape))}]")


def _matmul_grad(op, grad):
    a, b = op.inputs
    ta, tb = op.get_attr("transpose_a"), op.get_attr("transpose_b")
    if not ta and not tb:
        return [matmul(grad, b, transpose_b=True), matmul(a, grad, transpose_a=True)]
    if not ta and tb:
        return [matmul(grad, b), matmul(grad, a, transpose_a=True)]
    if ta and not tb:
        return [matmul(b, grad, transpose_b=True), matmul(a, grad)]
    return [matmul(b, grad, transpose_a=True, transpose_b=True),
            matmul(grad, a, transpose_a=True, transpose_b=True)]


register("MatMul", _matmul_infer, _matmul_kernel, grad=_matmul_grad, dtypes=_MATMUL_TYPES, dtype_param="a")
register_gpu("MatMul")


def _batch_matmul_infer(op):
    a, b = op.inputs
    ax, ay = op.get_attr("adj_x"), op.get_attr("adj_y")
    sa, sb = a.shape, b.shape
    for s in (sa, sb):
        if s.ndims is not None and s.ndims < 2:
            raise ValueError(f"Shape must be at least rank 2 but is rank {s.ndims}")
    if sa.ndims is None or sb.ndims is None:
        return [(a.dtype, unknown_shape())]
    m_, ka = (sa[-1], sa[-2]) if ax else (sa[-2], sa[-1])
    kb, n_ = (sb[-1], sb[-2]) if ay else (sb[-2], sb[-1])
    if not ka.is_compatible_with(kb):
        raise ValueError(f"Dimensions must be equal, but are {ka} and {kb}")
    batch = broadcast_shapes(sa[:-2], sb[:-2])
    return [(a.dtype, batch.concatenate([m_, n_]))]


def _batch_matmul_kernel(node, ctx):
    ax, ay = bool(node.attr.get("adj_x")), bool(node.attr.get("adj_y"))

    def run(a, b):
        if array_module(a, b) is np:   # as MatMul's kernel
            a, b = np.asarray(a), np.asarray(b)
            if (c := onednn.matmul(a, b, ax, ay)) is not None:
                return c
        try:
            return np.matmul(adjoint(a) if ax else a, adjoint(b) if ay else b)
        except ValueError:
            if a.ndim < 2 or b.ndim < 2:
                raise _matmul_error(node, a, b, ax, ay) from None
            raise errors.InvalidArgumentError(
                node, node.name, f"In[0] and In[1] must have compatible batch dimensions and matching inner "
                                 f"dimensions: [{','.join(map(str, a.shape))}] vs. "
                                 f"[{','.join(map(str, b.shape))}]") from None
    return run


def _batch_matmul_grad(op, grad):
    # Gradients keep the broadcast batch shape; tf.gradients sums them down to each input's shape.
    x, y = op.inputs
    ax, ay = op.get_attr("adj_x"), op.get_attr("adj_y")
    if not ax:
        if not ay:
            return [matmul(grad, y, adjoint_b=True), matmul(x, grad, adjoint_a=True)]
        return [matmul(grad, y), matmul(grad, x, adjoint_a=True)]
    if not ay:
        return [matmul(y, grad, adjoint_b=True), matmul(x, grad)]
    return [matmul(y, grad, adjoint_a=True, adjoint_b=True), matmul(grad, x, adjoint_a=True, adjoint_b=True)]


register("BatchMatMulV2", _batch_matmul_infer, _batch_matmul_kernel, grad=_batch_matmul_grad,
         dtypes=_MATMUL_TYPES)
register_gpu("BatchMatMulV2")


# -- tensordot ---------------------------------------------------------------------------------
def _tensordot_axes(a: Tensor, axes) -> tuple:
    """(a's axes, b's axes): Python int lists where they are known at build time, else int32
    tensors (an int `axes` on an `a` of unknown rank, or a tensor `axes`)."""
    ra = a.shape.ndims
    if isinstance(axes, (int, np.integer)):
        if axes < 0:
            raise ValueError(f"'axes' must be at least 0, got {axes}.")
        if ra is not None:
            if axes > ra:
                raise ValueError(f"'axes' must not be larger than the number of dimensions of tensor {a}.")
            return list(range(ra - axes, ra)), list(range(axes))
        r = rank(a)
        return range_(r - int(axes), r), list(range(axes))
    if isinstance(axes, Tensor):
        if axes.shape.ndims == 0:
            r = rank(a)
            return range_(r - axes, r), range_(axes)
        return axes[0], axes[1]
    axes = list(axes)
    if len(axes) != 2:
        raise ValueError(f"'axes' must be an integer or have length 2, got {axes}.")
    a_axes, b_axes = axes
    a_axes = [a_axes] if isinstance(a_axes, (int, np.integer)) else list(a_axes)
    b_axes = [b_axes] if isinstance(b_axes, (int, np.integer)) else list(b_axes)
    if len(a_axes) != len(b_axes):
        raise ValueError(f"Different number of contraction axes 'a' and 'b', {len(a_axes)} != {len(b_axes)}.")
    return [int(x) for x in a_axes], [int(x) for x in b_axes]


def _tensordot_reshape(t: Tensor, axes, flipped: bool) -> tuple:
    """t transposed and reshaped to a matrix [prod(free), prod(axes)] ([prod(axes), prod(free)]
    when flipped); also the free dims (a tensor) and their static sizes (None when unknown)."""
    nd = t.shape.ndims
    if nd is not None and isinstance(axes, list):
        axes = [x % nd for x in axes]
        free = [i for i in range(nd) if i not in axes]
        free_static = [t.shape[i].value for i in free]
        dims = t.shape.as_tuple_or_none()
        if all(d is not None for d in dims):
            first, second = (axes, free) if flipped else (free, axes)
            perm = first + second
            t = transpose(t, perm) if perm != list(range(nd)) else t
            new_shape = [int(np.prod([dims[i] for i in first], dtype=np.int64)),
                         int(np.prod([dims[i] for i in second], dtype=np.int64))]
            return reshape(t, new_shape), convert_to_tensor(np.asarray(free_static, np.int32)), free_static
        axes_t = convert_to_tensor(np.asarray(axes, np.int32), name="axes")
        free_t = convert_to_tensor(np.asarray(free, np.int32), name="free")
    else:
        free_static = None
        r = rank(t)
        axes_t = convert_to_tensor(axes, dtype=dtypes.int32, name="axes")
        axes_t = make_op("SelectV2", [make_op("GreaterEqual", [axes_t, convert_to_tensor(0)], {"T": dtypes.int32})
                                      .outputs[0], axes_t, axes_t + r]).outputs[0]
        free_t = setdiff1d(range_(r), axes_t)[0]
    shape_t = shape(t)
    free_dims, axes_dims = gather(shape_t, free_t), gather(shape_t, axes_t)
    prod_free, prod_axes = reduce_prod(free_dims), reduce_prod(axes_dims)
    if flipped:
        perm, new_shape = concat([axes_t, free_t], 0), stack([prod_axes, prod_free])
    else:
        perm, new_shape = concat([free_t, axes_t], 0), stack([prod_free, prod_axes])
    return reshape(transpose(t, perm), new_shape), free_dims, free_static


@tf_export("linalg.tensordot", "tensordot")
def tensordot(a, b, axes, name=None) -> Tensor:
    """tf.tensordot(a, b, axes, name=None): sums the products of a's and b's elements over the
    given axes (an int n: last n of a with first n of b; a pair of axis lists; or a tensor)."""
    with name_scope(name, "Tensordot", [a, b, axes]) as scope:
        a, b = binary_inputs(a, b, "Tensordot")
        a_axes, b_axes = _tensordot_axes(a, axes)
        if isinstance(a_axes, list) and isinstance(b_axes, list) and a.shape.ndims is not None \
                and b.shape.ndims is not None:
            for da, db in zip(a_axes, b_axes):
                if not a.shape[da].is_compatible_with(b.shape[db]):
                    raise ValueError(f"Dimensions must be equal, but are {a.shape[da]} and {b.shape[db]} "
                                     f"for 'Tensordot' with input shapes: {a.shape}, {b.shape}.")
        a_mat, a_free, a_static = _tensordot_reshape(a, a_axes, flipped=False)
        b_mat, b_free, b_static = _tensordot_reshape(b, b_axes, flipped=True)
        ab = matmul(a_mat, b_mat)
        if a_static is not None and b_static is not None and None not in a_static + b_static:
            return reshape(ab, a_static + b_static, name=scope)
        out = reshape(ab, concat([cast(a_free, dtypes.int32), cast(b_free, dtypes.int32)], 0), name=scope)
        if a_static is not None and b_static is not None:
            out.set_shape(a_static + b_static)
        return out


# -- einsum ------------------------------------------------------------------------------------
def _parse_einsum(equation: str, n_inputs: int) -> tuple[list, str]:
    eq = equation.replace(" ", "")
    if "->" in eq:
        lhs, out = eq.split("->")
    else:
        lhs = eq
        letters = lhs.replace(",", "").replace(".", "")
        out = ("..." if "..." in lhs else "") + "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    ins = lhs.split(",")
    if len(ins) != n_inputs:
        raise ValueError(f"Expected {len(ins)} input tensors for equation '{equation}', got {n_inputs}")
    for s in ins + [out]:
        if not re.fullmatch(r"[a-zA-Z]*(\.\.\.)?[a-zA-Z]*", s):
            raise ValueError(f"Invalid einsum equation '{equation}'")
    return ins, out


@tf_export("linalg.einsum", "einsum")
def einsum(equation, *inputs, **kwargs) -> Tensor:
    """tf.einsum(equation, *inputs, name=None): Einstein summation (numpy's einsum language,
    with '...' broadcasting)."""
    name = kwargs.pop("name", None)
    if kwargs:
        raise TypeError(f"invalid keyword arguments for this function: {', '.join(sorted(kwargs))}")
    with name_scope(name, "einsum", list(inputs)):
        tensors = [convert_to_tensor(x, name="inputs") for x in inputs]
        if any(t.dtype != tensors[0].dtype for t in tensors):
            raise TypeError(f"einsum inputs must share a dtype, got {[t.dtype.name for t in tensors]}")
        _parse_einsum(equation, len(tensors))
        attrs = {"equation": equation, "N": len(tensors), "T": tensors[0].dtype}
        return make_op("Einsum", tensors, attrs, name="Einsum").outputs[0]


def _einsum_infer(op):
    ins, out = _parse_einsum(op.get_attr("equation"), len(op.inputs))
    sizes: dict = {}
    ell = TensorShape([])
    for subs, t in zip(ins, op.inputs):
        if t.shape.ndims is None:
            return [(t.dtype, unknown_shape())]
        dims = t.shape.dims
        if "..." in subs:
            pre, post = subs.split("...")
            n_ell = len(dims) - len(pre) - len(post)
            if n_ell < 0:
                raise ValueError(f"Einsum operand rank {len(dims)} is too small for subscripts '{subs}'")
            ell = broadcast_shapes(ell, TensorShape(dims[len(pre):len(pre) + n_ell]))
            letters = list(pre) + list(post)
            dims = dims[:len(pre)] + dims[len(pre) + n_ell:]
        else:
            letters = list(subs)
            if len(letters) != len(dims):
                raise ValueError(f"Einsum subscripts '{subs}' do not match an operand of rank {len(dims)}")
        for c, d in zip(letters, dims):
            prev = sizes.get(c, Dimension(None))
            if prev.value is not None and d.value is not None and prev.value != d.value \
                    and 1 not in (prev.value, d.value):
                raise ValueError(f"Dimensions must be equal, but are {prev.value} and {d.value} for "
                                 f"einsum subscript '{c}'")
            sizes[c] = d if prev.value in (None, 1) else prev
    result = []
    for part in re.split(r"(\.\.\.)", out):
        if part == "...":
            if ell.ndims is None:
                return [(op.inputs[0].dtype, unknown_shape())]
            result.extend(ell.dims)
        else:
            for c in part:
                if c not in sizes:
                    raise ValueError(f"Output subscript '{c}' does not appear in the inputs")
                result.append(sizes[c])
    return [(op.inputs[0].dtype, TensorShape(result))]


def _einsum_kernel(node, ctx):
    eq = node.attr["equation"].replace(" ", "")

    def run(*xs):
        out = np.einsum(eq, *xs)
        return np.asarray(out).astype(np.asarray(xs[0]).dtype, copy=False)
    return run


def _explicit_ellipses(ins: list, out: str, inputs: list) -> tuple:
    """The subscripts with each '...' spelled out as letters (aligned from the right, as
    broadcasting aligns), which needs the inputs' ranks."""
    if not any("..." in s for s in ins + [out]):
        return ins, out
    if any(t.shape.ndims is None for t in inputs):
        raise LookupError("the einsum gradient of an equation with '...' needs inputs of known rank")
    used = set("".join(ins) + out)
    pool = [c for c in string.ascii_letters if c not in used]
    lengths = [t.shape.ndims - len(s.replace("...", "")) if "..." in s else 0 for s, t in zip(ins, inputs)]
    letters = "".join(pool[:max(lengths)])
    spelled = [s.replace("...", letters[len(letters) - n:] if n else "") for s, n in zip(ins, lengths)]
    return spelled, out.replace("...", letters)


def _einsum_grad(op, grad):
    """d/dx_i of einsum: one einsum of grad with the other operands back to x_i's subscripts. A
    letter repeated within x_i's subscripts (a diagonal) is renamed and tied to its first
    occurrence by an identity matrix; a letter summed away only inside x_i is restored by a
    vector of ones. Broadcast dims are summed down centrally by tf.gradients."""
    ins, out = _parse_einsum(op.get_attr("equation"), len(op.inputs))
    ins, out = _explicit_ellipses(ins, out, list(op.inputs))
    used = set("".join(ins) + out)
    pool = iter(c for c in string.ascii_letters if c not in used)
    grads = []
    for i, x in enumerate(op.inputs):
        others = [(s, t) for j, (s, t) in enumerate(zip(ins, op.inputs)) if j != i]
        available = set(out) | {c for s, _ in others for c in s}
        subs, tensors, target = [out] + [s for s, _ in others], [grad] + [t for _, t in others], ""
        first: dict = {}
        x_shape = None
        for pos, c in enumerate(ins[i]):
            size = None
            if c in first or c not in available:
                x_shape = shape(x) if x_shape is None else x_shape
                size = x_shape[pos]
            if c in first:                      # a diagonal: tie a new letter to the first one
                new = next(pool)
                subs.append(first[c] + new)
                tensors.append(eye(size, dtype=x.dtype))
                target += new
                continue
            first[c] = c
            if c not in available:              # summed only inside x_i: broadcast back
                subs.append(c)
                tensors.append(ones(reshape(size, [1]), dtype=x.dtype))
            target += c
        grads.append(einsum(",".join(subs) + "->" + target, *tensors))
    return grads


register("Einsum", _einsum_infer, _einsum_kernel, grad=_einsum_grad)


# -- norm, trace -------------------------------------------------------------------------------
@tf_export("linalg.norm", "norm")
def norm(tensor, ord="euclidean", axis=None, keepdims=None, name=None, keep_dims=None) -> Tensor:
    """tf.norm(tensor, ord='euclidean', axis=None, keepdims=None, name=None, keep_dims=None):
    vector norms (ord 'euclidean', 1, 2, inf, any p > 0) over one axis or the whole tensor, and
    matrix norms ('fro', 'euclidean', 1, inf) over an axis pair."""
    keep = resolve_keepdims(keepdims, keep_dims)
    is_matrix = isinstance(axis, (list, tuple)) and len(axis) == 2
    if isinstance(axis, (list, tuple)) and len(axis) not in (1, 2):
        raise ValueError(f"'axis' must be None, an integer, or a tuple of 2 unique integers, got {axis}")
    supported = ["fro", "euclidean", 1, np.inf] if is_matrix else ["euclidean", 1, 2, np.inf]
    if not (ord in supported or (not is_matrix and isinstance(ord, (int, float)) and ord > 0)):
        raise ValueError(f"'ord' must be a supported {'matrix' if is_matrix else 'vector'} norm, got {ord}")
    with name_scope(name, "norm", [tensor]) as scope:
        x = convert_to_tensor(tensor, name="tensor")
        if ord in ("fro", "euclidean", 2):
            return sqrt(reduce_sum(multiply(x, conj(x)), axis, keepdims=keep), name=scope)
        ax = abs(x)
        if is_matrix and ord in (1, np.inf):
            # 1: max column sum (sum over rows, max over columns); inf: the transpose.
            sum_axis, max_axis = (axis[0], axis[1]) if ord == 1 else (axis[1], axis[0])
            summed = reduce_sum(ax, sum_axis, keepdims=True)
            result = reduce_max(summed, max_axis, keepdims=True)
            if not keep:
                result = squeeze(result, [sum_axis, max_axis])
            return identity(result, name=scope)
        if ord == np.inf:
            return reduce_max(ax, axis, keepdims=keep, name=scope)
        if ord == 1:
            return reduce_sum(ax, axis, keepdims=keep, name=scope)
        p = cast(ord, ax.dtype)
        return pow(reduce_sum(pow(ax, p), axis, keepdims=keep), realdiv(1, p), name=scope)


@tf_export("linalg.normalize")
def normalize(tensor, ord="euclidean", axis=None, name=None):
    """tf.linalg.normalize(tensor, ord='euclidean', axis=None, name=None) -> (normalized, norm):
    tensor divided by its norm (kept dims), and that norm."""
    with name_scope(name, "normalize", [tensor]):
        tensor = convert_to_tensor(tensor, name="tensor")
        n = norm(tensor, ord=ord, axis=axis, keepdims=True)
        n = n if n.dtype == tensor.dtype else cast(n, tensor.dtype)
        return realdiv(tensor, n), n


@tf_export("linalg.trace", "trace")
@add_dispatch_support
def trace(x, name=None) -> Tensor:
    """tf.linalg.trace(x, name=None): the sum of the main diagonal of each innermost matrix."""
    with name_scope(name, "Trace", [x]) as scope:
        x = convert_to_tensor(x, name="x")
        return reduce_sum(matrix_diag_part(x), -1, name=scope)


# -- cross -----------------------------------------------------------------------------------------
@tf_export("linalg.cross", "cross")
def cross(a, b, name=None) -> Tensor:
    """tf.linalg.cross(a, b, name=None): the cross product of the 3-vectors along the last
    dimension of a and b (same shape)."""
    with name_scope(name, "Cross", [a, b]) as scope:
        a, b = binary_inputs(a, b, "Cross")
        return make_op("Cross", [a, b], {"T": a.dtype}, name=scope).outputs[0]


def _cross_infer(op):
    a, b = op.inputs
    s = a.shape.merge_with(b.shape)
    if s.ndims is not None:
        if s.ndims < 1:
            raise ValueError("Cross: inputs must be at least rank 1")
        if s[-1].value not in (None, 3):
            raise ValueError(f"Dimension must be 3 but is {s[-1].value}")
    return [(a.dtype, s)]


def _cross_kernel(node, ctx):
    def run(a, b):
        a, b = np.asarray(a), np.asarray(b)
        if a.shape != b.shape or a.ndim < 1 or a.shape[-1] != 3:
            raise invalid(node, f"both inputs must have the same shape with a last dimension of 3, got "
                                f"{list(a.shape)} and {list(b.shape)}")
        return np.cross(a, b).astype(a.dtype, copy=False)
    return run


register("Cross", _cross_infer, _cross_kernel, grad=lambda op, g: [cross(op.inputs[1], g), cross(g, op.inputs[0])],
         dtypes=REAL, dtype_param="a")


@tf_export("linalg.eye", "eye")
def eye(num_rows, num_columns=None, batch_shape=None, dtype=dtypes.float32, name=None) -> Tensor:
    """tf.eye(num_rows, num_columns=None, batch_shape=None, dtype=tf.float32, name=None):
    identity matrices [*batch_shape, num_rows, num_columns] (square when num_columns is None)."""
    with name_scope(name, "eye", [num_rows, num_columns, batch_shape]) as scope:
        dtype = dtypes.as_dtype(dtype)
        static = [num_rows, num_columns if num_columns is not None else num_rows]
        if all(isinstance(v, (int, np.integer)) for v in static) and (
                batch_shape is None or all(isinstance(v, (int, np.integer)) for v in batch_shape)):
            # a constant built here, in the client: refused as MatrixDiagV2 would refuse it on a server
            out = list(batch_shape or ()) + static
            limits.check_elements(out, scope.rstrip("/"), f"eye output of shape {out}")
            value = np.eye(static[0], static[1], dtype=dtype.as_numpy_dtype)
            value = np.broadcast_to(value, tuple(batch_shape or ()) + value.shape)
            return convert_to_tensor(np.ascontiguousarray(value), dtype=dtype, name=scope)
        rows = index_tensor(num_rows, name="num_rows", dtype=dtypes.int32)
        cols = rows if num_columns is None else index_tensor(num_columns, name="num_columns", dtype=dtypes.int32)
        batch = [] if batch_shape is None else [index_tensor(batch_shape, dtype=dtypes.int32)]
        diag_shape = concat(batch + [expand_dims(minimum(rows, cols), 0)], 0)
        return matrix_diag(ones(diag_shape, dtype=dtype), num_rows=rows, num_cols=cols, name=scope)
