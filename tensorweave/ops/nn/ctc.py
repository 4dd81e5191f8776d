"""Connectionist temporal classification: the CTCLoss op (tf.nn.ctc_loss, and ctc_loss_v2 over
it), the greedy and beam search decoders, as TF's CPU kernels compute them (the blank is class
num_classes - 1 unless blank_index moves it)."""
from __future__ import annotations

import heapq
import math

import numpy as np

from tensorweave.framework import dtypes, errors
from tensorweave.framework.api import name_scope
from tensorweave.framework.shapes import TensorShape
from tensorweave.framework.sparse_tensor import SparseTensor
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.concat import concat, stack
from tensorweave.ops.array.core import expand_dims, reshape, shape, size, transpose
from tensorweave.ops.array.fill import ones_like
from tensorweave.ops.array.gather import gather, scatter_nd
from tensorweave.ops.array.sort import where
from tensorweave.ops.helpers import invalid, make_op
from tensorweave.ops.math.array_composites import boolean_mask, gather_nd, sequence_mask
from tensorweave.ops.math.binary import equal, less, logical_and, logical_not, not_equal, subtract
from tensorweave.ops.math.cast import cast
from tensorweave.ops.math.reduction import argmax, cumsum, reduce_any, reduce_max, reduce_sum
from tensorweave.ops.math.sequences import range as range_
from tensorweave.ops.nn.activations import log_softmax_np
from tensorweave.ops.nn.losses import broadcast_mul
from tensorweave.ops.nn.util import dims
from tensorweave.ops.registry import register

_LOG_ZERO = -np.inf


def _batch_labels(node, indices, values, batch: int) -> list:
    """The label sequence of each batch entry from a SparseTensor's parts (TF's checks)."""
    if indices.ndim != 2 or indices.shape[1] != 2:
        raise invalid(node, f"labels_indices must be a matrix with 2 columns, got shape {list(indices.shape)}")
    if values.shape[0] != indices.shape[0]:
        raise invalid(node, "labels_indices and labels_values must contain the same number of rows, but saw "
                            f"shapes: {list(indices.shape)} vs. {list(values.shape)}")
    labels = [[] for _ in range(batch)]
    for (b, _), v in zip(indices.tolist(), values.tolist()):
        if not 0 <= b < batch:
            raise invalid(node, f"labels batch index must be between 0 and {batch - 1} but saw: {b}")
        labels[b].append(int(v))
    return labels


# -- CTCLoss ----------------------------------------------------------------------------------
def _shifted(v: np.ndarray, k: int) -> np.ndarray:
    """v moved k places towards higher indices (k < 0: lower), log-zero filled."""
    out = np.full_like(v, _LOG_ZERO)
    if k > 0:
        out[k:] = v[:-k]
    else:
        out[:k] = v[-k:]
    return out


