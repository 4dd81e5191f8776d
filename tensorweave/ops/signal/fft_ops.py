"""The FFT ops: FFT/IFFT over the innermost 1, 2 or 3 dimensions of a complex tensor, RFFT/IRFFT
between real signals and their non-negative frequency halves (tf.signal.fft ... irfft3d, TF 1's
tf.fft and tf.spectral names), with TF's gradients; and TF 2.16's N-D ones over chosen axes
(FFTND ... IRFFTND: tf.signal.fftnd ... irfftnd with their norm, tf.fftnd ... the bare ops),
whose gradients (TF defines none) follow the same rules."""
from __future__ import annotations

import numpy as np

from tensorweave.framework import dtypes
from tensorweave.framework.api import name_scope
from tensorweave.framework.graph import Tensor
from tensorweave.framework.shapes import TensorShape, unknown_shape
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.concat import concat, stack
from tensorweave.ops.array.core import rank, reshape, shape
from tensorweave.ops.array.fill import ones, zeros
from tensorweave.ops.array.gather import gather, one_hot
from tensorweave.ops.array.pad import pad
from tensorweave.ops.array.slicing import slice as slice_
from tensorweave.ops.helpers import COMPLEX, invalid, make_op, static_ints
from tensorweave.ops.math.binary import floormod, maximum, minimum, multiply, subtract
from tensorweave.ops.math.cast import cast
from tensorweave.ops.math.complex_parts import real
from tensorweave.ops.math.reduction import reduce_prod, reduce_sum
from tensorweave.ops.math.unary import sqrt
from tensorweave.ops.registry import register

_COMPLEX_OF = {dtypes.float32: dtypes.complex64, dtypes.float64: dtypes.complex128}
_FFT_OPS = {("FFT", 1): np.fft.fftn, ("IFFT", 1): np.fft.ifftn, ("FFT", 2): np.fft.fftn,
            ("IFFT", 2): np.fft.ifftn, ("FFT", 3): np.fft.fftn, ("IFFT", 3): np.fft.ifftn}


def _suffix(fft_rank: int) -> str:
    return "" if fft_rank == 1 else f"{fft_rank}D"


def _check_rank(op, fft_rank: int) -> None:
    ndims = op.inputs[0].shape.ndims
    if ndims is not None and ndims < fft_rank:
        raise ValueError(f"Shape must be at least rank {fft_rank} but is rank {ndims}")


def fit_inner_dims(t: Tensor, lengths, k: int) -> Tensor:
    """`t` with its innermost `k` dimensions cut or zero-padded to `lengths` (ints or an int32
    tensor), as the RFFT ops fit their input to fft_length; unchanged where already so."""
    static = t.shape.as_list() if t.shape.ndims is not None else None
    known = static[-k:] if static is not None else None
    wanted = static_ints(lengths) if isinstance(lengths, Tensor) else list(lengths)
    if known is not None and wanted is not None and known == wanted:
        return t
    lengths = convert_to_tensor(lengths, dtype=dtypes.int32)
    dims, r = shape(t), rank(t)
    outer, inner = dims[:-k] if k else dims, dims[-k:]
    t = slice_(t, zeros([r], dtypes.int32), concat([outer, minimum(inner, lengths)], 0))
    extra = concat([zeros([r - k], dtypes.int32), maximum(subtract(lengths, inner), 0)], 0)
    t = pad(t, stack([zeros([r], dtypes.int32), extra], axis=1))
    if static is not None:
        t.set_shape(static[:-k] + (wanted or [None] * k))
    return t


def _fft_size(t: Tensor, k: int) -> Tensor:
    """The number of points of a rank-k transform of t: the product of its innermost k dims."""
    return reduce_prod(shape(t)[-k:])


