"""The feature columns of tf.feature_column (TF 1.15): how a model reads each raw feature.

A column is an immutable namedtuple (usable as a dict key, equal when built alike), as TF's.
Dense columns (numeric, bucketized, embedding, shared embedding, indicator) give a float32
tensor (`_get_dense_tensor`); categorical columns (bucketized, hash bucket, vocabulary list and
file, identity, weighted, crossed) give ids as an int64 SparseTensor and optional weights
(`_get_sparse_tensors`). input_layer and linear_model (layers.py) drive them through a
_LazyBuilder, which transforms each raw feature and each column once per call.

Sequence columns (sequence_categorical_column_with_*, sequence_numeric_column) read SparseTensors
[batch, T] (or [batch, T, k] from tf.parse_sequence_example's feature lists) as one value (or
`shape` values) per time step; embedding_column and indicator_column over a sequence categorical
column, and sequence_numeric_column, give [batch, T, ...] and each example's length
(`_get_sequence_dense_tensor`), which sequence_input_layer (layers.py) reads.

Categorical inputs may be dense Tensors (an empty string or -1 marks a missing value) or
SparseTensors; the ids are TF's: hash buckets are FarmHash Fingerprint64 modulo the bucket count
(StringToHashBucketFast), vocabularies are lookup tables (ops/lookup/tables.py, initialized by
tf.tables_initializer), crosses are TF's SparseCross hashes (ops/strings/cross.py)."""
from __future__ import annotations

import collections
import math

import numpy as np

from tensorweave.framework import dtypes
from tensorweave.framework.api import GraphKeys, add_to_collection, control_dependencies, get_collection, name_scope
from tensorweave.framework.shapes import TensorShape
from tensorweave.framework.sparse_tensor import SparseTensor, convert_to_tensor_or_sparse_tensor
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.concat import concat, stack
from tensorweave.ops.array.core import expand_dims, identity, rank as rank_of, reshape, shape, transpose
from tensorweave.ops.array.fill import fill, zeros
from tensorweave.ops.array.gather import one_hot, scatter_nd
from tensorweave.ops.array.pad import tile
from tensorweave.ops.array.sort import where, where_v2
from tensorweave.ops.control_flow.cond import cond
from tensorweave.ops.debugging.asserts import assert_positive
from tensorweave.ops.io.gfile import Exists, GFile
from tensorweave.ops.io.parsing import FixedLenFeature, VarLenFeature
from tensorweave.ops.lookup.tables import index_table_from_file, index_table_from_tensor
from tensorweave.ops.math.array_composites import gather_nd
from tensorweave.ops.math.binary import (add, equal, floordiv, greater_equal, less, logical_or, multiply,
                                         not_equal, subtract)
from tensorweave.ops.math.bucketize import bucketize
from tensorweave.ops.math.cast import cast
from tensorweave.ops.math.reduction import reduce_prod, reduce_sum
from tensorweave.ops.math.segment import segment_max
from tensorweave.ops.math.sequences import range as range_
from tensorweave.ops.nn.sparse_embedding import safe_embedding_lookup_sparse
from tensorweave.ops.sparse.combine import sparse_slice
from tensorweave.ops.sparse.core import sparse_merge, sparse_reshape, sparse_tensor_to_dense
from tensorweave.ops.state.initializers import truncated_normal_initializer
from tensorweave.ops.state.variable_scope import get_variable
from tensorweave.ops.strings.conversion import as_string
from tensorweave.ops.strings.cross import sparse_cross_hashed
from tensorweave.ops.strings.hashing import string_to_hash_bucket_fast
from tensorweave.train.checkpoint_utils import init_from_checkpoint


# -- the column kinds ------------------------------------------------------------------------------
class _FeatureColumn:
    """A feature column: `name`, the parse spec of the raw features it reads, and its transform."""

    @property
    def _var_scope_name(self) -> str:
        return self.name

    # The names TF 1.15's columns also answer to (TF 2's public spelling).
    parse_example_spec = property(lambda self: self._parse_example_spec)


class _DenseColumn(_FeatureColumn):
    """A column giving a dense float32 tensor [batch, *_variable_shape]."""

    variable_shape = property(lambda self: self._variable_shape)


class _SequenceDenseColumn(_FeatureColumn):
    """A column giving a dense tensor [batch, T, *_variable_shape] and each example's number of
    time steps T_i, an int64 [batch] (`_get_sequence_dense_tensor`): what sequence_input_layer reads."""

    TensorSequenceLengthPair = collections.namedtuple("TensorSequenceLengthPair", ["dense_tensor", "sequence_length"])


IdWeightPair = collections.namedtuple("IdWeightPair", ["id_tensor", "weight_tensor"])


class _CategoricalColumn(_FeatureColumn):
    """A column giving int64 ids in [0, _num_buckets) as a SparseTensor, and optional weights."""

    IdWeightPair = IdWeightPair
    num_buckets = property(lambda self: self._num_buckets)

    def _get_sparse_tensors(self, inputs, weight_collections=None, trainable=None):
        return IdWeightPair(inputs.get(self), None)


# -- the lazy builder ------------------------------------------------------------------------------
class _LazyBuilder:
    """The features of one input_layer / linear_model call: raw features by key (rank 1 expanded
    to rank 2) and transformed columns, each built once."""

    def __init__(self, features):
        self._features = dict(features)
        self._feature_tensors = {}

    def get(self, key):
        if key in self._feature_tensors:
            return self._feature_tensors[key]
        if key in self._features:
            tensor = self._raw_feature(key)
        elif isinstance(key, str):
            raise ValueError(f"Feature {key} is not in features dictionary.")
        elif not isinstance(key, _FeatureColumn):
            raise TypeError(f'"key" must be either a "str" or "_FeatureColumn". Provided: {key}')
        else:
            tensor = key._transform_feature(self)
            if tensor is None:
                raise ValueError(f"Column {key.name} is not supported.")
        self._feature_tensors[key] = tensor
        return tensor

    def _raw_feature(self, key):
        tensor = convert_to_tensor_or_sparse_tensor(self._features[key])
        rank = tensor.get_shape().ndims
        if rank == 0:
            raise ValueError(f"Feature (key: {key}) cannot have rank 0. Given: {tensor}")
        if rank is None and not isinstance(tensor, SparseTensor):
            # A rank known only at run time: expanded there when it is 1, as TF does.
            message = f"Feature (key: {key}) cannot have rank 0. Given: {tensor}"
            with control_dependencies([assert_positive(rank_of(tensor), message=message)]):
                return cond(equal(1, rank_of(tensor)), lambda: expand_dims(tensor, -1), lambda: identity(tensor))
        if rank != 1:
            return tensor
        if isinstance(tensor, SparseTensor):
            return sparse_reshape(tensor, [-1, 1])
        return expand_dims(tensor, -1)


