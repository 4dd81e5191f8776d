"""String ops and record decoders against TensorFlow's recorded results (fixtures/tf_strings.json,
recorded by fixtures/record_tf_strings.py), plus their error cases."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest
from unit_helpers import run

import tensorweave as tf

pytestmark = pytest.mark.usefixtures("graph")

with open(os.path.join(os.path.dirname(__file__), "fixtures", "tf_strings.json")) as _f:
    CASES = json.load(_f)


def _bytes(x):
    if isinstance(x, str):
        return x.encode("latin-1")
    if isinstance(x, list):
        return [_bytes(v) for v in x]
    return x


def _compare(got, want, where):
    if "sparse" in want:
        for part, w in zip((got.indices, got.values, got.dense_shape), want["sparse"]):
            _compare(part, w, where)
        return
    if "list" in want:
        assert len(got) == len(want["list"]), where
        for g, w in zip(got, want["list"]):
            _compare(g, w, where)
        return
    got = np.asarray(got)
    assert list(got.shape) == want["shape"], where
    if want["dtype"] == "string":
        assert [bytes(x) for x in got.reshape(-1)] == [v.encode("latin-1") for v in want["value"]], where
    else:
        assert got.dtype.name == want["dtype"], where
        np.testing.assert_array_equal(got.reshape(-1), np.array(want["value"], dtype=want["dtype"]), err_msg=where)


@pytest.mark.parametrize("case", CASES, ids=[f"{i}-{c['fn']}" for i, c in enumerate(CASES)])
def test_matches_tensorflow(case):
    fn = tf
    for part in case["fn"].split("."):
        fn = getattr(fn, part)
    args = [_bytes(a) for a in case["args"]]
    kwargs = dict(case["kwargs"])
    if case["fn"] == "decode_raw":
        args[1] = getattr(tf, case["args"][1])
    if "out_type" in kwargs:
        kwargs["out_type"] = getattr(tf, kwargs["out_type"])
    if case["fn"] == "strings.format":
        args = [case["args"][0], [tf.constant(v) for v in case["args"][1]]]
    _compare(run(fn(*args, **kwargs)), case["result"], case["fn"])


def test_feeding_and_fetching_strings_as_bytes():
    x = tf.placeholder(tf.string, [None])
    y = tf.strings.join([x, "!"])
    out = run(y, {x: ["a", b"b\xff"]})
    assert [bytes(v) for v in out] == [b"a!", b"b\xff!"]
    assert run(tf.strings.join(["a", "b"])) == b"ab"


@pytest.mark.parametrize("build, message", [
    (lambda: tf.substr(["hi"], 3, 1), "pos 3 out of range"),
    (lambda: tf.decode_raw(["abc", "ab"], tf.uint8), "same size"),
    (lambda: tf.decode_raw(["abc"], tf.int16), "not a multiple of 2"),
    (lambda: tf.string_to_number(["1x"]), "could not correctly convert string: 1x"),
    (lambda: tf.decode_csv(["1,2"], [[0]]), "Expect 1 fields but have 2 in record 0"),
    (lambda: tf.decode_csv([",2"], [tf.constant([], tf.int32), [0]]), "Field 0 is required"),
    (lambda: tf.decode_csv(["a,2"], [[0], [0]]), "Field 0 in record 0 is not a valid int32"),
    (lambda: tf.decode_base64(["a"]), "base64"),
    (lambda: tf.regex_replace(["a"], "(", "x"), "Invalid pattern"),
    (lambda: tf.string_split([["a"]]), "Shape must be rank 1"),
    (lambda: tf.strings.unicode_transcode(["a\xffb".encode("latin-1")], "UTF-8", "UTF-8", errors="strict"),
     "Invalid formatting"),
])
def test_bad_input_names_the_op(build, message):
    try:
        t = build()
    except ValueError as e:   # shape errors are found while building, as in TF
        assert message in str(e)
        return
    t = t[0] if isinstance(t, list) else t
    with pytest.raises(tf.errors.InvalidArgumentError, match=message) as info:
        run(t)
    assert t.op.name in str(info.value)


def test_build_time_argument_checks():
    with pytest.raises(ValueError, match="Fill argument"):
        tf.as_string([1], fill="x")
    with pytest.raises(ValueError, match="placeholder"):
        tf.strings.format("{} {}", [tf.constant(1)])
    with pytest.raises(TypeError, match="DataType int32 not in list of allowed values: string"):
        tf.strings.length(tf.constant([1]))
    with pytest.raises(TypeError, match="Expected string"):
        tf.strings.length([1])
