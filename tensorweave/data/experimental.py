"""tf.data.experimental: its names are declared where they live (ops/data/); here only the lookup
tables filled from a dataset, which need both ops/data and ops/lookup (one level, neither
imports the other)."""
from __future__ import annotations

import numpy as np

from tensorweave import _api
from tensorweave.framework import dtypes
from tensorweave.framework.api import name_scope
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.data.dataset import Dataset
from tensorweave.ops.data.experimental import assert_cardinality, get_single_element
from tensorweave.ops.lookup.tables import IdTableWithHashBuckets, KeyValueTensorInitializer, StaticHashTable

__getattr__, __dir__ = _api.lazy_attributes(__name__)


@tf_export("data.experimental.DatasetInitializer")
class DatasetInitializer(KeyValueTensorInitializer):
    """tf.data.experimental.DatasetInitializer(dataset): a lookup table's contents from a dataset
    of (key, value) pairs, read whole when the table's initializer runs."""

    def __init__(self, dataset: Dataset):
        specs = dataset._specs
        if len(specs) != 2 or not isinstance(dataset._template, tuple) or any(s.sparse for s in specs):
            raise TypeError(f"The dataset of a DatasetInitializer must hold (key, value) pairs of tensors, got "
                            f"{dataset.output_types}")
        empty = tuple(np.zeros(0, object if s.dtype == dtypes.string else s.dtype.as_numpy_dtype) for s in specs)
        with name_scope(None, "dataset_init"):
            # all the pairs as one batch (or none: an empty table), read by one op
            whole = dataset.batch(2 ** 62).concatenate(Dataset.from_tensors(empty)).take(1)
            keys, values = get_single_element(whole)
        super().__init__(keys, values, specs[0].dtype, specs[1].dtype)


@tf_export("data.experimental.table_from_dataset")
def table_from_dataset(dataset=None, num_oov_buckets=0, vocab_size=None, default_value=None, hasher_spec=None,
                       key_dtype=dtypes.string, name=None):
    """tf.data.experimental.table_from_dataset(dataset, num_oov_buckets=0, vocab_size=None,
    default_value=None, ...): a StaticHashTable of the dataset's (key, value) pairs (default_value
    -1 for numeric values); with num_oov_buckets a key it lacks gets a hash bucket after them; with
    vocab_size the first vocab_size pairs, of which there must be that many."""
    specs = dataset._specs
    if len(specs) != 2:
        raise ValueError(f"The dataset must hold (key, value) pairs, got {dataset.output_types}")
    if default_value is None:
        if not (specs[1].dtype.is_integer or specs[1].dtype.is_floating):
            raise ValueError(f"`default_value` must be specified when creating a table from a dataset that produces "
                             f"values of type {specs[1].dtype.name}.")
        default_value = -1
    if num_oov_buckets < 0:
        raise ValueError(f"`num_oov_buckets` must be greater than or equal to 0, got {num_oov_buckets}.")
    if vocab_size is not None and not hasattr(vocab_size, "dtype") and vocab_size < 1:
        raise ValueError(f"`vocab_size` must be greater than 0, got {vocab_size}.")
    key_dtype = dtypes.as_dtype(key_dtype)
    if not key_dtype.is_integer and key_dtype != dtypes.string:
        raise TypeError(f"`key_dtype` must be either an integer or string type, but got {key_dtype.name}")
    if vocab_size is not None:
        dataset = dataset.take(vocab_size).apply(assert_cardinality(vocab_size))
    with name_scope(name, "string_to_index"):
        table = StaticHashTable(DatasetInitializer(dataset), default_value)
        return IdTableWithHashBuckets(table, num_oov_buckets, hasher_spec, key_dtype=key_dtype) \
            if num_oov_buckets else table


@tf_export("data.experimental.index_table_from_dataset")
def index_table_from_dataset(dataset=None, num_oov_buckets=0, vocab_size=None, default_value=-1, hasher_spec=None,
                             key_dtype=dtypes.string, name=None):
    """tf.data.experimental.index_table_from_dataset(dataset, num_oov_buckets=0,
    vocab_size=None, default_value=-1, ...): a table from each key of the dataset to its position
    (int64); other keys get default_value, or a hash bucket after them with num_oov_buckets."""
    pairs = dataset.enumerate().map(lambda i, k: (k, i))
    return table_from_dataset(pairs, num_oov_buckets, vocab_size, default_value, hasher_spec, key_dtype, name)
