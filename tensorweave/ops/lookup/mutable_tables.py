"""Mutable lookup tables (tf.contrib.lookup.MutableHashTable, MutableDenseHashTable): TF's ops by
their names (MutableHashTableV2, MutableHashTableOfTensorsV2, MutableDenseHashTableV2,
LookupTableInsertV2, LookupTableRemoveV2, LookupTableExportV2), and tf.contrib.lookup's TF1
names for the tables of ops/lookup/tables.py (HashTable, index_table_from_*,
index_to_string_table_from_*).

A mutable table is a resource of the task its handle op is placed on, found by its shared name
(the handle op's name when none is given), as a variable is: every session of the cluster that
runs ops on it sees one table. It starts empty (no initializer); insert overwrites, remove of an
absent key is no error, and lookup gives default_value for an absent key."""
from __future__ import annotations

import numpy as np

from tensorweave.framework import dtypes, errors
from tensorweave.framework.api import GraphKeys, name_scope
from tensorweave.framework.func_graph import init_scope
from tensorweave.framework.shapes import TensorShape, unknown_shape
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.helpers import invalid, make_op
from tensorweave.ops.lookup.tables import (LINE_NUMBER, WHOLE_LINE, HashTableResource, KeyValueTensorInitializer,
                                           StaticHashTable, TextFileInitializer, _key, _table)
from tensorweave.ops.registry import register
from tensorweave.ops.state.variable_ops import colocated_with_handle

class MutableTableResource(HashTableResource):
    """A table that starts empty and takes inserts and removes; values of shape value_shape; a
    dense table refuses its empty_key and deleted_key as keys (as TF's)."""

    def __init__(self, name, key_dtype, value_dtype, value_shape=(), reserved_keys=None):
        super().__init__(name, key_dtype, value_dtype)
        self.entries, self.value_shape, self.reserved_keys = {}, tuple(value_shape), reserved_keys

    def _check_keys(self, node, keys: np.ndarray) -> list:
        keys = [_key(k) for k in keys.reshape(-1)]
        if self.reserved_keys is not None:
            for k in keys:
                for which, reserved in zip(("empty_key", "deleted_key"), self.reserved_keys):
                    if k == reserved:
                        raise invalid(node, f"Using the {which} as a table key is not allowed")
        return keys

    def _check_values(self, node, what: str, keys_shape: tuple, values: np.ndarray) -> None:
        want = tuple(keys_shape) + self.value_shape
        if values.shape != want:
            raise invalid(node, f"Expected shape {list(want)} for {what}, got {list(values.shape)}")

    def insert(self, node, keys: np.ndarray, values: np.ndarray) -> None:
        self._check_values(node, "value tensor", keys.shape, values)
        flat_keys = self._check_keys(node, keys)
        rows = values.reshape((len(flat_keys),) + self.value_shape)
        with self._lock:
            for k, v in zip(flat_keys, rows):
                self.entries[k] = v.copy()

    def remove(self, node, keys: np.ndarray) -> None:
        flat_keys = self._check_keys(node, keys)
        with self._lock:
            for k in flat_keys:
                self.entries.pop(k, None)

    def find(self, node, keys: np.ndarray, default) -> np.ndarray:
        default = np.asarray(default)
        if default.shape != self.value_shape:
            raise invalid(node, f"Expected shape {list(self.value_shape)} for default value, got "
                                f"{list(default.shape)}")
        flat_keys = self._check_keys(node, keys)
        out = np.empty((len(flat_keys),) + self.value_shape, dtype=dtypes.as_dtype(self.value_dtype).as_numpy_dtype)
        with self._lock:
            for i, k in enumerate(flat_keys):
                out[i] = self.entries.get(k, default)
        return out.reshape(keys.shape + self.value_shape)

    def import_(self, node, keys: np.ndarray, values: np.ndarray) -> None:
        """Replaces every entry by `keys` -> `values` (a checkpoint's restore)."""
        self._check_values(node, "values", keys.shape, values)
        flat_keys = self._check_keys(node, keys)
        rows = values.reshape((len(flat_keys),) + self.value_shape)
        entries = {k: v.copy() for k, v in zip(flat_keys, rows)}
        with self._lock:
            self.entries = entries

    def export(self):
        with self._lock:
            items = list(self.entries.items())
        key_type = dtypes.as_dtype(self.key_dtype).as_numpy_dtype
        keys = np.array([k for k, _ in items], dtype=object if self.key_dtype == "string" else key_type)
        values = np.empty((len(items),) + self.value_shape, dtype=dtypes.as_dtype(self.value_dtype).as_numpy_dtype)
        for i, (_, v) in enumerate(items):
            values[i] = v
        return keys.reshape(-1), values


