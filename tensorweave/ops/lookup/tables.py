"""Lookup tables (tf.lookup, tf.tables_initializer): TF's ops by their names (HashTableV2,
InitializeTableV2, InitializeTableFromTextFileV2, LookupTableFindV2, LookupTableSizeV2) and the
TF1 classes over them (StaticHashTable, StaticVocabularyTable, KeyValueTensorInitializer,
TextFileInitializer), with index_table_from_tensor / index_table_from_file, which vocabulary
feature columns build on.

A table is a resource of its task, found or created by its handle op when planned (as a queue
is), empty until its initializer runs: the initializer ops are added to the TABLE_INITIALIZERS
collection, which tf.tables_initializer() groups, and a lookup in a table not yet initialized is
TF's FailedPreconditionError. Ids past a vocabulary (StaticVocabularyTable, num_oov_buckets) are
TF's: FarmHash Fingerprint64 of the key (integers as their decimal text) modulo the bucket count,
after the vocabulary."""
from __future__ import annotations

import threading

import numpy as np

from tensorweave.framework import dtypes, errors
from tensorweave.framework.api import GraphKeys, add_to_collection, get_collection, name_scope
from tensorweave.framework.func_graph import init_scope
from tensorweave.framework.shapes import TensorShape
from tensorweave.framework.sparse_tensor import SparseTensor
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.sort import where_v2
from tensorweave.ops.grouping import group, no_op
from tensorweave.ops.helpers import make_op, string_array
from tensorweave.ops.io.gfile import open_file
from tensorweave.ops.math.binary import add, not_equal
from tensorweave.ops.math.cast import cast
from tensorweave.ops.registry import register
from tensorweave.ops.strings.conversion import as_string
from tensorweave.ops.strings.hashing import string_to_hash_bucket_fast


class HashTableResource:
    """A table's state: None until initialized, then {key: value} (keys as bytes or ints)."""

    def __init__(self, name: str, key_dtype: str, value_dtype: str):
        self.name, self.key_dtype, self.value_dtype = name, key_dtype, value_dtype
        self.entries = None
        self._lock = threading.Lock()

    def initialize(self, node, keys, values) -> None:
        """Fills the table; TF's errors for a duplicate key with two values, and for a second
        initialization with other data."""
        entries = {}
        for k, v in zip(keys, values):
            if entries.setdefault(k, v) != v:
                raise errors.FailedPreconditionError(
                    node, node.name, f"HashTable has different value for same key. Key {_text(k)} has "
                                     f"{_text(entries[k])} and trying to add value {_text(v)}")
        with self._lock:
            if self.entries is not None and self.entries != entries:
                raise errors.FailedPreconditionError(node, node.name,
                                                     "Table was already initialized with different data.")
            self.entries = entries

    def find(self, node, keys: np.ndarray, default) -> np.ndarray:
        table = self.entries
        if table is None:
            raise errors.FailedPreconditionError(node, node.name, "Table not initialized.")
        default = np.asarray(default).reshape(-1)[0] if np.size(default) == 1 else default
        flat = [table.get(_key(k), default) for k in keys.reshape(-1)]
        out = np.empty(len(flat), dtype=dtypes.as_dtype(self.value_dtype).as_numpy_dtype)
        out[:] = flat
        return out.reshape(keys.shape)


def _key(k):
    return bytes(k) if isinstance(k, (bytes, bytearray, np.bytes_)) else int(k)


def _text(v) -> str:
    return v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)


def _table(node, handle) -> HashTableResource:
    """The table of a handle; TF's signature error (naming the op) when the node's key or value
    dtype (Tin, Tout) is not the table's."""
    if not isinstance(handle, HashTableResource):
        raise errors.InvalidArgumentError(node, node.name, f"{node.op} expects a lookup table handle")
    if "Tin" in node.attr:
        have = [dtypes.as_dtype(node.attr[a]).name for a in ("Tin", "Tout") if a in node.attr]
        want = [dtypes.as_dtype(d).name for d in (handle.key_dtype, handle.value_dtype)][:len(have)]
        if have != want:
            outputs = have[1:] if node.op == "LookupTableFindV2" else []
            expected_outputs = want[1:] if node.op == "LookupTableFindV2" else []
            raise errors.InvalidArgumentError(
                node, node.name, f"{node.op} ({node.name}): Signature mismatch, have: "
                                 f"{', '.join(['resource'] + have)}->{', '.join(outputs)} expected: "
                                 f"{', '.join(['resource'] + want)}->{', '.join(expected_outputs)}")
    return handle


