"""Meta graphs as TensorFlow's MetaGraphDef protocol buffer (framework/tf_protos.py: the same
messages, bytes and text as TF's), so TensorFlow reads ours and we read TF's `.meta` files.

A MetaGraphDef holds meta_info_def (versions, tags), the GraphDef (the one writer,
`Graph.as_graph_def(add_shapes=True)` of ops/graph_export.py; read back by the one importer,
ops/graph_import.py), the SaverDef and the collections as TF's CollectionDefs: Tensors and
Operations by name (node_list), ints, floats and strings as their lists, and the kinds registered
with `register_proto_function` as serialized protos (bytes_list): Variables as VariableDefs
(registered here), Savers as SaverDefs (saver.py), QueueRunners as QueueRunnerDefs
(queue_runner.py). A collection of another kind is left out with TF's warning.

export_scoped_meta_graph / import_scoped_meta_graph do the work; tf.train.export_meta_graph
and import_meta_graph (saver.py) add the Saver.
"""
from __future__ import annotations

import logging
import re
import weakref
from typing import Callable, Optional

from google.protobuf import message, text_format

from tensorweave.framework.api import GraphKeys
from tensorweave.framework.graph import get_default_graph
from tensorweave.framework.graph_def import parse_input
from tensorweave.framework.importer import prefixed
from tensorweave.framework.tf_protos import MetaGraphDef, graph_pb2, variable_pb2
from tensorweave.ops.attr_value_proto import to_attr_value
from tensorweave.ops.checkpoint.bundle import write_atomically
from tensorweave.ops.graph_import import import_graph_def
from tensorweave.ops.state.variables import Variable
from tensorweave.ops.tf_op_defs import TF_ATTR_DEFAULTS

# What meta_info_def says wrote the file: the TF API tensorweave implements.
TENSORFLOW_VERSION = "1.15.0"
TENSORFLOW_GIT_VERSION = "tensorweave"
# TF's savers' op types: a scope holding one is a saver's (clear_extraneous_savers).
_SAVE_AND_RESTORE_OPS = ("SaveV2", "Save", "SaveSlice", "Restore", "RestoreV2", "RestoreSlice")

_log = logging.getLogger("tensorweave")
_PROTO_FUNCTIONS: dict = {}   # collection name -> (proto_type, to_proto, from_proto)


def register_proto_function(collection_name: str, proto_type=None, to_proto: Optional[Callable] = None,
                            from_proto: Optional[Callable] = None) -> None:
    """How items of collection `collection_name` travel in a meta graph (TF's
    ops.register_proto_function): to_proto(item, export_scope=...) -> a `proto_type` message
    (None leaves the item out), from_proto(message, import_scope=...) -> the item."""
    _PROTO_FUNCTIONS[collection_name] = (proto_type, to_proto, from_proto)


# TF's variable collections: their items are VariableDefs, one Variable per definition on import.
_VARIABLE_COLLECTIONS = (GraphKeys.GLOBAL_VARIABLES, GraphKeys.LOCAL_VARIABLES, GraphKeys.METRIC_VARIABLES,
                         GraphKeys.MODEL_VARIABLES, GraphKeys.TRAINABLE_VARIABLES, GraphKeys.MOVING_AVERAGE_VARIABLES,
                         GraphKeys.CONCATENATED_VARIABLES, GraphKeys.TRAINABLE_RESOURCE_VARIABLES)
for _key in _VARIABLE_COLLECTIONS + (GraphKeys.GLOBAL_STEP,):
    register_proto_function(_key, variable_pb2.VariableDef, lambda v, export_scope=None: v.to_proto(export_scope),
                            Variable.from_proto)


# -- names in and out of a scope ------------------------------------------------------------------
def _strip(name: str, export_scope: Optional[str]) -> Optional[str]:
    """`name` relative to export_scope; None when outside it."""
    if not export_scope:
        return name
    prefix = export_scope + "/"
    return name[len(prefix):] if name.startswith(prefix) else None


def _strip_input(inp: str, export_scope: Optional[str]) -> Optional[str]:
    stripped = _strip(inp.lstrip("^"), export_scope)
    return None if stripped is None else ("^" + stripped if inp.startswith("^") else stripped)


def _scope_of(name: str) -> str:
    return name.rpartition("/")[0]


