"""TensorFlow's protocol buffer messages, one import for the whole package.

Most are TensorBoard's compiled copies of TF's `.proto` files (`tensorboard.compat.proto`: the
same fields and numbers, so the same bytes and text as TF's). The few TensorBoard does not ship
are declared here from TF's `.proto` sources, field for field: `SavedModel`
(tensorflow/core/protobuf/saved_model.proto), `QueueRunnerDef` (queue_runner.proto),
`BundleHeaderProto` and `BundleEntryProto` (tensor_bundle.proto, a checkpoint index's records),
`TensorSliceProto` (tensor_slice.proto), `GraphNodeProto`, `MultiGraphNodeProto` and `AdviceProto`
(tfprof_output.proto, what tf.profiler's views and advisor return) and `ServerDef`
(tensorflow_server.proto; its field 7,
`cluster_device_filters`, is left out: tensorweave applies no device filters, and a ServerDef of TF's
carrying them parses, the field kept as unknown bytes) and `DeviceAttributes` (device_attributes.proto,
without its `locality`) and `BenchmarkEntries` (test_log.proto's benchmark records, which
tf.test.Benchmark writes). An enum field travels as the int32 it is on the wire.

TF's public proto classes that no module of tensorweave defines its own use of are declared public
here (tf.MetaGraphDef, tf.TensorInfo, tf.LogMessage, tf.train.SaverDef, tf.train.ClusterDef, tf.train.JobDef,
tf.train.ServerDef).
"""
from __future__ import annotations

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, wrappers_pb2
from tensorboard.compat.proto import (attr_value_pb2, cluster_pb2, config_pb2, event_pb2, function_pb2, graph_pb2,  # noqa: F401
                                      meta_graph_pb2, node_def_pb2, saver_pb2, summary_pb2, tensor_pb2,
                                      tensor_shape_pb2, tfprof_log_pb2, trackable_object_graph_pb2, types_pb2,
                                      variable_pb2, versions_pb2)

from tensorweave.framework.tf_export import tf_export

_F = descriptor_pb2.FieldDescriptorProto
_OPTIONAL, _REPEATED = _F.LABEL_OPTIONAL, _F.LABEL_REPEATED
_MAP = -1   # not a protobuf label: _declare's mark of a map field


def _declare(file_name: str, messages: dict, dependencies: tuple = ()) -> dict:
    """Message classes (package tensorweave) from `messages` = {name: [(field, number, type,
    label, type_name[, oneof]), ...]}; a field naming a oneof is its only member (presence kept).
    A map field is (field, number, key type, _MAP, value message type name); a message named
    "Outer.Inner" is nested in Outer (declared before it)."""
    package = "tensorweave"
    proto = descriptor_pb2.FileDescriptorProto(name=file_name, package=package, syntax="proto3",
                                               dependency=list(dependencies))
    declared: dict = {}
    for name, fields in messages.items():
        parent, _, own = name.rpartition(".")   # "Outer.Inner": a message nested in one declared before it
        msg = declared[parent].nested_type.add(name=own) if parent else proto.message_type.add(name=name)
        declared[name] = msg
        for field, number, kind, label, type_name, *oneof in fields:
            if label == _MAP:   # protoc's form of map<K, V>: a repeated nested XxxEntry(key, value)
                entry = msg.nested_type.add(name="".join(w.title() for w in field.split("_")) + "Entry")
                entry.options.map_entry = True
                entry.field.add(name="key", number=1, type=kind, label=_OPTIONAL)
                entry.field.add(name="value", number=2, type=_F.TYPE_MESSAGE, label=_OPTIONAL, type_name=type_name)
                kind, label, type_name = _F.TYPE_MESSAGE, _REPEATED, f".{package}.{name}.{entry.name}"
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

_int64_fields = [("run_count", 21), ("exec_micros", 2), ("accelerator_exec_micros", 17), ("cpu_exec_micros", 18),
                 ("requested_bytes", 3), ("peak_bytes", 24), ("residual_bytes", 25), ("output_bytes", 26),
                 ("parameters", 4), ("float_ops", 13), ("total_definition_count", 23), ("total_run_count", 22),
                 ("total_exec_micros", 6), ("total_accelerator_exec_micros", 19), ("total_cpu_exec_micros", 20),
                 ("total_requested_bytes", 7), ("total_peak_bytes", 27), ("total_residual_bytes", 28),
                 ("total_output_bytes", 29), ("total_parameters", 8), ("total_float_ops", 14)]
_multi_int64_fields = [("exec_micros", 2), ("accelerator_exec_micros", 12), ("cpu_exec_micros", 13),
                       ("requested_bytes", 3), ("peak_bytes", 16), ("residual_bytes", 17), ("output_bytes", 18),
                       ("parameters", 4), ("float_ops", 5), ("total_exec_micros", 6),
                       ("total_accelerator_exec_micros", 14), ("total_cpu_exec_micros", 15),
                       ("total_requested_bytes", 7), ("total_peak_bytes", 19), ("total_residual_bytes", 20),
                       ("total_output_bytes", 21), ("total_parameters", 8), ("total_float_ops", 9)]