# -- the ops -------------------------------------------------------------------------------------
def _mutable_table_kernel(node, ctx):
    shared = node.attr.get("shared_name") or node.name
    key_dtype, value_dtype = (dtypes.as_dtype(node.attr[a]).name for a in ("key_dtype", "value_dtype"))
    value_shape = tuple(TensorShape(node.attr.get("value_shape", [])).as_list())

    def run(*reserved):
        reserved_keys = tuple(_key(np.asarray(k, dtype=object).reshape(-1)[0]) for k in reserved) if reserved else None
        if reserved_keys is not None and reserved_keys[0] == reserved_keys[1]:
            raise invalid(node, "Empty and deleted keys cannot be equal")
        table = ctx.resources.lookup_or_create(
            node.attr.get("container") or "", shared,
            lambda: MutableTableResource(shared, key_dtype, value_dtype, value_shape, reserved_keys))
        if not isinstance(table, MutableTableResource) or (table.key_dtype, table.value_dtype, table.value_shape) != (
                key_dtype, value_dtype, value_shape):
            raise errors.InvalidArgumentError(node, node.name, f"Resource {shared} is not a mutable table of "
                                                               f"{key_dtype} to {value_dtype} {list(value_shape)}")
        return table
    return run


def _mutable(node, handle) -> MutableTableResource:
    table = _table(node, handle)
    if not isinstance(table, MutableTableResource):
        raise invalid(node, f"{table.name} is an immutable table: it takes no {node.op}")
    return table


def _insert_kernel(node, ctx):
    return lambda handle, keys, values: _mutable(node, handle).insert(node, np.asarray(keys, dtype=object),
                                                                      np.asarray(values))


def _remove_kernel(node, ctx):
    return lambda handle, keys: _mutable(node, handle).remove(node, np.asarray(keys, dtype=object))


def _import_kernel(node, ctx):
    return lambda handle, keys, values: _mutable(node, handle).import_(node, np.asarray(keys, dtype=object),
                                                                       np.asarray(values))


def _export_kernel(node, ctx):
    def run(handle):
        table = _table(node, handle)
        if isinstance(table, MutableTableResource):
            return table.export()
        if table.entries is None:
            raise errors.FailedPreconditionError(node, node.name, "Table not initialized.")
        return (np.array(list(table.entries), dtype=object if table.key_dtype == "string" else None),
                np.array(list(table.entries.values())))
    return run


def _handle_shape(op):
    return [(dtypes.resource, TensorShape([]))]


register("MutableHashTableV2", _handle_shape, _mutable_table_kernel, grad=None, stateful=True)
register("MutableHashTableOfTensorsV2", _handle_shape, _mutable_table_kernel, grad=None, stateful=True)
register("MutableDenseHashTableV2", _handle_shape, _mutable_table_kernel, grad=None, stateful=True)
register("LookupTableInsertV2", lambda op: [], _insert_kernel, grad=None, stateful=True)
register("LookupTableRemoveV2", lambda op: [], _remove_kernel, grad=None, stateful=True)
register("LookupTableImportV2", lambda op: [], _import_kernel, grad=None, stateful=True)
register("LookupTableExportV2", lambda op: [(op.get_attr("Tkeys"), TensorShape([None])),
                                            (op.get_attr("Tvalues"), unknown_shape())],
         _export_kernel, grad=None, stateful=True)


