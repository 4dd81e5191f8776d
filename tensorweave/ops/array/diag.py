"""Array ops on diagonals and bands of (batches of) matrices: tf.linalg.diag / diag_part /
set_diag (MatrixDiagV2, MatrixDiagPartV2, MatrixSetDiagV2: one diagonal, or a band k = (lo, hi)
of them, laid out as TF 1.15 does, each diagonal starting at its first element), band_part
(MatrixBandPart), tf.diag / tf.diag_part (Diag, DiagPart: rank k <-> rank 2k) and tf.eye."""
from __future__ import annotations

import numpy as np

from tensorweave.framework import dtypes
from tensorweave.framework.api import name_scope
from tensorweave.framework.graph import Tensor
from tensorweave.framework.shapes import unknown_shape
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.dispatch import add_dispatch_support
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.core import index_tensor
from tensorweave.ops.array.fill import zeros_like
from tensorweave.ops.helpers import check_output_size, dense, invalid, make_op, static_ints
from tensorweave.ops.registry import register



def _k_pair(k) -> tuple:
    ks = [int(v) for v in np.reshape(k, -1)]
    if len(ks) not in (1, 2):
        raise ValueError(f"k must be a scalar or a pair of integers, got {ks}")
    lo, hi = (ks[0], ks[0]) if len(ks) == 1 else ks
    if lo > hi:
        raise ValueError(f"k[0] must not be larger than k[1], got k = ({lo}, {hi})")
    return lo, hi


def _k_tensor(k) -> Tensor:
    return index_tensor(k, name="k", dtype=dtypes.int32)


def _max_diag_len(rows: int, cols: int, lo: int, hi: int) -> int:
    return min(rows + min(hi, 0), cols + min(-lo, 0))


def _positions(rows: int, cols: int, lo: int, hi: int) -> tuple:
    """For each diagonal d = hi..lo (row m = hi - d of a band) and each n < max_diag_len: the
    matrix row and column of element n, and whether it lies inside the matrix."""
    length = max(_max_diag_len(rows, cols, lo, hi), 0)
    ds = np.arange(hi, lo - 1, -1)[:, None]
    n = np.arange(length)[None, :]
    r, c = n + np.maximum(-ds, 0), n + np.maximum(ds, 0)
    return r, c, (r < rows) & (c < cols)


def _check_k(node, rows: int, cols: int, lo: int, hi: int) -> None:
    if not (-rows < lo <= hi < cols) and not (rows == 0 or cols == 0):
        raise invalid(node, f"Diagonal index k = ({lo}, {hi}) is out of bounds for a {rows}x{cols} matrix: "
                            f"it must lie in ({-rows}, {cols})")


# -- MatrixDiagPartV2 ------------------------------------------------------------------------------
@tf_export("linalg.diag_part", "matrix_diag_part")
@add_dispatch_support
def matrix_diag_part(input, name: str = "diag_part", k=0, padding_value=0) -> Tensor:
    """tf.linalg.diag_part(input, name='diag_part', k=0, padding_value=0): the k-th diagonal of
    each innermost matrix ([..., max_diag_len]), or the band of diagonals k = (lo, hi)
    ([..., hi - lo + 1, max_diag_len], from diagonal hi down to lo, short ones padded at the end)."""
    with name_scope(name, "diag_part", [input]) as scope:
        x = convert_to_tensor(input, name="input")
        pad = convert_to_tensor(padding_value, dtype=x.dtype, name="padding_value")
        return make_op("MatrixDiagPartV2", [x, _k_tensor(k), pad], {"T": x.dtype}, name=scope).outputs[0]


def _diag_part_infer(op):
    x, k_t = op.inputs[0], op.inputs[1]
    nd = x.shape.ndims
    if nd is not None and nd < 2:
        raise ValueError(f"Shape must be at least rank 2 but is rank {nd}")
    k = static_ints(k_t)
    if nd is None or k is None:
        return [(x.dtype, unknown_shape())]
    lo, hi = _k_pair(k)
    rows, cols = x.shape[-2].value, x.shape[-1].value
    length = None if rows is None or cols is None else _max_diag_len(rows, cols, lo, hi)
    band = [] if lo == hi else [hi - lo + 1]
    return [(x.dtype, x.shape[:-2].concatenate(band + [length]))]


