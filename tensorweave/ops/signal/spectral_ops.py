"""tf.signal's composites over the FFT ops and the array and math ops: frame, overlap_and_add,
the raised-cosine windows, stft and inverse_stft (with inverse_stft_window_fn), the mel
filterbank matrix, MFCCs and the DCT of types I-IV. Each is built from differentiable ops, so
their gradients come from those ops'."""
from __future__ import annotations

import math

import numpy as np

from tensorweave.framework import dtypes
from tensorweave.framework.api import control_dependencies, name_scope
from tensorweave.framework.graph import Tensor
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.concat import concat, split, stack
from tensorweave.ops.array.core import expand_dims, identity, rank, reshape, shape, transpose
from tensorweave.ops.debugging.asserts import assert_greater_equal
from tensorweave.ops.array.fill import fill, ones, zeros
from tensorweave.ops.array.gather import gather
from tensorweave.ops.array.pad import pad, reverse, roll
from tensorweave.ops.array.sort import where
from tensorweave.ops.helpers import static_int
from tensorweave.ops.math.binary import equal, greater, maximum, minimum, pow
from tensorweave.ops.math.cast import cast
from tensorweave.ops.math.linalg import tensordot
from tensorweave.ops.math.reduction import cumsum, reduce_sum
from tensorweave.ops.math.segment import unsorted_segment_sum
from tensorweave.ops.math.sequences import linspace, range as range_
from tensorweave.ops.math.special import bessel_i0e
from tensorweave.ops.math.unary import ceil, cos, exp, log, sin, sqrt
from tensorweave.ops.signal.fft_ops import fit_inner_dims, irfft, rfft


def _int(value, name: str):
    """A Python int when `value` is known at build time, else an int32 scalar tensor."""
    if isinstance(value, (int, np.integer)):
        return int(value)
    t = convert_to_tensor(value, name=name)
    known = static_int(t)
    return known if known is not None else cast(t, dtypes.int32)


def _at_least_zero(value):
    return max(0, value) if isinstance(value, int) else maximum(0, value)


def _axis_length(signal: Tensor, axis):
    dim = signal.shape.as_list()[axis] if signal.shape.ndims is not None and isinstance(axis, int) else None
    return dim if dim is not None else shape(signal)[axis]