# -- FFT, IFFT (complex to complex) ---------------------------------------------------------
def _complex_fft(op_type: str, fft_rank: int, doc_name: str):
    def fn(input, name=None):
        with name_scope(name, op_type + _suffix(fft_rank), [input]) as scope:
            x = convert_to_tensor(input, name="input")
            return make_op(op_type + _suffix(fft_rank), [x], {"Tcomplex": x.dtype}, name=scope).outputs[0]
    fn.__name__ = fn.__qualname__ = doc_name
    fn.__doc__ = (f"tf.signal.{doc_name}(input, name=None): the {'inverse ' if op_type == 'IFFT' else ''}"
                  f"discrete Fourier transform over the innermost {fft_rank} dimension(s) of a complex tensor.")
    return fn


def _complex_fft_infer(fft_rank: int):
    def infer(op):
        _check_rank(op, fft_rank)
        return [(op.inputs[0].dtype, op.inputs[0].shape)]
    return infer


def _complex_fft_kernel(op_type: str, fft_rank: int):
    transform = _FFT_OPS[(op_type, fft_rank)]

    def kernel(node, ctx):
        def run(x):
            if x.size == 0:
                return np.zeros(x.shape, x.dtype)
            return transform(x, axes=tuple(range(-fft_rank, 0))).astype(x.dtype, copy=False)
        return run
    return kernel


def _complex_fft_grad(inverse_fn, fft_rank: int, scale_up: bool):
    """FFT's gradient is N * IFFT of it; IFFT's is FFT / N (TF's)."""
    def grad(op, g):
        size = cast(_fft_size(g, fft_rank), g.dtype)
        back = inverse_fn(g)
        return [multiply(back, size) if scale_up else back / size]
    return grad


fft = _complex_fft("FFT", 1, "fft")
tf_export("signal.fft", "spectral.fft", "fft")(fft)
ifft = _complex_fft("IFFT", 1, "ifft")
tf_export("signal.ifft", "spectral.ifft", "ifft")(ifft)
fft2d = _complex_fft("FFT", 2, "fft2d")
tf_export("signal.fft2d", "spectral.fft2d", "fft2d")(fft2d)
ifft2d = _complex_fft("IFFT", 2, "ifft2d")
tf_export("signal.ifft2d", "spectral.ifft2d", "ifft2d")(ifft2d)
fft3d = _complex_fft("FFT", 3, "fft3d")
tf_export("signal.fft3d", "spectral.fft3d", "fft3d")(fft3d)
ifft3d = _complex_fft("IFFT", 3, "ifft3d")
tf_export("signal.ifft3d", "spectral.ifft3d", "ifft3d")(ifft3d)
for _rank, _fft, _ifft in ((1, fft, ifft), (2, fft2d, ifft2d), (3, fft3d, ifft3d)):
    register("FFT" + _suffix(_rank), _complex_fft_infer(_rank), _complex_fft_kernel("FFT", _rank),
             grad=_complex_fft_grad(_ifft, _rank, True), dtypes=COMPLEX, dtype_param="input")
    register("IFFT" + _suffix(_rank), _complex_fft_infer(_rank), _complex_fft_kernel("IFFT", _rank),
             grad=_complex_fft_grad(_fft, _rank, False), dtypes=COMPLEX, dtype_param="input")


