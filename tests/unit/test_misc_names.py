"""Issue 28's misc names beyond the values recorded from TF (test_vision_misc_recorded.py):
variable sharing of make_template as TF names it, switch_case, timestamp, TensorSpec, the
version constants, and bad input: TF's error class, naming the op."""
from __future__ import annotations

import logging
import time

import numpy as np
import pytest

import tensorweave as tf
from unit_helpers import run

pytestmark = pytest.mark.usefixtures("graph")


def _linear(x, scale):
    w = tf.get_variable("w", [3, 1], initializer=tf.ones_initializer())
    return tf.matmul(x, w) * scale


def test_make_template_shares_variables_as_tf_names_them():
    # names as TF 2.21's compat.v1 gives them for this program
    x = tf.placeholder(tf.float32, [2, 3], name="inp")
    t = tf.make_template("lin", _linear, scale=2.0)
    a, b = t(x), t(x)
    assert (a.name, b.name) == ("lin/mul:0", "lin_1/mul:0")
    assert [v.name for v in t.variables] == ["lin/w:0"] == [v.name for v in tf.global_variables()]
    assert t.variable_scope_name == "lin/" and [v.name for v in t.trainable_variables] == ["lin/w:0"]
    t2 = tf.make_template("lin", _linear, scale=1.0)
    t2(x)
    assert [v.name for v in t2.variables] == ["lin_1/w:0"]
    t3 = tf.make_template("now", _linear, create_scope_now_=True, scale=1.0)
    with tf.variable_scope("outer"):
        c = t3(x)
    assert c.name == "outer/now/mul:0" and [v.name for v in t3.variables] == ["now/w:0"]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        xs = np.arange(6, dtype=np.float32).reshape(2, 3)
        sess.run(t.variables[0].assign([[1.0], [0.0], [-1.0]]))
        np.testing.assert_allclose(sess.run([a, b], {x: xs}), [(xs @ [[1.0], [0.0], [-1.0]]) * 2] * 2)


def test_make_template_refuses_a_new_trainable_variable_on_a_later_call():
    t = tf.make_template("bad", lambda x: tf.matmul(x, tf.Variable(tf.ones([3, 1]))))
    x = tf.zeros([2, 3])
    t(x)
    with pytest.raises(ValueError, match="Trainable variable created when calling a template after the first time"):
        t(x)
    with pytest.raises(ValueError, match="name cannot be None"):
        tf.make_template(None, _linear)


def test_switch_case_runs_only_the_chosen_branch():
    i = tf.placeholder(tf.int32, [])
    counter = tf.Variable(0)
    branches = [lambda: tf.constant(10), lambda: tf.identity(counter.assign_add(1) * 0 + 20), lambda: tf.constant(30)]
    out = tf.switch_case(i, branches)
    with_default = tf.switch_case(i, {1: lambda: tf.constant(1.5), 0: lambda: tf.constant(0.5)},
                                  default=lambda: tf.constant(-1.0))
    with tf.Session() as sess:
        sess.run(counter.initializer)
        assert [sess.run(out, {i: k}) for k in (0, 2, 7, -3)] == [10, 30, 30, 30]   # out of range: the last
        assert sess.run(counter) == 0
        assert sess.run(out, {i: 1}) == 20 and sess.run(counter) == 1
        assert [sess.run(with_default, {i: k}) for k in (0, 1, 2)] == [0.5, 1.5, -1.0]
    with pytest.raises(ValueError, match="contiguous range"):
        tf.switch_case(i, {0: lambda: 1, 2: lambda: 2})
    with pytest.raises(TypeError, match="integer Tensor"):
        tf.switch_case(tf.constant(1.0), [lambda: 1])


def test_timestamp_is_the_time_of_each_run():
    t = tf.timestamp()
    with tf.Session() as sess:
        before = time.time()
        first = sess.run(t)
        second = sess.run(t)
        after = time.time()
    assert t.dtype == tf.float64 and before <= first <= second <= after


def test_tensor_spec_describes_tensors():
    x = tf.placeholder(tf.float32, [2, 3], name="inp")
    spec = tf.TensorSpec([None, 3])
    assert repr(spec) == "TensorSpec(shape=(None, 3), dtype=tf.float32, name=None)"
    assert repr(tf.TensorSpec.from_tensor(x)) == "TensorSpec(shape=(2, 3), dtype=tf.float32, name='inp')"
    assert spec.is_compatible_with(x) and not spec.is_compatible_with(tf.TensorSpec([2, 4]))
    assert not tf.TensorSpec([2, 3], tf.int32).is_compatible_with(x)
    assert spec == tf.TensorSpec([None, 3]) and spec != tf.TensorSpec([None, 3], name="a")
    assert len({spec, tf.TensorSpec([None, 3])}) == 1


