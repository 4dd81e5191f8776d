"""DType and TensorShape semantics."""
from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tf


def test_dtype_properties():
    assert tf.float32.as_numpy_dtype is np.float32
    assert tf.float32.is_floating and not tf.int32.is_floating
    assert tf.int64.is_integer and tf.uint8.is_unsigned and not tf.int8.is_unsigned
    assert tf.bool.is_bool
    assert tf.float16.size == 2 and tf.float64.size == 8
    assert tf.int8.min == -128 and tf.uint16.max == 65535
    assert tf.as_dtype("float32") is tf.float32
    assert tf.as_dtype(np.int64) is tf.int64
    assert tf.as_dtype(np.dtype("float16")) is tf.float16
    assert tf.as_dtype(1) is tf.float32 and tf.float32.as_datatype_enum == 1
    assert tf.as_dtype("float32_ref") is tf.float32
    assert tf.as_dtype(bytes) is tf.string
    assert tf.float32.base_dtype is tf.float32
    assert tf.double is tf.float64 and tf.half is tf.float16
    assert repr(tf.int32) == "tf.int32" and tf.int32.name == "int32"
    with pytest.raises(TypeError):
        tf.as_dtype("notatype")


def test_constant_dtype_inference():
    assert tf.constant(1).dtype is tf.int32
    assert tf.constant(1.0).dtype is tf.float32
    assert tf.constant([1, 2.5]).dtype is tf.float32
    assert tf.constant(np.float64(1)).dtype is tf.float64
    assert tf.constant(True).dtype is tf.bool
    assert tf.constant("s").dtype is tf.string
    assert tf.constant(2 ** 40).dtype is tf.int64
    with pytest.raises(TypeError, match="Expected int32, got 1.5"):
        tf.constant(1.5, dtype=tf.int32)
    with pytest.raises(TypeError):
        tf.constant(300, dtype=tf.uint8)


def test_constant_shape_argument():
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(tf.constant(7, shape=[2, 2])), [[7, 7], [7, 7]])
        np.testing.assert_array_equal(sess.run(tf.constant([1, 2, 3, 4], shape=[2, 2])), [[1, 2], [3, 4]])
        np.testing.assert_array_equal(sess.run(tf.constant([1, 2], shape=[3])), [1, 2, 2])
    with pytest.raises(TypeError):
        tf.constant([1, 2, 3], shape=[2])
    with pytest.raises(TypeError):
        tf.constant([1, 2], shape=[2, 1], verify_shape=True)


def test_tensor_shape_semantics():
    s = tf.TensorShape([None, 3])
    assert s.ndims == 2 and s.as_list() == [None, 3]
    assert not s.is_fully_defined()
    assert s.is_compatible_with([5, 3]) and not s.is_compatible_with([5, 4])
    assert s.merge_with([5, None]).as_list() == [5, 3]
    with pytest.raises(ValueError):
        s.merge_with([5, 4])
    u = tf.TensorShape(None)
    assert u.ndims is None and u.is_compatible_with([1, 2, 3])
    with pytest.raises(ValueError):
        u.as_list()
    assert tf.TensorShape([2, 3]).num_elements() == 6
    assert s[1].value == 3 and s[0].value is None
    assert s[1:].as_list() == [3]
    assert tf.TensorShape([1]).concatenate([2]).as_list() == [1, 2]
    assert str(tf.TensorShape([None, 3])) == "(?, 3)"
    assert tf.TensorShape([2, 3]) == [2, 3]
    assert tf.Dimension(None).value is None and (tf.Dimension(2) * 3).value == 6
    with pytest.raises(ValueError):
        s.with_rank(3)


@pytest.mark.usefixtures("graph")
def test_a_fully_known_shape_converts_to_a_tensor_as_tf():
    # (recorded from TF 2.21's tf.compat.v1.convert_to_tensor)
    shape = tf.TensorShape([2, 3])
    t = tf.convert_to_tensor(shape)
    assert t.dtype == tf.int32 and t.op.name == "shape_as_tensor"
    assert tf.convert_to_tensor(shape, dtype=tf.int64).dtype == tf.int64
    assert tf.convert_to_tensor(tf.TensorShape([2 ** 31, 3])).dtype == tf.int64   # (past int32: int64)
    d = tf.convert_to_tensor(tf.Dimension(3))
    assert d.dtype == tf.int32 and d.shape.ndims == 0
    with tf.Session() as sess:
        assert sess.run(t).tolist() == [2, 3] and sess.run(d) == 3
        assert sess.run(tf.reshape(tf.zeros([6]), shape)).shape == (2, 3)
    with pytest.raises(ValueError, match=r"Cannot convert a partially known TensorShape \(\?, 3\) to a Tensor"):
        tf.convert_to_tensor(tf.TensorShape([None, 3]))
    with pytest.raises(ValueError, match="partially known TensorShape <unknown>"):
        tf.convert_to_tensor(tf.TensorShape(None))
    with pytest.raises(ValueError, match=r"Cannot convert unknown Dimension \? to a Tensor"):
        tf.convert_to_tensor(tf.Dimension(None))
    with pytest.raises(TypeError, match="to dtype float32. Allowed dtypes are int32 and int64"):
        tf.convert_to_tensor(shape, dtype=tf.float32)
    with pytest.raises(ValueError, match="to dtype int32; a dimension is too large"):
        tf.convert_to_tensor(tf.TensorShape([2 ** 31, 3]), dtype=tf.int32)
