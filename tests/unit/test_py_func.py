"""tf.py_func, tf.numpy_function and tf.py_function: Python functions run by the process that
built the graph (the op holds a token, never the function), numpy (or eager-style) values in and
out, TF 2.21's errors (fixtures/record_tf_py_func.py recorded classes and messages), gradients
only through gradient_override_map, and kernels that run on whatever thread runs the step
(tf.data's parallel map, while loops)."""
from __future__ import annotations

import gc
import json
import os
import re
import threading

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.ops import script_ops
from unit_helpers import run

HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(HERE, "fixtures", "tf_py_func.json")) as _f:
    RECORDED = json.load(_f)
X = np.array([1, 2, 3], np.float32)


def _raise(e):
    raise e


CASES = {
    "py_func_value_error": lambda x: tf.py_func(lambda a: _raise(ValueError("boom")), [x], tf.float32),
    "py_func_type_error": lambda x: tf.py_func(lambda a: _raise(TypeError("bad type")), [x], tf.float32),
    "py_func_key_error": lambda x: tf.py_func(lambda a: _raise(KeyError("k")), [x], tf.float32),
    "py_func_stop_iteration": lambda x: tf.py_func(lambda a: _raise(StopIteration("done")), [x], tf.float32),
    "py_func_not_implemented": lambda x: tf.py_func(lambda a: _raise(NotImplementedError("ni")), [x], tf.float32),
    "py_func_memory_error": lambda x: tf.py_func(lambda a: _raise(MemoryError("mem")), [x], tf.float32),
    "numpy_function_value_error": lambda x: tf.numpy_function(lambda a: _raise(ValueError("boom")), [x],
                                                              tf.float32),
    "py_function_key_error": lambda x: tf.py_function(lambda a: _raise(KeyError("k")), [x], tf.float32),
    "py_func_wrong_dtype": lambda x: tf.py_func(lambda a: a.astype(np.float64), [x], tf.float32),
    "py_func_python_int_for_int32": lambda x: tf.py_func(lambda a: 3, [x], tf.int32),
    "py_func_wrong_count": lambda x: tf.py_func(lambda a: (a, a), [x], tf.float32),
    "py_func_none_for_one": lambda x: tf.py_func(lambda a: None, [x], tf.float32),
    "py_func_list_for_two": lambda x: tf.py_func(lambda a: [a, a * 2], [x], [tf.float32, tf.float32]),
    "py_func_python_int_for_int64": lambda x: tf.py_func(lambda a: 3, [x], tf.int64),
    "py_func_bytes": lambda x: tf.py_func(lambda a: b"hi", [x], tf.string),
    "py_function_python_int": lambda x: tf.py_function(lambda a: 3, [x], tf.int64),
    "py_function_numpy_of_eager": lambda x: tf.py_function(lambda a: a.numpy() * 2, [x], tf.float32),
}


def _normalised(message: str) -> list:
    lines = [re.sub(r"pyfunc_\d+", "pyfunc_N", line) for line in message.splitlines() if line.strip()]
    return [line for line in lines if "[[" not in line and not line.startswith("Hint:")]  # TF's OOM hint


@pytest.mark.parametrize("case", sorted(CASES))
def test_results_and_errors_are_tfs(case):
    want = RECORDED[case]
    x = tf.placeholder(tf.float32, [3])
    y = CASES[case](x)
    if "error" not in want:
        got = run(y, {x: X})
        if isinstance(got, bytes):
            assert got.decode() == want["value"]
        else:
            assert np.asarray(got).tolist() == want["value"]
            assert [str(np.asarray(v).dtype) for v in (got if isinstance(got, list) else [got])] == want["dtype"]
        return
    with pytest.raises(tf.errors.OpError) as info:
        run(y, {x: X})
    assert type(info.value).__name__ == want["error"]
    message = info.value.message
    assert y.op.name in message  # names the op
    got, recorded = _normalised(message), _normalised("\n".join(want["lines"]))
    if recorded[1:2] == ["Traceback (most recent call last):"]:
        # "Type: message", the traceback (ours: the function's frames), "Type: message" again
        assert got[0] == recorded[0] and got[1] == recorded[1] and got[-1] == recorded[-1] == recorded[0]
        assert any("_raise" in line for line in got)
    else:
        assert recorded[0] in got[0]


def test_py_func_takes_and_returns_numpy_values_of_any_dtype():
    s = tf.placeholder(tf.string, [2])
    i = tf.placeholder(tf.int64, [])
    joined, doubled = tf.py_func(lambda a, n: (np.array([b"-".join(a)] * int(n), dtype=object), np.int64(n * 2)),
                                 [s, i], [tf.string, tf.int64])
    assert joined.dtype == tf.string and doubled.dtype == tf.int64
    assert joined.shape.ndims is None and doubled.shape.ndims is None  # unknown, as TF's
    out = run([joined, doubled], {s: [b"a", b"bc"], i: 3})
    assert out[0].tolist() == [b"a-bc"] * 3 and out[1] == 6