def _extraneous_saver_nodes(graph_def, saver_def) -> set:
    """Names of the nodes of savers other than `saver_def`'s (TF's clear_extraneous_savers):
    every node under a scope that holds a save or restore op."""
    keep = set()
    if saver_def is not None:
        keep = {_scope_of(parse_input(saver_def.save_tensor_name)[0]) + "/",
                _scope_of(parse_input(saver_def.restore_op_name)[0]) + "/"}
    saver_nodes = {n.name for n in graph_def.node if n.op in _SAVE_AND_RESTORE_OPS}
    scopes = {_scope_of(n) + "/" for n in saver_nodes} - {n + "/" for n in saver_nodes} - keep
    return {n.name for n in graph_def.node if any(n.name.startswith(s) for s in scopes)}


def _scoped_graph_def(graph_def, export_scope, clear_devices: bool, excluded: set):
    """graph_def restricted to export_scope (names relative to it), without `excluded` nodes and,
    with clear_devices, without devices. ValueError for an op whose input lies outside the scope."""
    if not export_scope and not clear_devices and not excluded:
        return graph_def
    out = graph_pb2.GraphDef()
    out.versions.CopyFrom(graph_def.versions)
    out.library.CopyFrom(graph_def.library)
    for node in graph_def.node:
        name = _strip(node.name, export_scope)
        if name is None or node.name in excluded:
            continue
        new = out.node.add()
        new.CopyFrom(node)
        new.name = name
        if clear_devices:
            new.device = ""
        del new.input[:]
        for inp in node.input:
            stripped = _strip_input(inp, export_scope)
            if stripped is None:
                raise ValueError(f"Op '{node.name}' has input '{inp}' outside export_scope '{export_scope}'")
            new.input.append(stripped)
        if export_scope and "_class" in node.attr:
            kept = [_strip(s.decode()[5:], export_scope) for s in node.attr["_class"].list.s]
            new.attr["_class"].list.ClearField("s")
            new.attr["_class"].list.s.extend([f"loc:@{n}".encode() for n in kept if n is not None])
    return out


def _strip_default_attrs(graph_def) -> None:
    """Removes the attributes whose value is the op's default (TF's strip_default_attrs), in the
    graph's nodes and in its functions' nodes."""
    nodes = list(graph_def.node) + [n for f in graph_def.library.function for n in f.node_def]
    for node in nodes:
        for key, default in TF_ATTR_DEFAULTS.get(node.op, {}).items():
            if key in node.attr and node.attr[key] == to_attr_value(default):
                del node.attr[key]


# -- collections ----------------------------------------------------------------------------------
def _in_scope(item, export_scope) -> bool:
    name = item if isinstance(item, str) else getattr(item, "name", None)
    return not export_scope or not isinstance(name, str) or name.startswith(export_scope)


def add_collection_def(meta_graph_def, key: str, graph=None, export_scope=None, exclude_nodes=None) -> None:
    """Adds collection `key` of `graph` to meta_graph_def.collection_def as TF does; a collection
    TF's CollectionDef cannot hold is left out with TF's warning."""
    graph = graph or get_default_graph()
    items = [x for x in graph.get_collection(key) if _in_scope(x, export_scope)
             and not (exclude_nodes and getattr(x, "name", None) in exclude_nodes)]
    if not items:
        return
    col = meta_graph_def.collection_def[key]
    try:
        if key in _PROTO_FUNCTIONS:
            proto_type, to_proto, _ = _PROTO_FUNCTIONS[key]
            for x in items:
                proto = to_proto(x, export_scope=export_scope)
                if proto is not None:
                    if not isinstance(proto, proto_type):
                        raise TypeError(f"{type(proto).__name__} is not a {proto_type.__name__}")
                    col.bytes_list.value.append(proto.SerializeToString())
        elif isinstance(items[0], (str, bytes)):
            col.bytes_list.value.extend([x.encode() if isinstance(x, str) else x for x in items])
        elif isinstance(items[0], int):
            col.int64_list.value.extend(items)
        elif isinstance(items[0], float):
            col.float_list.value.extend(items)
        else:
            col.node_list.value.extend([_strip(x.name, export_scope) or x.name for x in items])
    except Exception as e:  # noqa: BLE001 - TF leaves out any collection it cannot serialize
        _log.warning("Issue encountered when serializing %s.\nType is unsupported, or the types of the items don't "
                     "match field type in CollectionDef. Note this is a warning and probably safe to ignore.\n%s",
                     key, e)
        del meta_graph_def.collection_def[key]


