"""One version of a SavedModel, loaded into its own Session, whose signatures can be run: what
`tensorweave serve` answers requests with and `tensorweave saved_model run` runs.

A SavedModel is TF's directory: saved_model.pb (a SavedModel proto: MetaGraphDefs, each with
its tags, graph, saver and signature_def map), variables/ (a TF V2 checkpoint) and assets/.
`Servable.run` checks a request's inputs against the signature (names, dtype, shape) with TF
Serving's messages and raises tensorweave's OpErrors (InvalidArgumentError, ...), whose codes
rest_api.py turns into HTTP statuses. Session.run is safe from several threads (each step has its
own values; plans are built under a lock): requests run in parallel.
"""
from __future__ import annotations

import os
import threading
from typing import Iterable, Mapping, Optional

import numpy as np

from tensorweave.client.session import Session
from tensorweave.framework import dtypes, errors
from tensorweave.framework.graph import Graph
from tensorweave.framework.tf_protos import types_pb2
from tensorweave.saved_model import constants, loader
from tensorweave.saved_model.signature_constants import DEFAULT_SERVING_SIGNATURE_DEF_KEY
from tensorweave.saved_model.tag_constants import SERVING


def contains_saved_model(export_dir: str) -> bool:
    """Whether `export_dir` holds a complete SavedModel: its saved_model.pb (or .pbtxt), and the
    variables' index where it has a variables directory (a version still being copied in has
    its data files before its index)."""
    if not loader.maybe_saved_model_directory(export_dir):
        return False
    variables = os.path.join(export_dir, constants.VARIABLES_DIRECTORY)
    return not os.path.isdir(variables) or os.path.isfile(
        os.path.join(variables, constants.VARIABLES_FILENAME + ".index"))


def tag_set(tags) -> set:
    """A tag-set as a set: 'serve,gpu' or an iterable of tags; empty tags are dropped (so '' is
    the empty tag-set)."""
    if isinstance(tags, str):
        tags = tags.split(",")
    return {t.strip() for t in tags if t and t.strip()}


def get_meta_graph_def(saved_model, tags):
    """The MetaGraphDef of `saved_model` (a proto or a directory) whose tags are exactly `tags`;
    RuntimeError with the message of TF's saved_model_utils.get_meta_graph_def (saved_model_cli's),
    listing the tag-sets there are."""
    if isinstance(saved_model, str):
        saved_model = loader.parse_saved_model(saved_model)
    wanted = tag_set(tags)
    for meta_graph in saved_model.meta_graphs:
        if set(meta_graph.meta_info_def.tags) == wanted:
            return meta_graph
    valid = [",".join(m.meta_info_def.tags) for m in saved_model.meta_graphs]
    shown = tags if isinstance(tags, str) else ",".join(tags)
    raise RuntimeError(f"MetaGraphDef associated with tag-set {shown} could not be found in the SavedModel. "
                       f"Please use one of the following tag-sets: {valid}")


def _shape_text(dims) -> str:
    return "[" + ",".join(str(d) for d in dims) + "]"


def _signature_dims(info) -> Optional[list]:
    """A TensorInfo's dimensions (-1 unknown), None for an unknown rank."""
    if info.tensor_shape.unknown_rank:
        return None
    return [d.size for d in info.tensor_shape.dim]


_DTYPE_NAMES = {enum: name[3:].lower() for name, enum in types_pb2.DataType.items()}


def dtype_name(enum: int) -> str:
    """TF's DataTypeString of a DataType enum ('float', 'int64', 'string')."""
    return _DTYPE_NAMES.get(enum, str(enum))


