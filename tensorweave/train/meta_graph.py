"""Meta graphs in our own plain-data format: a graph with its ops' typed attributes and output
specs, its function library, its collections and the saver's names, written as msgpack (or
JSON with `as_text`). Nothing in them is unpickled or evaluated.

export_scoped_meta_graph / import_scoped_meta_graph do the work; tf.train.export_meta_graph
and import_meta_graph (saver.py) add the Saver. Collections keep Variables (as VariableDefs
with their slice info), Tensors and Operations (by name), strings, numbers, and the kinds other
modules register with `register_proto_function` (queue runners, ...).
"""
from __future__ import annotations

import base64
import json
import logging
import time
from dataclasses import asdict, dataclass, field
from typing import Callable, Optional

import msgpack
import numpy as np

import tensorweave.ops  # noqa: F401  (registers every kernel: an imported graph names ops this process never built)
from tensorweave.framework import dtypes
from tensorweave.framework.api import GraphKeys
from tensorweave.framework.graph import Operation, Tensor, get_default_graph
from tensorweave.framework.graph_def import FunctionDef, NodeDef, graph_to_graph_def
from tensorweave.framework.importer import ImportedFunction, OpRecord, import_ops, prefixed
from tensorweave.framework.shapes import TensorShape
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.checkpoint.bundle import write_atomically
from tensorweave.ops.state.variables import SaveSliceInfo, Variable, VariableDef


FORMAT = "tensorweave-meta-graph"
_log = logging.getLogger("tensorweave")
_PROTO_FUNCTIONS: dict = {}   # collection name -> (to_proto(item, export_scope), from_proto(data, import_scope))


def register_proto_function(collection_name: str, to_proto: Callable, from_proto: Callable) -> None:
    """How items of collection `collection_name` travel in a meta graph: to_proto(item,
    export_scope) -> plain data (None skips the item), from_proto(data, import_scope) -> item."""
    _PROTO_FUNCTIONS[collection_name] = (to_proto, from_proto)


@tf_export("train.SaverDef")
@dataclass
class SaverDef:
    """The names that drive a Saver through a session (TF's SaverDef): feed the checkpoint path
    to `filename_tensor_name`, run `save_tensor_name` to save or `restore_op_name` to restore."""
    filename_tensor_name: str = ""
    save_tensor_name: str = ""
    restore_op_name: str = ""
    max_to_keep: int = 0
    sharded: bool = False
    keep_checkpoint_every_n_hours: float = 0.0
    version: int = 2
    LEGACY = 0
    V1 = 1
    V2 = 2

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "SaverDef":
        return cls(**{k: d[k] for k in cls.__dataclass_fields__ if k in d})


@dataclass
class MetaGraphDef:
    """A meta graph: meta_info_def, graph_def (op records and function library), saver_def and
    collection_def, as plain data."""
    meta_info_def: dict = field(default_factory=dict)
    graph_def: dict = field(default_factory=dict)
    saver_def: Optional[SaverDef] = None
    collection_def: dict = field(default_factory=dict)

    def HasField(self, name: str) -> bool:
        return bool(getattr(self, name))

    def to_dict(self) -> dict:
        return {"format": FORMAT, "meta_info_def": self.meta_info_def, "graph_def": self.graph_def,
                "saver_def": self.saver_def.to_dict() if self.saver_def else None,
                "collection_def": self.collection_def}

    @classmethod
    def from_dict(cls, d: dict) -> "MetaGraphDef":
        if not isinstance(d, dict) or d.get("format") != FORMAT:
            raise ValueError("Not a tensorweave meta graph")
        sd = d.get("saver_def")
        return cls(d.get("meta_info_def") or {}, d.get("graph_def") or {}, SaverDef.from_dict(sd) if sd else None,
                   d.get("collection_def") or {})

    def SerializeToString(self) -> bytes:
        return msgpack.packb(self.to_dict(), use_bin_type=True)

    @classmethod
    def FromString(cls, data: bytes) -> "MetaGraphDef":
        return cls.from_dict(msgpack.unpackb(data, raw=False, strict_map_key=False))


# -- typed attribute values -----------------------------------------------------------------------
def encode_value(v):
    """A graph attribute value as plain data that keeps its type."""
    if isinstance(v, dtypes.DType):
        return {"dtype": v.name}
    if isinstance(v, TensorShape):
        return {"shape": None if v.ndims is None else [d.value for d in v]}
    if hasattr(v, "_as_function_def"):
        return {"func": v.name}
    if isinstance(v, (np.ndarray, np.generic)):
        a = np.asarray(v)
        if a.dtype == object:
            return {"array": {"dtype": "string", "shape": list(a.shape),
                              "items": [x if isinstance(x, bytes) else str(x).encode() for x in a.reshape(-1)]}}
        return {"array": {"dtype": a.dtype.name, "shape": list(a.shape), "data": np.ascontiguousarray(a).tobytes()}}
    if isinstance(v, (list, tuple)):
        return {"list": [encode_value(x) for x in v]}
    if isinstance(v, dict):
        return {"dict": {k: encode_value(x) for k, x in v.items()}}
    if isinstance(v, bytes):
        return {"bytes": v}
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    raise TypeError(f"Attribute value {v!r} of type {type(v).__name__} cannot be exported")


