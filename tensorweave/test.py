"""tf.test namespace: TF1's finite-difference gradient checker and a minimal TestCase."""
from __future__ import annotations

import contextlib
import unittest
from typing import Optional

import numpy as np

from tensorweave.client.session import Session
from tensorweave.distributed.cluster import ClusterSpec, free_ports
from tensorweave.distributed.server import Server
from tensorweave.framework import dtypes
from tensorweave.framework.errors import OpError
from tensorweave.framework.graph import Graph, Tensor, get_default_graph, get_default_session
from tensorweave.framework.indexed_slices import IndexedSlices
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.core import constant, identity
from tensorweave.ops.gradients.gradients import gradients


_ALLOWED = (dtypes.float16, dtypes.float32, dtypes.float64, dtypes.complex64, dtypes.complex128)


def _session():
    sess = get_default_session()
    if sess is None:
        raise ValueError("compute_gradient needs a default session: run it inside `with tf.Session():` "
                         "or `with sess.as_default():`")
    return sess


def _product(shape) -> int:
    return int(np.prod(shape, dtype=np.int64)) if not isinstance(shape, int) else shape


def _feeds(extra: Optional[dict], new: dict) -> dict:
    out = dict(extra or {})
    out.update(new)
    return out


def _theoretical_jacobian(x, x_shape, x_data, dy, dy_shape, dx, extra) -> np.ndarray:
    if x.dtype.is_complex:
        x_shape = tuple(x_shape) + (2,)
    dy_factor = 2 if dy.dtype.is_complex else 1
    x_size = _product(x_shape)
    x_val_size = _product(tuple(x_shape)[1:])
    dy_size = _product(dy_shape) * dy_factor
    jacobian = np.zeros((x_size, dy_size), dtype=x.dtype.real_dtype.as_numpy_dtype)
    dy_data = np.zeros(dy_shape, dtype=dy.dtype.as_numpy_dtype)
    dy_flat = dy_data.ravel().view(dy.dtype.real_dtype.as_numpy_dtype)
    sess = _session()
    for col in range(dy_size):
        dy_flat[col] = 1
        feed = _feeds(extra, {x: x_data, dy: dy_data})
        if isinstance(dx, IndexedSlices):
            indices, values = sess.run([dx.indices, dx.values], feed_dict=feed)
            for i, v in zip(indices, values):
                jacobian[i * x_val_size:(i + 1) * x_val_size, col] += np.asarray(v).flat
        else:
            backprop = np.asarray(sess.run(dx, feed_dict=feed))
            jacobian[:, col] = backprop.ravel().view(jacobian.dtype)
        dy_flat[col] = 0
    if not dy_size:
        backprop = np.asarray(sess.run(dx, feed_dict=_feeds(extra, {x: x_data, dy: dy_data})))
        if backprop.shape != np.shape(x_data):
            raise ValueError(f"Empty gradient has wrong shape: expected {np.shape(x_data)}, got {backprop.shape}")
        if np.any(backprop):
            raise ValueError("Empty tensor with nonzero gradients")
    return jacobian


def _numeric_jacobian(x, x_shape, x_data, y, y_shape, delta, extra) -> np.ndarray:
    x_size = _product(x_shape) * (2 if x.dtype.is_complex else 1)
    y_size = _product(y_shape) * (2 if y.dtype.is_complex else 1)
    x_dtype = x.dtype.real_dtype.as_numpy_dtype
    y_dtype = y.dtype.real_dtype.as_numpy_dtype
    x_data = np.asarray(x_data, dtype=x.dtype.as_numpy_dtype)
    scale = np.asarray(2 * delta, dtype=y_dtype)[()]
    jacobian = np.zeros((x_size, y_size), dtype=x_dtype)
    sess = _session()
    for row in range(x_size):
        x_pos = x_data.copy()
        x_neg = x_data.copy()
        x_pos.ravel().view(x_dtype)[row] += delta
        y_pos = np.asarray(sess.run(y, feed_dict=_feeds(extra, {x: x_pos})))
        x_neg.ravel().view(x_dtype)[row] -= delta
        y_neg = np.asarray(sess.run(y, feed_dict=_feeds(extra, {x: x_neg})))
        diff = (y_pos - y_neg) / scale
        jacobian[row, :] = np.asarray(diff).ravel().view(y_dtype)
    return jacobian