# -- export ---------------------------------------------------------------------------------------
def create_meta_info_def(meta_info_def=None, strip_default_attrs: bool = False):
    """meta_info_def (a MetaGraphDef.MetaInfoDef, or a new one) with the versions TF writes."""
    info = MetaGraphDef.MetaInfoDef()
    if meta_info_def is not None:
        info.CopyFrom(meta_info_def)
    info.tensorflow_version = TENSORFLOW_VERSION
    info.tensorflow_git_version = TENSORFLOW_GIT_VERSION
    info.stripped_default_attrs = strip_default_attrs
    return info


def export_scoped_meta_graph(filename=None, graph_def=None, graph=None, export_scope=None, as_text=False,
                             unbound_inputs_col_name="unbound_inputs", clear_devices=False, saver_def=None,
                             clear_extraneous_savers=False, strip_default_attrs=False, save_debug_info=False,
                             meta_info_def=None, collection_list=None, **kwargs) -> tuple:
    """(MetaGraphDef proto, {variable name "x:0" relative to export_scope: Variable}) of `graph`
    (default graph), restricted to `export_scope` (an op reading a tensor outside it is a
    ValueError), written to `filename` (binary, or text with `as_text`) when given."""
    del unbound_inputs_col_name, save_debug_info, kwargs
    graph = graph or get_default_graph()
    if graph_def is None:
        graph_def = graph.as_graph_def(add_shapes=True)
    excluded = _extraneous_saver_nodes(graph_def, saver_def) if clear_extraneous_savers else set()
    graph_def = _scoped_graph_def(graph_def, export_scope, clear_devices, excluded)
    meta = MetaGraphDef(meta_info_def=create_meta_info_def(meta_info_def, strip_default_attrs), graph_def=graph_def)
    if strip_default_attrs:
        _strip_default_attrs(meta.graph_def)
    if saver_def is not None:
        meta.saver_def.CopyFrom(saver_def)
    keys = collection_list if collection_list is not None else graph.get_all_collection_keys()
    for key in keys:
        if not (clear_extraneous_savers and key == GraphKeys.SAVERS):
            add_collection_def(meta, key, graph, export_scope, excluded)
    if filename:
        write_meta_graph(meta, filename, as_text)
    var_list = {}
    for v in graph.get_collection(GraphKeys.GLOBAL_VARIABLES):
        name = _strip(v.name, export_scope)
        if name is not None:
            var_list[name] = v
    return meta, var_list


def write_meta_graph(meta, filename: str, as_text: bool = False) -> None:
    """Writes the MetaGraphDef to `filename` atomically: binary (map entries sorted: the same
    graph writes the same bytes), or protobuf text with as_text."""
    _write_bytes(filename, text_format.MessageToString(meta).encode() if as_text
                 else meta.SerializeToString(deterministic=True))


def _write_bytes(filename: str, data: bytes) -> None:
    def write(tmp):
        with open(tmp, "wb") as f:
            f.write(data)
    write_atomically(filename, write)


# The meta graph a Saver writes beside each checkpoint, serialized once per finalized graph:
# {graph: (key, collections, bytes)}. The key holds what the bytes are made of: the graph's
# version and mutation count (a new or changed op), the SaverDef, strip_default_attrs, and the
# objects each collection holds (`collections` keeps them alive, so that their ids stay theirs).
_saver_meta_graphs: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def write_saver_meta_graph(filename: str, graph, saver_def, strip_default_attrs: bool = False) -> None:
    """Writes export_scoped_meta_graph(graph=graph, saver_def=saver_def, ...) to `filename`, as
    Saver.save does with every checkpoint: for a finalized graph (a MonitoredSession's) the bytes
    are made once and written again while its ops, collections and the SaverDef stay the same."""
    if not graph.finalized:
        export_scoped_meta_graph(filename=filename, graph=graph, saver_def=saver_def,
                                 strip_default_attrs=strip_default_attrs)
        return
    collections = tuple((k, tuple(graph.get_collection(k))) for k in graph.get_all_collection_keys())
    key = (graph.version, graph._mutations, saver_def.SerializeToString() if saver_def is not None else None,
           bool(strip_default_attrs), tuple((k, tuple(map(id, items))) for k, items in collections))
    cached = _saver_meta_graphs.get(graph)
    if cached is None or cached[0] != key:
        meta, _ = export_scoped_meta_graph(graph=graph, saver_def=saver_def, strip_default_attrs=strip_default_attrs)
        cached = _saver_meta_graphs[graph] = (key, collections, meta.SerializeToString(deterministic=True))
    _write_bytes(filename, cached[2])