# -- the ops -------------------------------------------------------------------------------------
def _hash_table_kernel(node, ctx):
    shared = node.attr.get("shared_name") or node.name
    key_dtype, value_dtype = node.attr["key_dtype"], node.attr["value_dtype"]
    table = ctx.resources.lookup_or_create(node.attr.get("container") or "", shared,
                                           lambda: HashTableResource(shared, key_dtype, value_dtype))
    if not isinstance(table, HashTableResource) or (table.key_dtype, table.value_dtype) != (key_dtype, value_dtype):
        raise errors.InvalidArgumentError(node, node.name, f"Resource {shared} is not a table of {key_dtype} "
                                                           f"to {value_dtype}")
    return lambda: table


def _initialize_kernel(node, ctx):
    def run(handle, keys, values):
        keys, values = np.asarray(keys, dtype=object).reshape(-1), np.asarray(values).reshape(-1)
        if keys.shape != values.shape:
            raise errors.InvalidArgumentError(node, node.name, f"Expected shape {list(keys.shape)} for value, got "
                                                               f"{list(values.shape)}")
        _table(node, handle).initialize(node, [_key(k) for k in keys], values.tolist())
    return run


WHOLE_LINE, LINE_NUMBER = -2, -1


def _text_file_kernel(node, ctx):
    key_index, value_index = int(node.attr["key_index"]), int(node.attr["value_index"])
    vocab_size, offset = int(node.attr.get("vocab_size", -1)), int(node.attr.get("offset", 0))
    delimiter = node.attr.get("delimiter", "\t").encode()

    def field(table, line: bytes, number: int, index: int, dtype: str, path: str):
        if index == LINE_NUMBER:
            return number + offset
        if index == WHOLE_LINE:
            text = line
        else:
            columns = line.split(delimiter)
            if index >= len(columns):
                raise errors.InvalidArgumentError(node, node.name, f"Invalid number of columns in {path} line "
                                                                   f"{number} ({_text(line)}) : expected {index + 1}"
                                                                   f" got {len(columns)}")
            text = columns[index]
        if dtype == "string":
            return text
        try:
            return int(text) if dtypes.as_dtype(dtype).is_integer else float(text)
        except ValueError:
            raise errors.InvalidArgumentError(node, node.name, f"Field {_text(text)} in line {number} is not a "
                                                               f"valid {dtype}.") from None

    def run(handle, filename):
        table = _table(node, handle)
        path = bytes(string_array(filename).reshape(-1)[0]).decode()
        with open_file(path, "rb", node=node) as f:
            lines = f.read().split(b"\n")
        if lines and lines[-1] == b"":
            lines.pop()
        lines = [ln[:-1] if ln.endswith(b"\r") else ln for ln in lines]
        if vocab_size >= 0:
            if len(lines) < vocab_size:
                raise errors.InvalidArgumentError(node, node.name, f"Invalid vocab_size in {table.name}: expected "
                                                                   f"{vocab_size} got {len(lines)}")
            lines = lines[:vocab_size]
        keys = [field(table, ln, i, key_index, table.key_dtype, path) for i, ln in enumerate(lines)]
        values = [field(table, ln, i, value_index, table.value_dtype, path) for i, ln in enumerate(lines)]
        table.initialize(node, keys, values)
    return run


def _find_kernel(node, ctx):
    return lambda handle, keys, default: _table(node, handle).find(node, np.asarray(keys, dtype=object), default)


def _size_kernel(node, ctx):
    def run(handle):
        entries = _table(node, handle).entries
        return np.int64(0 if entries is None else len(entries))
    return run


_SCALAR = TensorShape([])


def _find_shape(op):
    """keys' shape, then the value shape of a table of tensor values (the value_shape attr of a
    MutableHashTableOfTensors or MutableDenseHashTable handle)."""
    handle = op.inputs[0].op
    if handle.type in ("MutableHashTableOfTensorsV2", "MutableDenseHashTableV2"):
        value_shape = TensorShape(handle.get_attr("value_shape"))
    elif handle.type in ("HashTableV2", "MutableHashTableV2"):
        value_shape = _SCALAR
    else:   # a handle from elsewhere: default_value has the value shape
        value_shape = op.inputs[2].shape
    return [(op.get_attr("Tout"), op.inputs[1].shape.concatenate(value_shape))]


register("HashTableV2", lambda op: [(dtypes.resource, _SCALAR)], _hash_table_kernel, grad=None, stateful=True)
register("InitializeTableV2", lambda op: [], _initialize_kernel, grad=None, stateful=True)
register("InitializeTableFromTextFileV2", lambda op: [], _text_file_kernel, grad=None, stateful=True)
register("LookupTableFindV2", _find_shape, _find_kernel, grad=None, stateful=True)
register("LookupTableSizeV2", lambda op: [(dtypes.int64, _SCALAR)], _size_kernel, grad=None, stateful=True)