def _dx_and_dy(x, y, y_shape):
    with x.graph.as_default():
        dy_orig = constant(1.0, shape=y_shape, dtype=y.dtype)
        dy = identity(dy_orig)
    grads = gradients(y, x, dy)
    return grads[0], dy_orig


def _compute(x, x_shape, dx, y, y_shape, dy, x_init_value, delta, extra):
    t, t2 = dtypes.as_dtype(x.dtype), dtypes.as_dtype(y.dtype)
    assert t.base_dtype in _ALLOWED, f"Don't support type {t.name} for x"
    assert t2.base_dtype in _ALLOWED, f"Don't support type {t2.name} for y"
    if x_init_value is not None:
        assert list(x_shape) == list(np.shape(x_init_value)), \
            f"x_shape = {x_shape}, init_data shape = {list(np.shape(x_init_value))}"
        x_data = x_init_value
    else:
        x_data = np.random.random_sample(x_shape).astype(t.as_numpy_dtype)
        if t.is_complex:
            x_data.imag = np.random.random_sample(x_shape)
    if dx is None:
        raise ValueError(f"compute_gradient: {y.name} does not depend on {x.name} (its gradient is None)")
    jacob_t = _theoretical_jacobian(x, x_shape, x_data, dy, y_shape, dx, extra)
    jacob_n = _numeric_jacobian(x, x_shape, x_data, y, y_shape, delta, extra)
    return jacob_t, jacob_n


@tf_export("test.compute_gradient")
def compute_gradient(x, x_shape, y, y_shape, x_init_value=None, delta: float = 1e-3, init_targets=None,
                     extra_feed_dict=None):
    """tf.test.compute_gradient: (theoretical, numerical) Jacobians of y w.r.t. x, each of shape
    [x_size, y_size], the numerical one by central differences of step `delta`. Runs in the
    default session; x is fed. With a list of x, returns one pair per x."""
    extra_feed_dict = extra_feed_dict or {}
    if init_targets is not None:
        assert isinstance(init_targets, (list, tuple))
    if isinstance(x, list):
        pairs = [_dx_and_dy(xi, y, y_shape) for xi in x]
        for init in init_targets or ():
            _session().run(init)
        inits = x_init_value if x_init_value is not None else [None] * len(x)
        return [_compute(xi, si, dxi, y, y_shape, dyi, ii, delta, extra_feed_dict)
                for xi, si, (dxi, dyi), ii in zip(x, x_shape, pairs, inits)]
    for init in init_targets or ():
        _session().run(init)
    dx, dy = _dx_and_dy(x, y, y_shape)
    return _compute(x, x_shape, dx, y, y_shape, dy, x_init_value, delta, extra_feed_dict)


def _error(grad) -> float:
    if isinstance(grad, tuple):
        grad = [grad]
    error = 0
    for j_t, j_n in grad:
        if j_t.size or j_n.size:
            error = np.maximum(error, np.fabs(j_t - j_n).max())
    return error


@tf_export("test.compute_gradient_error")
def compute_gradient_error(x, x_shape, y, y_shape, x_init_value=None, delta: float = 1e-3,
                           init_targets=None, extra_feed_dict=None) -> float:
    """tf.test.compute_gradient_error: max |theoretical - numerical| over the Jacobian entries."""
    grad = compute_gradient(x, x_shape, y, y_shape, x_init_value, delta, init_targets, extra_feed_dict)
    return _error(grad)


# -- TestCase ----------------------------------------------------------------------------------
def _np(value):
    if isinstance(value, Tensor):
        return get_default_session().run(value)
    return np.asarray(value)


