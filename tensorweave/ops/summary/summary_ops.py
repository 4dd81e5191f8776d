"""The summary ops. Each outputs a serialized `Summary` protocol buffer (a string scalar), as
TF's do, so that MergeSummary and FileWriter.add_summary(bytes) work as users expect; the
tf.summary functions that name them (tags, families, collections) are in tensorweave/summary/.
"""
from __future__ import annotations

import numpy as np
from google.protobuf.message import DecodeError

from tensorweave.framework import dtypes
from tensorweave.framework.shapes import TensorShape
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tf_protos import summary_pb2
from tensorweave.ops.helpers import REAL, invalid, make_op
from tensorweave.ops.registry import register
from tensorweave.ops.summary.encode import histogram_proto, normalize_image, png, wav
from tensorweave.ops.tensor_proto import to_proto


def _text(v) -> str:
    v = v.item() if isinstance(v, np.ndarray) else v
    return v.decode() if isinstance(v, bytes) else str(v)


def _scalar_string(op):
    return [(dtypes.string, TensorShape([]))]


# -- ScalarSummary --------------------------------------------------------------------------------
def scalar_summary(tags, values, name=None):
    """ScalarSummary(tags, values): one simple_value per tag (same shapes)."""
    return make_op("ScalarSummary", [convert_to_tensor(tags, dtype=dtypes.string), convert_to_tensor(values)],
                   name=name or "ScalarSummary").outputs[0]


def _scalar_kernel(node, ctx):
    def run(tags, values):
        tags_a, values_a = np.asarray(tags, dtype=object), np.asarray(values)
        if tags_a.shape != values_a.shape:
            single = f" (tag '{_text(tags_a.reshape(-1)[0])}')" if tags_a.size == 1 else ""
            raise invalid(node, f"tags and values not the same shape: {list(tags_a.shape)} != "
                                f"{list(values_a.shape)}{single}")
        s = summary_pb2.Summary()
        for t, v in zip(tags_a.reshape(-1), values_a.reshape(-1)):
            s.value.add(tag=_text(t), simple_value=float(v))
        return s.SerializeToString()
    return run


register("ScalarSummary", _scalar_string, _scalar_kernel, grad=None, dtypes={1: ("values", REAL)})


# -- HistogramSummary -----------------------------------------------------------------------------
def histogram_summary(tag, values, name=None):
    """HistogramSummary(tag, values): a histogram of `values` over TF's default buckets."""
    return make_op("HistogramSummary", [convert_to_tensor(tag, dtype=dtypes.string), convert_to_tensor(values)],
                   name=name or "HistogramSummary").outputs[0]


def _histogram_kernel(node, ctx):
    def run(tag, values):
        x = np.asarray(values)
        histo = histogram_proto(x)
        if not (np.isfinite(histo.min) and np.isfinite(histo.max)):   # (min and max carry any NaN or inf)
            what = "Nan" if np.isnan(x).any() else "Infinity"
            raise invalid(node, f"{what} in summary histogram for: {node.name}")
        s = summary_pb2.Summary()
        s.value.add(tag=_text(tag), histo=histo)
        return s.SerializeToString()
    return run


register("HistogramSummary", _scalar_string, _histogram_kernel, grad=None, dtypes={1: ("values", REAL)})


# -- ImageSummary ---------------------------------------------------------------------------------
_IMAGE_DTYPES = (dtypes.uint8, dtypes.float32, dtypes.float16, dtypes.float64)


def image_summary(tag, tensor, max_images=3, bad_color=None, name=None):
    """ImageSummary(tag, tensor [batch, h, w, 1|3|4], max_images=3, bad_color=red): the first
    max_images images as PNG, tagged 'tag/image' or 'tag/image/i'."""
    attrs = {"max_images": int(max_images)}
    if bad_color is not None:
        attrs["bad_color"] = np.asarray(bad_color, dtype=np.uint8)
    return make_op("ImageSummary", [convert_to_tensor(tag, dtype=dtypes.string), convert_to_tensor(tensor)], attrs,
                   name=name or "ImageSummary").outputs[0]


def _image_infer(op):
    if op.get_attr("max_images") < 1:
        raise ValueError(f"ImageSummary: max_images must be at least 1, got {op.get_attr('max_images')}")
    shape = op.inputs[1].shape
    if shape.ndims is not None and (shape.ndims != 4 or shape[3].value not in (None, 1, 3, 4)):
        raise ValueError(f"Tensor must be 4-D with last dim 1, 3, or 4, not {shape}")
    return _scalar_string(op)


def _image_kernel(node, ctx):
    max_images = int(node.attr["max_images"])
    bad = node.attr.get("bad_color")
    bad_color = np.asarray([255, 0, 0, 255] if bad is None else bad, dtype=np.uint8).reshape(-1)

    def run(tag, tensor):
        x = np.asarray(tensor)
        if x.ndim != 4 or x.shape[3] not in (1, 3, 4):
            raise invalid(node, f"Tensor must be 4-D with last dim 1, 3, or 4, not {list(x.shape)}")
        if x.dtype != np.uint8 and bad_color.size < x.shape[3]:
            raise invalid(node, f"bad_color must have at least {x.shape[3]} channels, got {bad_color.size}")
        base, s = _text(tag), summary_pb2.Summary()
        for i in range(min(max_images, x.shape[0])):
            img = x[i] if x.dtype == np.uint8 else normalize_image(x[i], bad_color)
            v = s.value.add(tag=f"{base}/image/{i}" if max_images > 1 else f"{base}/image")
            v.image.height, v.image.width, v.image.colorspace = x.shape[1], x.shape[2], x.shape[3]
            v.image.encoded_image_string = png(img)
        return s.SerializeToString()
    return run


