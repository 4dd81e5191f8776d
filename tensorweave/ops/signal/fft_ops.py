"""The FFT ops: FFT/IFFT over the innermost 1, 2 or 3 dimensions of a complex tensor, RFFT/IRFFT
between real signals and their non-negative frequency halves (tf.signal.fft ... irfft3d, TF 1's
tf.fft and tf.spectral names), with TF's gradients."""
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
from tensorweave.ops.array.pad import pad
from tensorweave.ops.array.slicing import slice as slice_
from tensorweave.ops.helpers import COMPLEX, make_op, static_ints
from tensorweave.ops.math.binary import maximum, minimum, multiply, subtract
from tensorweave.ops.math.cast import cast
from tensorweave.ops.math.complex_parts import real
from tensorweave.ops.math.reduction import reduce_prod
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
