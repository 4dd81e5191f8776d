"""Elementwise math ops, casts, comparisons and the Tensor operator overloads against numpy."""
from __future__ import annotations

import ctypes
import ctypes.util

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.framework import denormals
from tensorweave.ops import onednn

from unit_helpers import run_all


RNG = np.random.RandomState(0)
A = RNG.uniform(-2, 2, (2, 3)).astype(np.float32)
B = RNG.uniform(0.5, 2, (3,)).astype(np.float32)


# -- binary arithmetic -------------------------------------------------------------------------
@pytest.mark.parametrize("fn,ref,op_type", [
    (tf.add, np.add, "Add"), (tf.subtract, np.subtract, "Sub"), (tf.multiply, np.multiply, "Mul"),
    (tf.realdiv, np.true_divide, "RealDiv"), (tf.maximum, np.maximum, "Maximum"),
    (tf.minimum, np.minimum, "Minimum"), (tf.pow, lambda x, y: np.power(np.abs(x), y), "Pow"),
    (tf.squared_difference, lambda x, y: (x - y) ** 2, "SquaredDifference"),
    (tf.floordiv, lambda x, y: np.floor(x / y), "FloorDiv"), (tf.floormod, np.mod, "FloorMod"),
    (tf.truncatemod, np.fmod, "TruncateMod"),
])
def test_binary_broadcasting(graph, fn, ref, op_type):
    a = np.abs(A) if op_type == "Pow" else A
    x = tf.placeholder(tf.float32, [None, 3])
    y = tf.constant(B)
    z = fn(x, y)
    assert z.op.type == op_type and z.op.name == {"FloorDiv": "floordiv"}.get(op_type, op_type)
    assert z.dtype == tf.float32 and z.shape.as_list() == [None, 3]
    out = run_all(z, feed={x: a})
    assert out.dtype == np.float32 and out.shape == (2, 3)
    np.testing.assert_allclose(out, ref(a, B).astype(np.float32), rtol=1e-6)


def test_static_broadcast_shapes(graph):
    x = tf.placeholder(tf.float32, [None, 1, 3])
    y = tf.placeholder(tf.float32, [4, 1])
    assert (x * y).shape.as_list() == [None, 4, 3]
    assert (x + tf.placeholder(tf.float32)).shape.ndims is None


def test_broadcast_mismatch_is_value_error_naming_op(graph):
    with pytest.raises(ValueError, match=r"Dimensions must be equal, but are 3 and 4.*'Add'"):
        tf.add(tf.ones([2, 3]), tf.ones([2, 4]))


def test_runtime_broadcast_mismatch(graph):
    x = tf.placeholder(tf.float32, [None])
    z = tf.multiply(x, tf.ones([3]), name="prod")
    with pytest.raises(tf.errors.InvalidArgumentError, match="prod"):
        run_all(z, feed={x: np.ones(4, np.float32)})


def test_truediv_dtypes(graph):
    for src, dst in [(tf.int8, np.float32), (tf.int16, np.float32), (tf.uint8, np.float32),
                     (tf.int32, np.float64), (tf.int64, np.float64), (tf.float32, np.float32)]:
        x = tf.constant([7, -7], dtype=src) if src != tf.uint8 else tf.constant([7, 9], dtype=src)
        z = x / tf.constant([2, 2], dtype=src)
        assert z.dtype.as_numpy_dtype == dst and z.op.type == "RealDiv"
        out = run_all(z)
        assert out.dtype == dst
        np.testing.assert_allclose(out, run_all(x).astype(np.float64) / 2)
    assert [op.name for op in graph.get_operations() if op.name.startswith("truediv/")][:2] == \
        ["truediv/Cast", "truediv/Cast_1"]


def test_divide_and_div(graph):
    x, y = tf.constant([7, -7]), tf.constant([2, 2])
    assert tf.divide(x, y).op.name == "truediv"
    d = tf.div(x, y)
    assert d.op.type == "FloorDiv" and d.op.name == "div" and d.dtype == tf.int32
    f = tf.div(tf.constant(7.0), 2.0)
    assert f.op.type == "RealDiv"
    np.testing.assert_array_equal(run_all(d), [3, -4])
    assert run_all(f) == np.float32(3.5)


