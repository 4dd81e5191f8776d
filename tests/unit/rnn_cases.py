"""The RNN configurations recorded from TensorFlow (fixtures/record_tf_rnn.py) and rebuilt by
tests/unit/test_rnn.py: one builder per case, written against a TF1-style module `tf` (real
TensorFlow's compat.v1 with its rnn_cell module, or tensorweave), so both sides build the same
graph. Each returns (inputs placeholder, outputs to compare, loss to differentiate)."""
from __future__ import annotations

import zlib

import numpy as np

BATCH, TIME, DEPTH = 3, 5, 2
SEQ = [5, 2, 0]


def variable_value(name: str, shape) -> np.ndarray:
    """A deterministic value for a variable, from its name (the same on both sides)."""
    rng = np.random.RandomState(zlib.crc32(name.encode()) % (2 ** 31))
    return rng.uniform(-0.6, 0.6, shape)


def inputs_value() -> np.ndarray:
    return np.random.RandomState(11).randn(BATCH, TIME, DEPTH)


def _loss(tf, tensors):
    total = 0
    for i, t in enumerate(tensors):
        w = np.random.RandomState(100 + i).randn(*t.shape.as_list())
        total = total + tf.reduce_sum(t * w)
    return total


def basic_lstm(tf, cells):
    x = tf.placeholder(tf.float64, [BATCH, TIME, DEPTH])
    out, st = tf.nn.dynamic_rnn(cells.BasicLSTMCell(4), x, sequence_length=SEQ, dtype=tf.float64)
    return x, [out, st.c, st.h], _loss(tf, [out, st.c, st.h])


def lstm_peepholes_projection_time_major(tf, cells):
    x = tf.placeholder(tf.float64, [BATCH, TIME, DEPTH])
    cell = cells.LSTMCell(4, use_peepholes=True, num_proj=3, cell_clip=0.8, proj_clip=0.5, forget_bias=0.5)
    out, st = tf.nn.dynamic_rnn(cell, tf.transpose(x, [1, 0, 2]), dtype=tf.float64, time_major=True,
                                scope="lstm_layer")
    return x, [out, st.c, st.h], _loss(tf, [out, st.c, st.h])


def lstm_concatenated_state(tf, cells):
    x = tf.placeholder(tf.float64, [BATCH, TIME, DEPTH])
    cell = cells.MultiRNNCell([cells.BasicLSTMCell(3, state_is_tuple=False),
                               cells.LSTMCell(4, num_proj=2, state_is_tuple=False)], state_is_tuple=False)
    out, st = tf.nn.dynamic_rnn(cell, x, sequence_length=SEQ, dtype=tf.float64)
    return x, [out, st], _loss(tf, [out, st])


def gru_static(tf, cells):
    x = tf.placeholder(tf.float64, [BATCH, TIME, DEPTH])
    outs, st = tf.nn.static_rnn(cells.GRUCell(4), tf.unstack(x, axis=1), dtype=tf.float64, sequence_length=SEQ)
    out = tf.stack(outs, 1)
    return x, [out, st], _loss(tf, [out, st])


def multi_residual_basic_rnn(tf, cells):
    x = tf.placeholder(tf.float64, [BATCH, TIME, DEPTH])
    cell = cells.MultiRNNCell([cells.BasicLSTMCell(4), cells.ResidualWrapper(cells.BasicLSTMCell(4)),
                               cells.BasicRNNCell(3)])
    initial = cell.zero_state(BATCH, tf.float64)
    out, st = tf.nn.dynamic_rnn(cell, x, initial_state=initial)
    flat = [out, st[0].c, st[0].h, st[1].c, st[1].h, st[2]]
    return x, flat, _loss(tf, flat)


def bidirectional_dynamic(tf, cells):
    x = tf.placeholder(tf.float64, [BATCH, TIME, DEPTH])
    (fw, bw), (sfw, sbw) = tf.nn.bidirectional_dynamic_rnn(cells.LSTMCell(3), cells.GRUCell(2), x,
                                                           sequence_length=SEQ, dtype=tf.float64)
    flat = [fw, bw, sfw.c, sfw.h, sbw]
    return x, flat, _loss(tf, flat)


def bidirectional_static(tf, cells):
    x = tf.placeholder(tf.float64, [BATCH, TIME, DEPTH])
    outs, sfw, sbw = tf.nn.static_bidirectional_rnn(cells.GRUCell(3), cells.BasicRNNCell(2), tf.unstack(x, axis=1),
                                                    dtype=tf.float64, sequence_length=SEQ)
    out = tf.stack(outs, 1)
    return x, [out, sfw, sbw], _loss(tf, [out, sfw, sbw])


CASES = {f.__name__: f for f in (basic_lstm, lstm_peepholes_projection_time_major, lstm_concatenated_state,
                                 gru_static, multi_residual_basic_rnn, bidirectional_dynamic, bidirectional_static)}
