"""tf.nn.rnn_cell cells and the RNN loops against TensorFlow: the cases of rnn_cases.py recorded by
fixtures/record_tf_rnn.py (variable names, outputs, final states, and gradients with respect to
the inputs and every variable), plus behaviour TF documents that has no recorded number."""
from __future__ import annotations

import os

import numpy as np
import pytest

import tensorweave as tf
from rnn_cases import CASES, inputs_value, variable_value

pytestmark = pytest.mark.usefixtures("graph")
REC = np.load(os.path.join(os.path.dirname(__file__), "fixtures", "tf_rnn.npz"))


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_tensorflow(name):
    x, tensors, loss = CASES[name](tf, tf.nn.rnn_cell)
    variables = tf.trainable_variables()
    assert [v.op.name for v in variables] == list(REC[name + "/variables"])
    grads = tf.gradients(loss, [x] + variables)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for v in variables:
            v.load(variable_value(v.op.name, v.shape.as_list()), sess)
        values = sess.run(tensors + grads, {x: inputs_value()})
    for i, (t, got) in enumerate(zip(tensors, values)):
        assert t.shape.as_list() == list(REC[f"{name}/out{i}"].shape)
        np.testing.assert_allclose(got, REC[f"{name}/out{i}"], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(values[len(tensors)], REC[name + "/dx"], rtol=1e-9, atol=1e-12)
    for v, got in zip(variables, values[len(tensors) + 1:]):
        np.testing.assert_allclose(got, REC[f"{name}/d/{v.op.name}"], rtol=1e-9, atol=1e-12)


def _x(batch=3, time=5, depth=2, dtype=np.float64):
    return np.random.RandomState(3).randn(batch, time, depth).astype(dtype)


def test_cell_called_directly_names_reuse_and_scope_argument():
    cell = tf.nn.rnn_cell.BasicRNNCell(3)
    x = tf.constant(_x()[:, 0])
    state = cell.zero_state(3, tf.float64)
    assert state.shape.as_list() == [3, 3] and state.dtype == tf.float64
    out, new = cell(x, state)
    cell(x, new)
    assert [v.op.name for v in tf.global_variables()] == ["basic_rnn_cell/kernel", "basic_rnn_cell/bias"]
    assert out is new and cell.output_size == cell.state_size == 3
    other = tf.nn.rnn_cell.GRUCell(2)
    other(x, other.zero_state(3, tf.float64), scope="my_gru")
    assert "my_gru/gates/kernel" in [v.op.name for v in tf.global_variables()]
    lstm = tf.nn.rnn_cell.LSTMCell(4, num_proj=2)
    zero = lstm.zero_state(tf.shape(x)[0], tf.float32)
    assert isinstance(zero, tf.nn.rnn_cell.LSTMStateTuple) and zero.c.shape.as_list() == [None, 4]
    assert zero.h.shape.as_list() == [None, 2] and zero.dtype == tf.float32
    with pytest.raises(TypeError, match="Inconsistent"):
        _ = tf.nn.rnn_cell.LSTMStateTuple(tf.zeros([1]), tf.zeros([1], tf.float64)).dtype
    assert tf.contrib.rnn.BasicLSTMCell is tf.nn.rnn_cell.BasicLSTMCell
    assert tf.contrib.rnn.static_rnn is tf.nn.static_rnn


def test_dropout_wrapper_masks_outputs_and_keeps_lstm_memory():
    x = tf.constant(_x())
    base = tf.nn.rnn_cell.BasicLSTMCell(6)
    ref_out, ref_state = tf.nn.dynamic_rnn(base, x, dtype=tf.float64, scope="net")
    dropped = tf.nn.rnn_cell.DropoutWrapper(base, output_keep_prob=0.5, seed=3)
    out, state = tf.nn.dynamic_rnn(dropped, x, dtype=tf.float64, scope="net")
    same = tf.nn.rnn_cell.DropoutWrapper(base, input_keep_prob=1.0, output_keep_prob=1, state_keep_prob=1.0)
    out1, _ = tf.nn.dynamic_rnn(same, x, dtype=tf.float64, scope="net")
    assert len(tf.global_variables()) == 2   # the wrapper reuses the cell's own variables
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        r, rs, o, s, o1 = sess.run([ref_out, ref_state, out, state, out1])
    kept = o != 0
    assert 0.3 < kept.mean() < 0.7
    np.testing.assert_allclose(o[kept], 2 * r[kept], rtol=1e-12)
    np.testing.assert_allclose(s.h, rs.h, rtol=1e-12)   # output dropout leaves the state alone
    np.testing.assert_array_equal(o1, r)


def test_variational_dropout_uses_one_mask_for_all_steps_and_spares_c():
    x = tf.constant(_x(batch=4, time=6, depth=5))
    cell = tf.nn.rnn_cell.DropoutWrapper(tf.nn.rnn_cell.BasicLSTMCell(8), input_keep_prob=0.6, output_keep_prob=0.5,
                                         state_keep_prob=0.5, variational_recurrent=True, input_size=5,
                                         dtype=tf.float64, seed=1)
    out, _ = tf.nn.dynamic_rnn(cell, x, dtype=tf.float64)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        o = sess.run(out)
    zero_units = (o == 0).all(axis=(0, 1))
    assert zero_units.any() and not zero_units.all()
    assert ((o == 0) == zero_units).all()   # the same units are dropped at every step and entry
    with pytest.raises(ValueError, match="dtype must be provided"):
        tf.nn.rnn_cell.DropoutWrapper(tf.nn.rnn_cell.GRUCell(2), state_keep_prob=0.5, variational_recurrent=True)
    with pytest.raises(ValueError, match="input_size must be provided"):
        tf.nn.rnn_cell.DropoutWrapper(tf.nn.rnn_cell.GRUCell(2), input_keep_prob=0.5, variational_recurrent=True,
                                      dtype=tf.float32)
    with pytest.raises(ValueError, match="between 0 and 1"):
        tf.nn.rnn_cell.DropoutWrapper(tf.nn.rnn_cell.GRUCell(2), output_keep_prob=1.5)


def test_dropout_state_filter_decides_which_state_tensors_drop():
    x = tf.constant(_x())
    cell = tf.nn.rnn_cell.BasicLSTMCell(6)
    _, ref = tf.nn.dynamic_rnn(cell, x, dtype=tf.float64, scope="s")
    none = tf.nn.rnn_cell.DropoutWrapper(cell, state_keep_prob=0.5, dropout_state_filter_visitor=lambda s: False)
    _, kept = tf.nn.dynamic_rnn(none, x, dtype=tf.float64, scope="s")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        a, b = sess.run([ref, kept])
    np.testing.assert_array_equal(a.c, b.c)
    np.testing.assert_array_equal(a.h, b.h)


def test_bidirectional_backward_direction_is_the_reversed_run():
    xv = _x()
    x = tf.constant(xv)
    cell = tf.nn.rnn_cell.GRUCell(3)
    (_, bw), (_, sbw) = tf.nn.bidirectional_dynamic_rnn(tf.nn.rnn_cell.GRUCell(2), cell, x, dtype=tf.float64)
    manual, smanual = tf.nn.dynamic_rnn(cell, tf.constant(xv[:, ::-1].copy()), dtype=tf.float64,
                                        scope="bidirectional_rnn/bw")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        a, b, c, d = sess.run([bw, manual, sbw, smanual])
    np.testing.assert_allclose(a, b[:, ::-1], rtol=1e-12)
    np.testing.assert_allclose(c, d, rtol=1e-12)


def test_raw_rnn_reproduces_dynamic_rnn():
    xv = _x()
    cell = tf.nn.rnn_cell.BasicLSTMCell(4)
    lengths = tf.constant([5, 3, 1])
    inputs_ta = tf.TensorArray(tf.float64, size=5).unstack(tf.constant(xv.transpose(1, 0, 2)))

    def loop_fn(time, cell_output, cell_state, loop_state):
        state = cell.zero_state(3, tf.float64) if cell_output is None else cell_state
        finished = time >= lengths
        nxt = tf.cond(tf.reduce_all(finished), lambda: tf.zeros([3, 2], tf.float64), lambda: inputs_ta.read(time))
        return finished, nxt, state, cell_output, None

    emit_ta, final, loop_state = tf.nn.raw_rnn(cell, loop_fn)
    raw_out = tf.transpose(emit_ta.stack(), [1, 0, 2])
    dyn_out, dyn_state = tf.nn.dynamic_rnn(cell, tf.constant(xv), sequence_length=[5, 3, 1], dtype=tf.float64)
    assert loop_state is None
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        a, b, c, d = sess.run([raw_out, dyn_out, final, dyn_state])
    np.testing.assert_allclose(a, b, rtol=1e-12)
    np.testing.assert_allclose(c.h, d.h, rtol=1e-12)


def test_device_wrapper_places_the_cell():
    cell = tf.nn.rnn_cell.DeviceWrapper(tf.nn.rnn_cell.BasicRNNCell(2), "/cpu:0")
    out, _ = cell(tf.zeros([1, 3]), cell.zero_state(1, tf.float32))
    assert "CPU" in out.device.upper()


def test_errors_name_what_is_wrong():
    cell = tf.nn.rnn_cell.BasicLSTMCell(2)
    x = tf.zeros([2, 3, 4])
    with pytest.raises(ValueError, match="dtype"):
        tf.nn.dynamic_rnn(cell, x)
    with pytest.raises(ValueError, match="sequence_length"):
        tf.nn.dynamic_rnn(cell, x, sequence_length=[[1, 2]], dtype=tf.float32)
    with pytest.raises(ValueError, match="depth of inputs"):
        tf.nn.dynamic_rnn(cell, tf.placeholder(tf.float32, [2, 3, None]), dtype=tf.float32)
    with pytest.raises(TypeError, match="not an RNNCell"):
        tf.nn.dynamic_rnn(object(), x, dtype=tf.float32)
    with pytest.raises(TypeError, match="sequence"):
        tf.nn.static_rnn(cell, x, dtype=tf.float32)
    with pytest.raises(ValueError, match="must not be empty"):
        tf.nn.static_rnn(cell, [], dtype=tf.float32)
    with pytest.raises(ValueError, match="at least one cell"):
        tf.nn.rnn_cell.MultiRNNCell([])
    with pytest.raises(ValueError, match="state_is_tuple"):
        tf.nn.rnn_cell.MultiRNNCell([tf.nn.rnn_cell.BasicLSTMCell(2)], state_is_tuple=False)
    lengths = tf.placeholder(tf.int32, [None])
    out, _ = tf.nn.dynamic_rnn(tf.nn.rnn_cell.GRUCell(2), x, sequence_length=lengths, dtype=tf.float32, scope="g")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        with pytest.raises(tf.errors.InvalidArgumentError, match="sequence_length"):
            sess.run(out, {lengths: [1, 2, 3]})
