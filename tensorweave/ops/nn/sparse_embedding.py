"""Embeddings of sparse ids: tf.nn.embedding_lookup_sparse and safe_embedding_lookup_sparse,
which look rows up with tf.nn.embedding_lookup (any partitioning of params) and combine each
row's ids with a segment sum, mean or sqrt-n. In nn/, not sparse/: nn builds on sparse ops, not
the other way round."""
from __future__ import annotations

from tensorweave.framework import dtypes
from tensorweave.framework.api import name_scope
from tensorweave.framework.shapes import unknown_shape
from tensorweave.framework.sparse_tensor import SparseTensor, SparseTensorValue
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.concat import concat, stack
from tensorweave.ops.array.core import expand_dims, rank, reshape, shape
from tensorweave.ops.array.fill import ones, zeros_like
from tensorweave.ops.array.pad import tile
from tensorweave.ops.array.slicing import slice as slice_
from tensorweave.ops.array.sort import unique, where
from tensorweave.ops.math.binary import div_no_nan, greater, greater_equal, logical_and, multiply
from tensorweave.ops.math.cast import cast
from tensorweave.ops.math.reduction import reduce_prod
from tensorweave.ops.math.segment import segment_sum, sparse_segment_mean, sparse_segment_sqrt_n, sparse_segment_sum
from tensorweave.ops.math.unary import sqrt, square
from tensorweave.ops.nn.impl import embedding_lookup
from tensorweave.ops.nn.util import embedding_params
from tensorweave.ops.sparse.core import convert_sparse, sparse_fill_empty_rows, sparse_reshape, sparse_retain


_COMBINERS = ("sum", "mean", "sqrtn")


def _half_to_float(embeddings):
    """float16 embeddings are combined in float32, as TF does."""
    return cast(embeddings, dtypes.float32) if embeddings.dtype == dtypes.float16 else embeddings


@tf_export("nn.embedding_lookup_sparse")
def embedding_lookup_sparse(params, sp_ids, sp_weights, partition_strategy="mod", name=None, combiner=None,
                            max_norm=None):
    """tf.nn.embedding_lookup_sparse(params, sp_ids, sp_weights, partition_strategy='mod',
    name=None, combiner=None, max_norm=None): for each row of the rank-2 SparseTensor sp_ids
    (ordered row-major), its ids' rows of params combined by 'sum', 'mean' (the default) or
    'sqrtn', weighted by sp_weights' values when given. The result has max(row) + 1 rows; a row
    without ids is 0."""
    combiner = "mean" if combiner is None else combiner
    if combiner not in _COMBINERS:
        raise ValueError("combiner must be one of 'mean', 'sqrtn' or 'sum'")
    params = embedding_params(params)
    if not isinstance(sp_ids, (SparseTensor, SparseTensorValue)):
        raise TypeError("sp_ids must be SparseTensor")
    if sp_weights is not None and not isinstance(sp_weights, (SparseTensor, SparseTensorValue)):
        raise TypeError("sp_weights must be either None or SparseTensor")
    sp_ids = convert_sparse(sp_ids, "sp_ids")
    sp_weights = None if sp_weights is None else convert_sparse(sp_weights, "sp_weights")
    with name_scope(name, "embedding_lookup_sparse", params + [sp_ids]) as scope:
        segment_ids = cast(sp_ids.indices[:, 0], dtypes.int32)
        ids = sp_ids.values
        if sp_weights is None:
            ids, idx = unique(ids)
            embeddings = _half_to_float(embedding_lookup(params, ids, partition_strategy=partition_strategy,
                                                         max_norm=max_norm))
            combine = {"sum": sparse_segment_sum, "mean": sparse_segment_mean, "sqrtn": sparse_segment_sqrt_n}[combiner]
            return combine(embeddings, idx, segment_ids, name=scope)
        embeddings = _half_to_float(embedding_lookup(params, ids, partition_strategy=partition_strategy,
                                                     max_norm=max_norm))
        weights = sp_weights.values
        if weights.dtype != embeddings.dtype:
            weights = cast(weights, embeddings.dtype)
        # weights [n] broadcast against embeddings [n, d...]
        ones_tail = ones(expand_dims(rank(embeddings) - 1, 0), dtype=dtypes.int32)
        bcast_weights = reshape(weights, concat([shape(weights), ones_tail], 0))
        summed = segment_sum(multiply(embeddings, bcast_weights), segment_ids)
        if combiner == "sum":
            return summed
        if combiner == "mean":
            denominator = segment_sum(weights, segment_ids)
        else:
            denominator = sqrt(segment_sum(square(weights), segment_ids))
        denominator = reshape(denominator, concat([shape(denominator), ones_tail], 0))
        # A row without ids is 0 (TF 1.15 divided 0 by 0 here; later TF gives 0, and so do we).
        return div_no_nan(summed, denominator, name=scope)