_tfprof = _declare("tensorweave/tfprof_output.proto", {
    "TFProfTensorProto": [("dtype", 1, _F.TYPE_INT32, _OPTIONAL, ""),
                          ("value_double", 2, _F.TYPE_DOUBLE, _REPEATED, ""),
                          ("value_int64", 3, _F.TYPE_INT64, _REPEATED, ""),
                          ("value_str", 4, _F.TYPE_STRING, _REPEATED, "")],
    "GraphNodeProto": [("name", 1, _F.TYPE_STRING, _OPTIONAL, ""),
                       ("tensor_value", 15, _F.TYPE_MESSAGE, _OPTIONAL, ".tensorweave.TFProfTensorProto")]
                      + [(field, number, _F.TYPE_INT64, _OPTIONAL, "") for field, number in _int64_fields]
                      + [("devices", 10, _F.TYPE_STRING, _REPEATED, ""),
                         ("shapes", 11, _F.TYPE_MESSAGE, _REPEATED, ".tensorboard.TensorShapeProto"),
                         ("input_shapes", 16, _F.TYPE_INT32, _MAP, ".tensorboard.TensorShapeProto"),
                         ("children", 12, _F.TYPE_MESSAGE, _REPEATED, ".tensorweave.GraphNodeProto")],
    "MultiGraphNodeProto": [("name", 1, _F.TYPE_STRING, _OPTIONAL, "")]
                           + [(field, number, _F.TYPE_INT64, _OPTIONAL, "") for field, number in _multi_int64_fields]
                           + [("graph_nodes", 10, _F.TYPE_MESSAGE, _REPEATED, ".tensorweave.GraphNodeProto"),
                              ("children", 11, _F.TYPE_MESSAGE, _REPEATED, ".tensorweave.MultiGraphNodeProto")],
    "AdviceProto": [("checkers", 1, _F.TYPE_STRING, _MAP, ".tensorweave.AdviceProto.Checker")],
    "AdviceProto.Checker": [("reports", 2, _F.TYPE_STRING, _REPEATED, "")],
}, (tensor_shape_pb2.DESCRIPTOR.name,))
GraphNodeProto = _tfprof["GraphNodeProto"]
tf_export("profiler.GraphNodeProto")(GraphNodeProto)
MultiGraphNodeProto = _tfprof["MultiGraphNodeProto"]   # what the op (and code) view of tf.profiler gives
tf_export("profiler.MultiGraphNodeProto")(MultiGraphNodeProto)
AdviceProto = _tfprof["AdviceProto"]   # tf.profiler.advise's reports, by checker
tf_export("profiler.AdviceProto")(AdviceProto)
OpLogProto = tfprof_log_pb2.OpLogProto
tf_export("profiler.OpLogProto")(OpLogProto)

TrackableObjectGraph = trackable_object_graph_pb2.TrackableObjectGraph   # an object-based checkpoint's graph

MetaGraphDef = meta_graph_pb2.MetaGraphDef
tf_export("MetaGraphDef")(MetaGraphDef)
TensorInfo = meta_graph_pb2.TensorInfo
tf_export("TensorInfo")(TensorInfo)
SaverDef = saver_pb2.SaverDef
tf_export("train.SaverDef")(SaverDef)
LogMessage = event_pb2.LogMessage
tf_export("LogMessage")(LogMessage)

DeviceAttributes = _declare("tensorweave/device_attributes.proto", {"DeviceAttributes": [
    ("name", 1, _F.TYPE_STRING, _OPTIONAL, ""),
    ("device_type", 2, _F.TYPE_STRING, _OPTIONAL, ""),
    ("memory_limit", 4, _F.TYPE_INT64, _OPTIONAL, ""),
    ("incarnation", 6, _F.TYPE_FIXED64, _OPTIONAL, ""),
    ("physical_device_desc", 7, _F.TYPE_STRING, _OPTIONAL, ""),
]})["DeviceAttributes"]


_benchmarks = _declare("tensorweave/test_log.proto", {
    "EntryValue": [("double_value", 1, _F.TYPE_DOUBLE, _OPTIONAL, "", "kind_double"),
                   ("string_value", 2, _F.TYPE_STRING, _OPTIONAL, "", "kind_string")],
    "MetricEntry": [("name", 1, _F.TYPE_STRING, _OPTIONAL, ""), ("value", 2, _F.TYPE_DOUBLE, _OPTIONAL, ""),
                    ("min_value", 3, _F.TYPE_MESSAGE, _OPTIONAL, ".google.protobuf.DoubleValue"),
                    ("max_value", 4, _F.TYPE_MESSAGE, _OPTIONAL, ".google.protobuf.DoubleValue")],
    "BenchmarkEntry": [("name", 1, _F.TYPE_STRING, _OPTIONAL, ""), ("iters", 2, _F.TYPE_INT64, _OPTIONAL, ""),
                       ("cpu_time", 3, _F.TYPE_DOUBLE, _OPTIONAL, ""), ("wall_time", 4, _F.TYPE_DOUBLE, _OPTIONAL, ""),
                       ("throughput", 5, _F.TYPE_DOUBLE, _OPTIONAL, ""),
                       ("extras", 6, _F.TYPE_STRING, _MAP, ".tensorweave.EntryValue"),
                       ("metrics", 7, _F.TYPE_MESSAGE, _REPEATED, ".tensorweave.MetricEntry")],
    "BenchmarkEntries": [("entry", 1, _F.TYPE_MESSAGE, _REPEATED, ".tensorweave.BenchmarkEntry")],
}, (wrappers_pb2.DESCRIPTOR.name,))
BenchmarkEntries = _benchmarks["BenchmarkEntries"]