def _ctc_loss_one(log_y: np.ndarray, label: list, blank: int, merge_repeated: bool):
    """-log p(label | y) and its gradient with respect to the logits for one sequence (TF's
    ctc_loss_calculator: alpha-beta over the label with blanks interleaved, a frame at a time;
    states TF leaves out as unable to start or finish in time come out log-zero here too)."""
    T, C = log_y.shape
    l_prime = np.full(2 * len(label) + 1, blank)
    l_prime[1::2] = label
    U = len(l_prime)
    is_blank = l_prime == blank
    stay = np.where(merge_repeated | is_blank, 0.0, _LOG_ZERO)    # u -> u allowed
    skip = np.full(U, _LOG_ZERO)                                  # u - 2 -> u allowed
    if U > 2:
        merged = merge_repeated & (l_prime[2:] == l_prime[:-2])
        skip[2:] = np.where(~is_blank[2:] & ~merged, 0.0, _LOG_ZERO)
    emit = log_y[:, l_prime]                                      # [T, U]
    alpha = np.full((T, U), _LOG_ZERO)
    alpha[0, :min(U, 2)] = emit[0, :min(U, 2)]
    for t in range(1, T):
        prev = alpha[t - 1]
        alpha[t] = emit[t] + np.logaddexp(np.logaddexp(prev + stay, _shifted(prev, 1)), _shifted(prev, 2) + skip)
    beta = np.full((T, U), _LOG_ZERO)
    beta[T - 1, max(U - 2, 0):] = 0.0
    for t in range(T - 2, -1, -1):
        nxt = beta[t + 1] + emit[t + 1]
        beta[t] = np.logaddexp(np.logaddexp(nxt + stay, _shifted(nxt, -1)), _shifted(nxt + skip, -2))
    log_p = np.logaddexp.reduce(alpha[0] + beta[0])
    y = np.exp(log_y)
    if log_p == _LOG_ZERO:  # no valid path: TF's gradient is y itself
        return -log_p, y
    occupancy = np.full((T, C), _LOG_ZERO)
    both = alpha + beta
    for c in np.unique(l_prime):
        occupancy[:, c] = np.logaddexp.reduce(both[:, l_prime == c], axis=1)
    return -log_p, y - np.exp(occupancy - log_p)


def _ctc_loss_kernel(node, ctx):
    collapse = bool(node.attr.get("preprocess_collapse_repeated", False))
    merge_repeated = bool(node.attr.get("ctc_merge_repeated", True))
    ignore_longer = bool(node.attr.get("ignore_longer_outputs_than_inputs", False))

    def run(inputs, indices, values, seq_len):
        if inputs.ndim != 3:
            raise invalid(node, f"inputs is not a 3-Tensor, got shape {list(inputs.shape)}")
        T, B, C = inputs.shape
        if seq_len.shape != (B,):
            raise invalid(node, f"len(sequence_length) != batch_size.  len(sequence_length):  {seq_len.shape[0]} "
                                f"batch_size: {B}")
        labels = _batch_labels(node, indices, values, B)
        blank = C - 1
        loss = np.zeros(B, inputs.dtype)
        grad = np.zeros(inputs.shape, inputs.dtype)
        for b in range(B):
            n = int(seq_len[b])
            if not 0 <= n <= T:
                raise invalid(node, f"sequence_length({b}) <= {T}")
            label = labels[b]
            if collapse:
                label = [c for i, c in enumerate(label) if i == 0 or c != label[i - 1]]
            if any(c < 0 for c in label):
                raise invalid(node, f"All labels must be nonnegative integers, batch: {b} labels: "
                                    f"{','.join(map(str, label))}")
            if any(c >= C for c in label):
                raise invalid(node, f"No label may be greater than num_classes. num_classes: {C}, batch: {b} "
                                    f"labels: {','.join(map(str, label))}")
            # TF counts only the labels (a repeat's blank is not required: such a loss is inf)
            if n < len(label):
                if ignore_longer:
                    continue
                raise invalid(node, f"Not enough time for target transition sequence (required: {len(label)}, "
                                    f"available: {n}){b}You can turn this error into a warning by using the flag "
                                    "ignore_longer_outputs_than_inputs")
            if n == 0:
                continue
            log_y = log_softmax_np(inputs[:n, b].astype(np.float64))
            loss[b], g = _ctc_loss_one(log_y, label, blank, merge_repeated)
            grad[:n, b] = g
        return loss, grad
    return run


def _ctc_loss_infer(op):
    d = dims(op.inputs[0].shape)
    if d is not None and len(d) != 3:
        raise ValueError(f"Shape must be rank 3 but is rank {len(d)}")
    d = d or [None] * 3
    return [(op.inputs[0].dtype, TensorShape([d[1]])), (op.inputs[0].dtype, TensorShape(d))]


register("CTCLoss", _ctc_loss_infer, _ctc_loss_kernel,
         grad=lambda op, grad_loss, _: [broadcast_mul(grad_loss, op.outputs[1]), None, None, None],
         dtypes={0: ("inputs", (dtypes.float32, dtypes.float64)), 1: ("labels_indices", (dtypes.int64,)),
                 2: ("labels_values", (dtypes.int32,)), 3: ("sequence_length", (dtypes.int32,))})