@tf_export("test.TestCase")
class TestCase(unittest.TestCase):
    """A minimal tf.test.TestCase: a fresh default graph per test, sessions, numeric asserts."""

    def setUp(self):
        super().setUp()
        self._graph_ctx = Graph().as_default()
        self._graph_ctx.__enter__()
        self._cached_session = None

    def tearDown(self):
        if self._cached_session is not None:
            self._cached_session.close()
            self._cached_session = None
        self._graph_ctx.__exit__(None, None, None)
        super().tearDown()

    def get_temp_dir(self) -> str:
        return get_temp_dir()

    @contextlib.contextmanager
    def session(self, graph=None, config=None, use_gpu=False, force_gpu=False):
        """A new Session on `graph` (default: the test's graph), installed as default."""
        sess = Session(graph=graph or get_default_graph(), config=config)
        try:
            with sess.as_default(), sess.graph.as_default():
                yield sess
        finally:
            sess.close()

    @contextlib.contextmanager
    def cached_session(self, graph=None, config=None, use_gpu=False, force_gpu=False):
        """One Session reused for the whole test (on the test's default graph)."""
        g = graph or get_default_graph()
        if self._cached_session is None or self._cached_session.graph is not g:
            if self._cached_session is not None:
                self._cached_session.close()
            self._cached_session = Session(graph=g, config=config)
        sess = self._cached_session
        with sess.as_default(), g.as_default():
            yield sess

    test_session = cached_session

    def evaluate(self, tensors):
        sess = get_default_session()
        if sess is None:
            with self.cached_session() as sess:
                return sess.run(tensors)
        return sess.run(tensors)

    def assertAllClose(self, a, b, rtol=1e-6, atol=1e-6, msg=None):
        a, b = _np(a), _np(b)
        self.assertEqual(a.shape, b.shape, msg=f"Shape mismatch: {a.shape} vs {b.shape}. {msg or ''}")
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, err_msg=msg or "", equal_nan=True)

    def assertAllCloseAccordingToType(self, a, b, rtol=1e-6, atol=1e-6, float_rtol=1e-6,
                                      float_atol=1e-6, half_rtol=1e-3, half_atol=1e-3, msg=None):
        a = _np(a)
        if a.dtype in (np.float32, np.complex64):
            rtol, atol = max(rtol, float_rtol), max(atol, float_atol)
        elif a.dtype == np.float16:
            rtol, atol = max(rtol, half_rtol), max(atol, half_atol)
        self.assertAllClose(a, b, rtol=rtol, atol=atol, msg=msg)

    def assertAllEqual(self, a, b, msg=None):
        a, b = _np(a), _np(b)
        self.assertEqual(a.shape, b.shape, msg=f"Shape mismatch: {a.shape} vs {b.shape}. {msg or ''}")
        np.testing.assert_array_equal(a, b, err_msg=msg or "")

    def assertNear(self, f1, f2, err, msg=None):
        self.assertTrue(abs(f1 - f2) <= err, f"{f1} != {f2} +/- {err}{' : ' + msg if msg else ''}")

    def assertArrayNear(self, farray1, farray2, err, msg=None):
        self.assertEqual(len(farray1), len(farray2), msg=msg)
        for f1, f2 in zip(farray1, farray2):
            self.assertNear(float(f1), float(f2), err, msg=msg)

    def assertShapeEqual(self, np_array, tf_tensor, msg=None):
        self.assertAllEqual(np.shape(np_array), tf_tensor.get_shape().as_list(), msg=msg)

    def assertRaisesOpError(self, expected_err_re_or_predicate):
        return self.assertRaisesRegex(OpError, expected_err_re_or_predicate)

    assertRaisesWithPredicateMatch = unittest.TestCase.assertRaisesRegex


@tf_export("test.main")
def main(argv=None):
    """tf.test.main: runs the unittest tests of the calling module."""
    unittest.main(argv=argv)


@tf_export("test.is_gpu_available")
def is_gpu_available(cuda_only=False, min_cuda_compute_capability=None) -> bool:
    return False


@tf_export("test.is_built_with_cuda")
def is_built_with_cuda() -> bool:
    return False


@tf_export("test.gpu_device_name")
def gpu_device_name() -> str:
    return ""


@tf_export("test.get_temp_dir")
def get_temp_dir() -> str:
    import tempfile
    return tempfile.mkdtemp(prefix="tensorweave_test_")


@tf_export("test.create_local_cluster")
def create_local_cluster(num_workers: int, num_ps: int, protocol: str = "grpc", worker_config=None,
                         ps_config=None) -> tuple:
    """tf.test.create_local_cluster(num_workers, num_ps, protocol='grpc', worker_config=None,
    ps_config=None): a cluster of `num_workers` worker and `num_ps` ps servers started in this
    process on free localhost ports; returns (workers, ps_servers), lists of tf.train.Server."""
    ports = free_ports(num_workers + num_ps)
    cluster = ClusterSpec({"worker": [f"localhost:{p}" for p in ports[:num_workers]],
                           "ps": [f"localhost:{p}" for p in ports[num_workers:]]})
    workers = [Server(cluster, job_name="worker", task_index=i, protocol=protocol, config=worker_config)
               for i in range(num_workers)]
    ps_servers = [Server(cluster, job_name="ps", task_index=i, protocol=protocol, config=ps_config)
                  for i in range(num_ps)]
    return workers, ps_servers