# -- initializers ----------------------------------------------------------------------------------
@tf_export("lookup.KeyValueTensorInitializer", "contrib.lookup.KeyValueTensorInitializer")
class KeyValueTensorInitializer:
    """tf.lookup.KeyValueTensorInitializer(keys, values, key_dtype=None, value_dtype=None,
    name=None): a table's contents from two tensors of the same length."""

    def __init__(self, keys, values, key_dtype=None, value_dtype=None, name=None):
        with init_scope(), name_scope(name, "key_value_init", [keys, values]) as scope:
            self._keys = convert_to_tensor(keys, dtype=key_dtype, name="keys")
            self._values = convert_to_tensor(values, dtype=value_dtype, name="values")
            self._name = scope
        self.key_dtype, self.value_dtype = self._keys.dtype, self._values.dtype

    def initialize(self, table):
        with name_scope(self._name, values=[table.resource_handle, self._keys, self._values]):
            op = make_op("InitializeTableV2", [table.resource_handle, self._keys, self._values],
                         {"Tkey": self.key_dtype, "Tval": self.value_dtype}, name="table_init")
        add_to_collection(GraphKeys.TABLE_INITIALIZERS, op)
        return op


@tf_export("lookup.TextFileIndex", "contrib.lookup.TextFileIndex")
class TextFileIndex:
    """tf.lookup.TextFileIndex: which part of a line is a key or value (a column index >= 0, or
    these)."""
    WHOLE_LINE = WHOLE_LINE
    LINE_NUMBER = LINE_NUMBER


@tf_export("lookup.TextFileInitializer", "contrib.lookup.TextFileInitializer")
class TextFileInitializer:
    """tf.lookup.TextFileInitializer(filename, key_dtype, key_index, value_dtype, value_index,
    vocab_size=None, delimiter='\\t', name=None, offset=0): a table's contents from a text file,
    one entry a line: the key and value are the whole line, its number (+ offset), or a column
    split by `delimiter`; only the first vocab_size lines when given (the file must have them)."""

    def __init__(self, filename, key_dtype, key_index, value_dtype, value_index, vocab_size=None, delimiter="\t",
                 name=None, offset=0):
        self.key_dtype, self.value_dtype = dtypes.as_dtype(key_dtype), dtypes.as_dtype(value_dtype)
        if key_index < -2:
            raise ValueError(f"Invalid key index {key_index}.")
        if key_index == LINE_NUMBER and self.key_dtype != dtypes.int64:
            raise ValueError(f"Signature mismatch. Keys must be dtype {dtypes.int64}, got {self.key_dtype}.")
        if key_index == WHOLE_LINE and not self.key_dtype.is_integer and self.key_dtype != dtypes.string:
            raise ValueError(f"Signature mismatch. Keys must be integer or string, got {self.key_dtype}.")
        if value_index < -2:
            raise ValueError(f"Invalid value index {value_index}.")
        if value_index == LINE_NUMBER and self.value_dtype != dtypes.int64:
            raise ValueError(f"Signature mismatch. Values must be dtype {dtypes.int64}, got {self.value_dtype}.")
        if value_index == WHOLE_LINE and self.value_dtype != dtypes.string:
            raise ValueError(f"Signature mismatch. Values must be dtype {dtypes.string}, got {self.value_dtype}.")
        if vocab_size is not None and vocab_size <= 0:
            raise ValueError(f"Invalid vocab_size {vocab_size}.")
        self._filename, self._name = filename, name
        self._attrs = {"key_index": int(key_index), "value_index": int(value_index),
                       "vocab_size": -1 if vocab_size is None else int(vocab_size), "delimiter": delimiter,
                       "offset": int(offset)}

    def initialize(self, table):
        with name_scope(self._name, "text_file_init", [table.resource_handle]):
            filename = convert_to_tensor(self._filename, dtypes.string, name="asset_filepath")
            op = make_op("InitializeTableFromTextFileV2", [table.resource_handle, filename], dict(self._attrs),
                         name="text_file_init")
        add_to_collection(GraphKeys.TABLE_INITIALIZERS, op)
        return op