def _to_sparse_input_and_drop_ignore_values(input_tensor, ignore_value=None):
    """A dense tensor as a SparseTensor without its `ignore_value` cells ('' for strings, -1 for
    integers by default); a SparseTensor as it is."""
    input_tensor = convert_to_tensor_or_sparse_tensor(input_tensor)
    if isinstance(input_tensor, SparseTensor):
        return input_tensor
    with name_scope(None, "to_sparse_input", [input_tensor]):
        if ignore_value is None:
            ignore_value = "" if input_tensor.dtype == dtypes.string else \
                -1 if input_tensor.dtype.is_integer else input_tensor.dtype.as_numpy_dtype()
        ignore = convert_to_tensor(ignore_value, dtype=input_tensor.dtype, name="ignore_value")
        indices = where(not_equal(input_tensor, ignore), name="indices")
        return SparseTensor(indices=indices, values=gather_nd(input_tensor, indices, name="values"),
                            dense_shape=shape(input_tensor, out_type=dtypes.int64, name="dense_shape"))


def _assert_string_or_int(dtype, prefix: str) -> None:
    if dtype != dtypes.string and not dtype.is_integer:
        raise ValueError(f"{prefix} dtype must be string or integer. dtype: {dtype}.")


def _assert_key_is_string(key) -> None:
    if not isinstance(key, str):
        raise ValueError(f"key must be a string. Got: type {type(key)}. Given key: {key}.")


def _check_compatible(key, column_dtype, tensor_dtype) -> None:
    if column_dtype.is_integer != tensor_dtype.is_integer:
        raise ValueError(f"Column dtype and SparseTensors dtype must be compatible. key: {key}, column dtype: "
                         f"{column_dtype}, tensor dtype: {tensor_dtype}")


# -- numeric and bucketized ------------------------------------------------------------------------
class NumericColumn(_DenseColumn, collections.namedtuple(
        "NumericColumn", ("key", "shape", "default_value", "dtype", "normalizer_fn"))):
    """A numeric_column."""

    name = property(lambda self: self.key)
    _parse_example_spec = property(lambda self: {self.key: FixedLenFeature(self.shape, self.dtype,
                                                                           self.default_value)})
    _variable_shape = property(lambda self: TensorShape(self.shape))

    def _transform_feature(self, inputs):
        tensor = inputs.get(self.key)
        if isinstance(tensor, SparseTensor):
            raise ValueError("The corresponding Tensor of numerical column must be a Tensor. SparseTensor is not "
                             f"supported. key: {self.key}")
        if self.normalizer_fn is not None:
            tensor = self.normalizer_fn(tensor)
        # A string feature fails at run time, as TF's: UnimplementedError from the Cast named after the column.
        return cast(tensor, dtypes.float32)

    def _get_dense_tensor(self, inputs, weight_collections=None, trainable=None):
        return inputs.get(self)


def _check_shape(shape, key) -> tuple:
    shape = tuple(shape) if isinstance(shape, (list, tuple)) else (shape,)
    for dimension in shape:
        if not isinstance(dimension, int):
            raise TypeError(f"shape dimensions must be integer. shape: {shape}, key: {key}")
        if dimension < 1:
            raise ValueError(f"shape dimensions must be greater than 0. shape: {shape}, key: {key}")
    return shape


def _check_default_value(shape, default_value, dtype, key):
    """TF's fc_utils.check_default_value: a scalar (an int, or a float for a float dtype) filled
    into nested tuples of `shape`, or nested lists (or an array) of `shape` as nested tuples."""
    def filled(dims, value):
        return tuple(filled(dims[1:], value) for _ in range(dims[0])) if dims else value

    def nested(value):
        return tuple(nested(v) for v in value) if isinstance(value, (list, tuple)) else value

    def fits(value, dims):
        if isinstance(value, (list, tuple)) != bool(dims):
            return False
        return not dims or (len(value) == dims[0] and all(fits(v, dims[1:]) for v in value))

    if default_value is None:
        return None
    if isinstance(default_value, int) or (isinstance(default_value, float) and dtype.is_floating):
        return filled(shape, default_value)
    if callable(getattr(default_value, "tolist", None)):
        default_value = default_value.tolist()
    if isinstance(default_value, (list, tuple)):
        if not fits(default_value, shape):
            raise ValueError(f"The shape of default_value must be equal to given shape. default_value: "
                             f"{default_value}, shape: {shape}, key: {key}")
        flat = np.asarray(default_value, dtype=object).reshape(-1).tolist()
        if all(isinstance(v, int) for v in flat) or (any(isinstance(v, float) for v in flat) and dtype.is_floating):
            return nested(default_value)
    raise TypeError(f"default_value must be compatible with dtype. default_value: {default_value}, dtype: {dtype}, "
                    f"key: {key}")


@tf_export("feature_column.numeric_column")
def numeric_column(key, shape=(1,), default_value=None, dtype=dtypes.float32, normalizer_fn=None):
    """tf.feature_column.numeric_column(key, shape=(1,), default_value=None, dtype=tf.float32,
    normalizer_fn=None): the feature `key` as float32 values of `shape` per example
    (normalizer_fn applied first); default_value fills examples without it when parsing."""
    shape = _check_shape(shape, key)
    dtype = dtypes.as_dtype(dtype)
    if not (dtype.is_integer or dtype.is_floating):
        raise ValueError(f"dtype must be convertible to float. dtype: {dtype}, key: {key}")
    default_value = _check_default_value(shape, default_value, dtype, key)
    if normalizer_fn is not None and not callable(normalizer_fn):
        raise TypeError(f"normalizer_fn must be a callable. Given: {normalizer_fn}")
    _assert_key_is_string(key)
    return NumericColumn(key, shape=shape, default_value=default_value, dtype=dtype, normalizer_fn=normalizer_fn)


