"""TF1 top-level names (and their tf.dtypes / tf.logging / tf.summary / tf.nn aliases) checked
against numpy or TF's documented results: shape helpers, batch_scatter_update, guarantee_const,
get_static_value, the TF1-behaviour switches, conv2d_backprop_*_v2, decode_compressed,
extract_volume_patches' argument checks, static_state_saving_rnn. extract_volume_patches,
clip_by_average_norm and broadcast_dynamic_shape values are TF-recorded in
fixtures/tf_values_cases.py."""
from __future__ import annotations

import logging
import zlib

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.ops.registry import GRADIENTS


pytestmark = pytest.mark.usefixtures("graph")


def _run(fetch, feed=None):
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        return sess.run(fetch, feed)


def test_broadcast_dynamic_shape_at_run_time():
    p = tf.placeholder(tf.int32, [None])
    shape = tf.broadcast_dynamic_shape(p, [4, 1])
    assert shape.shape.as_list() == [None]
    assert _run(shape, {p: [3, 1, 1]}).tolist() == [3, 4, 1]
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"BroadcastArgs.*Incompatible shapes: \[2,3\] vs\. "
                                                             r"\[4,3\]"):
        _run(tf.broadcast_dynamic_shape([2, 3], [4, 3]))


def test_broadcast_static_shape():
    got = tf.broadcast_static_shape(tf.TensorShape([1, None, 3]), tf.TensorShape([5, 1, 3]))
    assert got.as_list() == [5, None, 3]
    assert tf.broadcast_static_shape(tf.TensorShape([2, 1]), tf.TensorShape(None)).ndims is None
    with pytest.raises(ValueError, match=r"Incompatible shapes for broadcasting\..*Received: \(2, 3\) and \(4, 3\)"):
        tf.broadcast_static_shape(tf.TensorShape([2, 3]), tf.TensorShape([4, 3]))


def test_batch_scatter_update_matches_numpy():
    start = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    indices = np.array([[[0, 2], [1, 3], [3, 0]], [[1, 2], [2, 3], [0, 1]]])
    updates = -np.arange(1, 13, dtype=np.float32).reshape(2, 3, 2)
    v = tf.Variable(start)
    got = _run(tf.batch_scatter_update(v, indices, updates))
    want = start.copy()
    for i in range(2):
        for j in range(3):
            want[i, j, indices[i, j]] = updates[i, j]
    np.testing.assert_array_equal(got, want)


def test_batch_scatter_update_needs_known_index_rank():
    with pytest.raises(ValueError, match="unknown shape"):
        tf.batch_scatter_update(tf.Variable(np.zeros((2, 3))), tf.placeholder(tf.int32), [1.0])


def test_guarantee_const_passes_values_and_has_no_gradient():
    x = tf.constant([1.0, 2.0])
    g = tf.guarantee_const(x)
    assert g.op.type == "GuaranteeConst" and _run(g).tolist() == [1.0, 2.0]
    with pytest.raises(LookupError, match="GuaranteeConst"):
        tf.gradients(tf.reduce_sum(g), x)


def test_get_static_value():
    assert tf.get_static_value(tf.constant(10)) == 10
    assert tf.get_static_value(tf.shape(tf.zeros([2, 3]))).tolist() == [2, 3]
    assert tf.get_static_value(5) == 5
    p = tf.placeholder(tf.int32, [])
    assert tf.get_static_value(p) is None
    partial = tf.get_static_value(tf.stack([1, p]), partial=True)
    assert partial.dtype == object and partial[0] == 1 and partial[1] is None
    c = tf.constant(3)
    tf.get_static_value(c)
    with pytest.raises(ValueError):   # a folded value can no longer be fed
        _run(c + 1, {c: 4})


def test_dimension_helpers():
    shape = tf.TensorShape([3, None])
    assert tf.dimension_value(shape[0]) == 3 and tf.dimension_value(shape[1]) is None
    assert tf.dimension_value(7) == 7
    assert tf.dimension_at_index(shape, 0).value == 3
    assert tf.dimension_at_index(tf.TensorShape(None), 5).value is None