@tf_export("nn.ctc_loss")
def ctc_loss(labels, inputs=None, sequence_length=None, preprocess_collapse_repeated=False, ctc_merge_repeated=True,
             ignore_longer_outputs_than_inputs=False, time_major=True, logits=None):
    """tf.nn.ctc_loss(labels, inputs, sequence_length, preprocess_collapse_repeated=False,
    ctc_merge_repeated=True, ignore_longer_outputs_than_inputs=False, time_major=True,
    logits=None): the CTC loss [batch] of int32 SparseTensor labels given logits inputs
    [max_time, batch, num_classes] (batch-major unless time_major), the blank being class
    num_classes - 1. preprocess_collapse_repeated merges repeated labels first;
    ctc_merge_repeated=False counts every repeated emission; with
    ignore_longer_outputs_than_inputs a sequence too short for its labels gives loss 0."""
    inputs = logits if inputs is None else inputs
    if not isinstance(labels, SparseTensor):
        raise TypeError(f"Expected argument `labels` to be a SparseTensor. Received labels={labels} of type: "
                        f"{type(labels).__name__}")
    with name_scope(None, "CTCLoss", [inputs, sequence_length]) as scope:
        inputs = convert_to_tensor(inputs, name="logits")
        if not time_major:
            inputs = transpose(inputs, [1, 0, 2])
        attrs = {"preprocess_collapse_repeated": bool(preprocess_collapse_repeated),
                 "ctc_merge_repeated": bool(ctc_merge_repeated),
                 "ignore_longer_outputs_than_inputs": bool(ignore_longer_outputs_than_inputs), "T": inputs.dtype}
        op = make_op("CTCLoss", [inputs, convert_to_tensor(labels.indices, dtype=dtypes.int64),
                                 convert_to_tensor(labels.values, dtype=dtypes.int32),
                                 convert_to_tensor(sequence_length, dtype=dtypes.int32)], attrs, name=scope)
        return op.outputs[0]


@tf_export("nn.ctc_loss_v2")
def ctc_loss_v2(labels, logits, label_length, logit_length, logits_time_major=True, unique=None, blank_index=None,
                name=None):
    """tf.nn.ctc_loss_v2(labels, logits, label_length, logit_length, logits_time_major=True,
    unique=None, blank_index=None, name=None): the CTC loss [batch] of dense int labels [batch,
    max_label_length] (their first label_length entries) or a SparseTensor (blank_index
    required), given logits [frames, batch, num_classes] (time-major unless said otherwise).
    blank_index (0 for dense labels by default; negative counts from num_classes) is the blank
    class; `unique` only speeds TF up and changes nothing."""
    del unique
    with name_scope(name, "ctc_loss_dense", [logits, labels, label_length, logit_length]):
        logits = convert_to_tensor(logits, name="logits")
        if not logits_time_major:
            logits = transpose(logits, [1, 0, 2])
        if isinstance(labels, SparseTensor):
            if blank_index is None:
                raise ValueError("Argument `blank_index` must be provided when labels is a SparseTensor.")
            indices, values, dense_shape = labels.indices, cast(labels.values, dtypes.int32), labels.dense_shape
        else:
            blank_index = 0 if blank_index is None else blank_index
            labels = convert_to_tensor(labels, name="labels")
            mask = sequence_mask(label_length, maxlen=shape(labels)[1])
            indices = cast(where(mask), dtypes.int64)
            values = cast(gather_nd(labels, indices), dtypes.int32)
            dense_shape = cast(shape(labels), dtypes.int64)
        num_classes = dims(logits.shape)[2] if dims(logits.shape) is not None else None
        if blank_index < 0:
            if num_classes is None:
                raise ValueError("ctc_loss_v2: a negative blank_index needs the number of classes known")
            blank_index += num_classes
        if num_classes is None or blank_index != num_classes - 1:
            # move the blank class last, where CTCLoss has it, and the labels above it down one
            logits = concat([logits[:, :, :blank_index], logits[:, :, blank_index + 1:],
                             logits[:, :, blank_index:blank_index + 1]], axis=2)
            values = where(less(values, blank_index), values, subtract(values, 1))
        return ctc_loss(SparseTensor(indices, values, dense_shape), logits, logit_length, time_major=True)