# -- RFFT, IRFFT (real to half spectrum and back) -------------------------------------------
def _real_fft(op_type: str, fft_rank: int, doc_name: str):
    def fn(input_tensor, fft_length=None, name=None):
        with name_scope(name, op_type + _suffix(fft_rank), [input_tensor, fft_length]) as scope:
            x = convert_to_tensor(input_tensor, name="input_tensor",
                                  preferred_dtype=dtypes.float32 if op_type == "RFFT" else dtypes.complex64)
            real_dtype = x.dtype if op_type == "RFFT" else x.dtype.real_dtype
            if fft_length is None:
                # TF's default: the input's inner dims (IRFFT: 2 * (last - 1) on the last one)
                static = x.shape.as_list() if x.shape.ndims is not None else [None] * fft_rank
                inner = [static[i] if static[i] is not None else shape(x)[i] for i in range(-fft_rank, 0)]
                if op_type == "IRFFT":
                    inner[-1] = 2 * (inner[-1] - 1)
                fft_length = stack(inner)
            length = convert_to_tensor(fft_length, dtype=dtypes.int32, name="fft_length")
            attrs = {"Treal": real_dtype, "Tcomplex": _COMPLEX_OF.get(real_dtype, dtypes.complex64)}
            return make_op(op_type + _suffix(fft_rank), [x, length], attrs, name=scope).outputs[0]
    fn.__name__ = fn.__qualname__ = doc_name
    what = ("the discrete Fourier transform of a real signal over its innermost {r} dimension(s): the "
            "fft_length[-1] // 2 + 1 non-negative frequencies of the last (the input cut or zero-padded "
            "to fft_length)") if op_type == "RFFT" else (
        "the real signal of length fft_length whose RFFT over the innermost {r} dimension(s) is the input")
    fn.__doc__ = f"tf.signal.{doc_name}(input_tensor, fft_length=None, name=None): " + what.format(r=fft_rank) + "."
    return fn


def _real_fft_infer(op_type: str, fft_rank: int):
    def infer(op):
        _check_rank(op, fft_rank)
        x, length = op.inputs
        if length.shape.ndims is not None and length.shape.as_list() not in ([None], [fft_rank]):
            raise ValueError(f"Shape must be rank 1 with {fft_rank} element(s) but is {length.shape}")
        out_dtype = op.get_attr("Tcomplex") if op_type == "RFFT" else op.get_attr("Treal")
        if x.shape.ndims is None:
            return [(out_dtype, unknown_shape())]
        lengths = static_ints(length)
        inner = [None] * fft_rank if lengths is None else list(lengths)
        if op_type == "RFFT" and lengths is not None:
            inner[-1] = inner[-1] // 2 + 1
        return [(out_dtype, TensorShape(x.shape.as_list()[:-fft_rank] + inner))]
    return infer


def _real_fft_kernel(op_type: str, fft_rank: int):
    def kernel(node, ctx):
        out_dtype = dtypes.as_dtype(node.attr["Tcomplex" if op_type == "RFFT" else "Treal"]).as_numpy_dtype
        axes = tuple(range(-fft_rank, 0))

        def run(x, fft_length):
            lengths = [int(v) for v in np.reshape(fft_length, -1)]
            if any(n < 0 for n in lengths):
                raise ValueError(f"fft_length must be non-negative, got {lengths}")
            out_shape = list(x.shape[:-fft_rank]) + lengths
            if op_type == "RFFT":
                out_shape[-1] = lengths[-1] // 2 + 1
            if 0 in out_shape or 0 in x.shape[-fft_rank:]:
                return np.zeros(out_shape, out_dtype)
            transform = np.fft.rfftn if op_type == "RFFT" else np.fft.irfftn
            return transform(x, s=lengths, axes=axes).astype(out_dtype, copy=False)
        return run
    return kernel


def _rfft_grad(fft_rank: int):
    """The adjoint of 'fit to fft_length, full FFT, keep the non-negative half': the half
    spectrum zero-padded to the full length, N * IFFT of it, its real part, fitted back to the
    input's shape (equal to TF's closed form, defined here for every rank)."""
    inverse = {1: ifft, 2: ifft2d, 3: ifft3d}[fft_rank]

    def grad(op, g):
        x, length = op.inputs
        full = fit_inner_dims(g, length, fft_rank)
        back = real(multiply(inverse(full), cast(reduce_prod(length), g.dtype)))
        return [fit_inner_dims(back, shape(x)[-fft_rank:], fft_rank), None]
    return grad


