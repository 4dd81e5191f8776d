"""tf.debugging's checks beyond the comparisons (assert_near, assert_rank_in, assert_shapes,
assert_same_float_dtype, assert_proper_iterable, is_numeric_tensor, assert_all_finite,
add_check_numerics_ops) and log-device-placement switch. Messages and outcomes as TF 2.21's
tf.compat.v1 gives them (checked by hand against it)."""
from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tf


pytestmark = pytest.mark.usefixtures("graph")


def _run(fetch, feed=None):
    with tf.Session() as sess:
        return sess.run(fetch, feed)


def test_assert_near_is_strict_and_names_the_tensors():
    x = tf.constant([1.0, 2.0], name="xx")
    _run(tf.assert_near(x, [1.0, 2.4], atol=0.5, rtol=0.0))
    _run(tf.debugging.assert_near(x, [0.9, 2.0], atol=0.0, rtol=0.2))   # |x - y| < 0.2 * |y|
    # TF compares strictly: a difference equal to the tolerance fails, and so do equal tensors at zero tolerance
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"x and y not equal to tolerance.*x \(xx:0\)"):
        _run(tf.assert_near(x, [1.0, 2.5], atol=0.5, rtol=0.0))
    with pytest.raises(tf.errors.InvalidArgumentError):
        _run(tf.assert_near(x, [1.0, 2.0], atol=0.0, rtol=0.0))
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"msg\.  "):
        _run(tf.assert_near(x, [1.0, 2.6], atol=0.5, rtol=0.0, message="msg"))


def test_assert_near_default_tolerance_is_ten_eps():
    x = tf.constant([1.0], tf.float32)
    eps = np.finfo(np.float32).eps
    _run(tf.assert_near(x, np.float32(1 + 5 * eps)))
    with pytest.raises(tf.errors.InvalidArgumentError):
        _run(tf.assert_near(x, np.float32(1 + 40 * eps)))


def test_assert_rank_in_static_and_at_run_time():
    x = tf.constant([1.0, 2.0], name="xx")
    with pytest.raises(ValueError, match=r"^m\.  Tensor xx:0 must have rank in \(0, 2\)\.  Received rank 1, shape"):
        tf.assert_rank_in(x, [0, 2], message="m")
    assert tf.debugging.assert_rank_in(x, [1, 3]).type == "NoOp"
    p = tf.placeholder(tf.float32)
    check = tf.assert_rank_in(p, [0, 2])
    _run(check, {p: np.zeros((2, 2))})
    _run(check, {p: 3.0})
    with pytest.raises(tf.errors.InvalidArgumentError, match="must have rank in"):
        _run(check, {p: [1.0]})


def test_assert_same_float_dtype():
    x32, x64 = tf.constant([1.0], tf.float32, name="a"), tf.constant([1.0], tf.float64, name="b")
    assert tf.assert_same_float_dtype(None) == tf.float32
    assert tf.assert_same_float_dtype([None, x32]) == tf.float32
    assert tf.debugging.assert_same_float_dtype(dtype=tf.float16) == tf.float16
    assert tf.assert_same_float_dtype([x64, x64], tf.float64) == tf.float64
    with pytest.raises(ValueError, match=r"b:0, type=float64, must be of the same type \(float32\) as a:0\."):
        tf.assert_same_float_dtype([x32, x64])
    with pytest.raises(ValueError, match="Expected floating point type, got int32"):
        tf.assert_same_float_dtype([tf.constant([1])])


def test_assert_proper_iterable():
    tf.assert_proper_iterable([1, 2])
    tf.debugging.assert_proper_iterable((tf.constant(1),))
    for bad in (tf.constant([1, 2]), np.zeros(2), "ab", b"ab"):
        with pytest.raises(TypeError, match='"proper" iterable'):
            tf.assert_proper_iterable(bad)
    with pytest.raises(TypeError, match="to be iterable.  Found: <class 'int'>"):
        tf.assert_proper_iterable(3)