# -- the tables ------------------------------------------------------------------------------------
class _MutableTable:
    """What MutableHashTable and MutableDenseHashTable share: lookup, insert, remove, export, size."""

    def _make(self, op_type, inputs, attrs, key_dtype, value_dtype, default_value, name, scope_name):
        self.key_dtype, self.value_dtype = dtypes.as_dtype(key_dtype), dtypes.as_dtype(value_dtype)
        with init_scope():
            self._default_value = convert_to_tensor(default_value, dtype=self.value_dtype, name="default_value")
            self._value_shape = self._default_value.shape
            with name_scope(name, scope_name) as scope:
                self._name = scope.rstrip("/").rsplit("/", 1)[-1]
                attrs = dict(attrs, container="", shared_name="", use_node_name_sharing=True,
                             key_dtype=self.key_dtype, value_dtype=self.value_dtype)
                self._handle = make_op(op_type, [t(self) for t in inputs], attrs, name=scope).outputs[0]

    name = property(lambda self: self._name)
    resource_handle = property(lambda self: self._handle)
    default_value = property(lambda self: self._default_value)

    def _keys(self, keys):
        return convert_to_tensor(keys, dtype=self.key_dtype, name="keys")

    def size(self, name=None):
        """The number of entries (int64 scalar)."""
        with name_scope(name, f"{self._name}_Size", [self._handle]):
            return make_op("LookupTableSizeV2", [self._handle], name="SizeV2").outputs[0]

    def lookup(self, keys, name=None):
        """Each key's value (default_value where absent): shape keys.shape + the value shape."""
        with name_scope(name, f"{self._name}_lookup_table_find", [self._handle, keys]):
            keys = self._keys(keys)
            return make_op("LookupTableFindV2", [self._handle, keys, self._default_value],
                           {"Tin": self.key_dtype, "Tout": self.value_dtype}, name="LookupTableFindV2").outputs[0]

    def insert(self, keys, values, name=None):
        """An op that sets each key's value (values: keys.shape + the value shape)."""
        with name_scope(name, f"{self._name}_lookup_table_insert", [self._handle, keys, values]):
            keys = self._keys(keys)
            values = convert_to_tensor(values, dtype=self.value_dtype, name="values")
            return make_op("LookupTableInsertV2", [self._handle, keys, values],
                           {"Tin": self.key_dtype, "Tout": self.value_dtype}, name="LookupTableInsertV2")

    def remove(self, keys, name=None):
        """An op that removes the keys (absent ones are ignored)."""
        keys = convert_to_tensor(keys)
        if keys.dtype != self.key_dtype:
            raise TypeError(f"Signature mismatch. Keys must be dtype {self.key_dtype}, got {keys.dtype}.")
        with name_scope(name, f"{self._name}_lookup_table_remove", [self._handle, keys]):
            return make_op("LookupTableRemoveV2", [self._handle, keys], {"Tin": self.key_dtype},
                           name="LookupTableRemoveV2")

    def export(self, name=None):
        """(keys, values): every entry of the table, in no particular order."""
        with name_scope(name, f"{self._name}_lookup_table_export_values", [self._handle]):
            keys, values = make_op("LookupTableExportV2", [self._handle],
                                   {"Tkeys": self.key_dtype, "Tvalues": self.value_dtype},
                                   name="LookupTableExportV2").outputs
        values.set_shape(TensorShape([None]).concatenate(self._value_shape))
        return keys, values

    def _checkpointed(self, checkpoint: bool) -> None:
        """With checkpoint=True (TF's default) a Saver saves the table's entries as
        "<name>-keys" and "<name>-values" and its restore replaces them (train/saveable.py)."""
        if checkpoint:
            with init_scope():
                self._handle.graph.add_to_collection(GraphKeys.SAVEABLE_OBJECTS, self)

    def checkpoint_tensors(self) -> list:
        """[(checkpoint name, tensor)] of what a Saver saves of this table."""
        keys, values = self.export()
        return [(f"{self._name}-keys", keys), (f"{self._name}-values", values)]

    def restore_from(self, tensors: list):
        """The op that replaces the table's entries by restored (keys, values)."""
        keys, values = tensors
        with colocated_with_handle(self._handle):
            return make_op("LookupTableImportV2", [self._handle, keys, values],
                           {"Tin": self.key_dtype, "Tout": self.value_dtype}, name="table_restore")