@tf_export("nn.safe_embedding_lookup_sparse")
def safe_embedding_lookup_sparse(embedding_weights, sparse_ids, sparse_weights=None, combiner="mean",
                                 default_id=None, name=None, partition_strategy="div", max_norm=None):
    """tf.nn.safe_embedding_lookup_sparse(embedding_weights, sparse_ids, sparse_weights=None,
    combiner='mean', default_id=None, name=None, partition_strategy='div', max_norm=None): as
    embedding_lookup_sparse for sparse_ids of any rank >= 2 (the last dimension holds the ids),
    dropping ids < 0 and weights <= 0; a row left with no ids gets default_id's embedding, or
    zeros when default_id is None. The result is [d0, ..., d(n-2), embedding dims...]."""
    weights = embedding_params(embedding_weights)
    if not weights:
        raise ValueError("Missing embedding_weights.")
    sparse_ids = convert_sparse(sparse_ids, "sparse_ids")
    sparse_weights = None if sparse_weights is None else convert_sparse(sparse_weights, "sparse_weights")
    with name_scope(name, "embedding_lookup", weights + [sparse_ids]) as scope:
        original_shape = sparse_ids.dense_shape
        static_rank = sparse_ids.get_shape().ndims
        original_rank = shape(original_shape, out_type=dtypes.int64)[0]
        outer = reduce_prod(slice_(original_shape, [0], expand_dims(original_rank - 1, 0)))
        two_d = stack([outer, original_shape[-1]])
        sparse_ids = sparse_reshape(sparse_ids, two_d)
        if sparse_weights is not None:
            sparse_weights = SparseTensor(sparse_ids.indices, sparse_weights.values, sparse_ids.dense_shape)
        # Drop invalid ids (and their weights), and weights that are not positive (and their ids).
        keep = greater_equal(sparse_ids.values, 0)
        if sparse_weights is not None:
            keep = logical_and(keep, greater(sparse_weights.values, 0))
            sparse_weights = sparse_retain(sparse_weights, keep)
        sparse_ids = sparse_retain(sparse_ids, keep)
        sparse_ids, is_row_empty = sparse_fill_empty_rows(sparse_ids, default_id or 0)
        if sparse_weights is not None:
            sparse_weights, _ = sparse_fill_empty_rows(sparse_weights, 1.0)
        result = embedding_lookup_sparse(weights, sparse_ids, sparse_weights, combiner=combiner,
                                         partition_strategy=partition_strategy, max_norm=max_norm)
        if default_id is None:
            # Rows that had no valid id are zero (not the embedding of id 0).
            mask = tile(reshape(is_row_empty, [-1, 1]), stack([1, shape(result)[1]]))
            result = where(mask, zeros_like(result), result)
        final_shape = concat([slice_(cast(original_shape, dtypes.int32), [0],
                                     expand_dims(cast(original_rank, dtypes.int32) - 1, 0)),
                              slice_(shape(result), [1], [-1])], 0)
        out = reshape(result, final_shape, name=scope)
        if static_rank is not None:
            out.set_shape(unknown_shape(static_rank - 1).concatenate(result.shape[1:]))
        return out