def test_version_constants_and_logger():
    assert tf.VERSION.startswith("1.") and tf.version.VERSION == tf.VERSION
    assert tf.Graph().as_graph_def().versions.producer == tf.GRAPH_DEF_VERSION == tf.version.GRAPH_DEF_VERSION
    assert tf.GRAPH_DEF_VERSION_MIN_CONSUMER == 0 and tf.GRAPH_DEF_VERSION_MIN_PRODUCER == 0
    assert isinstance(tf.GIT_VERSION, str)
    assert tf.get_logger() is logging.getLogger("tensorflow")


def test_bad_input_names_the_op():
    x = tf.placeholder(tf.float32)
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"(?s)\[3,2\] is not compatible with expected shape "
                                                             r"\[\?,3\].*node EnsureShape"):
        run(tf.ensure_shape(x, [None, 3]), {x: np.zeros((3, 2))})
    with pytest.raises(ValueError, match="incompatible"):
        tf.ensure_shape(tf.zeros([3, 2]), [3, 3])
    with pytest.raises(tf.errors.InvalidArgumentError, match="UnravelIndex.*out of bound"):
        run(tf.unravel_index([3, 12], [3, 4]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="(LowerBound|searchsorted).*Leading dim_size"):
        run(tf.searchsorted(tf.placeholder_with_default(np.zeros((2, 3), np.float32), None),
                            tf.placeholder_with_default(np.zeros((3, 1), np.float32), None)))
    with pytest.raises(ValueError, match="side must be"):
        tf.searchsorted([1, 2], [1], side="middle")
    with pytest.raises(tf.errors.InvalidArgumentError, match="Bitcast"):
        run(tf.bitcast(tf.placeholder_with_default(np.zeros((2, 3), np.int16), None), tf.int32))
    with pytest.raises(ValueError, match="Cannot bitcast"):
        tf.bitcast(np.zeros((2, 3), np.int16), tf.int32)
    with pytest.raises(tf.errors.InvalidArgumentError, match="Fingerprint.*Unsupported fingerprint method"):
        run(tf.fingerprint([1, 2], method="md5"))
    with pytest.raises(TypeError, match="Hypothesis must be a SparseTensor"):
        tf.edit_distance(tf.zeros([2, 2]), tf.zeros([2, 2]))
    with pytest.raises(TypeError, match="Expected `SparseTensor`"):
        tf.sets.set_size([[1, 2]])
    with pytest.raises(TypeError, match="Types don't match"):
        tf.sets.set_union([[1, 2]], tf.constant([[1, 2]], tf.int64))
    with pytest.raises(TypeError, match="Invalid dtype"):
        tf.sets.set_union([[1.0]], [[2.0]])
    with pytest.raises(tf.errors.InvalidArgumentError, match="DenseToDenseSetOperation.*Shape mismatch"):
        run(tf.sets.set_union(tf.placeholder_with_default([[1, 2]], None), [[1], [2]]))
    with pytest.raises(ValueError, match="at most rank 1"):
        tf.repeat([1, 2], [[1, 2]])
    with pytest.raises(ValueError, match="Too many elements provided"):
        tf.make_tensor_proto([1, 2, 3], shape=[2])
    with pytest.raises(TypeError, match="Expected Tensor's shape"):
        tf.make_tensor_proto([1, 2], shape=[1, 2], verify_shape=True)


def test_tensor_scatter_nd_and_repeat_gradients_match_finite_differences():
    base = np.array([[1.0, 5.0], [3.0, -2.0]])
    updates = np.array([[2.0, 5.0]])
    t, u = tf.constant(base), tf.constant(updates)
    out = tf.tensor_scatter_nd_max(t, [[0]], u)
    dt, du = tf.gradients(tf.reduce_sum(out * [[1.0, 2.0], [3.0, 4.0]]), [t, u])
    # ties (5 == 5) split the gradient evenly, as TF's
    np.testing.assert_allclose(run(dt), [[0.0, 1.0], [3.0, 4.0]])
    np.testing.assert_allclose(run(du), [[1.0, 1.0]])
    x = tf.constant(np.arange(6.0).reshape(2, 3))
    dx = tf.gradients(tf.reduce_sum(tf.repeat(x, [3, 1], axis=0) ** 2), x)[0]
    np.testing.assert_allclose(run(tf.convert_to_tensor(dx)), 2 * np.arange(6.0).reshape(2, 3) * [[3], [1]])


def test_make_template_custom_getter_sees_every_variable_request():
    seen = []

    def custom(getter, name, *args, **kwargs):   # TF passes the next getter as `getter=`
        seen.append(name)
        return getter(name, *args, **kwargs)

    t = tf.make_template("g", _linear, custom_getter_=custom, scale=1.0)
    x = tf.zeros([2, 3])
    t(x), t(x)
    assert seen == ["g/w", "g/w"] and [v.name for v in tf.global_variables()] == ["g/w:0"]