def test_assert_shapes_static_checks():
    a, b = tf.zeros([2, 3], name="a"), tf.zeros([3], name="b")
    tf.debugging.assert_shapes([(a, ("N", "D")), (tf.zeros([2]), ("N",))])
    with pytest.raises(ValueError, match=r"Specified by tensor a:0 dimension 0\.  Tensor b:0 dimension 0 must "
                                         r"have size 2\.  Received size 3"):
        tf.debugging.assert_shapes([(a, ("N", "D")), (b, ("N",))])
    with pytest.raises(ValueError, match=r"Specified explicitly\.  Tensor a:0 dimension 1 must have size 4"):
        tf.debugging.assert_shapes({a: (2, 4)})
    with pytest.raises(ValueError, match="must have rank 3"):
        tf.debugging.assert_shapes([(a, ("N", "D", "E"))])
    with pytest.raises(ValueError, match="only allowed as the first entry"):
        tf.debugging.assert_shapes([(a, ("N", "*"))])


def test_assert_shapes_at_run_time():
    q = tf.placeholder(tf.float32, [None, 3])
    r = tf.placeholder(tf.float32, [None])
    check = tf.debugging.assert_shapes([(q, ("N", 3)), (r, ("N",))])
    _run(check, {q: np.zeros((2, 3)), r: np.zeros(2)})
    with pytest.raises(tf.errors.InvalidArgumentError, match="must have size"):
        _run(check, {q: np.zeros((2, 3)), r: np.zeros(3)})
    outer = tf.debugging.assert_shapes([(tf.placeholder(tf.float32, None, name="any"), ("*", 3))])
    with tf.Session() as sess:
        sess.run(outer, {"any:0": np.zeros((4, 5, 3))})
        with pytest.raises(tf.errors.InvalidArgumentError):
            sess.run(outer, {"any:0": np.zeros((4, 2))})


def test_is_numeric_tensor():
    assert tf.is_numeric_tensor(tf.constant([1.0]))
    assert tf.debugging.is_numeric_tensor(tf.constant([1], tf.uint8))
    assert tf.is_numeric_tensor(tf.constant([1j], tf.complex64))
    assert not tf.is_numeric_tensor(tf.constant(True))
    assert not tf.is_numeric_tensor(tf.constant("a"))
    assert not tf.is_numeric_tensor(3)


def test_monotonic_checks_are_in_debugging():
    assert _run(tf.debugging.is_non_decreasing([1, 1, 2])) and not _run(tf.debugging.is_strictly_increasing([1, 1, 2]))


def test_assert_all_finite_names_the_message():
    y = tf.constant([1.0, np.inf])
    assert _run(tf.debugging.assert_all_finite(tf.constant([1.0, 2.0]), "ok")).tolist() == [1.0, 2.0]
    with pytest.raises(tf.errors.InvalidArgumentError, match="bad : Tensor had Inf values"):
        _run(tf.debugging.assert_all_finite(x=y, message="bad"))


def test_add_check_numerics_ops_checks_every_float_output():
    p = tf.placeholder(tf.float32, [2], name="p")
    q = tf.math.log(p, name="logp")
    tf.constant([1, 2], name="ints")   # not checked: not a float
    check = tf.add_check_numerics_ops()
    with tf.Session() as sess:
        assert sess.run([q, check], {p: [1.0, 2.0]})[0].tolist() == pytest.approx([0.0, np.log(2.0)])
        with pytest.raises(tf.errors.InvalidArgumentError, match="logp:0 : Tensor had NaN values"):
            sess.run(check, {p: [1.0, -1.0]})


def test_add_check_numerics_ops_refuses_tf1_control_flow_frames():
    tf.get_default_graph().create_op("Switch", [tf.constant(1.0), tf.constant(True)], {"T": tf.float32})
    with pytest.raises(ValueError, match="not compatible with TensorFlow control flow"):
        tf.add_check_numerics_ops()


def test_set_log_device_placement_logs_placements(capfd):
    assert not tf.debugging.get_log_device_placement()
    tf.debugging.set_log_device_placement(True)
    try:
        assert tf.debugging.get_log_device_placement()
        with tf.Graph().as_default():
            added = tf.add(tf.constant(1), 2, name="placed_add")
            with tf.Session(config=tf.ConfigProto()) as sess:     # an explicit config wins, as in TF
                sess.run(added)
            assert "placed_add" not in capfd.readouterr().err
            with tf.Session() as sess:
                sess.run(added)
    finally:
        tf.debugging.set_log_device_placement(False)
    assert "placed_add: (Add): /job:localhost" in capfd.readouterr().err
