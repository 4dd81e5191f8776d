"""Sampled losses for many classes (TF's nn_impl): nce_loss and sampled_softmax_loss, which
score the true classes and a sample of the others (drawn by a candidate sampler) instead of all
num_classes, correcting each logit by the log of its expected count."""
from __future__ import annotations

from tensorweave.framework import dtypes
from tensorweave.framework.api import name_scope
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.concat import concat, stack
from tensorweave.ops.array.core import expand_dims, reshape, shape, stop_gradient
from tensorweave.ops.array.fill import ones, ones_like, zeros_like
from tensorweave.ops.array.slicing import slice as slice_
from tensorweave.ops.math.binary import add, multiply, realdiv, subtract
from tensorweave.ops.math.cast import cast
from tensorweave.ops.math.linalg import matmul
from tensorweave.ops.math.unary import log
from tensorweave.ops.nn.candidate_sampling import compute_accidental_hits, log_uniform_candidate_sampler
from tensorweave.ops.nn.impl import (embedding_lookup, sigmoid_cross_entropy_with_logits,
                                     softmax_cross_entropy_with_logits_v2)
from tensorweave.ops.nn.util import embedding_params
from tensorweave.ops.sparse.core import sparse_to_dense


def _sum_rows(x):
    """Row sums of a matrix as a matmul with ones (TF's _sum_rows: its gradient is cheaper)."""
    cols = shape(x)[1]
    return reshape(matmul(x, ones(stack([cols, 1]), dtype=x.dtype)), [-1])


def compute_sampled_logits(weights, biases, labels, inputs, num_sampled, num_classes, num_true=1,
                           sampled_values=None, subtract_log_q=True, remove_accidental_hits=False,
                           partition_strategy="mod", name=None, seed=None):
    """The logits [batch, num_true + num_sampled] of the true and the sampled classes and their
    targets (1 / num_true for the true ones, 0 for the sampled): the shared part of the sampled
    losses. weights [num_classes, dim] (or a list of shards), biases [num_classes], labels
    [batch, num_true] int, inputs [batch, dim]; sampled_values defaults to a unique
    log-uniform sample."""
    weights = embedding_params(weights)
    with name_scope(name, "compute_sampled_logits", weights + [biases, inputs, labels]):
        labels = convert_to_tensor(labels, name="labels")
        if labels.dtype != dtypes.int64:
            labels = cast(labels, dtypes.int64)
        inputs = convert_to_tensor(inputs, name="inputs")
        labels_flat = reshape(labels, [-1])
        if sampled_values is None:
            sampled_values = log_uniform_candidate_sampler(true_classes=labels, num_true=num_true,
                                                           num_sampled=num_sampled, unique=True,
                                                           range_max=num_classes, seed=seed)
        sampled, true_expected_count, sampled_expected_count = (stop_gradient(s) for s in sampled_values)
        sampled = cast(sampled, dtypes.int64)
        all_ids = concat([labels_flat, sampled], 0)
        all_w = embedding_lookup(weights, all_ids, partition_strategy=partition_strategy)
        if all_w.dtype != inputs.dtype:
            all_w = cast(all_w, inputs.dtype)
        n_true = shape(labels_flat)[0]
        true_w = slice_(all_w, [0, 0], stack([n_true, -1]))
        sampled_w = slice_(all_w, stack([n_true, 0]), [-1, -1])
        sampled_logits = matmul(inputs, sampled_w, transpose_b=True)
        all_b = embedding_lookup(embedding_params(biases), all_ids, partition_strategy=partition_strategy)
        if all_b.dtype != inputs.dtype:
            all_b = cast(all_b, inputs.dtype)
        true_b = slice_(all_b, [0], reshape(n_true, [1]))
        sampled_b = slice_(all_b, reshape(n_true, [1]), [-1])
        # true logits: the row-wise dot products of inputs with their num_true true classes' rows
        dim = shape(true_w)[1:2]
        row_wise = multiply(expand_dims(inputs, 1), reshape(true_w, concat([[-1, num_true], dim], 0)))
        true_logits = reshape(_sum_rows(reshape(row_wise, concat([[-1], dim], 0))), [-1, num_true])
        true_logits = add(true_logits, reshape(true_b, [-1, num_true]))
        sampled_logits = add(sampled_logits, sampled_b)
        if remove_accidental_hits:
            acc_indices, acc_ids, acc_weights = compute_accidental_hits(labels, sampled, num_true=num_true)
            sparse_indices = concat([reshape(acc_indices, [-1, 1]), reshape(cast(acc_ids, dtypes.int32), [-1, 1])], 1,
                                    name="sparse_indices")
            logits_shape = concat([shape(labels)[:1], expand_dims(num_sampled, 0)], 0)
            if sampled_logits.dtype != acc_weights.dtype:
                acc_weights = cast(acc_weights, sampled_logits.dtype)
            sampled_logits = add(sampled_logits, sparse_to_dense(sparse_indices, logits_shape, acc_weights,
                                                                 default_value=0.0, validate_indices=False))
        if subtract_log_q:
            true_logits = subtract(true_logits, log(cast(true_expected_count, true_logits.dtype)))
            sampled_logits = subtract(sampled_logits, log(cast(sampled_expected_count, sampled_logits.dtype)))
        out_logits = concat([true_logits, sampled_logits], 1)
        out_labels = concat([realdiv(ones_like(true_logits), float(num_true)), zeros_like(sampled_logits)], 1)
        return out_logits, out_labels


@tf_export("nn.nce_loss")
def nce_loss(weights, biases, labels, inputs, num_sampled, num_classes, num_true=1, sampled_values=None,
             remove_accidental_hits=False, partition_strategy="mod", name="nce_loss"):
    """tf.nn.nce_loss(weights, biases, labels, inputs, num_sampled, num_classes, num_true=1,
    sampled_values=None, remove_accidental_hits=False, partition_strategy='mod', name='nce_loss'):
    the noise-contrastive estimation loss per example ([batch]): logistic losses of the true
    classes (target 1 / num_true) and of num_sampled sampled classes (target 0)."""
    logits, labels = compute_sampled_logits(weights, biases, labels, inputs, num_sampled, num_classes,
                                            num_true=num_true, sampled_values=sampled_values, subtract_log_q=True,
                                            remove_accidental_hits=remove_accidental_hits,
                                            partition_strategy=partition_strategy, name=name)
    sampled_losses = sigmoid_cross_entropy_with_logits(labels=labels, logits=logits, name="sampled_losses")
    return _sum_rows(sampled_losses)


@tf_export("nn.sampled_softmax_loss")
def sampled_softmax_loss(weights, biases, labels, inputs, num_sampled, num_classes, num_true=1, sampled_values=None,
                         remove_accidental_hits=True, partition_strategy="mod", name="sampled_softmax_loss",
                         seed=None):
    """tf.nn.sampled_softmax_loss(weights, biases, labels, inputs, num_sampled, num_classes,
    num_true=1, sampled_values=None, remove_accidental_hits=True, partition_strategy='mod',
    name='sampled_softmax_loss', seed=None): the softmax cross-entropy per example ([batch]) over
    the true classes and a sample of the others (accidental hits of a true class removed)."""
    logits, labels = compute_sampled_logits(weights, biases, labels, inputs, num_sampled, num_classes,
                                            num_true=num_true, sampled_values=sampled_values, subtract_log_q=True,
                                            remove_accidental_hits=remove_accidental_hits,
                                            partition_strategy=partition_strategy, name=name, seed=seed)
    labels = stop_gradient(labels, name="labels_stop_gradient")
    return softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits)