def decode_value(v, library: dict):
    if not isinstance(v, dict):
        return v
    (kind, x), = v.items()
    if kind == "dtype":
        return dtypes.as_dtype(x)
    if kind == "shape":
        return TensorShape(x)
    if kind == "func":
        return ImportedFunction(x, library)
    if kind == "array":
        if x["dtype"] == "string":
            out = np.empty(len(x["items"]), dtype=object)
            out[:] = list(x["items"])
            return out.reshape(x["shape"])
        a = np.frombuffer(x["data"], dtype=x["dtype"]).reshape(x["shape"])
        return a if a.ndim else a[()]
    if kind == "list":
        return [decode_value(y, library) for y in x]
    if kind == "dict":
        return {k: decode_value(y, library) for k, y in x.items()}
    if kind == "bytes":
        return x
    raise ValueError(f"Unknown attribute kind '{kind}' in meta graph")


# -- export ---------------------------------------------------------------------------------------
def _strip(name: str, export_scope: Optional[str]) -> Optional[str]:
    if not export_scope:
        return name
    prefix = export_scope + "/"
    return name[len(prefix):] if name.startswith(prefix) else None


def _strip_input(inp: str, export_scope: Optional[str]) -> Optional[str]:
    ctrl = inp.startswith("^")
    stripped = _strip(inp.lstrip("^"), export_scope)
    return None if stripped is None else ("^" + stripped if ctrl else stripped)


def _op_record(op: Operation, export_scope, clear_devices: bool) -> Optional[dict]:
    name = _strip(op.name, export_scope)
    if name is None:
        return None
    inputs = [t._as_node_def_input() for t in op._inputs] + ["^" + c.name for c in op._control_inputs]
    stripped = [_strip_input(i, export_scope) for i in inputs]
    if any(s is None for s in stripped):
        raise ValueError(f"Op {op.name} has inputs outside export_scope '{export_scope}'")
    attrs = dict(op._attrs)
    if export_scope and "_class" in attrs:
        attrs["_class"] = [f"loc:@{_strip(c[5:], export_scope) or c[5:]}" if c.startswith("loc:@") else c
                           for c in attrs["_class"]]
    return {"op": op.type, "name": name, "inputs": stripped, "device": "" if clear_devices else op.device,
            "attrs": {k: encode_value(v) for k, v in attrs.items()},
            "outputs": [[t.dtype.name, None if t.shape.ndims is None else [d.value for d in t.shape]]
                        for t in op._outputs]}


def _function_dict(f: FunctionDef) -> dict:
    return {"name": f.name, "inputs": list(f.inputs), "outputs": list(f.outputs),
            "node": [dict(n.to_dict(), attr={k: encode_value(v) for k, v in n.attr.items()}) for n in f.node]}


def _collection_item(key: str, item, export_scope):
    if key in _PROTO_FUNCTIONS:
        data = _PROTO_FUNCTIONS[key][0](item, export_scope)
        return None if data is None else {"kind": "proto", "value": data}
    if isinstance(item, Variable):
        vdef = item.to_proto(export_scope)
        if vdef is None:
            return None
        info = item._get_save_slice_info()
        return {"kind": "variable", "def": asdict(vdef), "slice": info.to_proto(export_scope) if info else None}
    if isinstance(item, (Tensor, Operation)):
        name = _strip(item.name, export_scope)
        return None if name is None else {"kind": "tensor" if isinstance(item, Tensor) else "op", "name": name}
    if isinstance(item, (bool, int, float, str, bytes)):
        return {"kind": "value", "value": item}
    return "skip"


def export_scoped_meta_graph(filename=None, graph_def=None, graph=None, export_scope=None, as_text=False,
                             unbound_inputs_col_name="unbound_inputs", clear_devices=False, saver_def=None,
                             clear_extraneous_savers=False, strip_default_attrs=False, meta_info_def=None,
                             collection_list=None, **kwargs) -> tuple:
    """(MetaGraphDef, {name: Variable}) of `graph` (default graph), restricted to `export_scope`
    and written to `filename` when given."""
    graph = graph or get_default_graph()
    records = [r for r in (_op_record(op, export_scope, clear_devices) for op in graph.get_operations())
               if r is not None]
    library = graph_to_graph_def(graph).library
    collections: dict = {}
    keys = collection_list if collection_list is not None else graph.get_all_collection_keys()
    for key in keys:
        items = []
        for item in graph.get_collection(key):
            enc = _collection_item(key, item, export_scope)
            if enc == "skip":
                _log.warning("Issue encountered when serializing %s: %s items are not exported.", key,
                             type(item).__name__)
                break
            if enc is not None:
                items.append(enc)
        else:
            if items:
                collections[key] = items
    info = {"meta_graph_version": "", "tensorflow_version": "1.15 (tensorweave)", "stripped_default_attrs": False,
            "exported_at": time.time()}
    info.update(meta_info_def or {})
    meta = MetaGraphDef(info, {"node": records, "library": {k: _function_dict(f) for k, f in library.items()}},
                        saver_def, collections)
    if filename:
        write_meta_graph(meta, filename, as_text)
    var_list = {}
    for v in graph.get_collection(GraphKeys.GLOBAL_VARIABLES) + graph.get_collection(GraphKeys.LOCAL_VARIABLES):
        name = _strip(v.op.name, export_scope)
        if name is not None:
            var_list[name] = v
    return meta, var_list