# -- frame, overlap_and_add -----------------------------------------------------------------
@tf_export("signal.frame", "contrib.signal.frame")
def frame(signal, frame_length, frame_step, pad_end=False, pad_value=0, axis=-1, name=None):
    """tf.signal.frame(signal, frame_length, frame_step, pad_end=False, pad_value=0, axis=-1,
    name=None): the frames of `signal` along `axis` (frame i starts at i * frame_step), replacing
    that axis by [num_frames, frame_length]. Without pad_end only whole frames are kept (none
    when frame_length exceeds the signal); with it the end is padded with pad_value so that
    ceil(length / frame_step) frames start inside the signal."""
    with name_scope(name, "frame", [signal, frame_length, frame_step, pad_value]):
        signal = convert_to_tensor(signal, name="signal")
        frame_length = _int(frame_length, "frame_length")
        frame_step = _int(frame_step, "frame_step")
        axis = _int(axis, "axis")
        if not isinstance(axis, int):
            axis = axis % rank(signal)
        elif axis < 0:
            axis += signal.shape.ndims if signal.shape.ndims is not None else rank(signal)
        length = _axis_length(signal, axis)
        if pad_end:
            num_frames = -(-length // frame_step)
            pad_samples = _at_least_zero(frame_length + frame_step * (num_frames - 1) - length)
            ndims = signal.shape.ndims
            if isinstance(pad_samples, int) and isinstance(axis, int) and ndims is not None:
                paddings = [[0, 0]] * axis + [[0, pad_samples]] + [[0, 0]] * (ndims - axis - 1)
            else:
                paddings = concat([zeros(stack([axis, 2]), dtypes.int32), reshape(stack([0, pad_samples]), [1, 2]),
                                   zeros(stack([rank(signal) - axis - 1, 2]), dtypes.int32)], 0)
            signal = pad(signal, paddings, constant_values=convert_to_tensor(pad_value, dtype=signal.dtype))
        else:
            num_frames = _at_least_zero(1 + (length - frame_length) // frame_step)
        starts = expand_dims(range_(num_frames) * frame_step, 1)
        indices = starts + expand_dims(range_(frame_length), 0)
        return gather(signal, indices, axis=axis)


@tf_export("signal.overlap_and_add", "contrib.signal.overlap_and_add")
def overlap_and_add(signal, frame_step, name=None):
    """tf.signal.overlap_and_add(signal, frame_step, name=None): frames [..., frames,
    frame_length] added back together with their starts frame_step apart: a signal of length
    (frames - 1) * frame_step + frame_length."""
    with name_scope(name, "overlap_and_add", [signal, frame_step]):
        signal = convert_to_tensor(signal, name="signal")
        if signal.shape.ndims is not None and signal.shape.ndims < 2:
            raise ValueError(f"input must have at least 2 dimensions, got shape {signal.shape}")
        frame_step = _int(frame_step, "frame_step")
        num_frames, frame_length = _axis_length(signal, -2), _axis_length(signal, -1)
        output_length = frame_length + frame_step * (num_frames - 1)
        outer = shape(signal)[:-2]
        # frames to the front, every sample added into its output position
        columns = transpose(reshape(signal, stack([-1, num_frames * frame_length])))
        positions = reshape(expand_dims(range_(num_frames) * frame_step, 1) + expand_dims(range_(frame_length), 0),
                            [-1])
        summed = transpose(unsorted_segment_sum(columns, positions, output_length))
        result = reshape(summed, concat([outer, reshape(output_length, [1])], 0))
        if signal.shape.ndims is not None:
            result.set_shape(signal.shape.as_list()[:-2] + [
                output_length if isinstance(output_length, int) else None])
        return result


# -- windows ----------------------------------------------------------------------------------
def _raised_cosine_window(name, default_name, window_length, periodic, dtype, a, b):
    """a - b * cos(2 pi n / N) for n < window_length, N = window_length (periodic) or
    window_length - 1 (symmetric); a single 1 for a window of one point, as TF."""
    if not dtype.is_floating:
        raise ValueError(f"dtype must be a floating point type. Found {dtype.name}")
    with name_scope(name, default_name, [window_length, periodic]):
        window_length = _int(window_length, "window_length")
        if isinstance(window_length, int):
            if window_length == 1:
                return ones([1], dtype)
            # TF's: a periodic window of odd length is the symmetric one
            span = window_length - 1 + int(bool(periodic) and window_length % 2 == 0)
            n = np.arange(window_length, dtype=dtype.as_numpy_dtype)
            values = a - b * np.cos(2 * np.pi * n / dtype.as_numpy_dtype(span))
            return convert_to_tensor(values.astype(dtype.as_numpy_dtype), dtype=dtype)
        periodic = cast(convert_to_tensor(periodic, name="periodic"), dtypes.int32)
        span = cast(maximum(window_length - 1 + periodic * (1 - window_length % 2), 1), dtype)
        window = a - b * cos(2 * np.pi * cast(range_(window_length), dtype) / span)
        one_point = fill(shape(window), convert_to_tensor(1, dtype=dtype))
        return where(fill(reshape(window_length, [1]), greater(window_length, 1)), window, one_point)


@tf_export("signal.hann_window", "contrib.signal.hann_window")
def hann_window(window_length, periodic=True, dtype=dtypes.float32, name=None):
    """tf.signal.hann_window(window_length, periodic=True, dtype=tf.float32, name=None):
    0.5 - 0.5 * cos(2 pi n / N) (N = window_length if periodic, else window_length - 1)."""
    return _raised_cosine_window(name, "hann_window", window_length, periodic, dtypes.as_dtype(dtype), 0.5, 0.5)


@tf_export("signal.hamming_window", "contrib.signal.hamming_window")
def hamming_window(window_length, periodic=True, dtype=dtypes.float32, name=None):
    """tf.signal.hamming_window(window_length, periodic=True, dtype=tf.float32, name=None):
    0.54 - 0.46 * cos(2 pi n / N) (N = window_length if periodic, else window_length - 1)."""
    return _raised_cosine_window(name, "hamming_window", window_length, periodic, dtypes.as_dtype(dtype),
                                 0.54, 0.46)


def _with_length(window, length):
    """`window` with its static length where `length` is known (a range of floats has none)."""
    if isinstance(length, int):
        window.set_shape([length])
    return window


def _window_length(window_length, dtype):
    if not dtype.is_floating:
        raise ValueError(f"dtype must be a floating point type. Found {dtype.name}")
    return _int(window_length, "window_length")


@tf_export("signal.kaiser_window")
def kaiser_window(window_length, beta=12.0, dtype=dtypes.float32, name=None):
    """tf.signal.kaiser_window(window_length, beta=12.0, dtype=tf.float32, name=None): the
    Kaiser window I0(beta sqrt(1 - (2n / (N - 1) - 1)^2)) / I0(beta) (numpy.kaiser)."""
    dtype = dtypes.as_dtype(dtype)
    with name_scope(name, "kaiser_window"):
        window_length = _window_length(window_length, dtype)
        if window_length == 1:
            return ones([1], dtype)
        half = (cast(window_length, dtypes.float32) - 1.0) / 2.0
        arg = cast(range_(-half, half + 0.1, dtype=dtypes.float32), dtype)
        beta = cast(beta, dtype)
        half = cast(half, dtype)
        num = beta * sqrt(maximum(1.0 - (arg / half) * (arg / half), 0.0))
        return _with_length(exp(num - beta) * (bessel_i0e(num) / bessel_i0e(beta)), window_length)


@tf_export("signal.kaiser_bessel_derived_window")
def kaiser_bessel_derived_window(window_length, beta=12.0, dtype=dtypes.float32, name=None):
    """tf.signal.kaiser_bessel_derived_window(window_length, beta=12.0, dtype=tf.float32,
    name=None): the Kaiser-Bessel-derived window (of even length), for MDCTs: the square roots of
    a Kaiser window's cumulative sums, mirrored."""
    dtype = dtypes.as_dtype(dtype)
    with name_scope(name, "kaiser_bessel_derived_window"):
        window_length = _window_length(window_length, dtype)
        kaiser = kaiser_window(window_length // 2 + 1, beta, dtype=dtype)
        running = cumsum(kaiser)
        half = sqrt(running[:-1] / running[-1])
        return _with_length(concat([half, reverse(half, [0])], 0), window_length // 2 * 2)


@tf_export("signal.vorbis_window")
def vorbis_window(window_length, dtype=dtypes.float32, name=None):
    """tf.signal.vorbis_window(window_length, dtype=tf.float32, name=None): the Vorbis power
    complementary window sin(pi / 2 sin^2(pi (n + 0.5) / N)), for MDCTs."""
    dtype = dtypes.as_dtype(dtype)
    with name_scope(name, "vorbis_window"):
        window_length = _window_length(window_length, dtype)
        arg = cast(range_(window_length), dtype)
        inner = sin(np.pi / cast(window_length, dtype) * (arg + 0.5))
        return sin(np.pi / 2.0 * inner * inner)


# -- stft, inverse_stft -----------------------------------------------------------------------
def _enclosing_power_of_two(value):
    """The smallest power of 2 >= value (stft's default fft_length)."""
    if isinstance(value, int):
        return 1 << max(value - 1, 0).bit_length()
    return cast(pow(2.0, ceil(log(cast(value, dtypes.float64)) / math.log(2.0))), dtypes.int32)


@tf_export("signal.stft", "contrib.signal.stft")
def stft(signals, frame_length, frame_step, fft_length=None, window_fn=hann_window, pad_end=False, name=None):
    """tf.signal.stft(signals, frame_length, frame_step, fft_length=None,
    window_fn=tf.signal.hann_window, pad_end=False, name=None): the short-time Fourier
    transform of real signals [..., samples]: [..., frames, fft_length // 2 + 1] complex values,
    the RFFT of each windowed frame (fft_length defaults to the smallest power of 2 enclosing
    frame_length). Without pad_end, a frame longer than the signal is an error here (TF returns
    no frames, which later ops trip over far from the cause): a ValueError when both lengths are
    known while building, else an InvalidArgumentError from the step that feeds such a signal."""
    with name_scope(name, "stft", [signals, frame_length, frame_step]):
        signals = convert_to_tensor(signals, name="signals")
        if signals.shape.ndims is not None and signals.shape.ndims < 1:
            raise ValueError(f"stft: signals must have rank at least 1, got shape {signals.shape}")
        frame_length = _int(frame_length, "frame_length")
        fft_length = _enclosing_power_of_two(frame_length) if fft_length is None else _int(fft_length, "fft_length")
        if not pad_end:
            signals = _with_frame_fitting(signals, frame_length)
        framed = frame(signals, frame_length, frame_step, pad_end=pad_end)
        if window_fn is not None:
            framed = framed * window_fn(frame_length, dtype=framed.dtype)
        return rfft(framed, stack([fft_length]))


def _with_frame_fitting(signals, frame_length):
    """`signals`, checked to hold at least one frame of frame_length samples (stft without pad_end)."""
    length = _axis_length(signals, -1)
    message = f"stft: frame_length {frame_length} is longer than the signal"
    if isinstance(length, int) and isinstance(frame_length, int):
        if frame_length > length:
            raise ValueError(f"{message} ({length} samples); pass pad_end=True to pad it")
        return signals
    fits = assert_greater_equal(length, frame_length, message=message + " (samples, frame_length):")
    with control_dependencies([fits]):
        return identity(signals)


@tf_export("signal.inverse_stft", "contrib.signal.inverse_stft")
def inverse_stft(stfts, frame_length, frame_step, fft_length=None, window_fn=hann_window, name=None):
    """tf.signal.inverse_stft(stfts, frame_length, frame_step, fft_length=None,
    window_fn=tf.signal.hann_window, name=None): the signal whose stft is `stfts`: each frame's
    IRFFT cut (or zero-padded) to frame_length, windowed by window_fn and overlap-added.
    Perfect reconstruction takes tf.signal.inverse_stft_window_fn of the forward window."""
    with name_scope(name, "inverse_stft", [stfts]):
        stfts = convert_to_tensor(stfts, name="stfts")
        if stfts.shape.ndims is not None and stfts.shape.ndims < 2:
            raise ValueError(f"inverse_stft: stfts must have rank at least 2, got shape {stfts.shape}")
        frame_length = _int(frame_length, "frame_length")
        fft_length = _enclosing_power_of_two(frame_length) if fft_length is None else _int(fft_length, "fft_length")
        real_frames = irfft(stfts, stack([fft_length]))
        real_frames = fit_inner_dims(real_frames, stack([frame_length]), 1)
        if window_fn is not None:
            real_frames = real_frames * window_fn(frame_length, dtype=stfts.dtype.real_dtype)
        return overlap_and_add(real_frames, frame_step)


@tf_export("signal.inverse_stft_window_fn", "contrib.signal.inverse_stft_window_fn")
def inverse_stft_window_fn(frame_step, forward_window_fn=hann_window, name=None):
    """tf.signal.inverse_stft_window_fn(frame_step, forward_window_fn=tf.signal.hann_window,
    name=None): a window_fn for inverse_stft that inverts stft with forward_window_fn: the forward
    window divided by the sum of its squares over the frames overlapping each sample."""
    def inverse_window(frame_length, dtype):
        with name_scope(name, "inverse_stft_window_fn", [forward_window_fn]):
            step = _int(frame_step, "frame_step")
            window = forward_window_fn(frame_length, dtype=dtype)
            length = _int(frame_length, "frame_length")
            overlaps = -(-length // step)
            denom = fit_inner_dims(window * window, stack([overlaps * step]), 1)
            denom = reduce_sum(reshape(denom, stack([overlaps, step])), 0, keepdims=True)
            denom = reshape(gather(denom, zeros(stack([overlaps]), dtypes.int32)), [-1])
            return window / fit_inner_dims(denom, stack([length]), 1)
    return inverse_window


@tf_export("signal.mdct")
def mdct(signals, frame_length, window_fn=vorbis_window, pad_end=False, norm=None, name=None):
    """tf.signal.mdct(signals, frame_length, window_fn=tf.signal.vorbis_window, pad_end=False,
    norm=None, name=None): the modified DCT of real signals [..., samples] framed by frame_length
    (a multiple of 4) with half-overlap: [..., frames, frame_length // 2] (norm None or 'ortho';
    no window_fn scales by 1 / sqrt(2))."""
    with name_scope(name, "mdct", [signals, frame_length]):
        signals = convert_to_tensor(signals, name="signals")
        if signals.shape.ndims is not None and signals.shape.ndims < 1:
            raise ValueError(f"mdct: signals must have rank at least 1, got shape {signals.shape}")
        frame_length = _int(frame_length, "frame_length")
        if isinstance(frame_length, int) and frame_length % 4:
            raise ValueError("The frame length must be a multiple of 4.")
        framed = frame(signals, frame_length, frame_length // 2, pad_end=pad_end)
        framed = framed * (window_fn(frame_length, dtype=framed.dtype) if window_fn is not None else 1.0 / np.sqrt(2))
        quarters = split(framed, 4, axis=-1)
        first = -reverse(quarters[2], [-1]) - quarters[3]
        second = quarters[0] - reverse(quarters[1], [-1])
        return dct(concat([first, second], -1), type=4, norm=norm)


@tf_export("signal.inverse_mdct")
def inverse_mdct(mdcts, window_fn=vorbis_window, norm=None, name=None):
    """tf.signal.inverse_mdct(mdcts, window_fn=tf.signal.vorbis_window, norm=None, name=None):
    the signal whose mdct (with a power-complementary window such as vorbis_window or
    kaiser_bessel_derived_window) is `mdcts` [..., frames, frame_length // 2]."""
    with name_scope(name, "inverse_mdct", [mdcts]):
        mdcts = convert_to_tensor(mdcts, name="mdcts")
        if mdcts.shape.ndims is not None and mdcts.shape.ndims < 2:
            raise ValueError(f"inverse_mdct: mdcts must have rank at least 2, got shape {mdcts.shape}")
        half_len = _axis_length(mdcts, -1)
        if norm is None:
            result = (0.5 / cast(half_len, mdcts.dtype)) * dct(mdcts, type=4)
        elif norm == "ortho":
            result = dct(mdcts, type=4, norm="ortho")
        else:
            raise ValueError(f"Unknown normalization. Expected None or 'ortho', got: {norm}")
        first, second = split(result, 2, axis=-1)
        frames = concat([second, -reverse(second, [-1]), -reverse(first, [-1]), -first], -1)
        frames = frames * (window_fn(2 * half_len, dtype=mdcts.dtype) if window_fn is not None else 1.0 / np.sqrt(2))
        return overlap_and_add(frames, half_len)


# -- mel filterbank, MFCCs --------------------------------------------------------------------
_MEL_BREAK_FREQUENCY_HERTZ = 700.0
_MEL_HIGH_FREQUENCY_Q = 1127.0


def _hertz_to_mel(frequencies: Tensor) -> Tensor:
    return _MEL_HIGH_FREQUENCY_Q * log(1.0 + frequencies / _MEL_BREAK_FREQUENCY_HERTZ)


@tf_export("signal.linear_to_mel_weight_matrix", "contrib.signal.linear_to_mel_weight_matrix")
def linear_to_mel_weight_matrix(num_mel_bins=20, num_spectrogram_bins=129, sample_rate=8000,
                                lower_edge_hertz=125.0, upper_edge_hertz=3800.0, dtype=dtypes.float32, name=None):
    """tf.signal.linear_to_mel_weight_matrix(num_mel_bins=20, num_spectrogram_bins=129,
    sample_rate=8000, lower_edge_hertz=125.0, upper_edge_hertz=3800.0, dtype=tf.float32,
    name=None): [num_spectrogram_bins, num_mel_bins] triangular filters, evenly spaced on the
    mel scale between the edges, that warp a linear spectrogram (matmul) to the mel scale; the
    DC bin gets no weight."""
    dtype = dtypes.as_dtype(dtype)
    with name_scope(name, "linear_to_mel_weight_matrix"):
        if isinstance(sample_rate, Tensor) and static_int(sample_rate) is not None:
            sample_rate = static_int(sample_rate)
        if num_mel_bins <= 0:
            raise ValueError(f"num_mel_bins must be positive. Got: {num_mel_bins}")
        if lower_edge_hertz < 0.0:
            raise ValueError(f"lower_edge_hertz must be non-negative. Got: {lower_edge_hertz}")
        if lower_edge_hertz >= upper_edge_hertz:
            raise ValueError(f"lower_edge_hertz {lower_edge_hertz:.1f} >= upper_edge_hertz {upper_edge_hertz:.1f}")
        if not isinstance(sample_rate, Tensor):
            if sample_rate <= 0.0:
                raise ValueError(f"sample_rate must be positive. Got: {sample_rate}")
            if upper_edge_hertz > sample_rate / 2:
                raise ValueError("upper_edge_hertz must not be larger than the Nyquist frequency (sample_rate / 2). "
                                 f"Got {upper_edge_hertz} for sample_rate: {sample_rate}")
        if not dtype.is_floating:
            raise ValueError(f"dtype must be a floating point type. Got: {dtype}")
        sample_rate = cast(sample_rate, dtype)
        zero = convert_to_tensor(0.0, dtype)
        linear_frequencies = linspace(zero, sample_rate / 2.0, num_spectrogram_bins)[1:]
        spectrogram_bins_mel = expand_dims(_hertz_to_mel(linear_frequencies), 1)
        edges = linspace(_hertz_to_mel(convert_to_tensor(lower_edge_hertz, dtype)),
                         _hertz_to_mel(convert_to_tensor(upper_edge_hertz, dtype)), num_mel_bins + 2)
        lower_edge_mel, center_mel, upper_edge_mel = (reshape(edges[i:i + num_mel_bins], [1, num_mel_bins])
                                                      for i in (0, 1, 2))
        lower_slopes = (spectrogram_bins_mel - lower_edge_mel) / (center_mel - lower_edge_mel)
        upper_slopes = (upper_edge_mel - spectrogram_bins_mel) / (upper_edge_mel - center_mel)
        return pad(maximum(zero, minimum(lower_slopes, upper_slopes)), [[1, 0], [0, 0]])


@tf_export("signal.mfccs_from_log_mel_spectrograms", "contrib.signal.mfccs_from_log_mel_spectrograms")
def mfccs_from_log_mel_spectrograms(log_mel_spectrograms, name=None):
    """tf.signal.mfccs_from_log_mel_spectrograms(log_mel_spectrograms, name=None): the
    mel-frequency cepstral coefficients of [..., num_mel_bins] log-magnitude mel spectrograms:
    their type-II DCT scaled by 1 / sqrt(2 * num_mel_bins) (HTK's scaling)."""
    with name_scope(name, "mfccs_from_log_mel_spectrograms", [log_mel_spectrograms]):
        log_mel = convert_to_tensor(log_mel_spectrograms, name="log_mel_spectrograms")
        num_mel_bins = _axis_length(log_mel, -1)
        dct2 = dct(log_mel, type=2)
        return dct2 * (1.0 / sqrt(cast(num_mel_bins, dct2.dtype) * 2.0))


# -- DCT ----------------------------------------------------------------------------------------
# per type: (offset of the input index, offset of the output index, whether the angle's
# denominator is N - 1 (type I) rather than N)
_DCT_ANGLES = {1: (0.0, 0.0, True), 2: (0.5, 0.0, False), 3: (0.0, 0.5, False), 4: (0.5, 0.5, False)}


def _edge_weights(n, dtype, first, middle, last) -> Tensor:
    """[first, middle, ..., middle, last] of length n."""
    index = range_(n)

    def filled(value):
        return fill(stack([n]), convert_to_tensor(value, dtype))
    return where(equal(index, 0), filled(first), where(equal(index, n - 1), filled(last), filled(middle)))


def _dct_matrix(n, dct_type: int, ortho: bool, dtype) -> Tensor:
    """M [n, n] with dct(x) = x @ M, scipy's unnormalised (or orthonormal) DCT of `dct_type`."""
    input_offset, output_offset, type_one = _DCT_ANGLES[dct_type]
    size = cast(n, dtype)
    position = cast(range_(n), dtype)
    angle = np.pi * expand_dims(position + input_offset, 1) * expand_dims(position + output_offset, 0) / (
        size - 1.0 if type_one else size)
    matrix = cos(angle)
    root2 = math.sqrt(2.0)
    if dct_type == 1:   # weights on the inputs
        return matrix * expand_dims(_edge_weights(n, dtype, 1.0, 2.0, 1.0), 1)
    if dct_type == 3:
        weights = _edge_weights(n, dtype, 1.0, root2, root2) / sqrt(size) if ortho else \
            _edge_weights(n, dtype, 1.0, 2.0, 2.0)
        return matrix * expand_dims(weights, 1)
    if dct_type == 2 and ortho:   # weights on the outputs
        return matrix * expand_dims(_edge_weights(n, dtype, 1.0, root2, root2) / sqrt(size), 0)
    return matrix * (2.0 / sqrt(size * 2.0) if ortho else 2.0)


def _check_dct_arguments(x: Tensor, dct_type, n, axis, norm) -> None:
    if axis != -1:
        raise NotImplementedError(f"axis must be -1. Got: {axis}")
    if n is not None and n < 1:
        raise ValueError("n should be a positive integer or None")
    if dct_type not in (1, 2, 3, 4):
        raise ValueError("Types I, II, III and IV (I)DCT are supported.")
    if dct_type == 1:
        if norm == "ortho":
            raise ValueError("Normalization is not supported for the Type-I DCT.")
        last = x.shape.as_list()[-1] if x.shape.ndims else None
        if last is not None and last < 2:
            raise ValueError("Type-I DCT requires the dimension to be greater than one.")
    if norm not in (None, "ortho"):
        raise ValueError(f"Unknown normalization. Expected None or 'ortho', got: {norm}")


@tf_export("signal.dct", "spectral.dct")
def dct(input, type=2, n=None, axis=-1, norm=None, name=None):
    """tf.signal.dct(input, type=2, n=None, axis=-1, norm=None, name=None): the discrete cosine
    transform of type I-IV over the last axis of a float32/float64 tensor, as
    scipy.fftpack.dct (n: the input cut or zero-padded to n points; norm: None or 'ortho', not
    for type I)."""
    with name_scope(name, "dct", [input]):
        x = convert_to_tensor(input, name="input")
        _check_dct_arguments(x, type, n, axis, norm)
        if x.dtype not in (dtypes.float32, dtypes.float64):
            raise TypeError(f"dct: input must be float32 or float64, got {x.dtype.name}")
        if n is not None:
            x = fit_inner_dims(x, [n], 1)
        points = _axis_length(x, -1)
        return tensordot(x, _dct_matrix(points, type, norm == "ortho", x.dtype), 1)


@tf_export("signal.idct", "spectral.idct")
def idct(input, type=2, n=None, axis=-1, norm=None, name=None):
    """tf.signal.idct(input, type=2, n=None, axis=-1, norm=None, name=None): the DCT of the
    inverse type (II <-> III, I and IV their own), as TF: exactly the inverse with
    norm='ortho', the inverse scaled by 2N (type I: 2(N-1)) without."""
    _check_dct_arguments(convert_to_tensor(input, name="input"), type, n, axis, norm)
    return dct(input, type={1: 1, 2: 3, 3: 2, 4: 4}[type], n=n, axis=axis, norm=norm, name=name or "idct")


# -- fftshift ---------------------------------------------------------------------------------
def _shift(x, axes, name, default_name, sign: int) -> Tensor:
    with name_scope(name, default_name, [x]):
        x = convert_to_tensor(x, name="x")
        if axes is None:
            axes = list(np.arange(x.shape.ndims)) if x.shape.ndims is not None else range_(rank(x))
        elif isinstance(axes, int):
            axes = [axes]
        shift = gather(shape(x), axes) // 2
        return roll(x, shift if sign > 0 else -shift, axes)


@tf_export("signal.fftshift")
def fftshift(x, axes=None, name=None):
    """tf.signal.fftshift(x, axes=None, name=None): the zero-frequency component moved to the
    centre of each axis (numpy.fft.fftshift)."""
    return _shift(x, axes, name, "fftshift", 1)


@tf_export("signal.ifftshift")
def ifftshift(x, axes=None, name=None):
    """tf.signal.ifftshift(x, axes=None, name=None): fftshift undone (numpy.fft.ifftshift)."""
    return _shift(x, axes, name, "ifftshift", -1)
