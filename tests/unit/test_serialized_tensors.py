"""tf.io.serialize_tensor / tf.io.parse_tensor against TensorFlow's recorded bytes and results
(fixtures/tf_serialized_tensors.json, written by fixtures/record_tf_serialized_tensors.py with TF
2.21): the same tensor serializes to the same bytes, TF's bytes parse back to the values, every
TensorProto form TF reads gives TF's value, and what TF refuses fails with TF's error class and
message, naming the op."""
from __future__ import annotations

import base64
import json
import os
import sys

import numpy as np
import pytest
from tensorboard.compat.proto import tensor_pb2

import tensorweave as tf
from tensorweave.framework import errors, limits

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "fixtures"))

from record_tf_serialized_tensors import SERIALIZE, values_array  # noqa: E402

with open(os.path.join(HERE, "fixtures", "tf_serialized_tensors.json")) as _f:
    RECORDED = json.load(_f)


def _expected(value: dict) -> np.ndarray:
    if value["dtype"] == "string":
        a = np.empty(len(value["strings"]), dtype=object)
        a[:] = [s.encode("latin-1") for s in value["strings"]]
        return a.reshape(value["shape"])
    dt = np.dtype(value["dtype"]).newbyteorder("<")
    return np.frombuffer(base64.b64decode(value["raw"]), dtype=dt).astype(dt.newbyteorder("=")).reshape(
        value["shape"])


def _same(got, want: np.ndarray) -> None:
    got = np.asarray(got, dtype=object) if isinstance(got, bytes) else np.asarray(got)   # a scalar string
    assert got.shape == want.shape
    if want.dtype == object:
        assert got.dtype == object and got.reshape(-1).tolist() == want.reshape(-1).tolist()
    else:
        assert got.dtype == want.dtype
        assert got.tobytes() == want.tobytes()      # bit for bit: NaN, -0.0, wrapped integers


def _run(fetches, feed_dict=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed_dict)


def test_fixture_covers_the_table():
    assert sorted(RECORDED["serialize"]) == sorted(SERIALIZE)
    assert RECORDED["tensorflow_version"].startswith("2.")


@pytest.mark.parametrize("name", sorted(SERIALIZE))
def test_serialize_gives_tensorflows_bytes(name):
    dtype, shape, values = SERIALIZE[name]
    value = values_array(dtype, shape, values)
    with tf.Graph().as_default():
        const = tf.io.serialize_tensor(tf.constant(value, dtype=getattr(tf, dtype)))
        ph = tf.placeholder(getattr(tf, dtype), None)
        fed = tf.serialize_tensor(ph)
        assert const.shape.as_list() == [] and const.dtype == tf.string and const.op.type == "SerializeTensor"
        got_const, got_fed = _run([const, fed], {ph: value})
    want = base64.b64decode(RECORDED["serialize"][name])
    assert got_const == want
    assert got_fed == want


@pytest.mark.parametrize("name", sorted(SERIALIZE))
def test_parse_of_tensorflows_bytes_gives_the_values_back(name):
    dtype, shape, values = SERIALIZE[name]
    with tf.Graph().as_default():
        out = tf.io.parse_tensor(base64.b64decode(RECORDED["serialize"][name]), getattr(tf, dtype))
        assert out.dtype == getattr(tf, dtype) and out.shape.ndims is None
        got = _run(out)
    _same(got, values_array(dtype, shape, values))


def test_round_trip_through_a_fed_string():
    value = np.arange(24, dtype=np.float64).reshape(2, 3, 4) / 7
    with tf.Graph().as_default():
        s = tf.placeholder(tf.string, [])
        back = tf.parse_tensor(tf.serialize_tensor(tf.parse_tensor(s, tf.float64)), tf.float64)
        serialized = _run(tf.serialize_tensor(value))
        _same(_run(back, {s: serialized}), value)


PARSED = sorted(n for n, case in RECORDED["parse"].items() if "value" in case)
REFUSED = sorted(n for n, case in RECORDED["parse"].items() if "error" in case)