class BucketizedColumn(_DenseColumn, _CategoricalColumn,
                       collections.namedtuple("BucketizedColumn", ("source_column", "boundaries"))):
    """A bucketized_column: dense as one-hot buckets, categorical as bucket ids."""

    name = property(lambda self: f"{self.source_column.name}_bucketized")
    _parse_example_spec = property(lambda self: self.source_column._parse_example_spec)
    _variable_shape = property(lambda self: TensorShape(tuple(self.source_column.shape) + (len(self.boundaries) + 1,)))
    _num_buckets = property(lambda self: (len(self.boundaries) + 1) * self.source_column.shape[0])

    def _transform_feature(self, inputs):
        return bucketize(inputs.get(self.source_column), boundaries=self.boundaries)

    def _get_dense_tensor(self, inputs, weight_collections=None, trainable=None):
        return one_hot(cast(inputs.get(self), dtypes.int64), depth=len(self.boundaries) + 1, on_value=1.,
                       off_value=0.)

    def _get_sparse_tensors(self, inputs, weight_collections=None, trainable=None):
        input_tensor = inputs.get(self)
        batch_size = shape(input_tensor)[0]
        source_dimension = self.source_column.shape[0]
        i1 = reshape(tile(expand_dims(range_(0, batch_size), 1), [1, source_dimension]), (-1,))
        i2 = tile(range_(0, source_dimension), stack([batch_size]))
        bucket_indices = add(reshape(input_tensor, (-1,)), multiply(len(self.boundaries) + 1, i2))
        indices = cast(transpose(stack((i1, i2))), dtypes.int64)
        dense_shape = cast(stack([batch_size, source_dimension]), dtypes.int64)
        return IdWeightPair(SparseTensor(indices=indices, values=cast(bucket_indices, dtypes.int64),
                                         dense_shape=dense_shape), None)


@tf_export("feature_column.bucketized_column")
def bucketized_column(source_column, boundaries):
    """tf.feature_column.bucketized_column(source_column, boundaries): a numeric_column's values
    as buckets split at the sorted `boundaries` (len(boundaries) + 1 buckets)."""
    if not isinstance(source_column, NumericColumn):
        raise ValueError(f"source_column must be a column generated with numeric_column(). Given: {source_column}")
    if len(source_column.shape) > 1:
        raise ValueError(f"source_column must be one-dimensional column. Given: {source_column}")
    if not boundaries:
        raise ValueError("boundaries must not be empty.")
    if not isinstance(boundaries, (list, tuple)):
        raise ValueError("boundaries must be a sorted list.")
    if any(a >= b for a, b in zip(boundaries, boundaries[1:])):
        raise ValueError("boundaries must be a sorted list.")
    return BucketizedColumn(source_column, tuple(boundaries))


# -- categorical columns ---------------------------------------------------------------------------
class HashedCategoricalColumn(_CategoricalColumn, collections.namedtuple(
        "HashedCategoricalColumn", ("key", "hash_bucket_size", "dtype"))):
    """A categorical_column_with_hash_bucket."""

    name = property(lambda self: self.key)
    _parse_example_spec = property(lambda self: {self.key: VarLenFeature(self.dtype)})
    _num_buckets = property(lambda self: self.hash_bucket_size)

    def _transform_feature(self, inputs):
        input_tensor = _to_sparse_input_and_drop_ignore_values(inputs.get(self.key))
        if not isinstance(input_tensor, SparseTensor):
            raise ValueError("SparseColumn input must be a SparseTensor.")
        _assert_string_or_int(input_tensor.dtype, prefix=f"column_name: {self.key} input_tensor")
        _check_compatible(self.key, self.dtype, input_tensor.dtype)
        values = input_tensor.values if self.dtype == dtypes.string else as_string(input_tensor.values)
        ids = string_to_hash_bucket_fast(values, self.hash_bucket_size, name="lookup")
        return SparseTensor(input_tensor.indices, ids, input_tensor.dense_shape)


@tf_export("feature_column.categorical_column_with_hash_bucket")
def categorical_column_with_hash_bucket(key, hash_bucket_size, dtype=dtypes.string):
    """tf.feature_column.categorical_column_with_hash_bucket(key, hash_bucket_size,
    dtype=tf.string): ids Fingerprint64(value) % hash_bucket_size (integers as their decimal
    text), TF's StringToHashBucketFast."""
    if hash_bucket_size is None:
        raise ValueError(f"hash_bucket_size must be set. key: {key}")
    if hash_bucket_size < 1:
        raise ValueError(f"hash_bucket_size must be at least 1. hash_bucket_size: {hash_bucket_size}, key: {key}")
    _assert_key_is_string(key)
    dtype = dtypes.as_dtype(dtype)
    _assert_string_or_int(dtype, prefix=f"column_name: {key}")
    return HashedCategoricalColumn(key, hash_bucket_size, dtype)


def _lookup_input(key, column_dtype, inputs):
    """A vocabulary column's input: sparse, dtype-checked, integers as int64; and the key dtype."""
    input_tensor = _to_sparse_input_and_drop_ignore_values(inputs.get(key))
    _check_compatible(key, column_dtype, input_tensor.dtype)
    _assert_string_or_int(input_tensor.dtype, prefix=f"column_name: {key} input_tensor")
    if input_tensor.dtype.is_integer:
        if input_tensor.dtype != dtypes.int64:
            input_tensor = SparseTensor(input_tensor.indices, cast(input_tensor.values, dtypes.int64),
                                        input_tensor.dense_shape)
        return input_tensor, dtypes.int64
    return input_tensor, column_dtype


class VocabularyFileCategoricalColumn(_CategoricalColumn, collections.namedtuple(
        "VocabularyFileCategoricalColumn",
        ("key", "vocabulary_file", "vocabulary_size", "num_oov_buckets", "dtype", "default_value"))):
    """A categorical_column_with_vocabulary_file."""

    name = property(lambda self: self.key)
    _parse_example_spec = property(lambda self: {self.key: VarLenFeature(self.dtype)})
    _num_buckets = property(lambda self: self.vocabulary_size + self.num_oov_buckets)

    def _transform_feature(self, inputs):
        input_tensor, key_dtype = _lookup_input(self.key, self.dtype, inputs)
        table = index_table_from_file(self.vocabulary_file, num_oov_buckets=self.num_oov_buckets,
                                      vocab_size=self.vocabulary_size, default_value=self.default_value,
                                      key_dtype=key_dtype, name=f"{self.key}_lookup")
        return table.lookup(input_tensor)


