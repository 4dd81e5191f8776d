"""tf.summary's functions: scalar, histogram, image, audio, text, tensor_summary, merge,
merge_all, get_summary_description. Tags follow op names as TF forms them: the name cleaned of
characters TensorBoard does not allow, inside a name scope of that name (uniquified, so a
second `loss` becomes `loss_1`), prefixed by `family/` when a family is given."""
from __future__ import annotations

import contextlib
import json
import logging
import re

from google.protobuf import json_format

from tensorweave.framework import dtypes
from tensorweave.framework.api import GraphKeys, add_to_collection, get_collection, name_scope
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tf_export import tf_export
from tensorweave.framework.tf_protos import summary_pb2
from tensorweave.ops.summary.summary_ops import (audio_summary_v2, histogram_summary, image_summary, merge_summary,
                                                 scalar_summary, tensor_summary_v2)

Summary = summary_pb2.Summary
tf_export("summary.Summary", "Summary")(Summary)
SummaryDescription = summary_pb2.SummaryDescription
tf_export("summary.SummaryDescription")(SummaryDescription)
SummaryMetadata = summary_pb2.SummaryMetadata
tf_export("summary.SummaryMetadata", "SummaryMetadata")(SummaryMetadata)
HistogramProto = summary_pb2.HistogramProto
tf_export("summary.HistogramProto", "HistogramProto")(HistogramProto)

_log = logging.getLogger("tensorweave")
_INVALID_TAG_CHARACTERS = re.compile(r"[^-/\w\.]")


_SUMMARY_V2_COLLECTION = "_SUMMARY_V2"   # TF's GraphKeys._SUMMARY_COLLECTION


def clean_tag(name):
    """The name with characters a tag may not hold replaced by '_' and leading '/' removed."""
    if name is not None:
        new_name = _INVALID_TAG_CHARACTERS.sub("_", name).lstrip("/")
        if new_name != name:
            _log.info("Summary name %s is illegal; using %s instead.", name, new_name)
            name = new_name
    return name


@contextlib.contextmanager
def summary_scope(name, family=None, default_name=None, values=None):
    """Yields (tag, scope) for a summary op: the scope is the name scope `family/name` (or
    `name`), the tag that scope without its trailing '/', prefixed by the family again."""
    name, family = clean_tag(name), clean_tag(family)
    base = name if family is None else f"{family}/{name}"
    with name_scope(base, default_name, values=values) as scope:
        tag = scope.rstrip("/") if family is None else f"{family}/{scope.rstrip('/')}"
        yield tag, scope


def _collect(val, collections, default_collections) -> None:
    for key in (default_collections if collections is None else collections):
        add_to_collection(key, val)


@tf_export("summary.scalar")
def scalar(name, tensor, collections=None, family=None):
    """tf.summary.scalar(name, tensor, collections=None, family=None): a serialized Summary of
    one simple_value, added to the SUMMARIES collection."""
    with summary_scope(name, family, values=[tensor]) as (tag, scope):
        val = scalar_summary(tag, tensor, name=scope)
        _collect(val, collections, [GraphKeys.SUMMARIES])
    return val


@tf_export("summary.histogram")
def histogram(name, values, collections=None, family=None):
    """tf.summary.histogram(name, values, collections=None, family=None)."""
    with summary_scope(name, family, values=[values], default_name="HistogramSummary") as (tag, scope):
        val = histogram_summary(tag, values, name=scope)
        _collect(val, collections, [GraphKeys.SUMMARIES])
    return val


@tf_export("summary.image")
def image(name, tensor, max_outputs=3, collections=None, family=None):
    """tf.summary.image(name, tensor, max_outputs=3, collections=None, family=None): images
    [batch, h, w, 1|3|4] (uint8 as they are; floats scaled as TF does) as PNG."""
    with summary_scope(name, family, values=[tensor]) as (tag, scope):
        val = image_summary(tag, tensor, max_images=max_outputs, name=scope)
        _collect(val, collections, [GraphKeys.SUMMARIES])
    return val