# -- tables ----------------------------------------------------------------------------------------
@tf_export("lookup.StaticHashTable", "contrib.lookup.HashTable")
class StaticHashTable:
    """tf.lookup.StaticHashTable(initializer, default_value, name=None): an immutable table, filled
    by `initializer` when tf.tables_initializer() (or `.initializer`) runs; lookup(keys) gives each
    key's value or default_value."""

    def __init__(self, initializer, default_value, name=None):
        self._initializer = initializer
        self.key_dtype, self.value_dtype = initializer.key_dtype, initializer.value_dtype
        with init_scope(), name_scope(name, "hash_table", [default_value]) as scope:
            self._name = scope.rstrip("/").rsplit("/", 1)[-1]
            self._default_value = convert_to_tensor(default_value, dtype=self.value_dtype)
            self._handle = make_op("HashTableV2", [], {"shared_name": "", "container": "",
                                                       "use_node_name_sharing": False, "key_dtype": self.key_dtype,
                                                       "value_dtype": self.value_dtype}, name=scope).outputs[0]
            self._init_op = initializer.initialize(self)

    name = property(lambda self: self._name)
    resource_handle = property(lambda self: self._handle)
    default_value = property(lambda self: self._default_value)
    initializer = property(lambda self: self._init_op)

    def size(self, name=None):
        """The number of entries (int64 scalar)."""
        with name_scope(name, f"{self._name}_Size", [self._handle]):
            return make_op("LookupTableSizeV2", [self._handle], name="SizeV2").outputs[0]

    def lookup(self, keys, name=None):
        """Each key's value (default_value where absent), for a Tensor or a SparseTensor of keys."""
        values = keys.values if isinstance(keys, SparseTensor) else convert_to_tensor(keys)
        if values.dtype.base_dtype != self.key_dtype:
            raise TypeError(f"Signature mismatch. Keys must be dtype {self.key_dtype}, got {values.dtype}.")
        with name_scope(name, f"{self._name}_Lookup", [self._handle, values]):
            found = make_op("LookupTableFindV2", [self._handle, values, self._default_value],
                            {"Tin": self.key_dtype, "Tout": self.value_dtype}, name="hash_table_Lookup").outputs[0]
        return SparseTensor(keys.indices, found, keys.dense_shape) if isinstance(keys, SparseTensor) else found


@tf_export("lookup.StaticVocabularyTable")
class StaticVocabularyTable:
    """tf.lookup.StaticVocabularyTable(initializer, num_oov_buckets, lookup_key_dtype=None,
    name=None): ids of a vocabulary (the initializer maps keys to 0..n-1); a key out of it gets
    n + Fingerprint64(key) % num_oov_buckets (integer keys hashed as their decimal text). Without
    an initializer every key gets a bucket."""

    def __init__(self, initializer, num_oov_buckets, lookup_key_dtype=None, name=None):
        if num_oov_buckets <= 0:
            raise ValueError("oov_buckets must be > 0.")
        if initializer is None and lookup_key_dtype is None:
            lookup_key_dtype = dtypes.string
        self._table = None if initializer is None else StaticHashTable(initializer, -1)
        self._num_oov_buckets = int(num_oov_buckets)
        self.key_dtype = dtypes.as_dtype(lookup_key_dtype) if lookup_key_dtype is not None else \
            self._table.key_dtype
        self.value_dtype = dtypes.int64
        self._name = name or "hash_bucket"

    name = property(lambda self: self._name)
    resource_handle = property(lambda self: None if self._table is None else self._table.resource_handle)

    def size(self, name=None):
        """The vocabulary's size plus the oov buckets."""
        with name_scope(name, f"{self._name}_Size"):
            if self._table is None:
                return convert_to_tensor(self._num_oov_buckets, dtypes.int64)
            return self._table.size() + self._num_oov_buckets

    def lookup(self, keys, name=None):
        """Each key's id (int64), for a Tensor or a SparseTensor of keys."""
        values = keys.values if isinstance(keys, SparseTensor) else convert_to_tensor(keys)
        if values.dtype.is_integer and values.dtype != dtypes.int64 and (
                self._table is None or self._table.key_dtype == dtypes.int64):
            values = cast(values, dtypes.int64)
        with name_scope(name, f"{self._name}_Lookup"):
            text = as_string(values) if values.dtype.is_integer else values
            ids = string_to_hash_bucket_fast(text, self._num_oov_buckets, name="hash_bucket")
            if self._table is not None:
                found = self._table.lookup(values)
                ids = where_v2(not_equal(found, self._table.default_value), found, add(ids, self._table.size()))
        return SparseTensor(keys.indices, ids, keys.dense_shape) if isinstance(keys, SparseTensor) else ids