@tf_export("feature_column.categorical_column_with_vocabulary_file")
def categorical_column_with_vocabulary_file(key, vocabulary_file, vocabulary_size=None, num_oov_buckets=0,
                                            default_value=None, dtype=dtypes.string):
    """tf.feature_column.categorical_column_with_vocabulary_file(key, vocabulary_file,
    vocabulary_size=None, num_oov_buckets=0, default_value=None, dtype=tf.string): id i for the
    word on line i of the file (its first vocabulary_size lines; all by default); another value
    gets default_value (-1: dropped) or one of num_oov_buckets hash buckets after them."""
    if not vocabulary_file:
        raise ValueError(f"Missing vocabulary_file in {key}.")
    if vocabulary_size is None:
        if not Exists(vocabulary_file):
            raise ValueError(f"vocabulary_file in {key} does not exist.")
        with GFile(vocabulary_file, mode="rb") as f:
            vocabulary_size = sum(1 for _ in f)
    if vocabulary_size < 1:
        raise ValueError(f"Invalid vocabulary_size in {key}.")
    if num_oov_buckets:
        if default_value is not None:
            raise ValueError(f"Can't specify both num_oov_buckets and default_value in {key}.")
        if num_oov_buckets < 0:
            raise ValueError(f"Invalid num_oov_buckets {num_oov_buckets} in {key}.")
    dtype = dtypes.as_dtype(dtype)
    _assert_string_or_int(dtype, prefix=f"column_name: {key}")
    _assert_key_is_string(key)
    return VocabularyFileCategoricalColumn(key=key, vocabulary_file=vocabulary_file, vocabulary_size=vocabulary_size,
                                           num_oov_buckets=0 if num_oov_buckets is None else num_oov_buckets,
                                           default_value=-1 if default_value is None else default_value, dtype=dtype)


class VocabularyListCategoricalColumn(_CategoricalColumn, collections.namedtuple(
        "VocabularyListCategoricalColumn", ("key", "vocabulary_list", "dtype", "default_value", "num_oov_buckets"))):
    """A categorical_column_with_vocabulary_list."""

    name = property(lambda self: self.key)
    _parse_example_spec = property(lambda self: {self.key: VarLenFeature(self.dtype)})
    _num_buckets = property(lambda self: len(self.vocabulary_list) + self.num_oov_buckets)

    def _transform_feature(self, inputs):
        input_tensor, key_dtype = _lookup_input(self.key, self.dtype, inputs)
        table = index_table_from_tensor(list(self.vocabulary_list), default_value=self.default_value,
                                        num_oov_buckets=self.num_oov_buckets, dtype=key_dtype,
                                        name=f"{self.key}_lookup")
        return table.lookup(input_tensor)


@tf_export("feature_column.categorical_column_with_vocabulary_list")
def categorical_column_with_vocabulary_list(key, vocabulary_list, dtype=None, default_value=-1, num_oov_buckets=0):
    """tf.feature_column.categorical_column_with_vocabulary_list(key, vocabulary_list, dtype=None,
    default_value=-1, num_oov_buckets=0): id i for vocabulary_list[i]; another value gets
    default_value (-1: dropped) or one of num_oov_buckets hash buckets after the vocabulary."""
    if vocabulary_list is None or len(vocabulary_list) < 1:
        raise ValueError(f"vocabulary_list {vocabulary_list} must be non-empty, column_name: {key}")
    if len(set(vocabulary_list)) != len(vocabulary_list):
        raise ValueError(f"Duplicate keys in vocabulary_list {vocabulary_list}, column_name: {key}")
    kind = np.array(vocabulary_list).dtype.kind
    vocabulary_dtype = dtypes.string if kind in "SUO" else dtypes.as_dtype(np.array(vocabulary_list).dtype)
    if num_oov_buckets:
        if default_value != -1:
            raise ValueError(f"Can't specify both num_oov_buckets and default_value in {key}.")
        if num_oov_buckets < 0:
            raise ValueError(f"Invalid num_oov_buckets {num_oov_buckets} in {key}.")
    _assert_string_or_int(vocabulary_dtype, prefix=f"column_name: {key} vocabulary")
    if dtype is None:
        dtype = vocabulary_dtype
    else:
        dtype = dtypes.as_dtype(dtype)
        if dtype.is_integer != vocabulary_dtype.is_integer:
            raise ValueError(f"dtype {dtype} and vocabulary dtype {vocabulary_dtype} do not match, column_name: {key}")
    _assert_string_or_int(dtype, prefix=f"column_name: {key}")
    _assert_key_is_string(key)
    return VocabularyListCategoricalColumn(key=key, vocabulary_list=tuple(vocabulary_list), dtype=dtype,
                                           default_value=default_value, num_oov_buckets=num_oov_buckets)


class IdentityCategoricalColumn(_CategoricalColumn, collections.namedtuple(
        "IdentityCategoricalColumn", ("key", "number_buckets", "default_value"))):
    """A categorical_column_with_identity."""

    name = property(lambda self: self.key)
    _parse_example_spec = property(lambda self: {self.key: VarLenFeature(dtypes.int64)})
    _num_buckets = property(lambda self: self.number_buckets)

    def _transform_feature(self, inputs):
        input_tensor = _to_sparse_input_and_drop_ignore_values(inputs.get(self.key))
        if not input_tensor.dtype.is_integer:
            raise ValueError(f"Invalid input, not integer. key: {self.key} dtype: {input_tensor.dtype}")
        values = input_tensor.values
        if values.dtype != dtypes.int64:
            values = cast(values, dtypes.int64, name="values")
        if self.default_value is not None:
            out_of_range = logical_or(less(values, 0), greater_equal(values, self.number_buckets),
                                      name="out_of_range")
            defaults = fill(shape(values), cast(self.default_value, dtypes.int64), name="default_values")
            values = where_v2(out_of_range, defaults, values)
        return SparseTensor(indices=input_tensor.indices, values=values, dense_shape=input_tensor.dense_shape)


@tf_export("feature_column.categorical_column_with_identity")
def categorical_column_with_identity(key, num_buckets, default_value=None):
    """tf.feature_column.categorical_column_with_identity(key, num_buckets, default_value=None):
    integer values as their own ids in [0, num_buckets); one out of range gets default_value (an
    error at lookup when None)."""
    if num_buckets < 1:
        raise ValueError(f"num_buckets {num_buckets} < 1, column_name {key}")
    if default_value is not None and (default_value < 0 or default_value >= num_buckets):
        raise ValueError(f"default_value {default_value} not in range [0, {num_buckets}), column_name {key}")
    _assert_key_is_string(key)
    return IdentityCategoricalColumn(key=key, number_buckets=num_buckets, default_value=default_value)