def _irfft_grad(fft_rank: int):
    """TF's: RFFT of the gradient over N, with the interior frequencies (counted twice by the
    inverse) doubled; fitted back to the input's shape."""
    forward = {1: rfft, 2: rfft2d, 3: rfft3d}[fft_rank]

    def grad(op, g):
        x, length = op.inputs
        half = length[-1] // 2 + 1
        is_odd = length[-1] % 2
        mask = concat([ones([1], g.dtype), 2.0 * ones(reshape(half - 2 + is_odd, [1]), g.dtype),
                       ones(reshape(1 - is_odd, [1]), g.dtype)], 0)
        scale = cast(mask / cast(reduce_prod(length), g.dtype), _COMPLEX_OF[g.dtype])
        back = multiply(forward(g, length), scale)
        return [fit_inner_dims(back, shape(x)[-fft_rank:], fft_rank), None]
    return grad


rfft = _real_fft("RFFT", 1, "rfft")
tf_export("signal.rfft", "spectral.rfft")(rfft)
irfft = _real_fft("IRFFT", 1, "irfft")
tf_export("signal.irfft", "spectral.irfft")(irfft)
rfft2d = _real_fft("RFFT", 2, "rfft2d")
tf_export("signal.rfft2d", "spectral.rfft2d")(rfft2d)
irfft2d = _real_fft("IRFFT", 2, "irfft2d")
tf_export("signal.irfft2d", "spectral.irfft2d")(irfft2d)
rfft3d = _real_fft("RFFT", 3, "rfft3d")
tf_export("signal.rfft3d", "spectral.rfft3d")(rfft3d)
irfft3d = _real_fft("IRFFT", 3, "irfft3d")
tf_export("signal.irfft3d", "spectral.irfft3d")(irfft3d)
_REALS = {0: ("input", (dtypes.float32, dtypes.float64)), 1: ("fft_length", (dtypes.int32,))}
_HALVES = {0: ("input", COMPLEX), 1: ("fft_length", (dtypes.int32,))}
for _rank in (1, 2, 3):
    register("RFFT" + _suffix(_rank), _real_fft_infer("RFFT", _rank), _real_fft_kernel("RFFT", _rank),
             grad=_rfft_grad(_rank), dtypes=_REALS)
    register("IRFFT" + _suffix(_rank), _real_fft_infer("IRFFT", _rank), _real_fft_kernel("IRFFT", _rank),
             grad=_irfft_grad(_rank), dtypes=_HALVES)


# -- N-D FFTs over chosen axes (TF 2.16's FFTND, IFFTND, RFFTND, IRFFTND) ---------------------
_ND_TRANSFORMS = {"FFTND": np.fft.fftn, "IFFTND": np.fft.ifftn, "RFFTND": np.fft.rfftn, "IRFFTND": np.fft.irfftn}
_NORMS = ("backward", "ortho", "forward")


def _nd_op(op_type: str, x: Tensor, fft_length, axes, attrs: dict, name) -> Tensor:
    inputs = [x, convert_to_tensor(fft_length, dtype=dtypes.int32, name="fft_length"),
              convert_to_tensor(axes, dtype=dtypes.int32, name="axes")]
    return make_op(op_type, inputs, attrs, name=name or op_type).outputs[0]


@tf_export("fftnd")
def fftnd_op(input, fft_length, axes, name=None):
    """tf.fftnd(input, fft_length, axes, name=None): the FFTND op, the discrete Fourier transform
    of a complex tensor over `axes`, the input first cut or zero-padded to `fft_length` along them
    (np.fft.fftn(input, fft_length, axes))."""
    x = convert_to_tensor(input, name="input")
    return _nd_op("FFTND", x, fft_length, axes, {"Tcomplex": x.dtype}, name)


@tf_export("ifftnd")
def ifftnd_op(input, fft_length, axes, name=None):
    """tf.ifftnd(input, fft_length, axes, name=None): the IFFTND op, the inverse of fftnd
    (np.fft.ifftn(input, fft_length, axes))."""
    x = convert_to_tensor(input, name="input")
    return _nd_op("IFFTND", x, fft_length, axes, {"Tcomplex": x.dtype}, name)