@pytest.mark.parametrize("name", PARSED)
def test_parse_reads_every_form_tensorflow_reads(name):
    case = RECORDED["parse"][name]
    with tf.Graph().as_default():
        got = _run(tf.io.parse_tensor(base64.b64decode(case["serialized"]), getattr(tf, case["out_type"])))
    _same(got, _expected(case["value"]))


@pytest.mark.parametrize("name", REFUSED)
def test_parse_refuses_what_tensorflow_refuses(name):
    case = RECORDED["parse"][name]
    with tf.Graph().as_default():
        out = tf.io.parse_tensor(base64.b64decode(case["serialized"]), getattr(tf, case["out_type"]),
                                 name="parse_me")
        with pytest.raises(getattr(errors, case["error"])) as info:
            _run(out)
    message = str(info.value)
    assert case["message"] in message
    assert "ParseTensor" in message and "parse_me" in message


def test_parse_refuses_a_vector_of_protos():
    case = RECORDED["parse_vector"]
    with tf.Graph().as_default():
        s = _run(tf.serialize_tensor(1.0))
        with pytest.raises(getattr(errors, case["error"])) as info:
            _run(tf.io.parse_tensor([s, s], tf.float32))
    assert case["message"] in str(info.value) and "ParseTensor" in str(info.value)


def _proto(dtype: int, shape: list, **fields) -> bytes:
    p = tensor_pb2.TensorProto(dtype=dtype)
    p.tensor_shape.SetInParent()
    for d in shape:
        p.tensor_shape.dim.add(size=d)
    for key, v in fields.items():
        if key == "tensor_content":
            p.tensor_content = v
        else:
            getattr(p, key).extend(v)
    return p.SerializeToString()


def test_a_huge_shape_with_one_value_fails_before_allocating():
    """TF would fill 2**40 floats from one value; tensorweave refuses past its output limit."""
    serialized = _proto(1, [1 << 20, 1 << 20], float_val=[1.0])
    with tf.Graph().as_default():
        with pytest.raises(errors.ResourceExhaustedError) as info:
            _run(tf.io.parse_tensor(serialized, tf.float32))
    assert limits.OP_OUTPUT_ELEMENTS.name in str(info.value) and "ParseTensor" in str(info.value)


@pytest.mark.parametrize("out_type,fields", [
    ("float32", dict(dtype=1, shape=[1 << 40], tensor_content=b"\x00" * 8)),      # content far too short
    ("string", dict(dtype=7, shape=[1 << 40], tensor_content=b"\x01a")),          # too few string lengths
    ("float32", dict(dtype=1, shape=[2] * 255, float_val=[1.0])),                  # more dims than TF allows
])
def test_a_huge_shape_with_too_little_content_is_refused_without_allocating(out_type, fields):
    fields = dict(fields)
    serialized = _proto(fields.pop("dtype"), fields.pop("shape"), **fields)
    with tf.Graph().as_default():
        with pytest.raises(errors.InvalidArgumentError, match="Cannot parse tensor from proto"):
            _run(tf.io.parse_tensor(serialized, getattr(tf, out_type)))


def test_an_empty_tensor_of_a_huge_shape_parses():
    with tf.Graph().as_default():
        got = _run(tf.io.parse_tensor(_proto(3, [0, 1 << 40]), tf.int32))
    assert got.shape == (0, 1 << 40) and got.dtype == np.int32


def test_shapes_dtypes_and_gradients():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 3])
        s = tf.io.serialize_tensor(x, name="ser")
        p = tf.io.parse_tensor(s, tf.float32, name="par")
        assert s.op.name == "ser" and s.op.get_attr("T") == tf.float32 and s.shape.as_list() == []
        assert p.op.name == "par" and p.op.type == "ParseTensor" and p.op.get_attr("out_type") == tf.float32
        assert p.shape.ndims is None
        assert tf.gradients(tf.reduce_sum(p), x) == [None]
        with pytest.raises(TypeError):
            tf.io.parse_tensor(tf.constant(1.0), tf.float32)
    assert tf.serialize_tensor is tf.io.serialize_tensor and tf.parse_tensor is tf.io.parse_tensor
    assert tf.compat.v1.io.parse_tensor is tf.io.parse_tensor