class WeightedCategoricalColumn(_CategoricalColumn, collections.namedtuple(
        "WeightedCategoricalColumn", ("categorical_column", "weight_feature_key", "dtype"))):
    """A weighted_categorical_column."""

    name = property(lambda self: f"{self.categorical_column.name}_weighted_by_{self.weight_feature_key}")
    _num_buckets = property(lambda self: self.categorical_column._num_buckets)

    @property
    def _parse_example_spec(self):
        spec = dict(self.categorical_column._parse_example_spec)
        if self.weight_feature_key in spec:
            raise ValueError(f"Parse config {spec[self.weight_feature_key]} already exists for "
                             f"{self.weight_feature_key}.")
        spec[self.weight_feature_key] = VarLenFeature(self.dtype)
        return spec

    def _transform_feature(self, inputs):
        weight_tensor = inputs.get(self.weight_feature_key)
        if weight_tensor is None:
            raise ValueError(f"Missing weights {self.weight_feature_key}.")
        weight_tensor = convert_to_tensor_or_sparse_tensor(weight_tensor)
        if self.dtype != weight_tensor.dtype.base_dtype:
            raise ValueError(f"Bad dtype, expected {self.dtype}, but got {weight_tensor.dtype}.")
        if not isinstance(weight_tensor, SparseTensor):
            weight_tensor = _to_sparse_input_and_drop_ignore_values(weight_tensor, ignore_value=0.0)
        if not weight_tensor.dtype.is_floating:
            weight_tensor = SparseTensor(weight_tensor.indices, cast(weight_tensor.values, dtypes.float32),
                                         weight_tensor.dense_shape)
        return inputs.get(self.categorical_column), weight_tensor

    def _get_sparse_tensors(self, inputs, weight_collections=None, trainable=None):
        return IdWeightPair(*inputs.get(self))


@tf_export("feature_column.weighted_categorical_column")
def weighted_categorical_column(categorical_column, weight_feature_key, dtype=dtypes.float32):
    """tf.feature_column.weighted_categorical_column(categorical_column, weight_feature_key,
    dtype=tf.float32): categorical_column's ids, each weighted by the value at the same index of
    the feature weight_feature_key."""
    dtype = None if dtype is None else dtypes.as_dtype(dtype)
    if dtype is None or not (dtype.is_integer or dtype.is_floating):
        raise ValueError(f"dtype {dtype} is not convertible to float.")
    return WeightedCategoricalColumn(categorical_column=categorical_column, weight_feature_key=weight_feature_key,
                                     dtype=dtype)


def _collect_leaf_level_keys(cross) -> list:
    keys = []
    for k in cross.keys:
        keys.extend(_collect_leaf_level_keys(k) if isinstance(k, CrossedColumn) else [k])
    return keys


class CrossedColumn(_CategoricalColumn, collections.namedtuple("CrossedColumn",
                                                               ("keys", "hash_bucket_size", "hash_key"))):
    """A crossed_column."""

    _num_buckets = property(lambda self: self.hash_bucket_size)

    @property
    def name(self):
        return "_X_".join(sorted(k.name if isinstance(k, _FeatureColumn) else k
                                 for k in _collect_leaf_level_keys(self)))

    @property
    def _parse_example_spec(self):
        spec = {}
        for key in self.keys:
            spec.update(key._parse_example_spec if isinstance(key, _FeatureColumn) else
                        {key: VarLenFeature(dtypes.string)})
        return spec

    def _transform_feature(self, inputs):
        feature_tensors = []
        for key in _collect_leaf_level_keys(self):
            if isinstance(key, str):
                feature_tensors.append(inputs.get(key))
            elif isinstance(key, _CategoricalColumn):
                ids_and_weights = key._get_sparse_tensors(inputs)
                if ids_and_weights.weight_tensor is not None:
                    raise ValueError("crossed_column does not support weight_tensor, but the given column populates "
                                     f"weight_tensor. Given column: {key.name}")
                feature_tensors.append(ids_and_weights.id_tensor)
            else:
                raise ValueError(f"Unsupported column type. Given: {key}")
        return sparse_cross_hashed(inputs=feature_tensors, num_buckets=self.hash_bucket_size, hash_key=self.hash_key)


@tf_export("feature_column.crossed_column")
def crossed_column(keys, hash_bucket_size, hash_key=None):
    """tf.feature_column.crossed_column(keys, hash_bucket_size, hash_key=None): every combination
    of one value of each key (feature names or categorical columns, not hash bucket columns) per
    example, hashed as TF's SparseCross into hash_bucket_size buckets."""
    if not hash_bucket_size or hash_bucket_size < 1:
        raise ValueError(f"hash_bucket_size must be > 1. hash_bucket_size: {hash_bucket_size}")
    if not keys or len(keys) < 2:
        raise ValueError(f"keys must be a list with length > 1. Given: {keys}")
    for key in keys:
        if not isinstance(key, (str, _CategoricalColumn)):
            raise ValueError("Unsupported key type. All keys must be either string, or categorical column except "
                             f"HashedCategoricalColumn. Given: {key}")
        if isinstance(key, HashedCategoricalColumn):
            raise ValueError("categorical_column_with_hash_bucket is not supported for crossing. Hashing before "
                             "crossing will increase probability of collision. Instead, use the feature name as a "
                             f"string. Given: {key}")
    return CrossedColumn(keys=tuple(keys), hash_bucket_size=hash_bucket_size, hash_key=hash_key)


# -- sequence columns ------------------------------------------------------------------------------
def _sequence_length(sp_tensor, num_elements=1):
    """Each example's number of time steps, an int64 [batch]: one past its last column index (time
    step) in sp_tensor, in groups of num_elements values per step (rounded up); 0 for an empty row."""
    with name_scope(None, "sequence_length") as scope:
        row_ids = sp_tensor.indices[:, 0]
        steps = segment_max(add(sp_tensor.indices[:, 1], 1), segment_ids=row_ids)
        if num_elements != 1:
            steps = floordiv(add(steps, num_elements - 1), num_elements)
        # segment_max stops at the last row with a value: the empty rows after it are 0 too.
        missing = subtract(sp_tensor.dense_shape[:1], shape(steps, out_type=dtypes.int64)[:1])
        return concat([steps, zeros(missing, dtype=dtypes.int64)], 0, name=scope)