@tf_export("rfftnd")
def rfftnd_op(input, fft_length, axes, Tcomplex=dtypes.complex64, name=None):
    """tf.rfftnd(input, fft_length, axes, Tcomplex=tf.complex64, name=None): the RFFTND op, the
    discrete Fourier transform of a real tensor over `axes`, fft_length[-1] // 2 + 1 frequencies
    along the last of them (np.fft.rfftn(input, fft_length, axes))."""
    x = convert_to_tensor(input, name="input")
    return _nd_op("RFFTND", x, fft_length, axes, {"Treal": x.dtype, "Tcomplex": dtypes.as_dtype(Tcomplex)}, name)


@tf_export("irfftnd")
def irfftnd_op(input, fft_length, axes, Treal=dtypes.float32, name=None):
    """tf.irfftnd(input, fft_length, axes, Treal=tf.float32, name=None): the IRFFTND op, the real
    tensor of lengths `fft_length` along `axes` whose rfftnd is the input (np.fft.irfftn)."""
    x = convert_to_tensor(input, name="input")
    return _nd_op("IRFFTND", x, fft_length, axes, {"Treal": dtypes.as_dtype(Treal), "Tcomplex": x.dtype}, name)


def _default_axes(x: Tensor) -> list:
    if x.shape.ndims is None:
        raise ValueError("fftnd and its kin need the input's rank to default `axes` to all of its dimensions")
    return list(range(x.shape.ndims))


def _dims_along(x: Tensor, axes):
    """x's lengths along `axes`: a list of ints where known when building, else an int32 tensor."""
    static_axes = static_ints(axes)
    if static_axes is not None and x.shape.ndims is not None:
        if any(not -x.shape.ndims <= a < x.shape.ndims for a in static_axes):
            raise ValueError(f"axes {static_axes} are out of range for a tensor of rank {x.shape.ndims}")
        known = [x.shape.as_list()[a] for a in static_axes]
        if None not in known:
            return known
    return gather(shape(x, out_type=dtypes.int32), floormod(convert_to_tensor(axes, dtype=dtypes.int32), rank(x)))


def _normalized(op_type: str, x: Tensor, fft_length: Tensor, norm) -> Tensor:
    """x scaled for `norm` before the op: 'backward' (the default) leaves it, 'forward' puts 1/n
    on the forward transform (so the inverse has none) and 'ortho' 1/sqrt(n) on both (TF's)."""
    norm = norm or "backward"
    if norm not in _NORMS:
        raise ValueError(f"norm must be one of {', '.join(map(repr, _NORMS))}, got {norm!r}")
    if norm == "backward":
        return x
    lengths = static_ints(fft_length)
    if lengths is not None:
        factor = float(np.prod(lengths)) ** (1.0 if norm == "forward" else 0.5)
    else:
        n = cast(reduce_prod(fft_length), x.dtype.real_dtype)
        factor = cast(n if norm == "forward" else sqrt(n), x.dtype)
    forward = op_type in ("FFTND", "RFFTND")
    return x / factor if forward else multiply(x, factor)


def _signal_nd(op_type: str, doc_name: str):
    def fn(input_tensor, fft_length=None, axes=None, norm=None, name=None):
        with name_scope(name, doc_name, [input_tensor, fft_length, axes]) as scope:
            real_in = op_type == "RFFTND"
            x = convert_to_tensor(input_tensor, name="input_tensor",
                                  preferred_dtype=dtypes.float32 if real_in else dtypes.complex64)
            axes = _default_axes(x) if axes is None else axes
            axes = convert_to_tensor(axes, dtype=dtypes.int32, name="axes")
            if fft_length is None:
                fft_length = _dims_along(x, axes)
                if op_type == "IRFFTND" and isinstance(fft_length, list):   # n // 2 + 1 of n points (n even)
                    fft_length[-1:] = [max(2 * (n - 1), 0) for n in fft_length[-1:]]
                elif op_type == "IRFFTND":
                    fft_length = concat([fft_length[:-1], maximum(2 * (fft_length[-1:] - 1), 0)], 0)
            fft_length = convert_to_tensor(fft_length, dtype=dtypes.int32, name="fft_length")
            x = _normalized(op_type, x, fft_length, norm)
            if real_in:
                attrs = {"Treal": x.dtype, "Tcomplex": _COMPLEX_OF.get(x.dtype, dtypes.complex64)}
            elif op_type == "IRFFTND":
                attrs = {"Treal": x.dtype.real_dtype, "Tcomplex": x.dtype}
            else:
                attrs = {"Tcomplex": x.dtype}
            return _nd_op(op_type, x, fft_length, axes, attrs, scope)
    fn.__name__ = fn.__qualname__ = doc_name
    fn.__doc__ = (f"tf.signal.{doc_name}(input_tensor, fft_length=None, axes=None, norm=None, name=None): "
                  f"np.fft.{doc_name[:-1]}(input_tensor, fft_length, axes, norm): {_ND_DOCS[op_type]} over `axes` "
                  "(default all), the input first cut or zero-padded to `fft_length` along them (default its "
                  "lengths there); norm 'backward' (default), 'ortho' or 'forward'.")
    return fn