@tf_export("nn.collapse_repeated")
def collapse_repeated(labels, seq_length, name=None):
    """tf.nn.collapse_repeated(labels, seq_length, name=None): dense labels [batch, max_length]
    with consecutive repeats merged within each sequence's seq_length: (collapsed labels
    [batch, new max length], zero-padded; their new lengths)."""
    with name_scope(name, "collapse_repeated_labels", [labels, seq_length]):
        labels = convert_to_tensor(labels, name="labels")
        seq_length = convert_to_tensor(seq_length, name="seq_length")
        label_mask = concat([ones_like(labels[:, :1], dtype=dtypes.bool), not_equal(labels[:, 1:], labels[:, :-1])],
                            axis=1)
        label_mask = logical_and(label_mask, sequence_mask(seq_length, maxlen=shape(labels)[1]))
        new_seq_len = reduce_sum(cast(label_mask, dtypes.int32), axis=1)
        new_maxlen = reduce_max(new_seq_len)
        flat_idx_mask = reshape(sequence_mask(new_seq_len, maxlen=new_maxlen), [-1])
        positions = boolean_mask(range_(size(flat_idx_mask)), flat_idx_mask)
        flat = scatter_nd(expand_dims(positions, 1), boolean_mask(reshape(labels, [-1]), reshape(label_mask, [-1])),
                          shape(flat_idx_mask))
        return reshape(flat, stack([shape(labels)[0], new_maxlen])), cast(new_seq_len, seq_length.dtype)


@tf_export("nn.ctc_unique_labels")
def ctc_unique_labels(labels, name=None):
    """tf.nn.ctc_unique_labels(labels, name=None): for each row of labels [batch, max_length],
    its distinct labels in order of first appearance, zero-padded (int64), and each label's index
    among them (int32): the `unique` argument of ctc_loss_v2."""
    with name_scope(name, "ctc_unique_labels", [labels]):
        labels = convert_to_tensor(labels, name="labels")

        # a label opens its row's list where no earlier position holds it; its index is the
        # number of openings up to its first occurrence
        same = equal(expand_dims(labels, 2), expand_dims(labels, 1))
        length = shape(labels)[1]
        earlier = less(expand_dims(range_(length), 0), expand_dims(range_(length), 1))
        opens = logical_not(reduce_any(logical_and(same, earlier), axis=2))
        slot = cumsum(cast(opens, dtypes.int32), axis=1) - 1
        index = gather(slot, argmax(cast(same, dtypes.int32), axis=2, output_type=dtypes.int32), axis=1, batch_dims=1)
        where_open = cast(where(opens), dtypes.int32)
        targets = stack([where_open[:, 0], gather_nd(slot, where_open)], axis=1)
        values = scatter_nd(targets, cast(gather_nd(labels, where_open), dtypes.int64), shape(labels))
        return values, index


# -- decoders ---------------------------------------------------------------------------------
def _sparse_outputs(sequences: list):
    """(indices, values, dense_shape) of int64 for decoded label sequences, one per batch entry."""
    indices = [[b, i] for b, seq in enumerate(sequences) for i in range(len(seq))]
    values = [c for seq in sequences for c in seq]
    return (np.array(indices, np.int64).reshape(-1, 2), np.array(values, np.int64),
            np.array([len(sequences), max((len(s) for s in sequences), default=0)], np.int64))