def _jsonable(x):
    if isinstance(x, bytes):
        return {"__b64__": base64.b64encode(x).decode()}
    if isinstance(x, dict):
        return {k: _jsonable(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_jsonable(v) for v in x]
    return x


def _from_json(x):
    if isinstance(x, dict):
        if set(x) == {"__b64__"}:
            return base64.b64decode(x["__b64__"])
        return {k: _from_json(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_from_json(v) for v in x]
    return x


def write_meta_graph(meta: MetaGraphDef, filename: str, as_text: bool = False) -> None:
    data = json.dumps(_jsonable(meta.to_dict()), sort_keys=True).encode() if as_text else meta.SerializeToString()

    def write(tmp):
        with open(tmp, "wb") as f:
            f.write(data)
    write_atomically(filename, write)


def read_meta_graph_file(filename: str) -> MetaGraphDef:
    """The MetaGraphDef in `filename` (msgpack or JSON)."""
    try:
        with open(filename, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        raise IOError(f"File {filename} does not exist.") from None
    try:
        if data[:1] == b"{":
            return MetaGraphDef.from_dict(_from_json(json.loads(data)))
        return MetaGraphDef.FromString(data)
    except (ValueError, msgpack.ExtraData, msgpack.FormatError, msgpack.StackError) as e:
        raise IOError(f"Cannot parse file {filename}: {e}") from None


# -- import ---------------------------------------------------------------------------------------
def _decode_function(d: dict, library: dict) -> FunctionDef:
    nodes = tuple(NodeDef.from_dict(dict(n, attr={k: decode_value(v, library) for k, v in n["attr"].items()}))
                  for n in d["node"])
    return FunctionDef(d["name"], tuple(d["inputs"]), tuple(d["outputs"]), nodes)


def _collection_value(key: str, enc: dict, graph, import_scope, variables: dict):
    kind = enc["kind"]
    if kind == "proto":
        return _PROTO_FUNCTIONS[key][1](enc["value"], import_scope) if key in _PROTO_FUNCTIONS else None
    if kind == "variable":
        vdef = VariableDef(**enc["def"])
        v = variables.get(vdef.variable_name)
        if v is None:
            v = variables[vdef.variable_name] = Variable(variable_def=vdef, import_scope=import_scope)
            if enc.get("slice"):
                v._set_save_slice_info(SaveSliceInfo(save_slice_info_def=enc["slice"], import_scope=import_scope))
        return v
    if kind == "tensor":
        return graph.get_tensor_by_name(prefixed(enc["name"], import_scope))
    if kind == "op":
        return graph.get_operation_by_name(prefixed(enc["name"], import_scope))
    return enc["value"]


def import_scoped_meta_graph(meta_graph_or_file, clear_devices=False, graph=None, import_scope=None,
                             input_map=None, unbound_inputs_col_name="unbound_inputs",
                             restore_collections_predicate=(lambda key: True), return_elements=None) -> dict:
    """Adds the meta graph's ops and collections to `graph` (default graph) under
    `import_scope`; returns {name: Variable} of the imported variables."""
    meta = meta_graph_or_file if isinstance(meta_graph_or_file, MetaGraphDef) \
        else read_meta_graph_file(meta_graph_or_file)
    graph = graph or get_default_graph()
    library: dict = {}
    for name, f in (meta.graph_def.get("library") or {}).items():
        library[name] = _decode_function(f, library)
    records = [OpRecord(r["op"], r["name"], tuple(r["inputs"]), r.get("device", ""),
                        {k: decode_value(v, library) for k, v in r["attrs"].items()},
                        tuple((dt, dims) for dt, dims in r["outputs"]))
               for r in meta.graph_def.get("node", [])]
    with graph.as_default():
        import_ops(graph, records, import_scope, input_map, clear_devices)
        variables: dict = {}
        for key, items in meta.collection_def.items():
            if not restore_collections_predicate(key):
                continue
            for enc in items:
                value = _collection_value(key, enc, graph, import_scope, variables)
                if value is not None:
                    graph.add_to_collection(key, value)
    return {v.op.name: v for v in variables.values()}
