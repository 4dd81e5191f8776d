"""A While's body as the op runs it (ops/control_flow/loop_body.py): the side part of a gradient
loop (its sums of the weights' gradients) on a second thread gives the serial loop's bits, and a
failure there is the step's error."""
import numpy as np
import pytest

import tensorweave as tf
from tensorweave.ops.control_flow import loop_body

pytestmark = pytest.mark.usefixtures("graph")


def _sessions():
    """(a session with a pool of two threads, one with the caller's thread alone)."""
    return (tf.Session(config=tf.ConfigProto(inter_op_parallelism_threads=2, use_per_session_threads=True)),
            tf.Session(config=tf.ConfigProto(inter_op_parallelism_threads=1, use_per_session_threads=True)))


def _counting_side_work(monkeypatch) -> list:
    runs = []

    class Counted(loop_body._SideWork):
        def __init__(self, *args):
            super().__init__(*args)
            runs.append(self)
    monkeypatch.setattr(loop_body, "_SideWork", Counted)
    return runs


@pytest.mark.parametrize("setting", ["parallel", "auto"])
def test_an_lstm_gradient_loop_pipelined_gives_the_serial_bits(monkeypatch, setting):
    monkeypatch.setenv("TENSORWEAVE_INTER_OP", setting)
    runs = _counting_side_work(monkeypatch)
    rng = np.random.RandomState(0)
    x = tf.placeholder(tf.float32, [None, 12, 5])
    cell = tf.nn.rnn_cell.LSTMCell(16, initializer=tf.constant_initializer(rng.randn(21, 64).astype(np.float32) * 0.3))
    out, _ = tf.nn.dynamic_rnn(cell, x, dtype=tf.float32)
    loss = tf.reduce_sum(tf.square(out[:, -1] - 0.5))
    grads = tf.gradients(loss, [x] + tf.trainable_variables())
    feeds = {x: rng.randn(7, 12, 5).astype(np.float32)}
    values = []
    for sess in _sessions():
        with sess:
            sess.run(tf.global_variables_initializer())
            values.append([sess.run(grads, feeds) for _ in range(8)])
    two_threads, serial = values
    for run in two_threads:
        for a, b in zip(run, serial[0]):
            assert a.tobytes() == b.tobytes()
    assert runs   # (the side part ran beside the rest: 8 times forced, at least in the trials measured)
    assert len(runs) == 8 if setting == "parallel" else 1 <= len(runs) <= 8


def test_a_failure_in_the_side_part_is_the_steps_error(monkeypatch):
    monkeypatch.setenv("TENSORWEAVE_INTER_OP", "parallel")
    runs = _counting_side_work(monkeypatch)
    table = tf.constant(np.arange(8 * 4, dtype=np.float32).reshape(8, 4))
    w = tf.constant(np.ones((4, 4), np.float32))
    n = tf.placeholder(tf.int32, [])

    def body(i, h, total):
        row = tf.gather(table, i, name="row_of_i") * 1.0
        for _ in range(4):   # (enough work to be worth a second thread)
            row = tf.matmul(tf.expand_dims(row, 0), w)[0] + 1.0
        return i + 1, tf.tanh(h), total + row

    _, _, total = tf.while_loop(lambda i, h, t: i < n, body, [0, tf.zeros([4]), tf.zeros([4])])
    sess = _sessions()[0]
    with sess:
        np.testing.assert_allclose(sess.run(total, {n: 3}), _numpy_total(3), rtol=1e-6)
        with pytest.raises(tf.errors.InvalidArgumentError, match="row_of_i"):
            sess.run(total, {n: 9})
    assert len(runs) == 2


def _numpy_total(n: int) -> np.ndarray:
    table = np.arange(32, dtype=np.float32).reshape(8, 4)
    total = np.zeros(4, np.float32)
    for i in range(n):
        row = table[i]
        for _ in range(4):
            row = row @ np.ones((4, 4), np.float32) + 1.0
        total = total + row
    return total