register("ImageSummary", _image_infer, _image_kernel, grad=None, dtypes={1: ("tensor", _IMAGE_DTYPES)})


# -- AudioSummaryV2 -------------------------------------------------------------------------------
def audio_summary_v2(tag, tensor, sample_rate, max_outputs=3, name=None):
    """AudioSummaryV2(tag, tensor [batch, frames(, channels)], sample_rate, max_outputs=3): the
    first max_outputs clips as 16-bit WAV, tagged 'tag/audio' or 'tag/audio/i'."""
    return make_op("AudioSummaryV2", [convert_to_tensor(tag, dtype=dtypes.string),
                                      convert_to_tensor(tensor, dtype=dtypes.float32),
                                      convert_to_tensor(sample_rate, dtype=dtypes.float32)],
                   {"max_outputs": int(max_outputs)}, name=name or "AudioSummaryV2").outputs[0]


def _audio_infer(op):
    if op.get_attr("max_outputs") < 1:
        raise ValueError(f"AudioSummaryV2: max_outputs must be at least 1, got {op.get_attr('max_outputs')}")
    return _scalar_string(op)


def _audio_kernel(node, ctx):
    max_outputs = int(node.attr["max_outputs"])

    def run(tag, tensor, sample_rate):
        x = np.asarray(tensor, dtype=np.float32)
        if x.ndim not in (2, 3):
            raise invalid(node, f"Shape must be rank 2 or 3: {list(x.shape)}")
        rate = float(sample_rate)
        if not rate > 0:
            raise invalid(node, f"sample_rate must be > 0, got {rate}")
        if x.ndim == 2:
            x = x[:, :, None]
        rate_int = max(1, int(round(rate)))  # lrintf: to nearest, ties to even
        base, s = _text(tag), summary_pb2.Summary()
        for i in range(min(max_outputs, x.shape[0])):
            v = s.value.add(tag=f"{base}/audio/{i}" if max_outputs > 1 else f"{base}/audio")
            v.audio.sample_rate, v.audio.num_channels, v.audio.length_frames = rate, x.shape[2], x.shape[1]
            v.audio.content_type = "audio/wav"
            v.audio.encoded_audio_string = wav(x[i], rate_int)
        return s.SerializeToString()
    return run


register("AudioSummaryV2", _audio_infer, _audio_kernel, grad=None)


# -- TensorSummaryV2 ------------------------------------------------------------------------------
def tensor_summary_v2(tag, tensor, serialized_summary_metadata, name=None):
    """TensorSummaryV2(tag, tensor, serialized_summary_metadata): the tensor as a TensorProto."""
    return make_op("TensorSummaryV2", [convert_to_tensor(tag, dtype=dtypes.string), convert_to_tensor(tensor),
                                       convert_to_tensor(serialized_summary_metadata, dtype=dtypes.string)],
                   name=name or "TensorSummaryV2").outputs[0]


def _tensor_summary_kernel(node, ctx):
    def run(tag, tensor, metadata):
        s = summary_pb2.Summary()
        v = s.value.add(tag=_text(tag))
        raw = metadata.item() if isinstance(metadata, np.ndarray) else metadata
        try:
            v.metadata.ParseFromString(raw if isinstance(raw, bytes) else str(raw).encode())
        except DecodeError:
            raise invalid(node, "serialized_summary_metadata is not a SummaryMetadata protocol buffer") from None
        try:
            v.tensor.CopyFrom(to_proto(tensor))
        except TypeError as e:
            raise invalid(node, str(e)) from None
        return s.SerializeToString()
    return run


register("TensorSummaryV2", _scalar_string, _tensor_summary_kernel, grad=None)


# -- MergeSummary ---------------------------------------------------------------------------------
def merge_summary(inputs, name=None):
    """MergeSummary(inputs): the values of serialized Summary strings (or vectors of them), in
    order; a tag seen twice is InvalidArgument."""
    inputs = [convert_to_tensor(i, dtype=dtypes.string) for i in inputs]
    return make_op("MergeSummary", inputs, name=name or "MergeSummary").outputs[0]


def _merge_kernel(node, ctx):
    def run(*inputs):
        out, seen = summary_pb2.Summary(), set()
        for value in inputs:
            for raw in np.asarray(value, dtype=object).reshape(-1):
                s = summary_pb2.Summary()
                try:
                    s.ParseFromString(raw if isinstance(raw, bytes) else str(raw).encode())
                except DecodeError:
                    raise invalid(node, "Could not parse one of the summary inputs") from None
                for v in s.value:
                    if v.tag and v.tag in seen:
                        raise invalid(node, f"Duplicate tag {v.tag} found in summary inputs")
                    seen.add(v.tag)
                    out.value.add().CopyFrom(v)
        return out.SerializeToString()
    return run


register("MergeSummary", _scalar_string, _merge_kernel, grad=None)
