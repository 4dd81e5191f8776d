"""tf.Print, tf.print, tf.Assert and the tf.assert_* checks (formats recorded from TF)."""
from __future__ import annotations

import logging
import sys

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.framework.graph_def import NodeDef, graph_to_graph_def
from tensorweave.ops.debugging.printing import summarize_value, summarize_value_v2
from tensorweave.runtime.executor import KernelContext, Plan
from tensorweave.runtime.resources import ResourceManager


pytestmark = pytest.mark.usefixtures("graph")


def test_summarize_value_matches_tf1():
    # Strings recorded from TF's Print kernel (Tensor::SummarizeValue).
    assert summarize_value(np.array([1, 2, 3, 4, 5], np.int32)) == "1 2 3..."
    assert summarize_value(np.array([[1.5, 2, 3], [4, 5, 6]], np.float32)) == "[1.5 2 3]..."
    assert summarize_value(np.arange(24).reshape(2, 3, 4)) == "[[0 1 2...]]..."
    assert summarize_value(np.array([[1.5, 2, 3], [4, 5, 6]], np.float32), 10) == "[1.5 2 3][4 5 6]"
    assert summarize_value(np.array([True, False])) == "1 0"
    assert summarize_value(np.array([], np.float32)) == ""
    assert summarize_value(np.float32(1 / 3)) == "0.333333343"
    assert summarize_value(np.float64(0.1)) == "0.1"
    assert summarize_value(np.array(b"hi", dtype=object)) == "hi"


def test_summarize_value_v2_matches_tf_print():
    assert summarize_value_v2(np.arange(10)) == "[0 1 2 ... 7 8 9]"
    assert summarize_value_v2(np.array([[1.5, 2, 3], [4, 5, 6]], np.float32)) == "[[1.5 2 3]\n [4 5 6]]"
    assert summarize_value_v2(np.arange(24).reshape(2, 3, 4), 10) == (
        "[[[0 1 2 3]\n  [4 5 6 7]\n  [8 9 10 11]]\n\n [[12 13 14 15]\n  [16 17 18 19]\n  [20 21 22 23]]]")
    assert summarize_value_v2(np.array(b"hi", dtype=object)) == '"hi"'


def test_print_is_identity_and_prints_to_stderr(capsys):
    x = tf.constant([1, 2, 3, 4, 5])
    m = tf.constant([[1.5, 2, 3], [4, 5, 6]])
    p = tf.Print(x, [x, m, tf.constant("hi"), tf.constant(7)], "msg: ")
    assert p.op.type == "Print" and p.dtype == tf.int32 and p.shape.as_list() == [5]
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(p), [1, 2, 3, 4, 5])
    err = capsys.readouterr().err
    assert "msg: [1 2 3...][[1.5 2 3]...][hi][7]\n" in err


def test_print_first_n_and_summarize(capsys):
    x = tf.constant([1, 2, 3, 4, 5])
    p = tf.Print(x, [x], message="fn ", first_n=2, summarize=10)
    with tf.Session() as sess:
        for _ in range(4):
            sess.run(p)
    assert capsys.readouterr().err.count("fn [1 2 3 4 5]\n") == 2


def test_print_gradient_passes_through():
    x = tf.placeholder(tf.float32, [])
    y = tf.Print(x * x, [x]) * 3.0
    (g,) = tf.gradients(y, [x])
    with tf.Session() as sess:
        assert sess.run(g, {x: 2.0}) == pytest.approx(12.0)


def test_tf_print_formats_like_tf(capsys):
    x = tf.constant([1, 2, 3, 4, 5])
    m = tf.constant([[1.5, 2, 3], [4, 5, 6]])
    op = tf.print("a", x, m, {"k": tf.constant(7)}, tf.constant(2.5))
    assert isinstance(op, tf.Operation) and op.outputs == []
    op2 = tf.print(tf.range(10), sep="|", end="END\n", output_stream=sys.stdout)
    op3 = tf.print("x", "y", sep="|")
    with tf.Session() as sess:
        sess.run([op, op2, op3])
    out = capsys.readouterr()
    assert "a [1 2 3 4 5] [[1.5 2 3]\n [4 5 6]] {'k': 7} 2.5\n" in out.err
    assert "x|y\n" in out.err
    assert out.out == "[0 1 2 ... 7 8 9]END\n"