@tf_export("contrib.lookup.MutableHashTable")
class MutableHashTable(_MutableTable):
    """tf.contrib.lookup.MutableHashTable(key_dtype, value_dtype, default_value,
    name='MutableHashTable', checkpoint=True): a table that starts empty and takes insert(keys,
    values) and remove(keys); values may be tensors (the shape of default_value)."""

    def __init__(self, key_dtype, value_dtype, default_value, name="MutableHashTable", checkpoint=True):
        shape = convert_to_tensor(default_value, dtype=value_dtype).shape if not isinstance(
            default_value, (int, float, str, bytes)) else TensorShape([])
        op_type, attrs = (("MutableHashTableOfTensorsV2", {"value_shape": shape}) if shape.ndims
                          else ("MutableHashTableV2", {}))
        self._make(op_type, [], attrs, key_dtype, value_dtype, default_value, name, "MutableHashTable")
        self._checkpointed(checkpoint)


@tf_export("contrib.lookup.MutableDenseHashTable")
class MutableDenseHashTable(_MutableTable):
    """tf.contrib.lookup.MutableDenseHashTable(key_dtype, value_dtype, default_value, empty_key,
    deleted_key, initial_num_buckets=None, name='MutableDenseHashTable', checkpoint=True): as
    MutableHashTable, over TF's open-addressing table, which reserves two keys: empty_key and
    deleted_key may not be inserted, looked up or removed. Its export gives the entries only (TF's
    gives every bucket, the unused ones holding empty_key)."""

    def __init__(self, key_dtype, value_dtype, default_value, empty_key, deleted_key, initial_num_buckets=None,
                 name="MutableDenseHashTable", checkpoint=True):
        key_dtype = dtypes.as_dtype(key_dtype)
        with init_scope():
            self._empty_key = convert_to_tensor(empty_key, dtype=key_dtype, name="empty_key")
            self._deleted_key = convert_to_tensor(deleted_key, dtype=key_dtype, name="deleted_key")
        value_shape = convert_to_tensor(default_value, dtype=value_dtype).shape
        attrs = {"value_shape": value_shape, "initial_num_buckets": int(initial_num_buckets or 131072),
                 "max_load_factor": 0.8}
        self._make("MutableDenseHashTableV2", [lambda t: t._empty_key, lambda t: t._deleted_key], attrs, key_dtype,
                   value_dtype, default_value, name, "MutableDenseHashTable")
        self._checkpointed(checkpoint)


# -- id -> string tables -------------------------------------------------------------------------
@tf_export("contrib.lookup.index_to_string_table_from_tensor")
def index_to_string_table_from_tensor(vocabulary_list, default_value="UNK", name=None):
    """tf.contrib.lookup.index_to_string_table_from_tensor(vocabulary_list, default_value='UNK',
    name=None): a table of int64 ids to the strings of vocabulary_list at those positions, others
    to default_value."""
    if vocabulary_list is None:
        raise ValueError("vocabulary_list must be specified.")
    with name_scope(name, "index_to_string"):
        values = convert_to_tensor(vocabulary_list, dtypes.string)
        n = int(np.prod(values.shape.as_list()))
        init = KeyValueTensorInitializer(np.arange(n, dtype=np.int64), values, name="table_init")
        return StaticHashTable(init, default_value)


@tf_export("contrib.lookup.index_to_string_table_from_file")
def index_to_string_table_from_file(vocabulary_file, vocab_size=None, default_value="UNK", name=None,
                                    delimiter="\t"):
    """tf.contrib.lookup.index_to_string_table_from_file(vocabulary_file, vocab_size=None,
    default_value='UNK', name=None): a table of each line number (int64, from 0) of
    vocabulary_file to the line (its first vocab_size lines when given), others to default_value."""
    if not vocabulary_file:
        raise ValueError("vocabulary_file must be specified and must not be empty.")
    if vocab_size is not None and vocab_size < 1:
        raise ValueError(f"vocab_size must be greater than 0, got {vocab_size}.")
    with name_scope(name, "index_to_string"):
        init = TextFileInitializer(vocabulary_file, dtypes.int64, LINE_NUMBER, dtypes.string, WHOLE_LINE,
                                   vocab_size=vocab_size, delimiter=delimiter)
        return StaticHashTable(init, default_value)


@tf_export("contrib.lookup.index_to_string")
def index_to_string(tensor, mapping, default_value="UNK", name=None):
    """tf.contrib.lookup.index_to_string (deprecated): the strings of `mapping` at the int64 ids of
    `tensor`, default_value for ids out of it."""
    return index_to_string_table_from_tensor(mapping, default_value, name).lookup(tensor)