def as_input(info, key: str, value) -> np.ndarray:
    """`value` as the array a signature input `info` takes: converted to its dtype (as a TF1
    Session converts a feed), its shape checked against the signature's. InvalidArgumentError
    naming the input when either does not fit."""
    np_dtype = np.dtype(dtypes.as_dtype(info.dtype).as_numpy_dtype)
    try:
        arr = np.asarray(value)
        if np_dtype.kind == "O":   # a string tensor: an object array of bytes
            if arr.dtype.kind not in "OSU":
                raise TypeError(arr.dtype.name)
            if arr.dtype.kind != "O":
                flat = [s.encode("utf-8") if isinstance(s, str) else bytes(s) for s in arr.reshape(-1).tolist()]
                arr = np.empty(arr.shape, dtype=object)
                arr.reshape(-1)[:] = flat
        elif arr.dtype != np_dtype:
            if arr.dtype.kind not in "biuf":
                raise TypeError(arr.dtype.name)
            arr = arr.astype(np_dtype)
    except (TypeError, ValueError) as e:
        raise errors.InvalidArgumentError(
            None, None, f"input '{key}' ({e}) cannot be converted to the signature's {dtype_name(info.dtype)} "
                        f"({info.name})") from None
    dims = _signature_dims(info)
    if dims is not None and (arr.ndim != len(dims) or any(d >= 0 and d != s for d, s in zip(dims, arr.shape))):
        raise errors.InvalidArgumentError(
            None, None, f"input '{key}' has shape {_shape_text(arr.shape)}, which is not compatible with the "
                        f"signature's {_shape_text(dims)} ({info.name})")
    return arr


class Servable:
    """One loaded version of a model: its Session and signature_def map (name -> SignatureDef)."""

    def __init__(self, session: Session, signature_defs: Mapping, name: str = "", version: int = 0):
        self.session = session
        self.signature_defs = dict(signature_defs)
        self.name, self.version = name, version
        self._lock = threading.Lock()
        self._users = 0
        self._retired = self._closed = False

    def acquire(self) -> "Servable":
        """Holds the servable for one request (until `release`): a retired one closes when its
        last request is done."""
        with self._lock:
            if self._closed:
                raise errors.UnavailableError(None, None, f"Servable {self.name} version {self.version} is unloaded")
            self._users += 1
        return self

    def release(self) -> None:
        with self._lock:
            self._users -= 1
        self._close_if_idle()

    def retire(self) -> None:
        """Closes the servable once no request holds it (a newer version took its place)."""
        with self._lock:
            self._retired = True
        self._close_if_idle()

    def _close_if_idle(self) -> None:
        with self._lock:
            if not self._retired or self._users or self._closed:
                return
            self._closed = True
        self.session.close()

    @classmethod
    def load(cls, export_dir: str, tags: Iterable = (SERVING,), name: str = "", version: int = 0) -> "Servable":
        """The SavedModel of `export_dir` loaded into a new Session on a graph of its own."""
        session = Session(graph=Graph())
        try:
            meta_graph = loader.load(session, tag_set(tags), export_dir)
        except BaseException:
            session.close()
            raise
        return cls(session, meta_graph.signature_def, name, version)

    def signature(self, signature_name: Optional[str]):
        """The SignatureDef of `signature_name` (empty: serving_default); InvalidArgumentError with
        TF Serving's message when the model has none of that name."""
        key = signature_name or DEFAULT_SERVING_SIGNATURE_DEF_KEY
        sig = self.signature_defs.get(key)
        if sig is None:
            raise errors.InvalidArgumentError(None, None, f'Serving signature name: "{key}" not found in signature def')
        return sig

    def run(self, signature_name: Optional[str], inputs: Mapping, output_keys: Optional[Iterable] = None) -> dict:
        """Runs a signature: `inputs` {input key: value} must name exactly the signature's inputs;
        returns {output key: array} for `output_keys` (default: all outputs), in sorted key order."""
        sig = self.signature(signature_name)
        sent, expected = set(inputs), set(sig.inputs)
        if sent != expected:
            extra, missing = sorted(sent - expected), sorted(expected - sent)
            raise errors.InvalidArgumentError(
                None, None, f"input size does not match signature: {len(sent)}!={len(expected)} "
                            f"len({{{','.join(sorted(sent))}}}) != len({{{','.join(sorted(expected))}}}). "
                            f"Sent extra: {{{','.join(extra)}}}. Missing but required: {{{','.join(missing)}}}.")
        keys = sorted(sig.outputs) if output_keys is None else sorted(output_keys)
        for k in keys:
            if k not in sig.outputs:
                raise errors.InvalidArgumentError(
                    None, None, f"output tensor alias not found in signature: {k} Outputs expected to be in the set "
                                f"{{{','.join(sorted(sig.outputs))}}}.")
        feeds = {sig.inputs[k].name: as_input(sig.inputs[k], k, inputs[k]) for k in sorted(inputs)}
        values = self.session.run([sig.outputs[k].name for k in keys], feeds)
        return {k: np.asarray(v) for k, v in zip(keys, values)}