class SequenceCategoricalColumn(_CategoricalColumn, collections.namedtuple("SequenceCategoricalColumn",
                                                                           ("categorical_column",))):
    """A sequence_categorical_column_with_*: its categorical column's ids as [batch, T, k]
    (k ids per time step, 1 from a [batch, T] feature), so an embedding_column or
    indicator_column over it combines the ids of each time step, not of each example."""

    name = property(lambda self: self.categorical_column.name)
    _parse_example_spec = property(lambda self: self.categorical_column._parse_example_spec)
    _num_buckets = property(lambda self: self.categorical_column._num_buckets)

    def _transform_feature(self, inputs):
        return inputs.get(self.categorical_column)

    def _get_sparse_tensors(self, inputs, weight_collections=None, trainable=None):
        id_tensor, weight_tensor = self.categorical_column._get_sparse_tensors(inputs)
        dims = id_tensor.dense_shape
        # The third dimension counted, not -1: -1 fails when the batch holds no time step at all.
        target_shape = stack([dims[0], dims[1], reduce_prod(dims[2:])])
        id_tensor = sparse_reshape(id_tensor, target_shape)
        if weight_tensor is not None:
            weight_tensor = sparse_reshape(weight_tensor, target_shape)
        return IdWeightPair(id_tensor, weight_tensor)


@tf_export("feature_column.sequence_categorical_column_with_identity",
           "contrib.feature_column.sequence_categorical_column_with_identity")
def sequence_categorical_column_with_identity(key, num_buckets, default_value=None):
    """tf.feature_column.sequence_categorical_column_with_identity(key, num_buckets,
    default_value=None): sequences of integers in [0, num_buckets), as
    categorical_column_with_identity's ids per time step (for embedding_column or
    indicator_column, read by sequence_input_layer)."""
    return SequenceCategoricalColumn(categorical_column_with_identity(key, num_buckets, default_value))


@tf_export("feature_column.sequence_categorical_column_with_hash_bucket",
           "contrib.feature_column.sequence_categorical_column_with_hash_bucket")
def sequence_categorical_column_with_hash_bucket(key, hash_bucket_size, dtype=dtypes.string):
    """tf.feature_column.sequence_categorical_column_with_hash_bucket(key, hash_bucket_size,
    dtype=tf.string): sequences of values hashed into hash_bucket_size ids, as
    categorical_column_with_hash_bucket's, per time step."""
    return SequenceCategoricalColumn(categorical_column_with_hash_bucket(key, hash_bucket_size, dtype))


@tf_export("feature_column.sequence_categorical_column_with_vocabulary_file",
           "contrib.feature_column.sequence_categorical_column_with_vocabulary_file")
def sequence_categorical_column_with_vocabulary_file(key, vocabulary_file, vocabulary_size=None, num_oov_buckets=0,
                                                     default_value=None, dtype=dtypes.string):
    """tf.feature_column.sequence_categorical_column_with_vocabulary_file(key, vocabulary_file,
    vocabulary_size=None, num_oov_buckets=0, default_value=None, dtype=tf.string): sequences of
    values looked up in a vocabulary file, as categorical_column_with_vocabulary_file's, per
    time step."""
    return SequenceCategoricalColumn(categorical_column_with_vocabulary_file(
        key, vocabulary_file, vocabulary_size=vocabulary_size, num_oov_buckets=num_oov_buckets,
        default_value=default_value, dtype=dtype))


@tf_export("feature_column.sequence_categorical_column_with_vocabulary_list",
           "contrib.feature_column.sequence_categorical_column_with_vocabulary_list")
def sequence_categorical_column_with_vocabulary_list(key, vocabulary_list, dtype=None, default_value=-1,
                                                     num_oov_buckets=0):
    """tf.feature_column.sequence_categorical_column_with_vocabulary_list(key, vocabulary_list,
    dtype=None, default_value=-1, num_oov_buckets=0): sequences of values looked up in
    vocabulary_list, as categorical_column_with_vocabulary_list's, per time step."""
    return SequenceCategoricalColumn(categorical_column_with_vocabulary_list(
        key, vocabulary_list, dtype=dtype, default_value=default_value, num_oov_buckets=num_oov_buckets))


class SequenceNumericColumn(_SequenceDenseColumn, collections.namedtuple(
        "SequenceNumericColumn", ("key", "shape", "default_value", "dtype", "normalizer_fn"))):
    """A sequence_numeric_column."""

    name = property(lambda self: self.key)
    _parse_example_spec = property(lambda self: {self.key: VarLenFeature(self.dtype)})
    _variable_shape = property(lambda self: TensorShape(self.shape))

    def _transform_feature(self, inputs):
        tensor = inputs.get(self.key)
        # TypeErrors, as TF's (from its SparseToDense), but naming the column.
        if not isinstance(tensor, SparseTensor):
            raise TypeError(f"sequence_numeric_column {self.key} reads a SparseTensor (tf.parse_example's "
                            f"VarLenFeature, or a feature list of tf.parse_sequence_example); given a dense {tensor}")
        if tensor.dtype != self.dtype:
            raise TypeError(f"sequence_numeric_column {self.key} has dtype {self.dtype.name}; its feature has dtype "
                            f"{tensor.dtype.name}")
        return tensor if self.normalizer_fn is None else self.normalizer_fn(tensor)

    def _get_sequence_dense_tensor(self, inputs, weight_collections=None, trainable=None):
        sp_tensor = inputs.get(self)
        dense = sparse_tensor_to_dense(sp_tensor, default_value=self.default_value)
        dense = reshape(dense, concat([shape(dense)[:1], [-1], list(self.shape)], 0))
        # From [batch, values] the values of a step are `shape`'s elements in a row; from
        # parse_sequence_example's [batch, T, values] the steps are the second dimension.
        num_elements = self._variable_shape.num_elements() if sp_tensor.get_shape().ndims == 2 else 1
        return self.TensorSequenceLengthPair(dense, _sequence_length(sp_tensor, num_elements))