def read_meta_graph_file(filename: str):
    """The MetaGraphDef in `filename` (binary or text, as TF reads it). IOError for a missing
    file or one that is neither."""
    try:
        with open(filename, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        raise IOError(f"File {filename} does not exist.") from None
    meta = MetaGraphDef()
    try:
        meta.ParseFromString(data)
        return meta
    except message.DecodeError:
        pass
    try:
        text_format.Merge(data.decode("utf-8"), meta)
        return meta
    except (text_format.ParseError, UnicodeDecodeError) as e:
        raise IOError(f"Cannot parse file {filename}: neither a binary nor a text MetaGraphDef ({e})") from None


# -- import ---------------------------------------------------------------------------------------
def _without_devices(graph_def):
    gd = graph_pb2.GraphDef()
    gd.CopyFrom(graph_def)
    for node in list(gd.node) + [n for f in gd.library.function for n in f.node_def]:
        node.device = ""
    return gd


def _restore_collection(graph, key: str, col, scope: str, variables: dict) -> None:
    kind = col.WhichOneof("kind")
    if kind is None:
        _log.error("Cannot identify data type for collection %s. Skipping.", key)
        return
    proto_type, _, from_proto = _PROTO_FUNCTIONS.get(key, (None, None, None))
    if from_proto and kind == "bytes_list":
        # as in TF, a variable in several collections is one Variable (`variables`: VariableDef bytes -> it)
        shared = variables if key in _VARIABLE_COLLECTIONS + (GraphKeys.GLOBAL_STEP,) else {}
        for value in col.bytes_list.value:
            item = shared.get(value)
            if item is None:
                proto = proto_type()
                proto.ParseFromString(value)
                item = shared[value] = from_proto(proto, import_scope=scope)
            graph.add_to_collection(key, item)
    elif kind == "node_list":
        for name in col.node_list.value:
            graph.add_to_collection(key, graph.as_graph_element(prefixed(name, scope)))
    elif kind == "int64_list":
        for value in col.int64_list.value:
            graph.add_to_collection(key, int(value))
    else:
        for value in getattr(col, kind).value:
            graph.add_to_collection(key, value)


def import_scoped_meta_graph_with_return_elements(meta_graph_or_file, clear_devices=False, graph=None,
                                                  import_scope=None, input_map=None,
                                                  unbound_inputs_col_name="unbound_inputs",
                                                  restore_collections_predicate=(lambda key: True),
                                                  return_elements=None) -> tuple:
    """(var_list, imported return elements): adds the meta graph's GraphDef to `graph` (default
    graph) through tf.import_graph_def, named `import_scope/...` (made unique as a name scope is),
    with `input_map`, then restores its collections (those `restore_collections_predicate`
    accepts); var_list maps the imported global variables' names ("x:0", relative to the
    scope) to them."""
    del unbound_inputs_col_name
    meta = meta_graph_or_file if isinstance(meta_graph_or_file, MetaGraphDef) \
        else read_meta_graph_file(meta_graph_or_file)
    graph = graph or get_default_graph()
    graph_def = _without_devices(meta.graph_def) if clear_devices else meta.graph_def
    with graph.as_default():
        scope = graph.unique_name(import_scope or "", mark_as_used=False)
        returned = import_graph_def(graph_def, name=import_scope or scope, input_map=input_map,
                                    return_elements=return_elements)
        variables: dict = {}
        for key in sorted(meta.collection_def):
            if restore_collections_predicate(key):
                _restore_collection(graph, key, meta.collection_def[key], scope, variables)
    var_list = {}
    for v in graph.get_collection(GraphKeys.GLOBAL_VARIABLES, scope=scope or None):
        var_list[re.sub(f"^{re.escape(scope)}/", "", v.name) if scope else v.name] = v
    return var_list, returned


def import_scoped_meta_graph(meta_graph_or_file, clear_devices=False, graph=None, import_scope=None,
                             input_map=None, unbound_inputs_col_name="unbound_inputs",
                             restore_collections_predicate=(lambda key: True)) -> dict:
    """Adds the meta graph's ops and collections to `graph` (default graph) under
    `import_scope`; returns {name "x:0" relative to the scope: Variable} of its global
    variables (see import_scoped_meta_graph_with_return_elements)."""
    return import_scoped_meta_graph_with_return_elements(
        meta_graph_or_file, clear_devices, graph, import_scope, input_map, unbound_inputs_col_name,
        restore_collections_predicate)[0]