@tf_export("contrib.lookup.IdTableWithHashBuckets")
class IdTableWithHashBuckets(StaticVocabularyTable):
    """tf.contrib.lookup.IdTableWithHashBuckets(table, num_oov_buckets, hasher_spec=FastHashSpec,
    name=None, key_dtype=None): the ids of `table` (an int64-valued table, or None), a key it
    does not hold (its default_value) getting table.size() + Fingerprint64(key) % num_oov_buckets.
    Only TF's default hasher (FastHashSpec) is here."""

    def __init__(self, table, num_oov_buckets, hasher_spec=None, name=None, key_dtype=None):
        if hasher_spec is not None and getattr(hasher_spec, "hasher", "fasthash") != "fasthash":
            raise ValueError(f"IdTableWithHashBuckets: only the FastHashSpec hasher is supported, got {hasher_spec}")
        if num_oov_buckets < 0:
            raise ValueError(f"oov_buckets must be >= 0, got {num_oov_buckets}")
        if table is None and key_dtype is None:
            key_dtype = dtypes.string
        if table is not None and table.value_dtype != dtypes.int64:
            raise TypeError(f"Invalid value dtype, expected {dtypes.int64} but got {table.value_dtype}.")
        self._table, self._num_oov_buckets = table, int(num_oov_buckets)
        self.key_dtype = dtypes.as_dtype(key_dtype) if key_dtype is not None else table.key_dtype
        self.value_dtype = dtypes.int64
        self._name = name or "hash_bucket"

    def lookup(self, keys, name=None):
        """Each key's id in `table`, or its bucket after them (no buckets: the table's lookup)."""
        if not self._num_oov_buckets:
            return self._table.lookup(keys, name)
        return super().lookup(keys, name)


@tf_export("tables_initializer", "initializers.tables_initializer", "initialize_all_tables")
def tables_initializer(name="init_all_tables"):
    """tf.tables_initializer(name='init_all_tables'): one op that runs every table initializer of
    the graph (a no_op when there is none). tf.initialize_all_tables is its deprecated name."""
    initializers = get_collection(GraphKeys.TABLE_INITIALIZERS)
    return group(*initializers, name=name) if initializers else no_op(name=name)


# -- vocabulary tables (TF's lookup_ops.index_table_from_*, for feature columns) ------------------------
@tf_export("contrib.lookup.index_table_from_tensor")
def index_table_from_tensor(vocabulary_list, num_oov_buckets=0, default_value=-1, dtype=dtypes.string, name=None):
    """A table of each key of vocabulary_list to its position (int64), other keys to default_value
    or, with num_oov_buckets, to a hash bucket after the vocabulary."""
    dtype = dtypes.as_dtype(dtype)
    with name_scope(name, "string_to_index"):
        keys = convert_to_tensor(vocabulary_list)
        if keys.dtype.is_integer != dtype.is_integer:
            raise ValueError(f"Expected {'integer' if dtype.is_integer else 'non-integer'}, got {keys.dtype}.")
        if not dtype.is_integer and keys.dtype.base_dtype != dtype:
            raise ValueError(f"Expected {dtype}, got {keys.dtype}.")
        n = int(np.prod(keys.shape.as_list()))
        with name_scope(None, "hash_table"):
            table_keys = cast(keys, dtypes.int64) if keys.dtype.is_integer else keys
            init = KeyValueTensorInitializer(table_keys, np.arange(n, dtype=np.int64), name="table_init")
            if num_oov_buckets:
                return StaticVocabularyTable(init, num_oov_buckets, lookup_key_dtype=dtype)
            return StaticHashTable(init, default_value)


@tf_export("contrib.lookup.index_table_from_file")
def index_table_from_file(vocabulary_file, num_oov_buckets=0, vocab_size=None, default_value=-1,
                          key_dtype=dtypes.string, name=None):
    """As index_table_from_tensor, the vocabulary one key a line of `vocabulary_file` (its first
    vocab_size lines when given)."""
    if not vocabulary_file:
        raise ValueError("vocabulary_file must be specified and must not be empty.")
    if num_oov_buckets < 0:
        raise ValueError(f"num_oov_buckets must be greater or equal than 0, got {num_oov_buckets}.")
    if vocab_size is not None and vocab_size < 1:
        raise ValueError(f"vocab_size must be greater than 0, got {vocab_size}. vocabulary_file: {vocabulary_file}")
    key_dtype = dtypes.as_dtype(key_dtype)
    with name_scope(name, "string_to_index"):
        with name_scope(None, "hash_table"):
            init = TextFileInitializer(vocabulary_file, dtypes.int64 if key_dtype.is_integer else key_dtype,
                                       WHOLE_LINE, dtypes.int64, LINE_NUMBER, vocab_size=vocab_size)
            if num_oov_buckets:
                return StaticVocabularyTable(init, num_oov_buckets, lookup_key_dtype=key_dtype)
            return StaticHashTable(init, default_value)
