"""tf.train.Example and its parts as protobuf messages.

The message types are TensorFlow's `feature.proto` and `example.proto` (package `tensorflow`,
same field numbers, so the bytes are TensorFlow's). They are built at import from a
FileDescriptorProto assembled here, in a private descriptor pool: no generated code, no protoc
at build time, and no clash with a TensorFlow loaded in the same process.
"""
from __future__ import annotations

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from tensorweave.framework.tf_export import tf_export


_F = descriptor_pb2.FieldDescriptorProto
_REPEATED, _OPTIONAL = _F.LABEL_REPEATED, _F.LABEL_OPTIONAL


def _field(msg, name: str, number: int, ftype: int, label: int = _OPTIONAL, type_name: str = "",
           packed: bool = False, oneof: int = -1) -> None:
    f = msg.field.add(name=name, number=number, type=ftype, label=label)
    if type_name:
        f.type_name = type_name
    if packed:
        f.options.packed = True
    if oneof >= 0:
        f.oneof_index = oneof


def _map_entry(msg, entry: str, value_type: str) -> None:
    e = msg.nested_type.add(name=entry)
    e.options.map_entry = True
    _field(e, "key", 1, _F.TYPE_STRING)
    _field(e, "value", 2, _F.TYPE_MESSAGE, type_name=value_type)


def _file() -> descriptor_pb2.FileDescriptorProto:
    fd = descriptor_pb2.FileDescriptorProto(name="tensorflow/core/example/example.proto", package="tensorflow",
                                            syntax="proto3")
    _field(fd.message_type.add(name="BytesList"), "value", 1, _F.TYPE_BYTES, _REPEATED)
    _field(fd.message_type.add(name="FloatList"), "value", 1, _F.TYPE_FLOAT, _REPEATED, packed=True)
    _field(fd.message_type.add(name="Int64List"), "value", 1, _F.TYPE_INT64, _REPEATED, packed=True)
    feature = fd.message_type.add(name="Feature")
    feature.oneof_decl.add(name="kind")
    for name, number, kind in (("bytes_list", 1, "BytesList"), ("float_list", 2, "FloatList"),
                               ("int64_list", 3, "Int64List")):
        _field(feature, name, number, _F.TYPE_MESSAGE, type_name=f".tensorflow.{kind}", oneof=0)
    features = fd.message_type.add(name="Features")
    _map_entry(features, "FeatureEntry", ".tensorflow.Feature")
    _field(features, "feature", 1, _F.TYPE_MESSAGE, _REPEATED, ".tensorflow.Features.FeatureEntry")
    _field(fd.message_type.add(name="FeatureList"), "feature", 1, _F.TYPE_MESSAGE, _REPEATED, ".tensorflow.Feature")
    lists = fd.message_type.add(name="FeatureLists")
    _map_entry(lists, "FeatureListEntry", ".tensorflow.FeatureList")
    _field(lists, "feature_list", 1, _F.TYPE_MESSAGE, _REPEATED, ".tensorflow.FeatureLists.FeatureListEntry")
    _field(fd.message_type.add(name="Example"), "features", 1, _F.TYPE_MESSAGE, type_name=".tensorflow.Features")
    seq = fd.message_type.add(name="SequenceExample")
    _field(seq, "context", 1, _F.TYPE_MESSAGE, type_name=".tensorflow.Features")
    _field(seq, "feature_lists", 2, _F.TYPE_MESSAGE, type_name=".tensorflow.FeatureLists")
    return fd


POOL = descriptor_pool.DescriptorPool()
POOL.Add(_file())


def _cls(name: str):
    return message_factory.GetMessageClass(POOL.FindMessageTypeByName(f"tensorflow.{name}"))


BytesList = _cls("BytesList")
tf_export("train.BytesList")(BytesList)
FloatList = _cls("FloatList")
tf_export("train.FloatList")(FloatList)
Int64List = _cls("Int64List")
tf_export("train.Int64List")(Int64List)
Feature = _cls("Feature")
tf_export("train.Feature")(Feature)
Features = _cls("Features")
tf_export("train.Features")(Features)
FeatureList = _cls("FeatureList")
tf_export("train.FeatureList")(FeatureList)
FeatureLists = _cls("FeatureLists")
tf_export("train.FeatureLists")(FeatureLists)
Example = _cls("Example")
tf_export("train.Example")(Example)
SequenceExample = _cls("SequenceExample")
tf_export("train.SequenceExample")(SequenceExample)