def test_assert_raises_naming_the_op():
    x = tf.constant([1, 2, 3, 4, 5])
    ok = tf.Assert(tf.constant(True), [x])
    bad = tf.Assert(tf.less(tf.constant(3), 2), [x, "str data", tf.constant([[1.5, 2, 3], [4, 5, 6]])],
                    name="myassert")
    assert bad.name == "myassert/Assert" and bad.type == "Assert"
    with tf.Session() as sess:
        assert sess.run(ok) is None
        with pytest.raises(tf.errors.InvalidArgumentError) as e:
            sess.run(bad)
    assert "assertion failed: [1 2 3...] [str data] [[1.5 2 3]...]" in e.value.message
    assert "myassert/Assert" in e.value.message


def test_assert_guards_a_value_via_control_dependencies():
    x = tf.placeholder(tf.float32, [None])
    with tf.control_dependencies([tf.Assert(tf.reduce_all(x > 0), [x], summarize=2, name="positive")]):
        y = tf.identity(x)
    with tf.Session() as sess:
        np.testing.assert_allclose(sess.run(y, {x: [1.0, 2.0]}), [1, 2])
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"assertion failed: \[1 -2\.\.\.\]") as e:
            sess.run(y, {x: [1.0, -2.0, 3.0]})
    assert "positive/Assert" in str(e.value)


def test_assert_build_errors():
    with pytest.raises(TypeError, match="'condition'.*bool.*'intassert'"):
        tf.Assert(tf.constant(1), ["x"], name="intassert")
    with pytest.raises(ValueError, match="rank 0 but is rank 1.*rankassert"):
        tf.Assert(tf.constant([True]), ["x"], name="rankassert")


def test_assert_equal_and_friends():
    p = tf.placeholder(tf.int32, [2])
    checks = {
        "equal": tf.assert_equal(p, tf.constant([1, 3]), message="MSG"),
        "less": tf.assert_less(p, 2),
        "positive": tf.assert_positive(p),
        "non_negative": tf.assert_non_negative(p),
        "rank": tf.assert_rank(tf.placeholder(tf.int32), 2),
    }
    with tf.Session() as sess:
        sess.run(checks["equal"], {p: [1, 3]})
        sess.run(checks["positive"], {p: [1, 3]})
        with pytest.raises(tf.errors.InvalidArgumentError) as e:
            sess.run(checks["equal"], {p: [1, 2]})
        assert ("assertion failed: [MSG] [Condition x == y did not hold element-wise:] [x (Placeholder:0) = ] "
                "[1 2] [y (Const:0) = ] [1 3]") in e.value.message
        assert "assert_equal/Assert" in e.value.message
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"(?s)Condition x < y did not hold.*assert_less/Assert"):
            sess.run(checks["less"], {p: [3, -1]})
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"\[\] \[Condition x > 0 did not hold element-wise:\] \[x \(Placeholder:0\) = \] "
                                 r"\[3 -1\]"):
            sess.run(checks["positive"], {p: [3, -1]})
        with pytest.raises(tf.errors.InvalidArgumentError, match="x >= 0"):
            sess.run(checks["non_negative"], {p: [3, -1]})
        with pytest.raises(tf.errors.InvalidArgumentError, match="(?s)must have rank.*assert_rank/Assert"):
            sess.run(checks["rank"], {"Placeholder_1:0": [3, -1]})


def test_static_checks_fail_at_build_time():
    with pytest.raises(tf.errors.InvalidArgumentError, match="MSG\nCondition x == y did not hold"):
        tf.assert_equal(1, 2, message="MSG")
    with pytest.raises(ValueError, match=r"Tensor Const.*:0 must have rank 2.  Received rank 1, shape \(5,\)"):
        tf.assert_rank(tf.constant([1, 2, 3, 4, 5]), 2)
    assert tf.assert_rank(tf.constant([1, 2]), 1).type == "NoOp"


