"""TensorFlow's protocol buffer messages, one import for the whole package.

Most are TensorBoard's compiled copies of TF's `.proto` files (`tensorboard.compat.proto`: the
same fields and numbers, so the same bytes and text as TF's). The few TensorBoard does not ship
are declared here from TF's `.proto` sources, field for field: `SavedModel`
(tensorflow/core/protobuf/saved_model.proto), `QueueRunnerDef` (queue_runner.proto),
`BundleHeaderProto` and `BundleEntryProto` (tensor_bundle.proto, a checkpoint index's records),
`TensorSliceProto` (tensor_slice.proto) and `ServerDef` (tensorflow_server.proto; its field 7,
`cluster_device_filters`, is left out: tensorweave applies no device filters, and a ServerDef of TF's
carrying them parses, the field kept as unknown bytes). An enum field travels as the int32 it is on the wire.

TF's public proto classes that no module of tensorweave defines its own use of are declared public
here (tf.MetaGraphDef, tf.TensorInfo, tf.LogMessage, tf.train.SaverDef, tf.train.ClusterDef, tf.train.JobDef,
tf.train.ServerDef).
"""
from __future__ import annotations

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from tensorboard.compat.proto import (attr_value_pb2, cluster_pb2, config_pb2, event_pb2, function_pb2, graph_pb2,  # noqa: F401
                                      meta_graph_pb2, node_def_pb2, saver_pb2, tensor_pb2, tensor_shape_pb2,
                                      types_pb2, variable_pb2, versions_pb2)

from tensorweave.framework.tf_export import tf_export

_F = descriptor_pb2.FieldDescriptorProto


def _declare(file_name: str, messages: dict, dependencies: tuple = ()) -> dict:
    """Message classes (package tensorweave) from `messages` = {name: [(field, number, type,
    label, type_name[, oneof]), ...]}; a field naming a oneof is its only member (presence kept)."""
    package = "tensorweave"
    proto = descriptor_pb2.FileDescriptorProto(name=file_name, package=package, syntax="proto3",
                                               dependency=list(dependencies))
    for name, fields in messages.items():
        msg = proto.message_type.add(name=name)
        for field, number, kind, label, type_name, *oneof in fields:
            f = msg.field.add(name=field, number=number, type=kind, label=label)
            if type_name:
                f.type_name = type_name
            if oneof:
                f.oneof_index = len(msg.oneof_decl)
                msg.oneof_decl.add(name=oneof[0])
    pool = descriptor_pool.Default()
    try:
        pool.FindFileByName(file_name)
    except KeyError:
        pool.Add(proto)
    return {name: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{package}.{name}"))
            for name in messages}


_OPTIONAL, _REPEATED = _F.LABEL_OPTIONAL, _F.LABEL_REPEATED

SavedModel = _declare("tensorweave/saved_model.proto", {"SavedModel": [
    ("saved_model_schema_version", 1, _F.TYPE_INT64, _OPTIONAL, ""),
    ("meta_graphs", 2, _F.TYPE_MESSAGE, _REPEATED, ".tensorboard.MetaGraphDef"),
]}, (meta_graph_pb2.DESCRIPTOR.name,))["SavedModel"]

QueueRunnerDef = _declare("tensorweave/queue_runner.proto", {"QueueRunnerDef": [
    ("queue_name", 1, _F.TYPE_STRING, _OPTIONAL, ""),
    ("enqueue_op_name", 2, _F.TYPE_STRING, _REPEATED, ""),
    ("close_op_name", 3, _F.TYPE_STRING, _OPTIONAL, ""),
    ("cancel_op_name", 4, _F.TYPE_STRING, _OPTIONAL, ""),
    ("queue_closed_exception_types", 5, _F.TYPE_INT32, _REPEATED, ""),
]})["QueueRunnerDef"]

_bundle = _declare("tensorweave/tensor_bundle.proto", {
    "TensorSliceExtent": [("start", 1, _F.TYPE_INT64, _OPTIONAL, ""),
                          ("length", 2, _F.TYPE_INT64, _OPTIONAL, "", "has_length")],
    "TensorSliceProto": [("extent", 1, _F.TYPE_MESSAGE, _REPEATED, ".tensorweave.TensorSliceExtent")],
    "BundleHeaderProto": [("num_shards", 1, _F.TYPE_INT32, _OPTIONAL, ""),
                          ("endianness", 2, _F.TYPE_INT32, _OPTIONAL, ""),     # 0 little, 1 big
                          ("version", 3, _F.TYPE_MESSAGE, _OPTIONAL, ".tensorboard.VersionDef")],
    "BundleEntryProto": [("dtype", 1, _F.TYPE_INT32, _OPTIONAL, ""),
                         ("shape", 2, _F.TYPE_MESSAGE, _OPTIONAL, ".tensorboard.TensorShapeProto"),
                         ("shard_id", 3, _F.TYPE_INT32, _OPTIONAL, ""),
                         ("offset", 4, _F.TYPE_INT64, _OPTIONAL, ""),
                         ("size", 5, _F.TYPE_INT64, _OPTIONAL, ""),
                         ("crc32c", 6, _F.TYPE_FIXED32, _OPTIONAL, ""),
                         ("slices", 7, _F.TYPE_MESSAGE, _REPEATED, ".tensorweave.TensorSliceProto")],
}, (versions_pb2.DESCRIPTOR.name, tensor_shape_pb2.DESCRIPTOR.name))
TensorSliceProto, BundleHeaderProto, BundleEntryProto = (
    _bundle["TensorSliceProto"], _bundle["BundleHeaderProto"], _bundle["BundleEntryProto"])

ServerDef = _declare("tensorweave/tensorflow_server.proto", {"ServerDef": [
    ("cluster", 1, _F.TYPE_MESSAGE, _OPTIONAL, ".tensorboard.ClusterDef"),
    ("job_name", 2, _F.TYPE_STRING, _OPTIONAL, ""),
    ("task_index", 3, _F.TYPE_INT32, _OPTIONAL, ""),
    ("default_session_config", 4, _F.TYPE_MESSAGE, _OPTIONAL, ".tensorboard.ConfigProto"),
    ("protocol", 5, _F.TYPE_STRING, _OPTIONAL, ""),
    ("port", 6, _F.TYPE_INT32, _OPTIONAL, ""),
    ("replica", 8, _F.TYPE_INT32, _OPTIONAL, ""),
]}, (cluster_pb2.DESCRIPTOR.name, config_pb2.DESCRIPTOR.name))["ServerDef"]
tf_export("train.ServerDef")(ServerDef)
ClusterDef = cluster_pb2.ClusterDef
tf_export("train.ClusterDef")(ClusterDef)
JobDef = cluster_pb2.JobDef
tf_export("train.JobDef")(JobDef)

MetaGraphDef = meta_graph_pb2.MetaGraphDef
tf_export("MetaGraphDef")(MetaGraphDef)
TensorInfo = meta_graph_pb2.TensorInfo
tf_export("TensorInfo")(TensorInfo)
SaverDef = saver_pb2.SaverDef
tf_export("train.SaverDef")(SaverDef)
LogMessage = event_pb2.LogMessage
tf_export("LogMessage")(LogMessage)
