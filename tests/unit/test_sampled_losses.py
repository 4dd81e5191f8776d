"""Candidate samplers (their distributions, expected counts, seeds and learning), accidental
hits, and nce_loss / sampled_softmax_loss against numpy references with gradients against
finite differences; and a small word2vec skip-gram model that learns."""
from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tf
from unit_helpers import check_grad, run

R = np.random.RandomState(4)


def _log_uniform_p(c, range_max):
    return np.log((c + 2.0) / (c + 1.0)) / np.log(range_max + 1.0)


def test_log_uniform_sampler_draws_zipf_and_counts_expectations():
    labels = np.array([[0], [5]], np.int64)
    s, t, e = run(tf.nn.log_uniform_candidate_sampler(labels, 1, 40000, False, 10, seed=3))
    freq = np.bincount(s, minlength=10) / len(s)
    np.testing.assert_allclose(freq, _log_uniform_p(np.arange(10), 10), atol=0.01)
    np.testing.assert_allclose(t[:, 0], 40000 * _log_uniform_p(labels[:, 0], 10), rtol=1e-5)
    np.testing.assert_allclose(e, 40000 * _log_uniform_p(s, 10), rtol=1e-5)
    assert s.dtype == np.int64 and t.shape == (2, 1) and t.dtype == np.float32


def test_unique_samples_are_distinct_and_expected_counts_agree():
    labels = np.array([[1], [2]], np.int64)
    s, t, e = run(tf.nn.log_uniform_candidate_sampler(labels, 1, 8, True, 20, seed=5))
    assert len(set(s.tolist())) == 8 and s.min() >= 0 and s.max() < 20
    # one number of tries T explains every count: 1 - (1 - p)^T
    p = _log_uniform_p(s, 20)
    tries = np.log1p(-e) / np.log1p(-p)
    np.testing.assert_allclose(tries, tries[0], rtol=1e-4)
    np.testing.assert_allclose(t[:, 0], -np.expm1(tries[0] * np.log1p(-_log_uniform_p(labels[:, 0], 20))), rtol=1e-4)
    with pytest.raises(tf.errors.InvalidArgumentError, match="range is too small"):
        run(tf.nn.uniform_candidate_sampler(labels, 1, 8, True, 5))


def test_uniform_sampler_and_op_seeds_repeat():
    labels = np.array([[0]], np.int64)
    sampler = tf.nn.uniform_candidate_sampler(labels, 1, 5000, False, 7, seed=11)
    with tf.Session() as sess:
        first = sess.run(sampler)
    with tf.Session() as sess:
        again = sess.run(sampler)
    np.testing.assert_array_equal(first.sampled_candidates, again.sampled_candidates)
    np.testing.assert_allclose(np.bincount(first.sampled_candidates, minlength=7) / 5000, 1 / 7, atol=0.02)
    np.testing.assert_allclose(first.true_expected_count, [[5000 / 7]], rtol=1e-5)


def test_learned_unigram_sampler_learns_the_true_classes():
    labels = tf.placeholder(tf.int64, [4, 1])
    out = tf.nn.learned_unigram_candidate_sampler(labels, 1, 200, False, 10, seed=1)
    with tf.Session() as sess:
        before = sess.run(out, {labels: [[3]] * 4})
        for _ in range(50):
            sess.run(out, {labels: [[3]] * 4})
        after = sess.run(out, {labels: [[3]] * 4})
    np.testing.assert_allclose(before.true_expected_count, 200 / 10, rtol=1e-5)   # all counts start at 1
    assert np.mean(after.sampled_candidates == 3) > 0.8
    np.testing.assert_allclose(after.true_expected_count, 200 * (1 + 4 * 51) / (10 + 4 * 51), rtol=1e-5)