def _diag_part_kernel(node, ctx):
    def run(x, k, pad):
        x = np.asarray(x)
        if x.ndim < 2:
            raise invalid(node, f"input must be at least 2-dim, received shape: {list(x.shape)}")
        lo, hi = _k_pair(k)
        rows, cols = x.shape[-2:]
        _check_k(node, rows, cols, lo, hi)
        r, c, valid = _positions(rows, cols, lo, hi)
        out = x[..., np.minimum(r, max(rows - 1, 0)), np.minimum(c, max(cols - 1, 0))] if x.size else \
            np.zeros(x.shape[:-2] + r.shape, x.dtype)
        out = np.where(valid, out, np.asarray(pad, x.dtype))
        return out[..., 0, :] if lo == hi else out
    return run


register("MatrixDiagPartV2", _diag_part_infer, _diag_part_kernel,
         grad=lambda op, g: [matrix_set_diag(zeros_like(op.inputs[0]), dense(g), k=op.inputs[1]), None, None])


# -- MatrixDiagV2 ----------------------------------------------------------------------------------
@tf_export("linalg.diag", "matrix_diag")
def matrix_diag(diagonal, name: str = "diag", k=0, num_rows=-1, num_cols=-1, padding_value=0) -> Tensor:
    """tf.linalg.diag(diagonal, name='diag', k=0, num_rows=-1, num_cols=-1, padding_value=0):
    batches of matrices with `diagonal` on their k-th diagonal (or a band k = (lo, hi) of
    diagonals) and padding_value elsewhere; -1 sizes make the smallest matrix that fits."""
    with name_scope(name, "diag", [diagonal]) as scope:
        d = convert_to_tensor(diagonal, name="diagonal")
        pad = convert_to_tensor(padding_value, dtype=d.dtype, name="padding_value")
        rows = index_tensor(num_rows, name="num_rows", dtype=dtypes.int32)
        cols = index_tensor(num_cols, name="num_cols", dtype=dtypes.int32)
        return make_op("MatrixDiagV2", [d, _k_tensor(k), rows, cols, pad], {"T": d.dtype}, name=scope).outputs[0]


def _out_size(length: int, lo: int, hi: int, rows: int, cols: int) -> tuple:
    min_rows, min_cols = length - min(hi, 0), length + max(lo, 0)
    if rows < 0 and cols < 0:
        rows = cols = max(min_rows, min_cols)
    elif rows < 0:
        rows = min_rows
    elif cols < 0:
        cols = min_cols
    return rows, cols


def _matrix_diag_infer(op):
    d, k_t, rows_t, cols_t = op.inputs[:4]
    k, rows, cols = static_ints(k_t), static_ints(rows_t), static_ints(cols_t)
    if d.shape.ndims is None or k is None:
        return [(d.dtype, unknown_shape())]
    lo, hi = _k_pair(k)
    batch_rank = d.shape.ndims - (1 if lo == hi else 2)
    if batch_rank < 0:
        raise ValueError(f"diagonal must be at least rank {d.shape.ndims - batch_rank}, got shape {d.shape}")
    length = d.shape[-1].value
    if length is None or rows is None or cols is None:
        size = [None, None]
    else:
        size = list(_out_size(length, lo, hi, rows[0], cols[0]))
    out = d.shape[:batch_rank].concatenate(size)
    check_output_size(op, out)
    return [(d.dtype, out)]