def test_stateless_and_output_free_py_funcs():
    calls = []
    y = tf.py_func(lambda a: a + 1, [tf.constant(X)], tf.float32, stateful=False)
    op = tf.py_func(lambda a: calls.append(a.tolist()), [tf.constant(X)], [])
    assert y.op.type == "PyFuncStateless" and isinstance(op, tf.Operation) and op.type == "PyFunc"
    assert tf.numpy_function(np.sin, [tf.constant(X)], tf.float32).op.type == "PyFunc"
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(y), X + 1)
        sess.run(op)
    assert calls == [[1.0, 2.0, 3.0]]


def test_py_function_sees_eager_style_values():
    seen = []

    def f(a, b):
        seen.append((type(a).__name__, a.dtype, a.shape.as_list(), b.numpy().tolist()))
        return a * 2 + 1.5, int(b[0]) + 1

    y, n = tf.py_function(f, [tf.constant(X), tf.constant([4, 5, 6])], [tf.float32, tf.int32])
    assert y.op.type == "EagerPyFunc" and y.op.get_attr("is_async") is False
    out = run([y, n])
    np.testing.assert_array_equal(out[0], X * 2 + 1.5)
    assert out[1] == 5 and out[1].dtype == np.int32
    assert seen == [("EagerTensor", tf.float32, [3], [4, 5, 6])]


def test_the_op_holds_a_token_and_the_function_lives_in_this_process_only():
    g = tf.Graph()
    with g.as_default():
        y = tf.py_func(lambda a: a, [tf.constant(X)], tf.float32)
        token = y.op.get_attr("token")
        assert re.fullmatch(rb"pyfunc_\d+", token.encode() if isinstance(token, str) else token)
        node = [n for n in g.as_graph_def().node if n.op == "PyFunc"][0]
        assert set(node.attr) == {"token", "Tin", "Tout"}
    assert token in script_ops._CALLBACKS
    del g, y
    gc.collect()
    assert token not in script_ops._CALLBACKS  # dropped with its graph, as TF's


def test_a_token_no_function_answers_fails_as_tf():
    y = tf.py_func(lambda a: a, [tf.constant(X)], tf.float32)
    script_ops._CALLBACKS.pop(y.op.get_attr("token"))
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"ValueError: callback pyfunc_\d+ is not found"):
        run(y)


def test_the_function_cannot_change_values_other_ops_read():
    c = tf.constant(X)

    def scribble(a):
        a[:] = 0
        return a

    y = tf.py_func(scribble, [c], tf.float32)
    out = run([y, c * 1])
    assert out[0].tolist() == [0, 0, 0] and out[1].tolist() == [1, 2, 3]


def test_no_gradient_unless_overridden():
    x = tf.constant([1.0, 2.0, 3.0])
    y = tf.py_func(lambda a: a ** 3, [x], tf.float32)
    assert tf.gradients(y, x) == [None]

    @tf.RegisterGradient("TestPyFuncCube")
    def _cube_grad(op, g):
        return [g * tf.py_func(lambda a: 3 * a ** 2, [op.inputs[0]], tf.float32)]

    with tf.get_default_graph().gradient_override_map({"PyFunc": "TestPyFuncCube"}):
        z = tf.py_func(lambda a: a ** 3, [x], tf.float32)
    z.set_shape([3])
    grad, = tf.gradients(tf.reduce_sum(z * [1.0, 2.0, 0.5]), x)
    np.testing.assert_allclose(run(grad), 3 * np.array([1, 4, 9]) * [1.0, 2.0, 0.5])


def test_py_function_has_no_graph_gradient():
    x = tf.constant(X)
    with pytest.raises(LookupError, match="EagerPyFunc"):
        tf.gradients(tf.py_function(lambda a: a, [x], tf.float32), x)


def test_runs_in_tf_data_parallel_maps_and_while_loops():
    ds = tf.data.Dataset.range(20).map(lambda i: tf.py_func(lambda v: v * v, [i], tf.int64), num_parallel_calls=4)
    nxt = ds.make_one_shot_iterator().get_next()
    with tf.Session() as sess:
        got = sorted(int(sess.run(nxt)) for _ in range(20))
    assert got == [i * i for i in range(20)]

    def body(i, acc):
        step = tf.py_func(lambda a, b: np.float32(a + b), [i, acc], tf.float32)
        step.set_shape([])
        return i + 1, step

    _, total = tf.while_loop(lambda i, acc: i < 5, body, [tf.constant(0), tf.constant(0.0)])
    gc.collect()  # the body's function lives as long as the graph holding the loop
    assert run(total) == 10.0


def test_bad_arguments_are_refused_when_building():
    with pytest.raises(TypeError, match="callable"):
        tf.py_func(3, [], tf.float32)
    with pytest.raises(TypeError):
        tf.py_func(lambda: 0, [], "not a dtype")


def test_a_function_may_run_the_session_that_runs_it_and_steps_may_overlap():
    c = tf.constant(5.0)
    sessions = []
    y = tf.py_func(lambda a: np.float32(a + sessions[0].run(c)), [tf.constant(1.0)], tf.float32)
    with tf.Session() as sess:
        sessions.append(sess)
        assert sess.run(y) == 6.0  # a nested step from inside the kernel does not deadlock
        results = []
        threads = [threading.Thread(target=lambda: results.append(sess.run(y))) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(300)  # a safety net against a deadlock, not a timing assumption
        assert not any(t.is_alive() for t in threads)
    assert results == [6.0] * 4