def test_convert_to_tensor_or_indexed_slices():
    x = tf.constant([1.0, 2.0])
    slices = tf.IndexedSlices(x, tf.constant([0, 2]))
    assert tf.convert_to_tensor_or_indexed_slices(slices) is slices
    assert tf.convert_to_tensor_or_indexed_slices(slices, dtype=tf.float32) is slices
    with pytest.raises(ValueError, match="Incompatible tensor conversion requested to `dtype` int32"):
        tf.convert_to_tensor_or_indexed_slices(slices, dtype=tf.int32)
    t = tf.convert_to_tensor_or_indexed_slices([1, 2], dtype=tf.int64)
    assert t.dtype == tf.int64 and _run(t).tolist() == [1, 2]


def test_tf1_behaviour_switches():
    tf.disable_control_flow_v2()
    tf.disable_tensor_equality()
    tf.disable_v2_tensorshape()
    assert tf.control_flow_v2_enabled() is False
    a, b = tf.constant(1), tf.constant(1)
    assert (a == b) is False and len({a, b}) == 2   # TF1 tensor equality: identity
    assert isinstance(tf.TensorShape([2])[0], tf.Dimension)   # TF1 TensorShape: Dimension objects


def test_op_error_and_no_gradient(monkeypatch):
    assert tf.OpError is tf.errors.OpError
    assert issubclass(tf.errors.InvalidArgumentError, tf.OpError)
    monkeypatch.delitem(GRADIENTS, "GuaranteeConst", raising=False)   # put back as it was after the test
    x = tf.constant(2.0)
    tf.no_gradient("GuaranteeConst")   # declared not differentiable: a None gradient, not a LookupError
    assert tf.gradients(tf.guarantee_const(x), x) == [None]


def _valid_filter_grad(x, dy, kh, kw):
    """dL/dW of a stride-1 VALID NHWC convolution: sum over batch and output positions."""
    _, oh, ow, _ = dy.shape
    return np.stack([np.stack([np.einsum("bhwi,bhwo->io", x[:, i:i + oh, j:j + ow], dy) for j in range(kw)])
                     for i in range(kh)])


def _padded_input_grad(w, dy, in_hw, pads):
    """dL/dX of a stride-1 NHWC convolution with explicit (top, bottom, left, right) padding."""
    kh, kw = w.shape[:2]
    top, bottom, left, right = pads
    full = np.zeros((dy.shape[0], in_hw[0] + top + bottom, in_hw[1] + left + right, w.shape[2]))
    for i in range(kh):
        for j in range(kw):
            full[:, i:i + dy.shape[1], j:j + dy.shape[2]] += np.einsum("bhwo,io->bhwi", dy, w[i, j])
    return full[:, top:top + in_hw[0], left:left + in_hw[1]]