def _check_decoder_inputs(node, inputs, seq_len):
    if inputs.ndim != 3:
        raise invalid(node, f"inputs is not a 3-Tensor, got shape {list(inputs.shape)}")
    T, B, _ = inputs.shape
    if seq_len.shape != (B,):
        raise invalid(node, f"len(sequence_length) != batch_size.  len(sequence_length):  {seq_len.shape[0]} "
                            f"batch_size: {B}")
    for b, n in enumerate(seq_len.tolist()):
        if not 0 <= n <= T:  # TF's decoders: FailedPrecondition
            raise errors.FailedPreconditionError(node, node.name,
                                                 f"{node.op} ({node.name}): sequence_length({b}) <= {T}")


def _greedy_kernel(node, ctx):
    merge_repeated = bool(node.attr.get("merge_repeated", False))  # the OpDef's default
    blank_attr = int(node.attr.get("blank_index", -1))

    def run(inputs, seq_len):
        _check_decoder_inputs(node, inputs, seq_len)
        blank = blank_attr if blank_attr >= 0 else inputs.shape[2] + blank_attr
        sequences, log_prob = [], np.zeros((inputs.shape[1], 1), inputs.dtype)
        for b in range(inputs.shape[1]):
            n = int(seq_len[b])
            best = inputs[:n, b].argmax(axis=-1).tolist() if n else []
            log_prob[b, 0] = -inputs[:n, b].max(axis=-1).sum() if n else 0
            seq, prev = [], None
            for c in best:
                if c != blank and not (merge_repeated and c == prev):
                    seq.append(c)
                prev = c
            sequences.append(seq)
        return (*_sparse_outputs(sequences), log_prob)
    return run


def _decoder_infer(top_paths: int):
    def infer(op):
        d = dims(op.inputs[0].shape)
        if d is not None and len(d) != 3:
            raise ValueError(f"Shape must be rank 3 but is rank {len(d)}")
        batch = d[1] if d is not None else None
        sparse_parts = [(dtypes.int64, TensorShape([None, 2])), (dtypes.int64, TensorShape([None])),
                        (dtypes.int64, TensorShape([2]))]
        return [part for part in sparse_parts for _ in range(top_paths)] + [
            (op.inputs[0].dtype, TensorShape([batch, top_paths]))]
    return infer


register("CTCGreedyDecoder", _decoder_infer(1), _greedy_kernel, grad=None,
         dtypes={0: ("inputs", (dtypes.float32, dtypes.float64)), 1: ("sequence_length", (dtypes.int32,))})


class _Beam:
    """A prefix in the beam search tree (TF's BeamEntry): its last label, parent, the children
    made so far by label, and the log probabilities (blank-ending, label-ending, total) before and after the
    current frame."""

    __slots__ = ("parent", "label", "children", "old", "new")

    def __init__(self, parent, label):
        self.parent, self.label, self.children = parent, label, {}
        self.old = [_LOG_ZERO, _LOG_ZERO, _LOG_ZERO]
        self.new = [_LOG_ZERO, _LOG_ZERO, _LOG_ZERO]

    def active(self) -> bool:
        return self.new[2] != _LOG_ZERO

    def labels(self, merge_repeated: bool) -> list:
        out, node, prev = [], self, -1
        while node.parent is not None:
            if not merge_repeated or node.label != prev:
                out.append(node.label)
            prev, node = node.label, node.parent
        return out[::-1]


class _TopN:
    """TF's gtl::TopN of beams by new total: at most `limit`, the worst dropped first."""

    def __init__(self, limit: int):
        self.limit, self.heap, self.count = limit, [], 0

    def full(self) -> bool:
        return len(self.heap) >= self.limit

    def bottom(self) -> _Beam:
        return self.heap[0][2]

    def push(self, beam: _Beam) -> None:
        self.count += 1
        item = (beam.new[2], -self.count, beam)
        if len(self.heap) < self.limit:
            heapq.heappush(self.heap, item)
        elif item[0] > self.heap[0][0]:
            heapq.heapreplace(self.heap, item)

    def extract(self) -> list:
        """Every beam, best first; the heap emptied."""
        beams = [b for _, _, b in sorted(self.heap, key=lambda it: (-it[0], -it[1]))]
        self.heap = []
        return beams