def test_check_numerics_and_verify_tensor_all_finite():
    ok = tf.check_numerics(tf.constant([1., 2.]), "fine")
    bad = tf.check_numerics(tf.constant([1., np.inf]), "bad value")
    nan = tf.verify_tensor_all_finite(tf.constant([1., np.nan]), "has nan")
    assert nan.op.name == "VerifyFinite/CheckNumerics" and ok.shape.as_list() == [2]
    assert tf.debugging.check_numerics is tf.check_numerics
    with tf.Session() as s:
        np.testing.assert_array_equal(s.run(ok), [1., 2.])
        with pytest.raises(tf.errors.InvalidArgumentError, match="bad value : Tensor had Inf values"):
            s.run(bad)
        with pytest.raises(tf.errors.InvalidArgumentError, match="(?s)has nan : Tensor had NaN values.*CheckNumerics"):
            s.run(nan)
    with pytest.raises(TypeError, match="CheckNumerics"):
        tf.check_numerics(tf.constant([1]), "ints")
    x = tf.constant([1., 2.])
    g, = tf.gradients(tf.check_numerics(x * x, "m"), x)
    with tf.Session() as s:
        np.testing.assert_array_equal(s.run(g), [2., 4.])


def test_static_type_and_rank_checks():
    x = tf.constant([[1., 2.]])
    assert tf.assert_rank_at_least(x, 1).type == "NoOp"
    with pytest.raises(ValueError, match="must have rank at least 3"):
        tf.assert_rank_at_least(x, 3)
    p = tf.placeholder(tf.float32)
    check = tf.assert_rank_at_least(p, 2)
    with tf.Session() as s:
        with pytest.raises(tf.errors.InvalidArgumentError, match="must have rank at least"):
            s.run(check, {p: [1.]})
    assert tf.assert_scalar(tf.constant(1.)).shape.ndims == 0
    with pytest.raises(ValueError, match="Expected scalar"):
        tf.assert_scalar(x)
    with pytest.raises(TypeError, match="must be of type"):
        tf.assert_type(x, tf.int32)
    with pytest.raises(TypeError, match="integer"):
        tf.assert_integer(x)
    assert tf.assert_integer(tf.constant(1)).type == "NoOp"


class _Records(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.records: list = []

    def emit(self, record):
        self.records.append(record)


def test_tf_print_to_logging_levels_and_no_other_stream():
    ops = [tf.print("to warning", output_stream=tf.logging.warning),
           tf.print("to error", output_stream=logging.error),
           tf.print("to info", output_stream=tf.compat.v1.logging.info)]
    logger, seen = logging.getLogger("tensorflow"), _Records()
    level = logger.level
    logger.addHandler(seen)
    logger.setLevel(logging.INFO)
    try:
        with tf.Session() as sess:
            sess.run(ops)
    finally:
        logger.removeHandler(seen)
        logger.setLevel(level)
    got = {(r.levelname, r.getMessage()) for r in seen.records}
    assert {("WARNING", "to warning"), ("ERROR", "to error"), ("INFO", "to info")} <= got
    for bad in (logging.getLogger("tensorflow").setLevel, print, "log(setLevel)", "file:///tmp/x"):
        with pytest.raises(ValueError, match="Unsupported output stream"):
            tf.print("x", output_stream=bad)


def test_a_print_v2_node_naming_another_stream_is_refused_before_it_runs():
    # (a graph from the wire names any attr it likes: "log(setLevel)" once called
    # logger.setLevel(text) on the server, silencing its warnings)
    g = tf.Graph()
    with g.as_default():
        tf.print("hi", name="p")
    before = logging.getLogger("tensorflow").level
    for stream in ("log(setLevel)", "log(disabled)", "stdin", 7):
        nodes = list(graph_to_graph_def(g).node)
        nodes = [NodeDef(n.name, n.op, n.input, n.device, dict(n.attr, output_stream=stream)) if n.name == "p"
                 else n for n in nodes]
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"p \(PrintV2\): output_stream .* is not one of"):
            Plan(nodes, [], [], ["p"], KernelContext(resources=ResourceManager())).run()
    assert logging.getLogger("tensorflow").level == before