def test_conv2d_backprop_v2_match_numpy():
    rng = np.random.RandomState(3)
    x = rng.randn(2, 5, 4, 3).astype(np.float32)
    w = rng.randn(3, 2, 3, 2).astype(np.float32)
    dy = rng.randn(2, 3, 3, 2).astype(np.float32)
    dw = tf.conv2d_backprop_filter_v2(x, w, dy, [1, 1, 1, 1], "VALID")
    dy_pad = rng.randn(2, 4, 4, 2).astype(np.float32)   # 5 + 1 + 0 - 3 + 1 rows, 4 + 0 + 1 - 2 + 1 cols
    dx = tf.conv2d_backprop_input_v2(x, w, dy_pad, [1, 1, 1, 1], "EXPLICIT",
                                     explicit_paddings=[0, 0, 1, 0, 0, 1, 0, 0])
    got_w, got_x = _run([dw, dx])
    np.testing.assert_allclose(got_w, _valid_filter_grad(x, dy, 3, 2), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(got_x, _padded_input_grad(w, dy_pad, (5, 4), (1, 0, 0, 1)), rtol=1e-4, atol=1e-4)


def test_decode_compressed_at_top_level():
    data = [zlib.compress(b"hello"), zlib.compress(b"")]
    assert _run(tf.decode_compressed(data, compression_type="ZLIB")).tolist() == [b"hello", b""]


def test_extract_volume_patches_checks_its_arguments():
    vol = tf.zeros([1, 4, 4, 4, 2])
    assert tf.extract_volume_patches(vol, [1, 2, 2, 2, 1], [1, 2, 2, 2, 1], "VALID").shape.as_list() == \
        [1, 2, 2, 2, 16]
    with pytest.raises(ValueError, match="extract_volume_patches: padding"):
        tf.extract_volume_patches(vol, [1, 2, 2, 2, 1], [1, 1, 1, 1, 1], "FULL")
    with pytest.raises(ValueError, match="extract_volume_patches: ksizes"):
        tf.extract_volume_patches(vol, [2, 2, 2, 1], [1, 1, 1, 1, 1], "SAME")
    with pytest.raises(tf.errors.InvalidArgumentError, match="ExtractVolumePatches.*5-dimensional"):
        p = tf.placeholder(tf.float32)
        _run(tf.extract_volume_patches(p, [1, 1, 1, 1, 1], [1, 1, 1, 1, 1], "SAME"), {p: np.zeros((2, 2, 2, 2))})


class _VariableStateSaver:
    """A state saver over variables: state(name) reads, save_state(name, value) assigns."""

    def __init__(self, states: dict):
        self.vars = {k: tf.Variable(v, name=k) for k, v in states.items()}

    def state(self, name):
        return self.vars[name].read_value()

    def save_state(self, name, value):
        return tf.assign(self.vars[name], value)


def test_static_state_saving_rnn_saves_the_final_state():
    rng = np.random.RandomState(0)
    inputs_np = [rng.randn(2, 3).astype(np.float32) for _ in range(4)]
    c0, h0 = rng.randn(2, 5).astype(np.float32), rng.randn(2, 5).astype(np.float32)
    saver = _VariableStateSaver({"c": c0, "h": h0})
    cell = tf.nn.rnn_cell.LSTMCell(5, initializer=tf.constant_initializer(0.1))
    inputs = [tf.constant(x) for x in inputs_np]
    outputs, state = tf.nn.static_state_saving_rnn(cell, inputs, saver, ("c", "h"), scope="saving")
    with tf.variable_scope("saving", reuse=True):
        ref_outputs, ref_state = tf.nn.static_rnn(cell, inputs, initial_state=tf.nn.rnn_cell.LSTMStateTuple(c0, h0),
                                                  scope="saving")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got_last, got_c, ref_last, ref_c = sess.run([outputs[-1], state.c, ref_outputs[-1], ref_state.c])
        np.testing.assert_allclose(got_last, ref_last, rtol=1e-5)
        np.testing.assert_allclose(got_c, ref_c, rtol=1e-5)
        # fetching the last output saved the final state: it is the next run's initial state
        np.testing.assert_allclose(sess.run(saver.vars["c"]), got_c, rtol=1e-6)
        assert not np.allclose(sess.run(outputs[-1]), got_last)


def test_static_state_saving_rnn_state_name_must_match_the_state():
    cell = tf.nn.rnn_cell.LSTMCell(2)
    with pytest.raises(ValueError, match="state_name should be the same type as cell.state_size"):
        tf.nn.static_state_saving_rnn(cell, [tf.zeros([1, 2])], _VariableStateSaver({}), "c")


def test_logging_task_level_status_message_and_flush(caplog):
    logger = tf.logging.get_logger()
    logger.propagate = True
    try:
        with caplog.at_level(logging.ERROR, logger="tensorflow"):
            tf.logging.TaskLevelStatusMessage("task 3 is done")
            tf.logging.flush()
    finally:
        logger.propagate = False
    assert [(r.levelno, r.getMessage()) for r in caplog.records] == [(logging.ERROR, "task 3 is done")]


def test_all_v2_summary_ops_is_the_v2_collection():
    assert tf.summary.all_v2_summary_ops() == []
    op = tf.no_op(name="v2_summary")
    tf.add_to_collection("_SUMMARY_V2", op)
    assert tf.summary.all_v2_summary_ops() == [op]
    tf.summary.scalar("v1", tf.constant(1.0))   # TF1 summaries are not V2 ones
    assert tf.summary.all_v2_summary_ops() == [op]


def test_dtypes_namespace_casts():
    assert tf.dtypes.cast is tf.cast and tf.dtypes.saturate_cast is tf.saturate_cast
    assert tf.dtypes.complex is tf.complex and tf.dtypes.as_string is tf.as_string
    assert tf.dtypes.float32 is tf.float32 and tf.dtypes.as_dtype("int64") == tf.int64
    got = _run([tf.dtypes.saturate_cast(tf.constant([300.0, -5.0]), tf.uint8),
                tf.dtypes.complex(tf.constant([1.0]), tf.constant([2.0])),
                tf.dtypes.as_string(tf.constant([1.5]), precision=2)])
    assert got[0].tolist() == [255, 0] and got[1].tolist() == [1 + 2j] and got[2].tolist() == [b"1.50"]
    assert tf.io.write_graph is tf.train.write_graph