_ND_DOCS = {"FFTND": "the discrete Fourier transform of a complex tensor",
            "IFFTND": "the inverse discrete Fourier transform of a complex tensor",
            "RFFTND": "the discrete Fourier transform of a real tensor, n // 2 + 1 frequencies along the last axis",
            "IRFFTND": "the real tensor whose rfftnd is the input (default length 2 * (m - 1) along the last axis)"}
fftnd = _signal_nd("FFTND", "fftnd")
tf_export("signal.fftnd")(fftnd)
ifftnd = _signal_nd("IFFTND", "ifftnd")
tf_export("signal.ifftnd")(ifftnd)
rfftnd = _signal_nd("RFFTND", "rfftnd")
tf_export("signal.rfftnd")(rfftnd)
irfftnd = _signal_nd("IRFFTND", "irfftnd")
tf_export("signal.irfftnd")(irfftnd)


def _nd_infer(op_type: str):
    def infer(op):
        x, length, axes = op.inputs
        for t, what in ((length, "fft_length"), (axes, "axes")):
            if t.shape.ndims not in (None, 1):
                raise ValueError(f"Shape must be rank 1 but is rank {t.shape.ndims} for '{what}'")
        out_dtype = op.get_attr("Tcomplex") if op_type == "RFFTND" else (
            op.get_attr("Treal") if op_type == "IRFFTND" else x.dtype)
        if x.shape.ndims is None:
            return [(out_dtype, unknown_shape())]
        out, lengths, axes = x.shape.as_list(), static_ints(length), static_ints(axes)
        if axes is None:
            return [(out_dtype, unknown_shape(len(out)))]
        if lengths is not None and len(lengths) != len(axes):
            raise ValueError(f"fft_length and axes must have the same length, got {len(lengths)} and {len(axes)}")
        for i, a in enumerate(axes):
            if not -len(out) <= a < len(out):
                raise ValueError(f"axes {axes} are out of range for a tensor of rank {len(out)}")
            out[a] = None if lengths is None else lengths[i]
        if op_type == "RFFTND" and lengths:
            out[axes[-1]] = lengths[-1] // 2 + 1
        return [(out_dtype, TensorShape(out))]
    return infer


def _nd_kernel(op_type: str):
    transform = _ND_TRANSFORMS[op_type]

    def kernel(node, ctx):
        out_dtype = dtypes.as_dtype(node.attr["Treal" if op_type == "IRFFTND" else "Tcomplex"]).as_numpy_dtype

        def run(x, fft_length, axes):
            lengths, axes = [int(n) for n in fft_length.reshape(-1)], [int(a) for a in axes.reshape(-1)]
            if len(lengths) != len(axes):
                raise invalid(node, f"fft_length and axes must have the same length, got {lengths} and {axes}")
            if any(not -x.ndim <= a < x.ndim for a in axes) or len({a % x.ndim for a in axes}) != len(axes):
                raise invalid(node, f"axes must be distinct dimensions of the rank-{x.ndim} input, got {axes}")
            if any(n < 0 for n in lengths):
                raise invalid(node, f"fft_length must be non-negative, got {lengths}")
            out_shape = list(x.shape)
            for a, n in zip(axes, lengths):
                out_shape[a] = n
            if op_type == "RFFTND" and axes:
                out_shape[axes[-1]] = lengths[-1] // 2 + 1
            if 0 in out_shape or 0 in x.shape:
                return np.zeros(out_shape, out_dtype)
            return transform(x, s=lengths, axes=axes).astype(out_dtype, copy=False)
        return run
    return kernel