def test_integer_floor_trunc_div_mod(graph):
    x, y = tf.constant([7, -7, 7, -7]), tf.constant([2, 2, -2, -2])
    out = run_all(x // y, x % y, tf.truncatediv(x, y), tf.truncatemod(x, y), tf.floor_div(x, y), tf.mod(x, y))
    xn, yn = np.array([7, -7, 7, -7]), np.array([2, 2, -2, -2])
    np.testing.assert_array_equal(out[0], xn // yn)
    np.testing.assert_array_equal(out[1], xn % yn)
    np.testing.assert_array_equal(out[2], [3, -3, -3, 3])
    np.testing.assert_array_equal(out[3], np.fmod(xn, yn))
    assert all(o.dtype == np.int32 for o in out)


@pytest.mark.parametrize("make", [lambda x, y: x // y, lambda x, y: x % y, lambda x, y: tf.truncatediv(x, y),
                                  lambda x, y: tf.div(x, y), lambda x, y: tf.truncatemod(x, y)])
def test_integer_division_by_zero(graph, make):
    x = tf.constant([3, 4])
    y = tf.placeholder(tf.int32, [2])
    z = make(x, y)
    with pytest.raises(tf.errors.InvalidArgumentError, match="Integer division by zero") as e:
        run_all(z, feed={y: np.array([1, 0], np.int32)})
    assert z.op.name in str(e.value)


def test_float_division_by_zero_is_ieee(graph):
    x = tf.constant([1.0, -1.0, 0.0])
    out = run_all(x / 0.0, x // 0.0, tf.floormod(x, 0.0))
    np.testing.assert_array_equal(out[0], [np.inf, -np.inf, np.nan])
    np.testing.assert_array_equal(out[1], [np.inf, -np.inf, np.nan])
    assert np.isnan(out[2]).all()


def test_div_no_nan(graph):
    out = run_all(tf.div_no_nan(tf.constant([1.0, 2.0]), tf.constant([0.0, 4.0])))
    np.testing.assert_array_equal(out, np.float32([0, 0.5]))


def test_pow_ints_and_negative_exponent(graph):
    assert run_all(tf.pow(2, 10)) == 1024
    z = tf.pow(tf.constant(2), tf.constant(-1), name="p")
    with pytest.raises(tf.errors.InvalidArgumentError, match="negative integer powers.*|p"):
        run_all(z)


def test_scalar_mul_and_indexed_slices(graph):
    x = tf.constant([1.0, 2.0])
    np.testing.assert_array_equal(run_all(tf.scalar_mul(3, x)), [3.0, 6.0])
    s = tf.IndexedSlices(tf.constant([[1.0, 2.0]]), tf.constant([1]), tf.constant([3, 2]))
    r = tf.scalar_mul(2.0, s)
    assert isinstance(r, tf.IndexedSlices)
    np.testing.assert_array_equal(run_all(r.values), [[2.0, 4.0]])
    with pytest.raises(ValueError, match="Only scalar multiply"):
        tf.scalar_mul(tf.constant([1.0, 2.0]), x)


def test_dtype_mismatch_and_allowed_types(graph):
    with pytest.raises(TypeError, match="Add"):
        tf.add(tf.constant(1), tf.constant(1.0))
    with pytest.raises(TypeError, match="int32.*Sqrt|Sqrt.*int32|DataType int32"):
        tf.sqrt(tf.constant(4))
    with pytest.raises(TypeError, match="LogicalAnd"):
        tf.logical_and(tf.constant(1), tf.constant(1))
    with pytest.raises(TypeError):
        tf.constant(1) + 2.5


# -- unary -------------------------------------------------------------------------------------
X = np.array([[-1.7, -0.5, 0.0], [0.3, 0.5, 2.5]], dtype=np.float32)
P = np.array([[0.2, 0.5, 1.0], [1.5, 2.0, 3.0]], dtype=np.float32)


@pytest.mark.parametrize("name,ref,data", [
    ("abs", np.abs, X), ("negative", np.negative, X), ("sign", np.sign, X), ("square", np.square, X),
    ("sqrt", np.sqrt, P), ("rsqrt", lambda v: 1 / np.sqrt(v), P), ("reciprocal", lambda v: 1 / v, P),
    ("exp", np.exp, X), ("expm1", np.expm1, X), ("log", np.log, P), ("log1p", np.log1p, P),
    ("sin", np.sin, X), ("cos", np.cos, X), ("tan", np.tan, X), ("tanh", np.tanh, X),
    ("sigmoid", lambda v: 1 / (1 + np.exp(-v)), X), ("floor", np.floor, X), ("ceil", np.ceil, X),
    ("round", np.round, X), ("rint", np.rint, X), ("asin", np.arcsin, X / 3), ("acos", np.arccos, X / 3),
    ("atan", np.arctan, X), ("sinh", np.sinh, X), ("cosh", np.cosh, X),
    ("erf", lambda v: np.vectorize(__import__("math").erf)(v), X),
    ("log_sigmoid", lambda v: -np.log1p(np.exp(-v)), X),
])
def test_unary(graph, name, ref, data):
    x = tf.placeholder(tf.float32, [None, 3])
    z = getattr(tf, name)(x)
    assert z.dtype == tf.float32 and z.shape.as_list() == [None, 3]
    out = run_all(z, feed={x: data})
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, ref(data.astype(np.float64)).astype(np.float32), rtol=2e-6, atol=1e-7)


def test_unary_names_and_math_namespace(graph):
    x = tf.constant([1.0])
    assert tf.exp(x).op.name == "Exp" and tf.exp(x).op.name == "Exp_1"
    assert tf.math.log(x).op.type == "Log"
    assert tf.abs(x).op.name == "Abs" and tf.negative(x).op.type == "Neg"
    with tf.name_scope("scope"):
        assert tf.sigmoid(x, name="s").op.name == "scope/s"


def test_round_half_to_even_and_ints(graph):
    np.testing.assert_array_equal(run_all(tf.round(tf.constant([0.5, 1.5, 2.5, -0.5, -1.5]))), [0, 2, 2, -0, -2])
    i = tf.constant([3, -4])
    assert tf.round(i) is i
    np.testing.assert_array_equal(run_all(tf.abs(i), tf.sign(i), tf.square(i))[0], [3, 4])


def test_sigmoid_extremes_and_nan_sign(graph):
    out = run_all(tf.sigmoid(tf.constant([-1000.0, 1000.0])), tf.sign(tf.constant([np.nan, -0.0, 3.0])))
    np.testing.assert_array_equal(out[0], [0.0, 1.0])
    assert np.isnan(out[1][0]) and out[1][1] == 0 and out[1][2] == 1


def _sigmoid_cases(dtype):
    """(values, the two-branch formula's sigmoid of them): signs mixed, both extremes, zeros of
    either sign, infinities, NaNs of either sign, denormals and raw bit patterns."""
    rng = np.random.RandomState(1)
    width = np.dtype(dtype).itemsize * 8
    raw = rng.randint(0, 2 ** 62, size=4096, dtype=np.int64).astype(np.uint64) >> np.uint64(62 - width) \
        if width < 64 else rng.randint(-2 ** 63, 2 ** 63 - 1, size=4096, dtype=np.int64)
    special = np.array([np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-45, -1e-45, 88, -88, -87, -86.9, 104, -104,
                        750, -750], np.float64)
    with np.errstate(all="ignore"):
        values = np.concatenate([(rng.randn(3000) * s) for s in (0.1, 3, 30, 1000)] + [special]).astype(dtype)
        values = np.concatenate([values, raw.astype(f"u{width // 8}").view(dtype)]).reshape(-1, 2)
    with np.errstate(all="ignore"), denormals.computed_as(True):   # (as kernels compute: denormals flushed)
        e = np.exp(-np.abs(values))
        expected = np.where(values >= 0, 1 / (1 + e), e / (1 + e)).astype(dtype)
    return values, expected


def _sigmoid(values):
    x = tf.placeholder(tf.as_dtype(values.dtype), [None, 2])
    with tf.Session() as sess, np.errstate(all="ignore"):
        return sess.run(tf.sigmoid(x), {x: values})


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_sigmoid_bits_are_the_two_branch_formula(graph, dtype, monkeypatch):
    """Sigmoid's numpy kernel chooses its numerator without a branch; its bits must be those of
    the plain two-branch formula for every input (float32: the kernel of arrays too small for
    oneDNN's, asked of every array here)."""
    monkeypatch.setattr(onednn, "logistic", lambda x: None)
    values, expected = _sigmoid_cases(dtype)
    width = np.dtype(dtype).itemsize * 8
    np.testing.assert_array_equal(_sigmoid(values).view(f"u{width // 8}"), expected.view(f"u{width // 8}"))


@pytest.mark.skipif(not onednn.AVAILABLE, reason="oneDNN is not installed")
def test_sigmoid_of_large_float32_arrays_by_onednn(graph):
    """A large float32 Sigmoid is oneDNN's logistic: within 5 ulp of the exact value wherever that
    is a normal float (TF's Eigen kernel is within 6), and the two-branch formula's value where it
    is not (oneDNN's underflows to 0 from -87: those elements are numpy's), at infinities, zeros
    and NaNs (a NaN's sign aside)."""
    values, expected = _sigmoid_cases(np.float32)
    assert values.size >= onednn._LOGISTIC_MIN
    got = _sigmoid(values)
    with np.errstate(all="ignore"):
        exact = 1 / (1 + np.exp(-values.astype(np.float64)))
    normal = np.isfinite(values) & (exact >= np.finfo(np.float32).tiny)
    ulps = np.abs(got[normal].view(np.int32).astype(np.int64) - exact[normal].astype(np.float32).view(np.int32))
    assert ulps.max() <= 5
    assert not np.array_equal(got[normal], expected[normal])   # (oneDNN's, not numpy's kernel)
    nan = np.isnan(values)
    np.testing.assert_array_equal(got[~normal & ~nan], expected[~normal & ~nan])
    assert np.isnan(got[nan]).all()


@pytest.mark.skipif(not onednn.AVAILABLE, reason="oneDNN is not installed")
def test_saturated_sigmoid_elements_are_the_formulas_bits(graph):
    """A large activation of which many elements lie below oneDNN's range (a saturated layer:
    here 40%, with 8192 values from -87.5 to -86.5 among them): there each value is the
    two-branch formula's, exp(x) / (1 + exp(x)), bit for bit (denormals flushed, as kernels run)."""
    rng = np.random.RandomState(3)
    band = np.linspace(-87.5, -86.5, 8192, endpoint=False).astype(np.float32)
    values = rng.uniform(-150, 10, 128 * 784).astype(np.float32)
    values[:band.size] = band
    values = values.reshape(128, 784)
    low = values < -86.5
    assert 0.3 < low.mean() < 0.5
    got = _sigmoid(values.reshape(-1, 2)).reshape(values.shape)
    with np.errstate(all="ignore"), denormals.computed_as(True):
        e = np.exp(values[low])
        expected = e / (1 + e)
    np.testing.assert_array_equal(got[low].view(np.int32), expected.view(np.int32))
    assert (got[low][:band.size] > 0).any()   # (the band's values are normal floats, oneDNN's 0)


@pytest.mark.parametrize("dtype,size", [(np.float32, 7), (np.float32, 13), (np.float64, 3), (np.float64, 6)])
def test_pow_after_the_last_whole_vector_is_the_c_librarys(graph, dtype, size):
    """TF's CPU Pow (Eigen) runs its vector pow over whole AVX vectors (8 float32, 4 float64) and
    the C library's pow (powf for float32) on the elements after them, all of a tensor smaller
    than one: a scalar pow (Adam's beta ** t, a decay's rate ** (step / steps)) has the C
    library's bits on any machine, where numpy's power has vector versions of its own (AVX-512)
    that round a fifth of float32 values apart."""
    c_type = ctypes.c_float if dtype == np.float32 else ctypes.c_double
    c_pow = getattr(ctypes.CDLL(ctypes.util.find_library("m")), "powf" if dtype == np.float32 else "pow")
    c_pow.restype, c_pow.argtypes = c_type, [c_type, c_type]
    rng = np.random.RandomState(5)
    bases, exponents = rng.uniform(0.5, 3, (40, size)).astype(dtype), rng.uniform(-3, 3, (40, size)).astype(dtype)
    x, y = tf.placeholder(dtype, [size]), tf.placeholder(dtype, [size])
    z = tf.pow(x, y)
    with tf.Session() as sess:
        got = np.array([sess.run(z, {x: a, y: b}) for a, b in zip(bases, exponents)])
    tail = size % (8 if dtype == np.float32 else 4)
    want = np.array([[c_pow(a, b) for a, b in zip(ra[-tail:].tolist(), rb[-tail:].tolist())]
                     for ra, rb in zip(bases, exponents)], dtype)
    np.testing.assert_array_equal(got[:, -tail:], want)
    np.testing.assert_allclose(got, np.power(bases, exponents), rtol=4 * np.finfo(dtype).eps)


def test_is_nan_inf_finite(graph):
    x = tf.constant([np.nan, np.inf, -np.inf, 1.0])
    out = run_all(tf.is_nan(x), tf.is_inf(x), tf.is_finite(x))
    assert [o.dtype for o in out] == [np.bool_] * 3
    np.testing.assert_array_equal(out[0], [1, 0, 0, 0])
    np.testing.assert_array_equal(out[1], [0, 1, 1, 0])
    np.testing.assert_array_equal(out[2], [0, 0, 0, 1])


def test_complex_abs(graph):
    z = tf.abs(tf.constant([3 + 4j], dtype=tf.complex64))
    assert z.dtype == tf.float32 and z.op.type == "ComplexAbs"
    np.testing.assert_allclose(run_all(z), [5.0])


# -- comparisons and logic ---------------------------------------------------------------------
def test_comparisons(graph):
    x = tf.placeholder(tf.int32, [None])
    y = tf.constant([1, 2, 3])
    zs = [tf.equal(x, y), tf.not_equal(x, y), x < y, x <= y, x > y, x >= y, tf.less(x, 2), 2 < x]
    assert [z.op.type for z in zs] == ["Equal", "NotEqual", "Less", "LessEqual", "Greater", "GreaterEqual",
                                       "Less", "Greater"]
    assert all(z.dtype == tf.bool for z in zs)
    xv = np.array([3, 2, 1], np.int32)
    out = run_all(*zs, feed={x: xv})
    yv = np.array([1, 2, 3])
    refs = [xv == yv, xv != yv, xv < yv, xv <= yv, xv > yv, xv >= yv, xv < 2, xv > 2]
    for o, r in zip(out, refs):
        np.testing.assert_array_equal(o, r)
    assert zs[6].op.inputs[1].op.name == "Less_1/y"


def test_equal_strings(graph):
    np.testing.assert_array_equal(run_all(tf.equal(tf.constant(["a", "b"]), "a")), [True, False])


def test_logical_ops_and_overloads(graph):
    a = tf.constant([True, True, False, False])
    b = tf.constant([True, False, True, False])
    zs = [a & b, a | b, a ^ b, ~a, tf.logical_xor(a, b), a & True, False | b]
    assert [z.op.name for z in zs] == ["and", "or", "xor", "LogicalNot", "LogicalXor", "and_1", "or_1"]
    out = run_all(*zs)
    an, bn = np.array([1, 1, 0, 0], bool), np.array([1, 0, 1, 0], bool)
    for o, r in zip(out, [an & bn, an | bn, an ^ bn, ~an, an ^ bn, an, bn]):
        np.testing.assert_array_equal(o, r)
    assert {op.name for op in graph.get_operations()} >= {"xor/LogicalOr", "xor/LogicalAnd", "xor/LogicalNot"}


# -- casts -------------------------------------------------------------------------------------
def test_cast(graph):
    x = tf.constant([-1.7, 2.9, 0.0])
    c = tf.cast(x, tf.int32)
    assert c.op.type == "Cast" and c.op.name == "Cast"
    assert c.op.get_attr("SrcT") == tf.float32 and c.op.get_attr("DstT") == tf.int32
    assert tf.cast(x, tf.float32) is x
    b = tf.cast(x, tf.bool)
    i8 = tf.cast(tf.constant([300]), tf.uint8)
    out = run_all(c, b, i8, tf.cast(tf.constant([True, False]), tf.float64))
    np.testing.assert_array_equal(out[0], [-1, 2, 0])
    assert out[0].dtype == np.int32
    np.testing.assert_array_equal(out[1], [True, True, False])
    assert out[2][0] == 44
    assert out[3].dtype == np.float64


def test_cast_helpers(graph):
    x = tf.constant([1, 2])
    assert tf.to_float(x).op.name == "ToFloat" and tf.to_float(x).dtype == tf.float32
    assert tf.to_double(x).dtype == tf.float64 and tf.to_int64(x).dtype == tf.int64
    assert tf.to_int32(tf.constant([1.5])).op.name == "ToInt32"
    s = tf.saturate_cast(tf.constant([-1e10, 5.5, 1e10]), tf.int32)
    assert s.op.name == "saturate_cast"
    np.testing.assert_array_equal(run_all(s), [-2**31, 5, 2**31 - 128])
    u = tf.saturate_cast(tf.constant([-5, 300]), tf.uint8)
    np.testing.assert_array_equal(run_all(u), [0, 255])


def test_cast_static_value_for_shape_functions(graph):
    from tensorweave.framework import tensor_util
    v = tensor_util.constant_value(tf.cast(tf.constant([1, 2]), tf.int64))
    assert v.dtype == np.int64 and v.tolist() == [1, 2]


# -- operator overloads ------------------------------------------------------------------------
def test_operator_names_types_and_dtypes(graph):
    x = tf.placeholder(tf.int32, [None, 3], name="x")
    y = tf.constant([1, 2, 3])
    zs = {"add": x + y, "sub": x - y, "mul": x * y, "truediv": x / y, "floordiv": x // y, "mod": x % y,
          "pow": x ** y, "Neg": -x, "Abs": abs(x)}
    types = {"add": "AddV2", "sub": "Sub", "mul": "Mul", "truediv": "RealDiv", "floordiv": "FloorDiv",
             "mod": "FloorMod", "pow": "Pow", "Neg": "Neg", "Abs": "Abs"}
    for name, z in zs.items():
        assert z.op.name == name and z.op.type == types[name]
    assert zs["truediv"].dtype == tf.float64 and zs["add"].dtype == tf.int32
    xv = np.array([[1, -2, 3]], np.int32)
    out = run_all(*zs.values(), feed={x: xv})
    yv = np.array([1, 2, 3])
    refs = [xv + yv, xv - yv, xv * yv, xv / yv, xv // yv, xv % yv, xv ** yv, -xv, np.abs(xv)]
    for o, r in zip(out, refs):
        np.testing.assert_allclose(o, r)
        assert o.dtype == r.dtype or (o.dtype == np.int32 and r.dtype.kind == "i")


def test_python_operands_take_tensor_dtype_and_names(graph):
    x = tf.constant([1.0, 2.0], dtype=tf.float64)
    a, b, c = x + 1, 1 + x, 2 ** x
    assert a.dtype == b.dtype == c.dtype == tf.float64
    assert a.op.name == "add" and a.op.inputs[1].op.name == "add/y"
    assert b.op.name == "add_1" and b.op.inputs[0].op.name == "add_1/x"
    with tf.name_scope("scope"):
        assert (x + x).op.name == "scope/add"
    np.testing.assert_allclose(run_all(a, b, c, 3 - x, 6 / x, 7 // x, 7 % x, [1.0, 1.0] * x),
                               [[2, 3], [2, 3], [2, 4], [2, 1], [6, 3], [7, 3], [0, 1], [1, 2]])


def test_reflected_numpy_operands(graph):
    x = tf.constant([1.0, 2.0])
    z = np.float32(2.0) * x
    assert isinstance(z, tf.Tensor) and z.op.type == "Mul"
    z2 = np.array([1.0, 1.0], np.float32) + x
    assert isinstance(z2, tf.Tensor)
    np.testing.assert_allclose(run_all(z, z2), [[2, 4], [2, 3]])


def test_mixed_tensor_dtypes_raise_type_error(graph):
    with pytest.raises(TypeError, match="AddV2|add"):
        tf.constant(1) + tf.constant(1.0)
    with pytest.raises(TypeError):
        tf.constant(1.0, tf.float32) * tf.constant(1.0, tf.float64)


def test_eq_is_identity(graph):
    x = tf.constant(1)
    assert (x == x) is True and (x == tf.constant(1)) is False
    assert len({x, x}) == 1


def test_matmul_operator(graph):
    a = tf.constant(A)
    z = a @ tf.constant(A.T)
    assert z.op.name == "matmul" and z.op.type == "MatMul"
    np.testing.assert_allclose(run_all(z), A @ A.T, rtol=1e-6)
    r = A.T.tolist() @ a
    np.testing.assert_allclose(run_all(r), A.T @ A, rtol=1e-6)


# -- add_n -------------------------------------------------------------------------------------
def test_add_n_and_accumulate_n(graph):
    xs = [tf.constant(A), tf.constant(2 * A), tf.constant(3 * A)]
    s = tf.add_n(xs)
    assert s.op.type == "AddN" and s.op.name == "AddN" and s.shape.as_list() == [2, 3]
    np.testing.assert_allclose(run_all(s, tf.accumulate_n(xs)), [6 * A, 6 * A], rtol=1e-6)
    assert tf.add_n([xs[0]]) is xs[0]
    with pytest.raises(ValueError, match="inputs must be a list"):
        tf.add_n([])
    with pytest.raises(ValueError, match="AddN"):
        tf.add_n([tf.ones([2]), tf.ones([3])])
    with pytest.raises(TypeError):
        tf.add_n([tf.ones([2]), tf.ones([2], tf.int32)])


def test_add_n_sparse_input(graph):
    s = tf.IndexedSlices(tf.constant([[1.0, 2.0]]), tf.constant([1]), tf.constant([3, 2]))
    out = run_all(tf.add_n([s, tf.ones([3, 2])]))
    np.testing.assert_allclose(out, [[1, 1], [2, 3], [1, 1]])


# -- audit regressions against TF ----------------------------------------------------------------
def test_python_float_on_int_tensor_names_the_op(graph):
    # TF converts with a dtype *hint*: 1.5 stays float32 and the op reports the mismatch.
    with pytest.raises(TypeError, match="Input 'y' of 'AddV2' Op has type float32 that does not match type int32"):
        tf.constant(1) + 1.5
    with pytest.raises(TypeError, match="Mul"):
        tf.constant([1, 2]) * 0.5
    assert run_all(tf.constant(2.0) * 3) == 6.0   # ints that fit still take the tensor's dtype


def test_int_bitwise_operators_are_logical_only(graph):
    # TF 1.15 overloads & | ^ ~ with the logical ops only (bool tensors).
    with pytest.raises(TypeError, match="LogicalAnd"):
        tf.constant([5, 3]) & tf.constant([6, 1])
    np.testing.assert_array_equal(run_all(~tf.constant([True, False])), [False, True])


def test_count_nonzero_input_alias(graph):
    x = tf.constant([[0, 1, 2], [0, 0, 3]])
    assert run_all(tf.count_nonzero(input=x)) == 3
    np.testing.assert_array_equal(run_all(tf.count_nonzero(x, axis=1)), [2, 1])
    with pytest.raises(ValueError, match="both"):
        tf.count_nonzero(x, input=x)