def test_fixed_unigram_sampler_from_file_and_list(tmp_path):
    vocab = tmp_path / "vocab.csv"
    vocab.write_text("the,50\ncat,30\nsat,0\nmat,20\n")
    labels = np.array([[1]], np.int64)
    from_file = tf.nn.fixed_unigram_candidate_sampler(labels, 1, 20000, False, 5, vocab_file=str(vocab),
                                                      num_reserved_ids=1, seed=2)
    distorted = tf.nn.fixed_unigram_candidate_sampler(labels, 1, 20000, False, 4, unigrams=[1, 4, 9, 16],
                                                      distortion=0.5, seed=2)
    sharded = tf.nn.fixed_unigram_candidate_sampler(labels, 1, 1000, False, 4, unigrams=[1, 4, 9, 16], num_shards=2,
                                                    shard=1, seed=2)
    f, d, sh = run([from_file, distorted, sharded])
    np.testing.assert_allclose(np.bincount(f.sampled_candidates, minlength=5) / 20000, [0, 0.5, 0.3, 0, 0.2],
                               atol=0.015)
    np.testing.assert_allclose(np.bincount(d.sampled_candidates, minlength=4) / 20000, np.array([1, 2, 3, 4]) / 10,
                               atol=0.015)
    assert set(sh.sampled_candidates.tolist()) <= {1, 3}
    with pytest.raises(ValueError, match="exactly one"):
        tf.nn.fixed_unigram_candidate_sampler(labels, 1, 2, False, 4)


def test_all_candidate_sampler_and_accidental_hits():
    s, t, e = run(tf.nn.all_candidate_sampler(np.array([[1, 2]], np.int64), 2, 5, True))
    np.testing.assert_array_equal(s, np.arange(5))
    np.testing.assert_array_equal(t, [[1, 1]])
    idx, ids, w = run(tf.nn.compute_accidental_hits(np.array([[1, 3], [2, 2], [7, 0]], np.int64),
                                                    np.array([3, 2, 3, 9], np.int64), num_true=2))
    # one hit per true entry that was sampled, at the candidate's last position (TF's rule)
    np.testing.assert_array_equal(idx, [0, 1, 1])
    np.testing.assert_array_equal(ids, [2, 1, 1])
    np.testing.assert_array_equal(w, [-np.finfo(np.float32).max] * 3)


# -- the losses ------------------------------------------------------------------------------------
NUM_CLASSES, DIM, BATCH = 12, 4, 3
W = R.randn(NUM_CLASSES, DIM)
B = R.randn(NUM_CLASSES)
X = R.randn(BATCH, DIM)
LABELS = np.array([[2, 5], [7, 1], [5, 0]], np.int64)
SAMPLED = np.array([5, 9, 3, 11], np.int64)
TRUE_EC = np.full((BATCH, 2), 0.3, np.float32)
SAMPLED_EC = np.array([0.2, 0.1, 0.25, 0.05], np.float32)


def _reference_logits(num_true, remove_hits):
    labels = LABELS[:, :num_true]
    true_logits = np.einsum("bd,btd->bt", X, W[labels]) + B[labels] - np.log(TRUE_EC[:, :num_true].astype(np.float64))
    sampled_logits = X @ W[SAMPLED].T + B[SAMPLED] - np.log(SAMPLED_EC.astype(np.float64))
    if remove_hits:
        for i in range(BATCH):
            for j, c in enumerate(SAMPLED):
                if c in labels[i]:
                    sampled_logits[i, j] += -np.finfo(np.float32).max
    logits = np.concatenate([true_logits, sampled_logits], 1)
    targets = np.concatenate([np.full(true_logits.shape, 1.0 / num_true), np.zeros(sampled_logits.shape)], 1)
    return logits, targets


def _sampled_values(num_true):
    return (tf.constant(SAMPLED), tf.constant(TRUE_EC[:, :num_true]), tf.constant(SAMPLED_EC))


@pytest.mark.parametrize("num_true", [1, 2])
@pytest.mark.parametrize("remove_hits", [False, True])
def test_nce_loss_matches_numpy(num_true, remove_hits):
    loss = tf.nn.nce_loss(W, B, LABELS[:, :num_true], X, 4, NUM_CLASSES, num_true=num_true,
                          sampled_values=_sampled_values(num_true), remove_accidental_hits=remove_hits)
    logits, targets = _reference_logits(num_true, remove_hits)
    expect = (np.maximum(logits, 0) - logits * targets + np.log1p(np.exp(-np.abs(logits)))).sum(1)
    np.testing.assert_allclose(run(loss), expect, rtol=1e-10)