@tf_export("summary.audio")
def audio(name, tensor, sample_rate, max_outputs=3, collections=None, family=None):
    """tf.summary.audio(name, tensor, sample_rate, max_outputs=3, collections=None, family=None):
    clips [batch, frames(, channels)] in [-1, 1] as 16-bit WAV."""
    with summary_scope(name, family=family, values=[tensor]) as (tag, scope):
        rate = convert_to_tensor(sample_rate, dtype=dtypes.float32, name="sample_rate")
        val = audio_summary_v2(tag, tensor, rate, max_outputs=max_outputs, name=scope)
        _collect(val, collections, [GraphKeys.SUMMARIES])
    return val


@tf_export("summary.tensor_summary")
def tensor_summary(name, tensor, summary_description=None, collections=None, summary_metadata=None, family=None,
                   display_name=None):
    """tf.summary.tensor_summary(name, tensor, summary_description=None, collections=None,
    summary_metadata=None, family=None, display_name=None): the tensor itself, with metadata."""
    if summary_metadata is None:
        summary_metadata = SummaryMetadata()
    if summary_description is not None:
        summary_metadata.summary_description = summary_description
    if display_name is not None:
        summary_metadata.display_name = display_name
    serialized = summary_metadata.SerializeToString()
    with summary_scope(name, family, values=[tensor]) as (tag, scope):
        val = tensor_summary_v2(tag, tensor, serialized, name=scope)
        _collect(val, collections, [GraphKeys.SUMMARIES])
    return val


@tf_export("summary.text")
def text(name, tensor, collections=None):
    """tf.summary.text(name, tensor, collections=None): a string tensor for TensorBoard's text
    tab (a tensor summary with the 'text' plugin's metadata)."""
    tensor = convert_to_tensor(tensor)
    if tensor.dtype != dtypes.string:
        raise ValueError(f"Expected tensor {tensor.name} to have dtype string, got {tensor.dtype}")
    metadata = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name="text"))
    return tensor_summary(name=name, tensor=tensor, summary_metadata=metadata, collections=collections)


@tf_export("summary.merge")
def merge(inputs, collections=None, name=None):
    """tf.summary.merge(inputs, collections=None, name=None): one Summary of all the values of
    `inputs` (serialized Summary tensors); duplicate tags fail at run time."""
    with name_scope(name, "Merge", inputs):
        val = merge_summary(inputs, name=name)
        _collect(val, collections, [])
    return val


@tf_export("summary.merge_all")
def merge_all(key=GraphKeys.SUMMARIES, scope=None, name=None):
    """tf.summary.merge_all(key=GraphKeys.SUMMARIES, scope=None, name=None): merge of the
    collection `key`, or None when it is empty."""
    ops = get_collection(key, scope=scope)
    return merge(ops, name=name) if ops else None


@tf_export("summary.get_summary_description")
def get_summary_description(node_def) -> SummaryDescription:
    """tf.summary.get_summary_description(node_def): the SummaryDescription of a TensorSummary
    node (its 'description' attr, JSON)."""
    if node_def.op != "TensorSummary":
        raise ValueError(f"Can't get_summary_description on {node_def.op}")
    raw = node_def.attr.get("description", "")
    raw = raw.decode() if isinstance(raw, bytes) else str(raw)
    description = SummaryDescription()
    json_format.Parse(raw or json.dumps({}), description)
    return description


@tf_export("summary.all_v2_summary_ops")
def all_v2_summary_ops() -> list:
    """tf.summary.all_v2_summary_ops(): the ops of the default graph's V2-summary collection
    ("_SUMMARY_V2", which TF 2's and tf.contrib.summary's ops join; TF1's tf.summary ops are in
    GraphKeys.SUMMARIES instead). tensorweave builds only TF1 summaries, so this holds what a
    program adds to that collection itself."""
    return get_collection(_SUMMARY_V2_COLLECTION)