def fit_axes(t: Tensor, lengths: Tensor, axes: Tensor) -> Tensor:
    """`t` cut or zero-padded to `lengths` along `axes` (int32 tensors, negative axes from the
    end): what the N-D ops do to their input first, and its adjoint the other way round."""
    r = rank(t)
    hot = one_hot(floormod(axes, r), r, dtype=dtypes.int32)   # [k, rank]
    dims = shape(t, out_type=dtypes.int32)
    target = dims * (1 - reduce_sum(hot, 0)) + reduce_sum(hot * reshape(lengths, [-1, 1]), 0)
    cut = slice_(t, zeros([r], dtypes.int32), minimum(dims, target))
    return pad(cut, stack([zeros([r], dtypes.int32), maximum(target - dims, 0)], axis=1))


def _back_to_input(back: Tensor, op) -> Tensor:
    """A gradient computed at fft_length along the axes, fitted to the op's input's shape."""
    x, _, axes = op.inputs
    out = fit_axes(back, convert_to_tensor(_dims_along(x, axes), dtype=dtypes.int32), axes)
    out.set_shape(x.shape)
    return out


def _points(length: Tensor, dtype) -> Tensor:
    return cast(reduce_prod(length), dtype)


def _fftnd_grad(op, g):
    _, length, axes = op.inputs
    return [_back_to_input(multiply(ifftnd_op(g, length, axes), _points(length, g.dtype)), op), None, None]


def _ifftnd_grad(op, g):
    _, length, axes = op.inputs
    return [_back_to_input(fftnd_op(g, length, axes) / _points(length, g.dtype), op), None, None]


def _rfftnd_grad(op, g):
    """As RFFT's: the half spectrum zero-padded to the full length, N * IFFTND of it, real part."""
    _, length, axes = op.inputs
    full = fit_axes(g, length, axes)
    back = real(multiply(ifftnd_op(full, length, axes), _points(length, g.dtype)))
    return [_back_to_input(back, op), None, None]


def _irfftnd_grad(op, g):
    """As IRFFT's: RFFTND of the gradient over N, the interior frequencies along the last axis
    (counted twice by the inverse) doubled."""
    x, length, axes = op.inputs
    n = length[-1]
    half, is_odd = n // 2 + 1, n % 2
    mask = concat([ones([1], g.dtype), 2.0 * ones(reshape(half - 2 + is_odd, [1]), g.dtype),
                   ones(reshape(1 - is_odd, [1]), g.dtype)], 0)
    r = rank(g)
    mask = reshape(mask, 1 + (half - 1) * one_hot(floormod(axes[-1], r), r, dtype=dtypes.int32))
    scale = cast(mask / _points(length, g.dtype), x.dtype)
    back = multiply(rfftnd_op(g, length, axes, Tcomplex=x.dtype), scale)
    return [_back_to_input(back, op), None, None]


_INT32 = (dtypes.int32,)
for _op_type, _grad, _inputs in (("FFTND", _fftnd_grad, COMPLEX), ("IFFTND", _ifftnd_grad, COMPLEX),
                                 ("RFFTND", _rfftnd_grad, (dtypes.float32, dtypes.float64)),
                                 ("IRFFTND", _irfftnd_grad, COMPLEX)):
    register(_op_type, _nd_infer(_op_type), _nd_kernel(_op_type), grad=_grad,
             dtypes={0: ("input", _inputs), 1: ("fft_length", _INT32), 2: ("axes", _INT32)})