@tf_export("feature_column.sequence_numeric_column", "contrib.feature_column.sequence_numeric_column")
def sequence_numeric_column(key, shape=(1,), default_value=0., dtype=dtypes.float32, normalizer_fn=None):
    """tf.feature_column.sequence_numeric_column(key, shape=(1,), default_value=0.,
    dtype=tf.float32, normalizer_fn=None): sequences of numbers, `shape` of them per time step
    (each example holding shape's elements times its length), padded with default_value to
    [batch, T, *shape]; normalizer_fn maps the SparseTensor of values first."""
    shape = _check_shape(shape, key)
    dtype = dtypes.as_dtype(dtype)
    if not (dtype.is_integer or dtype.is_floating):
        raise ValueError(f"dtype must be convertible to float. dtype: {dtype}, key: {key}")
    if normalizer_fn is not None and not callable(normalizer_fn):
        raise TypeError(f"normalizer_fn must be a callable. Given: {normalizer_fn}")
    _assert_key_is_string(key)
    return SequenceNumericColumn(key, shape=shape, default_value=default_value, dtype=dtype,
                                 normalizer_fn=normalizer_fn)


# -- dense columns over categorical ones ----------------------------------------------------------
class _DenseOverCategoricalColumn(_DenseColumn, _SequenceDenseColumn):
    """A dense column over `categorical_column` (`_dense` gives its values): input_layer reads it
    over a plain categorical column, sequence_input_layer over a sequence one."""

    _kind = "a column"   # its constructor's name, for the errors

    def _get_dense_tensor(self, inputs, weight_collections=None, trainable=None):
        self._check_sequence_use(sequence=False)
        return self._dense(inputs, weight_collections, trainable)

    def _get_sequence_dense_tensor(self, inputs, weight_collections=None, trainable=None):
        self._check_sequence_use(sequence=True)
        dense = self._dense(inputs, weight_collections, trainable)
        return self.TensorSequenceLengthPair(dense, _sequence_length(
            self.categorical_column._get_sparse_tensors(inputs).id_tensor))

    def _check_sequence_use(self, sequence: bool) -> None:
        if isinstance(self.categorical_column, SequenceCategoricalColumn) == sequence:
            return
        given = f"Given (type {type(self.categorical_column)}): {self.categorical_column}"
        if sequence:
            raise ValueError(f"In {self._kind}: {self.name}. categorical_column must be of type "
                             "_SequenceCategoricalColumn to use sequence_input_layer. Suggested fix: Use one of "
                             f"sequence_categorical_column_with_*. {given}")
        raise ValueError(f"In {self._kind}: {self.name}. categorical_column must not be of type "
                         "_SequenceCategoricalColumn. Suggested fix A: If you wish to use input_layer, use a "
                         "non-sequence categorical_column_with_*. Suggested fix B: If you wish to create sequence "
                         f"input, use sequence_input_layer instead of input_layer. {given}")


class IndicatorColumn(_DenseOverCategoricalColumn, collections.namedtuple("IndicatorColumn", ("categorical_column",))):
    """An indicator_column (over a sequence column: [batch, T, num_buckets])."""

    _kind = "indicator_column"

    name = property(lambda self: f"{self.categorical_column.name}_indicator")
    _parse_example_spec = property(lambda self: self.categorical_column._parse_example_spec)
    _variable_shape = property(lambda self: TensorShape([1, self.categorical_column._num_buckets]))

    def _transform_feature(self, inputs):
        id_tensor, weight_tensor = self.categorical_column._get_sparse_tensors(inputs)
        size = self._variable_shape[-1].value
        if weight_tensor is not None:
            weighted = sparse_merge(sp_ids=id_tensor, sp_values=weight_tensor, vocab_size=int(size))
            weighted = sparse_slice(weighted, [0, 0], weighted.dense_shape)
            return scatter_nd(weighted.indices, weighted.values, weighted.dense_shape)
        dense_ids = sparse_tensor_to_dense(id_tensor, default_value=-1)
        return reduce_sum(one_hot(dense_ids, depth=size, on_value=1.0, off_value=0.0), axis=[-2])

    def _dense(self, inputs, weight_collections, trainable):
        return inputs.get(self)


@tf_export("feature_column.indicator_column")
def indicator_column(categorical_column):
    """tf.feature_column.indicator_column(categorical_column): a categorical column as a multi-hot
    float32 vector of its num_buckets (the weights where it is weighted)."""
    if not isinstance(categorical_column, _CategoricalColumn):
        raise ValueError(f"Unsupported input type. Input must be a CategoricalColumn. Given: {categorical_column}")
    return IndicatorColumn(categorical_column)


def _embedding_lookup(column, embedding_weights, sparse_tensors):
    """The combined embeddings of a column's ids (weights loaded from ckpt_to_load_from first)."""
    if column.ckpt_to_load_from is not None:
        init_from_checkpoint(column.ckpt_to_load_from, {column.tensor_name_in_ckpt: embedding_weights})
    return safe_embedding_lookup_sparse(embedding_weights, sparse_tensors.id_tensor, sparse_tensors.weight_tensor,
                                        combiner=column.combiner, name=f"{column.name}_weights",
                                        max_norm=column.max_norm)


def _embedding_collections(weight_collections):
    if weight_collections and GraphKeys.GLOBAL_VARIABLES not in weight_collections:
        weight_collections.append(GraphKeys.GLOBAL_VARIABLES)
    return weight_collections


class EmbeddingColumn(_DenseOverCategoricalColumn, collections.namedtuple(
        "EmbeddingColumn", ("categorical_column", "dimension", "combiner", "initializer", "ckpt_to_load_from",
                            "tensor_name_in_ckpt", "max_norm", "trainable"))):
    """An embedding_column (over a sequence column: [batch, T, dimension], each step's ids combined)."""

    _kind = "embedding_column"

    name = property(lambda self: f"{self.categorical_column.name}_embedding")
    _parse_example_spec = property(lambda self: self.categorical_column._parse_example_spec)
    _variable_shape = property(lambda self: TensorShape([self.dimension]))

    def _transform_feature(self, inputs):
        return inputs.get(self.categorical_column)

    def _dense(self, inputs, weight_collections, trainable):
        sparse_tensors = self.categorical_column._get_sparse_tensors(inputs, weight_collections, trainable)
        weights = get_variable("embedding_weights", shape=(self.categorical_column._num_buckets, self.dimension),
                               dtype=dtypes.float32, initializer=self.initializer,
                               trainable=self.trainable and trainable is not False,
                               collections=_embedding_collections(weight_collections))
        return _embedding_lookup(self, weights, sparse_tensors)