def _log_add(a: float, b: float) -> float:
    """log(exp(a) + exp(b)) of two Python floats (numpy's costs a microsecond a call here)."""
    if a < b:
        a, b = b, a
    return a if b == _LOG_ZERO else a + math.log1p(math.exp(b - a))


def _beam_search(log_probs: np.ndarray, beam_width: int, blank: int, num_classes: int):
    """TF's CTCBeamSearchDecoder (default scorer) over one sequence's normalised log probabilities:
    the leaves of the final beam, best first."""
    root = _Beam(None, -1)
    root.new = [0.0, _LOG_ZERO, 0.0]
    root.old = list(root.new)
    leaves = _TopN(beam_width)
    leaves.push(root)
    for row in log_probs:
        values = row.tolist()
        branches = leaves.extract()
        # the branches each parent still has to expand this frame, by the parent
        waiting: dict = {}
        for b in branches:
            if b.parent is not None:
                if b.parent.active():
                    previous = b.parent.old[0] if b.label == b.parent.label else b.parent.old[2]
                    b.new[1] = _log_add(b.new[1], previous)
                b.new[1] += values[b.label]
                waiting.setdefault(id(b.parent), set()).add(b.label)
            b.new[0] = b.old[2] + values[blank]
            b.new[2] = _log_add(b.new[0], b.new[1])
            leaves.push(b)
        for b in branches:
            if b.parent is not None:
                waiting[id(b.parent)].discard(b.label)
            if not (b.old[2] > _LOG_ZERO and (not leaves.full() or b.old[2] > leaves.bottom().new[2])):
                continue
            # every child's label probability at once: a repeat of b's label must follow a blank
            previous = np.full(num_classes, b.old[2])
            if b.label >= 0:
                previous[b.label] = b.old[0]
            scores = row + previous
            scores[blank] = _LOG_ZERO
            # The bottom of a full beam only rises: a child at or below it now never gets in. Of
            # those, TF resets the ones that are not in the beam, past included, which matters
            # only for a branch dropped earlier in this frame that has yet to expand.
            floor = leaves.bottom().new[2] if leaves.full() else _LOG_ZERO
            visit = np.flatnonzero(scores > floor).tolist()
            pending = waiting.get(id(b))
            if pending:
                visit = sorted(set(visit) | pending)
            for label in visit:   # in label order, as TF
                child = b.children.get(label)
                if child is not None and child.active():
                    continue
                score = float(scores[label])
                if score > _LOG_ZERO and (not leaves.full() or score > leaves.bottom().new[2]):
                    if child is None:
                        child = b.children[label] = _Beam(b, label)
                    child.new = [_LOG_ZERO, score, score]
                    if leaves.full():
                        leaves.bottom().new = [_LOG_ZERO, _LOG_ZERO, _LOG_ZERO]
                    leaves.push(child)
                elif child is not None:  # turned away
                    child.old = [_LOG_ZERO, _LOG_ZERO, _LOG_ZERO]
        for b in leaves.extract():
            b.old = list(b.new)
            leaves.push(b)
    return leaves.extract()


