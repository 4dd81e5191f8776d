"""CTC: tf.nn.ctc_loss (v1, every flag) and ctc_loss_v2 (dense and sparse labels, blank_index)
with their gradients, ctc_greedy_decoder and ctc_beam_search_decoder (v1 and v2): values, decoded
sequences and log probabilities recorded from TF 2.21 (fixtures/record_tf_ctc.py), gradients also
against finite differences, and TF's errors naming the op."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

import tensorweave as tf
from fixtures.recorded import random_beam_cases
from unit_helpers import check_grad, run

HERE = os.path.dirname(os.path.abspath(__file__))
REC = dict(np.load(os.path.join(HERE, "fixtures", "tf_ctc.npz")))
LOGITS, SEQ_LEN, W, DENSE, DENSE_LEN = REC["logits"], REC["seq_len"], REC["w"], REC["dense"], REC["dense_len"]
LABELS = [[1, 2, 2], [0, 3, 3, 1], [3, 1]]


def sparse(labels, shape=None):
    idx = [[b, i] for b, row in enumerate(labels) for i in range(len(row))]
    vals = [v for row in labels for v in row]
    return tf.SparseTensor(np.array(idx, np.int64).reshape(-1, 2), np.array(vals, np.int32),
                           np.array(shape or [len(labels), max(map(len, labels))], np.int64))


def _v1(**kw):
    return lambda x: tf.nn.ctc_loss(sparse(LABELS), x, SEQ_LEN, **kw)


LOSSES = {
    "v1": _v1(),
    "v1_collapse": _v1(preprocess_collapse_repeated=True),
    "v1_no_merge": _v1(ctc_merge_repeated=False),
    "v1_batch_major": lambda x: tf.nn.ctc_loss(sparse(LABELS), tf.transpose(x, [1, 0, 2]), SEQ_LEN,
                                               time_major=False),
    "v1_ignore_longer": lambda x: tf.nn.ctc_loss(sparse(LABELS), x, np.array([8, 6, 1], np.int32),
                                                 ignore_longer_outputs_than_inputs=True),
    "v2_dense": lambda x: tf.nn.ctc_loss_v2(DENSE + 1, x, DENSE_LEN, SEQ_LEN),
    "v2_dense_blank_last": lambda x: tf.nn.ctc_loss_v2(DENSE, x, DENSE_LEN, SEQ_LEN, blank_index=-1),
    "v2_dense_blank_2": lambda x: tf.nn.ctc_loss_v2(np.where(DENSE >= 2, DENSE + 1, DENSE), x, DENSE_LEN, SEQ_LEN,
                                                    blank_index=2),
    "v2_sparse_blank_0": lambda x: tf.nn.ctc_loss_v2(sparse([[v + 1 for v in r] for r in LABELS]), x, None,
                                                     SEQ_LEN, blank_index=0),
    "v2_batch_major": lambda x: tf.nn.ctc_loss_v2(DENSE + 1, tf.transpose(x, [1, 0, 2]), DENSE_LEN, SEQ_LEN,
                                                  logits_time_major=False),
}
DECODERS = {
    "greedy": lambda x: tf.nn.ctc_greedy_decoder(x, SEQ_LEN),
    "greedy_no_merge": lambda x: tf.nn.ctc_greedy_decoder(x, SEQ_LEN, merge_repeated=False),
    "greedy_blank_0": lambda x: tf.nn.ctc_greedy_decoder(x, SEQ_LEN, blank_index=0),
    "beam": lambda x: tf.nn.ctc_beam_search_decoder(x, SEQ_LEN, beam_width=4, top_paths=3),
    "beam_no_merge": lambda x: tf.nn.ctc_beam_search_decoder(x, SEQ_LEN, beam_width=6, top_paths=2,
                                                             merge_repeated=False),
    "beam_v2": lambda x: tf.nn.ctc_beam_search_decoder_v2(x, SEQ_LEN, beam_width=5, top_paths=2),
    "beam_width1": lambda x: tf.nn.ctc_beam_search_decoder(x, SEQ_LEN, beam_width=1, top_paths=1),
}


@pytest.mark.parametrize("case", sorted(LOSSES) + ["v1_f64"])
def test_losses_and_gradients_equal_tf(case):
    dtype = tf.float64 if case.endswith("_f64") else tf.float32
    x = tf.constant(REC["logits64"] if dtype == tf.float64 else LOGITS, dtype)
    loss = LOSSES[case.replace("_f64", "")](x)
    grad, = tf.gradients(tf.reduce_sum(loss * tf.cast(W, dtype)), [x])
    assert loss.dtype == dtype and loss.shape.as_list() == [3]
    got_loss, got_grad = run([loss, grad])
    np.testing.assert_allclose(got_loss, REC[f"{case}/loss"], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got_grad, REC[f"{case}/grad"], rtol=1e-5, atol=1e-5)
    assert got_loss.dtype == dtype.as_numpy_dtype and got_grad.shape == LOGITS.shape


@pytest.mark.parametrize("case", sorted(DECODERS))
def test_decoders_equal_tf(case):
    decoded, log_prob = DECODERS[case](tf.constant(LOGITS))
    assert log_prob.shape.as_list() == [3, len(decoded)]
    got = run([[d.indices, d.values, d.dense_shape] for d in decoded] + [log_prob])
    for i, parts in enumerate(got[:-1]):
        for part, value in zip(("indices", "values", "shape"), parts):
            want = REC[f"{case}/{i}/{part}"]
            assert value.dtype == np.int64 and value.tolist() == want.tolist(), (i, part)
    np.testing.assert_allclose(got[-1], REC[f"{case}/log_prob"], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kw", [{}, {"ctc_merge_repeated": False}, {"preprocess_collapse_repeated": True}])
def test_ctc_loss_gradient_matches_finite_differences(kw):
    logits = np.random.RandomState(1).randn(5, 2, 4)
    check_grad(lambda x: tf.nn.ctc_loss(sparse([[0, 0, 2], [1]]), x, [5, 4], **kw), logits, tol=1e-5)


def test_ctc_loss_of_unknown_shapes_runs():
    x = tf.placeholder(tf.float32, None)
    loss = tf.nn.ctc_loss(sparse(LABELS), x, SEQ_LEN)
    assert loss.shape.as_list() == [None]
    np.testing.assert_allclose(run(loss, {x: LOGITS}), REC["v1/loss"], rtol=1e-5)
    dense = tf.placeholder(tf.int32, [None, None])
    v2 = tf.nn.ctc_loss_v2(dense, x, DENSE_LEN, SEQ_LEN, blank_index=0)
    np.testing.assert_allclose(run(v2, {x: LOGITS, dense: DENSE + 1}), REC["v2_dense/loss"], rtol=1e-5)
    decoded, log_prob = tf.nn.ctc_beam_search_decoder(x, SEQ_LEN, beam_width=4, top_paths=3)
    np.testing.assert_allclose(run(log_prob, {x: LOGITS}), REC["beam/log_prob"], rtol=1e-5)


def test_decoders_have_no_gradient():
    x = tf.constant(LOGITS)
    _, log_prob = tf.nn.ctc_greedy_decoder(x, SEQ_LEN)
    assert tf.gradients(log_prob, x) == [None]


def test_bad_input_gets_tfs_errors_naming_the_op():
    x = tf.constant(LOGITS[:4, :2])
    too_long = tf.nn.ctc_loss(sparse([[1, 2, 2, 3, 1], [1]]), x, [4, 4])
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"CTCLoss.*Not enough time for target transition sequence \(required: 5, available: 4\)"):
        run(too_long)
    negative = tf.nn.ctc_loss(sparse([[1], [-1, 2]]), x, [4, 4])
    with pytest.raises(tf.errors.InvalidArgumentError, match="All labels must be nonnegative integers, batch: 1"):
        run(negative)
    too_big = tf.nn.ctc_loss(sparse([[1, 7], [1]]), x, [4, 4])
    with pytest.raises(tf.errors.InvalidArgumentError, match="No label may be greater than num_classes"):
        run(too_big)
    long_sequence = tf.nn.ctc_loss(sparse([[1], [1]]), x, [5, 4])
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"sequence_length\(0\) <= 4"):
        run(long_sequence)
    _, greedy = tf.nn.ctc_greedy_decoder(x, [5, 4])
    with pytest.raises(tf.errors.FailedPreconditionError, match=r"CTCGreedyDecoder.*sequence_length\(0\) <= 4"):
        run(greedy)
    _, beam = tf.nn.ctc_beam_search_decoder(x, [4, 4], beam_width=2, top_paths=3)
    with pytest.raises(tf.errors.InvalidArgumentError, match="requested more paths than the beam width"):
        run(beam)
    with pytest.raises(TypeError, match="to be a SparseTensor"):
        tf.nn.ctc_loss(np.array([[1]]), x, [4, 4])
    with pytest.raises(ValueError, match="blank_index` must be provided"):
        tf.nn.ctc_loss_v2(sparse([[1], [1]]), x, None, [4, 4])
    with pytest.raises(ValueError, match="must be rank 3"):
        tf.nn.ctc_loss(sparse([[1], [1]]), tf.zeros([4, 5]), [4, 4])


def test_a_label_equal_to_the_blank_is_accepted_as_tf():
    # TF 2.21 computes a loss (no error) for a label equal to num_classes - 1
    loss = run(tf.nn.ctc_loss(sparse([[4, 4], [1]]), tf.constant(LOGITS[:4, :2]), [4, 4]))
    assert np.isfinite(loss).all()


def test_unique_labels_and_collapse_repeated_equal_tf():
    labels, index = tf.nn.ctc_unique_labels(tf.constant(REC["unique_in"]))
    collapsed, length = tf.nn.collapse_repeated(tf.constant(REC["collapse_in"]), tf.constant([6, 3, 4]))
    got = run([labels, index, collapsed, length])
    for value, key in zip(got, ("unique/labels", "unique/index", "collapse/labels", "collapse/length")):
        assert value.dtype == REC[key].dtype and value.tolist() == REC[key].tolist(), key
    # `unique` only speeds TF up: the loss is the same with it
    with_unique = tf.nn.ctc_loss_v2(DENSE + 1, tf.constant(LOGITS), DENSE_LEN, SEQ_LEN,
                                    unique=tf.nn.ctc_unique_labels(DENSE + 1))
    np.testing.assert_allclose(run(with_unique), REC["v2_dense/loss"], rtol=1e-5)


def test_beam_search_equals_tf_on_random_problems():
    """Which prefixes TF expands, keeps and turns away decides the paths: 150 small random
    problems (fixtures/recorded.random_beam_cases), every path the beam holds."""
    with open(os.path.join(HERE, "fixtures", "tf_ctc_beams.json")) as f:
        recorded = json.load(f)
    outputs = []
    for (logits, width), want in zip(random_beam_cases(), recorded):
        decoded, log_prob = tf.nn.ctc_beam_search_decoder_v2(logits[:, None], [len(logits)], beam_width=width,
                                                             top_paths=len(want["paths"]))
        outputs.append([[d.values for d in decoded], log_prob])
    for want, (paths, log_prob) in zip(recorded, run(outputs)):
        assert [p.tolist() for p in paths] == want["paths"]
        np.testing.assert_allclose(log_prob[0], want["log_probs"], rtol=1e-5, atol=1e-5)