@pytest.mark.parametrize("num_true", [1, 2])
@pytest.mark.parametrize("remove_hits", [False, True])
def test_sampled_softmax_loss_matches_numpy(num_true, remove_hits):
    loss = tf.nn.sampled_softmax_loss(W, B, LABELS[:, :num_true], X, 4, NUM_CLASSES, num_true=num_true,
                                      sampled_values=_sampled_values(num_true), remove_accidental_hits=remove_hits)
    logits, targets = _reference_logits(num_true, remove_hits)
    shifted = logits - logits.max(1, keepdims=True)
    log_softmax = shifted - np.log(np.exp(shifted).sum(1, keepdims=True))
    np.testing.assert_allclose(run(loss), -(targets * log_softmax).sum(1), rtol=1e-10)


@pytest.mark.parametrize("strategy", ["mod", "div"])
def test_sharded_weights_give_the_same_loss(strategy):
    if strategy == "mod":
        shards = [W[i::3] for i in range(3)]
    else:
        shards = [W[:4], W[4:8], W[8:]]
    b_shards = [B[i::3] for i in range(3)] if strategy == "mod" else [B[:4], B[4:8], B[8:]]
    whole = tf.nn.sampled_softmax_loss(W, B, LABELS[:, :1], X, 4, NUM_CLASSES, sampled_values=_sampled_values(1))
    split = tf.nn.sampled_softmax_loss(shards, b_shards, LABELS[:, :1], X, 4, NUM_CLASSES,
                                       sampled_values=_sampled_values(1), partition_strategy=strategy)
    np.testing.assert_allclose(*run([whole, split]), rtol=1e-12)


@pytest.mark.parametrize("loss_fn", [tf.nn.nce_loss, tf.nn.sampled_softmax_loss], ids=["nce", "sampled_softmax"])
def test_sampled_loss_gradients(loss_fn):
    def build(w, b, x):
        return loss_fn(w, b, LABELS, x, 4, NUM_CLASSES, num_true=2, sampled_values=_sampled_values(2))
    check_grad(build, W, B, X, tol=1e-5)


def test_default_sampler_is_unique_log_uniform_and_loss_is_finite():
    loss = tf.nn.sampled_softmax_loss(W.astype(np.float32), B.astype(np.float32), LABELS[:, :1], X.astype(np.float32),
                                      5, NUM_CLASSES, seed=1)
    value = run(loss)
    assert value.shape == (BATCH,) and np.all(np.isfinite(value)) and loss.dtype == tf.float32
    assert [op.type for op in tf.get_default_graph().get_operations()].count("LogUniformCandidateSampler") == 1


def test_word2vec_skip_gram_with_nce_learns():
    """The word2vec tutorial's model on a tiny corpus: context words of each word become likely."""
    vocab, dim, batch = 8, 6, 16
    corpus = np.array([0, 1, 2, 3] * 8 + [4, 5, 6, 7] * 8)
    centers = np.concatenate([corpus[1:], corpus[:-1]])
    contexts = np.concatenate([corpus[:-1], corpus[1:]])
    with tf.Graph().as_default():
        tf.set_random_seed(7)
        train_inputs = tf.placeholder(tf.int32, [batch])
        train_labels = tf.placeholder(tf.int32, [batch, 1])
        embeddings = tf.Variable(tf.random_uniform([vocab, dim], -1.0, 1.0))
        embed = tf.nn.embedding_lookup(embeddings, train_inputs)
        nce_weights = tf.Variable(tf.truncated_normal([vocab, dim], stddev=1.0 / np.sqrt(dim)))
        nce_biases = tf.Variable(tf.zeros([vocab]))
        loss = tf.reduce_mean(tf.nn.nce_loss(weights=nce_weights, biases=nce_biases, labels=train_labels,
                                             inputs=embed, num_sampled=3, num_classes=vocab))
        step = tf.train.GradientDescentOptimizer(0.5).minimize(loss)
        rng = np.random.RandomState(0)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            losses = []
            for i in range(300):
                pick = rng.randint(0, len(centers), batch)
                _, value = sess.run([step, loss], {train_inputs: centers[pick], train_labels: contexts[pick, None]})
                losses.append(value)
            emb = sess.run(embeddings)
    assert np.mean(losses[-30:]) < 0.6 * np.mean(losses[:30])
    normed = emb / np.linalg.norm(emb, axis=1, keepdims=True)
    similarity = normed @ normed.T
    # words of one half of the corpus are nearer each other than the other half's
    assert similarity[:4, :4].mean() > similarity[:4, 4:].mean()