def _beam_kernel(node, ctx):
    beam_width = int(node.attr["beam_width"])
    top_paths = int(node.attr["top_paths"])
    merge_repeated = bool(node.attr.get("merge_repeated", True))

    def run(inputs, seq_len):
        _check_decoder_inputs(node, inputs, seq_len)
        if top_paths > beam_width:
            raise invalid(node, "requested more paths than the beam width.")
        _, B, C = inputs.shape
        paths = [[] for _ in range(top_paths)]
        log_prob = np.zeros((B, top_paths), inputs.dtype)
        for b in range(B):
            n = int(seq_len[b])
            beams = _beam_search(log_softmax_np(inputs[:n, b].astype(np.float64)), beam_width, C - 1, C)
            if len(beams) < top_paths:
                raise invalid(node, "Less leaves in the beam search than requested.")
            for i in range(top_paths):
                paths[i].append(beams[i].labels(merge_repeated))
                log_prob[b, i] = beams[i].new[2]
        parts = [_sparse_outputs(p) for p in paths]
        return (*[p[0] for p in parts], *[p[1] for p in parts], *[p[2] for p in parts], log_prob)
    return run


def _beam_infer(op):
    return _decoder_infer(op.get_attr("top_paths"))(op)


register("CTCBeamSearchDecoder", _beam_infer, _beam_kernel, grad=None,
         dtypes={0: ("inputs", (dtypes.float32, dtypes.float64)), 1: ("sequence_length", (dtypes.int32,))})


def _decoded(op, top_paths: int) -> list:
    out = op.outputs
    return [SparseTensor(out[i], out[top_paths + i], out[2 * top_paths + i]) for i in range(top_paths)]


@tf_export("nn.ctc_greedy_decoder")
def ctc_greedy_decoder(inputs, sequence_length, merge_repeated=True, blank_index=None):
    """tf.nn.ctc_greedy_decoder(inputs, sequence_length, merge_repeated=True, blank_index=None):
    the most likely class per frame of logits [max_time, batch, num_classes], repeats merged
    (merge_repeated) and blanks (class num_classes - 1 unless blank_index) dropped: ([decoded
    int64 SparseTensor], neg_sum_logits [batch, 1], minus the sum of each frame's largest logit)."""
    with name_scope(None, "CTCGreedyDecoder", [inputs, sequence_length]) as scope:
        inputs = convert_to_tensor(inputs, name="inputs")
        attrs = {"merge_repeated": bool(merge_repeated), "blank_index": -1 if blank_index is None else int(blank_index),
                 "T": inputs.dtype}
        op = make_op("CTCGreedyDecoder", [inputs, convert_to_tensor(sequence_length, dtype=dtypes.int32)], attrs,
                     name=scope)
        return _decoded(op, 1), op.outputs[3]


@tf_export("nn.ctc_beam_search_decoder")
def ctc_beam_search_decoder(inputs, sequence_length, beam_width=100, top_paths=1, merge_repeated=True):
    """tf.nn.ctc_beam_search_decoder(inputs, sequence_length, beam_width=100, top_paths=1,
    merge_repeated=True): TF's prefix beam search over logits [max_time, batch, num_classes]
    (blank: the last class): ([top_paths decoded int64 SparseTensors, best first], log
    probabilities [batch, top_paths]). merge_repeated merges equal consecutive labels of a path
    (TF's quirk: "A B B" becomes "A B")."""
    with name_scope(None, "CTCBeamSearchDecoder", [inputs, sequence_length]) as scope:
        inputs = convert_to_tensor(inputs, name="inputs")
        attrs = {"beam_width": int(beam_width), "top_paths": int(top_paths), "merge_repeated": bool(merge_repeated),
                 "T": inputs.dtype}
        op = make_op("CTCBeamSearchDecoder", [inputs, convert_to_tensor(sequence_length, dtype=dtypes.int32)],
                     attrs, name=scope)
        return _decoded(op, top_paths), op.outputs[3 * top_paths]


@tf_export("nn.ctc_beam_search_decoder_v2")
def ctc_beam_search_decoder_v2(inputs, sequence_length, beam_width=100, top_paths=1):
    """tf.nn.ctc_beam_search_decoder_v2(inputs, sequence_length, beam_width=100, top_paths=1):
    ctc_beam_search_decoder without merging repeated labels (TF 2's tf.nn.ctc_beam_search_decoder)."""
    return ctc_beam_search_decoder(inputs, sequence_length, beam_width, top_paths, merge_repeated=False)

