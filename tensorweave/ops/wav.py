"""tf.audio's WAV codec (TF's DecodeWav and EncodeWav ops): 16-bit PCM WAV files as float32
samples in [-1, 1), [frames, channels], and back. The bytes are read and written field by field
with struct, as TF's wav_io does, so that a file TF rejects is rejected here with its message."""
from __future__ import annotations

import collections
import struct

import numpy as np

from tensorweave.framework import dtypes
from tensorweave.framework.shapes import TensorShape
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.helpers import as_string_tensor, invalid, make_op
from tensorweave.ops.registry import register

DecodeWavOutput = collections.namedtuple("DecodeWav", ["audio", "sample_rate"])
_INT16_SCALE = np.float32(1 << 15)
_FORMAT = struct.Struct("<HHIIHH")   # audio format, channels, sample rate, bytes per second, block align, bits


class _Reader:
    """TF's offset-checked reads over the file's bytes; ValueError with TF's message past the end."""

    def __init__(self, data: bytes):
        self.data, self.offset = data, 0

    def take(self, n: int) -> bytes:
        if self.offset + n > len(self.data):
            raise ValueError("Data too short when trying to read string")
        chunk = self.data[self.offset:self.offset + n]
        self.offset += n
        return chunk

    def expect(self, text: bytes) -> None:
        found = self.take(len(text))
        if found != text:
            raise ValueError(f"Header mismatch: Expected {text.decode()} but found {found.decode('latin-1')}")

    def uint32(self) -> int:
        return struct.unpack("<I", self.take(4))[0]


def decode_wav_bytes(data: bytes) -> tuple:
    """(int16 samples [frames, channels], sample rate) of a 16-bit PCM WAV file; ValueError with
    TF's message for anything else: the RIFF header, then a 'fmt ' chunk of 16 or 18 bytes, then
    chunks up to the end of which exactly one is 'data'."""
    reader = _Reader(data)
    reader.expect(b"RIFF")
    reader.uint32()   # the file's stated size: TF does not check it
    reader.expect(b"WAVE")
    reader.expect(b"fmt ")
    fmt_size = reader.uint32()
    if fmt_size not in (16, 18):
        raise ValueError(f"Bad file size for WAV: Expected 16 or 18, but got{fmt_size}")
    audio_format, channels, rate, bytes_per_second, block_align, bits = _FORMAT.unpack(reader.take(_FORMAT.size))
    if audio_format != 1:
        raise ValueError(f"Bad audio format for WAV: Expected 1 (PCM), but got{audio_format}")
    if channels < 1:
        raise ValueError(f"Bad number of channels for WAV: Expected at least 1, but got {channels}")
    if bits != 16:
        raise ValueError(f"Can only read 16-bit WAV files, but received {bits}")
    if block_align != (bits * channels + 7) // 8:
        raise ValueError(f"Bad bytes per sample in WAV header: Expected {(bits * channels + 7) // 8} but got "
                         f"{block_align}")
    if bytes_per_second != (block_align * rate) & 0xFFFFFFFF:
        raise ValueError(f"Bad bytes per second in WAV header: Expected {block_align * rate} but got "
                         f"{bytes_per_second} (sample_rate={rate}, bytes_per_sample={block_align})")
    reader.offset += fmt_size - 16
    samples = None
    while reader.offset < len(data):
        chunk_id, size = reader.take(4), reader.uint32()
        if size > 0x7FFFFFFF:
            raise ValueError(f"WAV data chunk '{chunk_id.decode('latin-1')}' is too large: {size} bytes, but the "
                             f"limit is 2147483647")
        if chunk_id != b"data":
            reader.offset += size
            continue
        if samples is not None:
            raise ValueError("More than one data chunk found in WAV")
        frames = size // block_align
        raw = reader.take(2 * frames * channels)   # a partial frame at the chunk's end is not read
        samples = np.frombuffer(raw, "<i2").reshape(frames, channels)
    if samples is None:
        raise ValueError("No data chunk found in WAV")
    return samples, rate


def encode_wav_bytes(samples: np.ndarray, rate: int) -> bytes:
    """A 16-bit PCM WAV file (TF's 44-byte header) of int16 samples [frames, channels]."""
    frames, channels = samples.shape
    data = samples.astype("<i2").tobytes()
    fmt = _FORMAT.pack(1, channels, rate, rate * 2 * channels, 2 * channels, 16)
    return (b"RIFF" + struct.pack("<I", 36 + len(data)) + b"WAVE" + b"fmt " + struct.pack("<I", 16) + fmt
            + b"data" + struct.pack("<I", len(data)) + data)


def to_int16(audio: np.ndarray) -> np.ndarray:
    """float samples as int16: times 2^15, rounded half away from zero, clamped (TF's)."""
    scaled = audio.astype(np.float32) * _INT16_SCALE
    rounded = np.trunc(scaled + np.copysign(np.float32(0.5), scaled))
    return np.clip(rounded, -32768, 32767).astype(np.int16)