def _matrix_diag_kernel(node, ctx):
    def run(d, k, rows, cols, pad):
        d = np.asarray(d)
        lo, hi = _k_pair(k)
        if lo != hi:
            if d.ndim < 2 or d.shape[-2] != hi - lo + 1:
                raise invalid(node, f"The number of diagonals provided in the input does not match the lower "
                                    f"and upper diagonal indices specified: shape {list(d.shape)}, k = ({lo}, {hi})")
        else:
            d = d[..., None, :]
        length = d.shape[-1]
        rows, cols = _out_size(length, lo, hi, int(rows), int(cols))
        if _max_diag_len(rows, cols, lo, hi) != length:
            raise invalid(node, f"The number of rows or columns is not consistent with the specified d_lower, "
                                f"d_upper, and diagonal: {rows}x{cols} for diagonals of length {length}")
        check_output_size(node, d.shape[:-2] + (rows, cols))
        out = np.full(d.shape[:-2] + (rows, cols), np.asarray(pad, d.dtype), dtype=d.dtype)
        r, c, valid = _positions(rows, cols, lo, hi)
        m, n = np.nonzero(valid)
        out[..., r[m, n], c[m, n]] = d[..., m, n]
        return out
    return run


register("MatrixDiagV2", _matrix_diag_infer, _matrix_diag_kernel,
         grad=lambda op, g: [matrix_diag_part(dense(g), k=op.inputs[1]), None, None, None, None])


# -- MatrixSetDiagV2 -------------------------------------------------------------------------------
@tf_export("linalg.set_diag", "matrix_set_diag")
def matrix_set_diag(input, diagonal, name: str = "set_diag", k=0) -> Tensor:
    """tf.linalg.set_diag(input, diagonal, name='set_diag', k=0): `input` with its k-th diagonal
    (or band k = (lo, hi)) replaced by `diagonal`."""
    with name_scope(name, "set_diag", [input, diagonal]) as scope:
        x = convert_to_tensor(input, name="input")
        d = convert_to_tensor(diagonal, dtype=x.dtype, name="diagonal")
        return make_op("MatrixSetDiagV2", [x, d, _k_tensor(k)], {"T": x.dtype}, name=scope).outputs[0]


def _set_diag_kernel(node, ctx):
    def run(x, d, k):
        x, d = np.asarray(x), np.asarray(d)
        if x.ndim < 2:
            raise invalid(node, f"input must be at least a matrix, received shape: {list(x.shape)}")
        lo, hi = _k_pair(k)
        rows, cols = x.shape[-2:]
        _check_k(node, rows, cols, lo, hi)
        r, c, valid = _positions(rows, cols, lo, hi)
        want = x.shape[:-2] + r.shape[1:] if lo == hi else x.shape[:-2] + r.shape
        if d.shape != want:
            raise invalid(node, f"diagonal must have shape {list(want)}, got {list(d.shape)}")
        if lo == hi:
            d = d[..., None, :]
        out = np.array(x, copy=True)
        m, n = np.nonzero(valid)
        out[..., r[m, n], c[m, n]] = d[..., m, n]
        return out
    return run


def _set_diag_grad(op, g):
    g = dense(g)
    k = op.inputs[2]
    return [matrix_set_diag(g, zeros_like(op.inputs[1]), k=k), matrix_diag_part(g, k=k), None]


register("MatrixSetDiagV2", lambda op: [(op.inputs[0].dtype, op.inputs[0].shape)], _set_diag_kernel,
         grad=_set_diag_grad)


# -- MatrixBandPart --------------------------------------------------------------------------------
@tf_export("linalg.band_part", "matrix_band_part")
def matrix_band_part(input, num_lower, num_upper, name=None) -> Tensor:
    """tf.linalg.band_part(input, num_lower, num_upper, name=None): each innermost matrix with
    everything outside the band zeroed (num_lower subdiagonals and num_upper superdiagonals kept;
    a negative count keeps that whole triangle)."""
    with name_scope(name, "MatrixBandPart", [input]) as scope:
        x = convert_to_tensor(input, name="input")
        lower = num_lower if isinstance(num_lower, Tensor) else convert_to_tensor(num_lower, dtypes.int64)
        upper = num_upper if isinstance(num_upper, Tensor) else convert_to_tensor(num_upper, lower.dtype)
        return make_op("MatrixBandPart", [x, lower, upper], {"T": x.dtype, "Tindex": lower.dtype},
                       name=scope).outputs[0]