def _check_embedding_args(dimension, ckpt_to_load_from, tensor_name_in_ckpt, initializer):
    if dimension is None or dimension < 1:
        raise ValueError(f"Invalid dimension {dimension}.")
    if (ckpt_to_load_from is None) != (tensor_name_in_ckpt is None):
        raise ValueError("Must specify both `ckpt_to_load_from` and `tensor_name_in_ckpt` or none of them.")
    if initializer is not None and not callable(initializer):
        raise ValueError("initializer must be callable if specified.")
    return initializer or truncated_normal_initializer(mean=0.0, stddev=1 / math.sqrt(dimension))


@tf_export("feature_column.embedding_column")
def embedding_column(categorical_column, dimension, combiner="mean", initializer=None, ckpt_to_load_from=None,
                     tensor_name_in_ckpt=None, max_norm=None, trainable=True):
    """tf.feature_column.embedding_column(categorical_column, dimension, combiner='mean',
    initializer=None, ckpt_to_load_from=None, tensor_name_in_ckpt=None, max_norm=None,
    trainable=True): a categorical column's ids as the combination ('mean', 'sqrtn' or 'sum') of
    their rows of a [num_buckets, dimension] variable 'embedding_weights' (initialized by
    truncated_normal(stddev=1/sqrt(dimension)) by default, or from a checkpoint)."""
    initializer = _check_embedding_args(dimension, ckpt_to_load_from, tensor_name_in_ckpt, initializer)
    return EmbeddingColumn(categorical_column=categorical_column, dimension=dimension, combiner=combiner,
                           initializer=initializer, ckpt_to_load_from=ckpt_to_load_from,
                           tensor_name_in_ckpt=tensor_name_in_ckpt, max_norm=max_norm, trainable=trainable)


class _SharedEmbeddingColumn(_DenseOverCategoricalColumn, collections.namedtuple(
        "_SharedEmbeddingColumn", ("categorical_column", "dimension", "combiner", "initializer",
                                   "shared_embedding_collection_name", "ckpt_to_load_from", "tensor_name_in_ckpt",
                                   "max_norm", "trainable"))):
    """One of shared_embedding_columns: its variable is the one variable of the graph collection
    shared_embedding_collection_name, made by whichever column is built first."""

    _kind = "shared_embedding_column"

    name = property(lambda self: f"{self.categorical_column.name}_shared_embedding")
    _var_scope_name = property(lambda self: self.shared_embedding_collection_name)
    _parse_example_spec = property(lambda self: self.categorical_column._parse_example_spec)
    _variable_shape = property(lambda self: TensorShape([self.dimension]))

    def _transform_feature(self, inputs):
        return inputs.get(self.categorical_column)

    def _dense(self, inputs, weight_collections, trainable):
        with name_scope(None, self.name):
            sparse_tensors = self.categorical_column._get_sparse_tensors(inputs, weight_collections, trainable)
            embedding_shape = (self.categorical_column._num_buckets, self.dimension)
            shared = get_collection(self.shared_embedding_collection_name)
            if len(shared) > 1:
                raise ValueError(f"Collection {shared} can only contain one variable. Suggested fix A: Choose a unique "
                                 "name for this collection. Suggested fix B: Do not add any variables to this "
                                 "collection. The feature_column library already adds a variable under the hood.")
            if shared:
                weights = shared[0]
                if tuple(weights.get_shape().as_list()) != embedding_shape:
                    raise ValueError(f"Shared embedding collection {self.shared_embedding_collection_name} contains "
                                     f"variable {weights.name} of unexpected shape {weights.get_shape()}. Expected "
                                     f"shape is {embedding_shape}.")
            else:
                weights = get_variable("embedding_weights", shape=embedding_shape, dtype=dtypes.float32,
                                       initializer=self.initializer,
                                       trainable=self.trainable and trainable is not False,
                                       collections=weight_collections)
                add_to_collection(self.shared_embedding_collection_name, weights)
            return _embedding_lookup(self, weights, sparse_tensors)


@tf_export("feature_column.shared_embedding_columns")
def shared_embedding_columns(categorical_columns, dimension, combiner="mean", initializer=None,
                             shared_embedding_collection_name=None, ckpt_to_load_from=None, tensor_name_in_ckpt=None,
                             max_norm=None, trainable=True):
    """tf.feature_column.shared_embedding_columns(categorical_columns, dimension, combiner='mean',
    initializer=None, shared_embedding_collection_name=None, ...): embedding columns of
    categorical columns of one kind and bucket count, sharing one variable, named after the
    sorted column names joined by '_' plus '_shared_embedding' unless named."""
    initializer = _check_embedding_args(dimension, ckpt_to_load_from, tensor_name_in_ckpt, initializer)
    sorted_columns = sorted(categorical_columns, key=lambda x: x.name)
    c0 = sorted_columns[0]
    if not isinstance(c0, _CategoricalColumn):
        raise ValueError(f"All categorical_columns must be subclasses of _CategoricalColumn. Given: {c0}, of type: "
                         f"{type(c0)}")
    num_buckets = c0._num_buckets
    while isinstance(c0, WeightedCategoricalColumn):
        c0 = c0.categorical_column
    for c in sorted_columns[1:]:
        while isinstance(c, WeightedCategoricalColumn):
            c = c.categorical_column
        if not isinstance(c, type(c0)):
            raise ValueError("To use shared_embedding_column, all categorical_columns must have the same type, or be "
                             f"weighted_categorical_column or sequence column of the same type. Given column: {c0} of "
                             f"type: {type(c0)} does not match given column: {c} of type: {type(c)}")
        if num_buckets != c._num_buckets:
            raise ValueError("To use shared_embedding_column, all categorical_columns must have the same number of "
                             f"buckets. ven column: {c0} with buckets: {num_buckets} does  not match column: {c} "
                             f"with buckets: {c._num_buckets}")
    if not shared_embedding_collection_name:
        shared_embedding_collection_name = "_".join(c.name for c in sorted_columns) + "_shared_embedding"
    return [_SharedEmbeddingColumn(categorical_column=column, dimension=dimension, combiner=combiner,
                                   initializer=initializer,
                                   shared_embedding_collection_name=shared_embedding_collection_name,
                                   ckpt_to_load_from=ckpt_to_load_from, tensor_name_in_ckpt=tensor_name_in_ckpt,
                                   max_norm=max_norm, trainable=trainable)
            for column in categorical_columns]