# -- ops ---------------------------------------------------------------------------------------
def _decode_wav_infer(op):
    if op.inputs[0].shape.ndims not in (None, 0):
        raise ValueError(f"Shape must be rank 0 but is rank {op.inputs[0].shape.ndims} for 'contents'")
    samples, channels = op.get_attr("desired_samples"), op.get_attr("desired_channels")
    for value, what in ((samples, "desired_samples"), (channels, "desired_channels")):
        if value < -1:
            raise ValueError(f"{what} must be -1 (as in the file) or a count, got {value}")
    audio = TensorShape([None if samples == -1 else samples, None if channels == -1 else channels])
    return [(dtypes.float32, audio), (dtypes.int32, TensorShape([]))]


def _decode_wav_kernel(node, ctx):
    want_samples, want_channels = node.attr["desired_samples"], node.attr["desired_channels"]

    def run(contents):
        if np.ndim(contents) != 0:
            raise invalid(node, f"contents must be scalar, got shape {list(np.shape(contents))}")
        try:
            samples, rate = decode_wav_bytes(contents.item() if isinstance(contents, np.ndarray) else contents)
        except ValueError as e:
            raise invalid(node, f"{e}") from None
        frames = samples.shape[0] if want_samples == -1 else want_samples
        channels = samples.shape[1] if want_channels == -1 else want_channels
        # fewer channels keep the first ones; more repeat the last; missing frames are silence
        picked = samples[:frames, np.minimum(np.arange(channels), samples.shape[1] - 1)]
        audio = np.zeros((frames, channels), np.float32)
        audio[:picked.shape[0]] = picked / _INT16_SCALE
        return audio, np.int32(rate)
    return run


def _encode_wav_infer(op):
    audio, rate = op.inputs
    if audio.shape.ndims not in (None, 2):
        raise ValueError(f"Shape must be rank 2 but is rank {audio.shape.ndims} for 'audio'")
    if rate.shape.ndims not in (None, 0):
        raise ValueError(f"Shape must be rank 0 but is rank {rate.shape.ndims} for 'sample_rate'")
    return [(dtypes.string, TensorShape([]))]


def _encode_wav_kernel(node, ctx):
    def run(audio, rate):
        if audio.ndim != 2:
            raise invalid(node, f"audio must be 2-dimensional, got shape {list(audio.shape)}")
        if np.ndim(rate) != 0:
            raise invalid(node, f"Input sample_rate should be a scalar tensor, got shape {list(np.shape(rate))}")
        frames, channels = audio.shape
        if not 0 < int(rate) < 1 << 32:
            raise invalid(node, f"sample_rate must be in (0, 2^32), got: {int(rate)}")
        if not 0 < channels < 1 << 16:
            raise invalid(node, f"num_channels must be in (0, 2^16), got: {channels}")
        if frames == 0:
            raise invalid(node, "num_frames must be positive.")
        return encode_wav_bytes(to_int16(audio), int(rate))
    return run


register("DecodeWav", _decode_wav_infer, _decode_wav_kernel, grad=None, dtypes=(dtypes.string,),
         dtype_param="contents")
register("EncodeWav", _encode_wav_infer, _encode_wav_kernel, grad=None,
         dtypes={0: ("audio", (dtypes.float32,)), 1: ("sample_rate", (dtypes.int32,))})


@tf_export("audio.decode_wav")
def decode_wav(contents, desired_channels=-1, desired_samples=-1, name=None):
    """tf.audio.decode_wav(contents, desired_channels=-1, desired_samples=-1, name=None): a 16-bit
    PCM WAV file's samples as float32 in [-1, 1), (audio [samples, channels], sample_rate int32).
    -1 keeps the file's count; fewer channels keep the first ones and more repeat the last; more
    samples are zero-padded, fewer cut."""
    attrs = {"desired_channels": int(desired_channels), "desired_samples": int(desired_samples)}
    op = make_op("DecodeWav", [as_string_tensor(contents)], attrs, name=name or "DecodeWav")
    return DecodeWavOutput(*op.outputs)


@tf_export("audio.encode_wav")
def encode_wav(audio, sample_rate, name=None):
    """tf.audio.encode_wav(audio, sample_rate, name=None): float32 audio [frames, channels] (values
    clamped to [-1, 1]) as the bytes of a 16-bit PCM WAV file at `sample_rate` (an int32 scalar)."""
    audio = convert_to_tensor(audio, dtype=dtypes.float32, name="audio")
    rate = convert_to_tensor(sample_rate, dtype=dtypes.int32, name="sample_rate")
    return make_op("EncodeWav", [audio, rate], name=name or "EncodeWav").outputs[0]