def _band_infer(op):
    x = op.inputs[0]
    if x.shape.ndims is not None and x.shape.ndims < 2:
        raise ValueError(f"Shape must be at least rank 2 but is rank {x.shape.ndims}")
    return [(x.dtype, x.shape)]


def band_mask(rows: int, cols: int, lower: int, upper: int) -> np.ndarray:
    """The [rows, cols] boolean mask of a band (negative counts keep the whole triangle)."""
    i, j = np.arange(rows)[:, None], np.arange(cols)[None, :]
    return ((lower < 0) | (i - j <= lower)) & ((upper < 0) | (j - i <= upper))


def _band_kernel(node, ctx):
    def run(x, lower, upper):
        x = np.asarray(x)
        if x.ndim < 2:
            raise invalid(node, f"input must be at least 2-dim, received shape: {list(x.shape)}")
        rows, cols = x.shape[-2:]
        lower, upper = int(lower), int(upper)
        if lower > rows or upper > cols:
            raise invalid(node, f"num_lower ({lower}) must not be greater than the number of rows ({rows}) and "
                                f"num_upper ({upper}) not greater than the number of columns ({cols})")
        return np.where(band_mask(rows, cols, lower, upper), x, np.zeros((), x.dtype))
    return run


register("MatrixBandPart", _band_infer, _band_kernel,
         grad=lambda op, g: [matrix_band_part(dense(g), op.inputs[1], op.inputs[2]), None, None])


# -- Diag, DiagPart --------------------------------------------------------------------------------
@tf_export("linalg.tensor_diag", "diag")
def diag(diagonal, name=None) -> Tensor:
    """tf.diag(diagonal, name=None): the rank-2k tensor with `diagonal` (rank k) on its diagonal:
    out[i1..ik, i1..ik] = diagonal[i1..ik], zero elsewhere."""
    d = convert_to_tensor(diagonal, name="diagonal")
    return make_op("Diag", [d], {"T": d.dtype}, name=name or "Diag").outputs[0]


def _diag_infer(op):
    s = op.inputs[0].shape
    out = unknown_shape() if s.ndims is None else s.concatenate(s)
    check_output_size(op, out)   # the square of the input's size
    return [(op.inputs[0].dtype, out)]


def _diag_kernel(node, ctx):
    def run(d):
        d = np.asarray(d)
        check_output_size(node, d.shape + d.shape)
        return np.diag(d.reshape(-1)).reshape(d.shape + d.shape)
    return run


@tf_export("linalg.tensor_diag_part", "diag_part")
def diag_part(input, name=None) -> Tensor:
    """tf.diag_part(input, name=None): the inverse of tf.diag; `input` has rank 2k with matching
    halves."""
    x = convert_to_tensor(input, name="input")
    return make_op("DiagPart", [x], {"T": x.dtype}, name=name or "DiagPart").outputs[0]


def _diag_part_v1_infer(op):
    s = op.inputs[0].shape
    if s.ndims is None:
        return [(op.inputs[0].dtype, unknown_shape())]
    if s.ndims % 2:
        raise ValueError(f"Input must have even rank <= 6, got rank {s.ndims}")
    half = s.ndims // 2
    return [(op.inputs[0].dtype, s[:half].merge_with(s[half:]))]


def _diag_part_v1_kernel(node, ctx):
    def run(x):
        x = np.asarray(x)
        half = x.ndim // 2
        if x.ndim % 2 or x.shape[:half] != x.shape[half:]:
            raise invalid(node, f"Invalid shape {list(x.shape)}: the first half of the dimensions must match the "
                                "second half")
        n = int(np.prod(x.shape[:half], dtype=np.int64))
        return np.diagonal(x.reshape(n, n)).reshape(x.shape[:half])
    return run


register("Diag", _diag_infer, _diag_kernel, grad=lambda op, g: [diag_part(dense(g))])
register("DiagPart", _diag_part_v1_infer, _diag_part_v1_kernel, grad=lambda op, g: [diag(dense(g))])
