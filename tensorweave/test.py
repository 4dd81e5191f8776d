"""tf.test namespace: TF1's finite-difference gradient checker and a minimal TestCase."""
from __future__ import annotations

import contextlib
import copy
import functools
import inspect
import numbers
import os
import platform
import re
import sys
import time
import unittest
from typing import Optional

import numpy as np

from tensorweave.client.device_config import default_session_config
from tensorweave.client.device_lib import list_local_devices
from tensorweave.client.session import Session
from tensorweave.client.timeline import Timeline
from tensorweave.distributed.cluster import ClusterSpec, free_ports
from tensorweave.distributed.server import Server
from tensorweave.framework import dtypes
from tensorweave.framework.config import ConfigProto, RunMetadata, RunOptions
from tensorweave.framework.errors import OpError
from tensorweave.framework.graph import Graph, Tensor, get_default_graph, get_default_session
from tensorweave.framework.indexed_slices import IndexedSlices
from tensorweave.framework.tf_export import tf_export
from tensorweave.framework.tf_protos import BenchmarkEntries, graph_pb2
from tensorweave.logging import info as log_info
from tensorweave.ops.array.core import constant, identity
from tensorweave.ops.gradients.gradients import gradients
from tensorweave.runtime.devices import STANDIN_ENV, cupy


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


def _test_config(config, force_gpu: bool):
    """TF's ConfigProto for a test's session: without one, the context's with soft placement unless
    `force_gpu`; with one, soft placement turned off for force_gpu."""
    if config is None:
        config = default_session_config()
        config.allow_soft_placement = not force_gpu
    elif force_gpu and config.allow_soft_placement:
        config = copy.deepcopy(config)
        config.allow_soft_placement = False
    return config


@contextlib.contextmanager
def _constrained(sess, use_gpu: bool, force_gpu: bool):
    with sess.as_default(), sess.graph.as_default():
        if force_gpu or not use_gpu:
            with sess.graph.device((gpu_device_name() or "/device:GPU:0") if force_gpu else "/device:CPU:0"):
                yield sess
        else:
            yield sess


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
        """A new Session on `graph` (default: the test's graph), installed as default; the ops
        made inside go to the CPU unless `use_gpu`, to the first GPU when `force_gpu` (TF's)."""
        sess = Session(graph=graph or get_default_graph(), config=_test_config(config, force_gpu))
        try:
            with _constrained(sess, use_gpu, force_gpu):
                yield sess
        finally:
            sess.close()

    @contextlib.contextmanager
    def cached_session(self, graph=None, config=None, use_gpu=False, force_gpu=False):
        """One Session reused for the whole test (on the test's default graph), devices as session()."""
        g = graph or get_default_graph()
        if self._cached_session is None or self._cached_session.graph is not g:
            if self._cached_session is not None:
                self._cached_session.close()
            self._cached_session = Session(graph=g, config=_test_config(config, force_gpu))
        with _constrained(self._cached_session, use_gpu, force_gpu) as sess:
            yield sess

    def test_session(self, graph=None, config=None, use_gpu=False, force_gpu=False):
        """TF1's older name of cached_session. unittest takes the name for a test: skipped then, as in TF."""
        if self.id().endswith(".test_session"):
            self.skipTest("Tests that have the name \"test_session\" are automatically skipped by TensorFlow test "
                          "fixture, as the name is reserved for creating sessions within tests. Please rename your "
                          "test if you have a test with this name.")
        return self.cached_session(graph, config, use_gpu, force_gpu)

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
    """TF1's tf.test.is_gpu_available: whether list_local_devices() has a GPU, of CUDA compute
    capability (major, minor) >= `min_cuda_compute_capability` when given (read from the device's
    physical_device_desc; a stand-in GPU has none, so it counts as (0, 0)). Every GPU here is a
    CUDA one, so `cuda_only` narrows nothing."""
    for device in list_local_devices():
        if device.device_type != "GPU":
            continue
        if min_cuda_compute_capability is None:
            return True
        found = re.search(r"compute capability: (\d+)\.(\d+)", device.physical_device_desc or "")
        if (tuple(map(int, found.groups())) if found else (0, 0)) >= tuple(min_cuda_compute_capability):
            return True
    return False


@tf_export("test.is_built_with_cuda")
def is_built_with_cuda() -> bool:
    """Whether GPU kernels can run: the `gpu` extra (CuPy) is installed, or this process has stand-in
    GPUs (TENSORWEAVE_STANDIN_GPUS), which run them on the host."""
    return cupy is not None or bool(os.environ.get(STANDIN_ENV))


@tf_export("test.is_built_with_gpu_support")
def is_built_with_gpu_support() -> bool:
    """is_built_with_cuda() (no ROCm kernels)."""
    return is_built_with_cuda()


@tf_export("test.is_built_with_rocm")
def is_built_with_rocm() -> bool:
    """False: no ROCm kernels."""
    return False


@tf_export("test.is_built_with_xla")
def is_built_with_xla() -> bool:
    """False: no XLA compiler."""
    return False


# TF's CPU target names -> the platform.machine() names of the hosts that run them.
_CPU_TARGETS = {"x86": ("x86_64", "amd64", "i386", "i686", "x86"), "aarch64": ("aarch64", "arm64"),
                "arm": ("armv7l", "armv8l", "arm"), "ppc": ("ppc64le", "ppc64", "ppc"),
                "s390x": ("s390x",)}


@tf_export("test.is_cpu_target_available")
def is_cpu_target_available(target) -> bool:
    """tf.test.is_cpu_target_available(target): whether ops run on CPU target `target` ('x86',
    'aarch64', 'arm', ...): here the host's own architecture, as numpy runs the kernels."""
    return platform.machine().lower() in _CPU_TARGETS.get(str(target).lower(), (str(target).lower(),))


@tf_export("test.benchmark_config")
def benchmark_config() -> ConfigProto:
    """tf.test.benchmark_config(): a ConfigProto with Grappler's dependency optimizer off
    (graph_options.rewrite_options['dependency_optimization'] = RewriterConfig.OFF, 2), so a
    benchmarked op is not pruned away."""
    config = ConfigProto()
    config.graph_options.rewrite_options["dependency_optimization"] = 2   # RewriterConfig.OFF
    return config


@tf_export("test.test_src_dir_path")
def test_src_dir_path(relative_path) -> str:
    """tf.test.test_src_dir_path(relative_path): the absolute path of `relative_path` under the
    library's source root (TF's: tensorflow/; here the tensorweave package directory)."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), relative_path)


@tf_export("test.disable_with_predicate")
def disable_with_predicate(pred, skip_message):
    """tf.test.disable_with_predicate(pred, skip_message): a decorator of a TestCase method that
    skips the test with `skip_message` when pred() is true at run time."""
    def decorator(func):
        @functools.wraps(func)
        def wrapper(self, *args, **kwargs):
            if pred():
                self.skipTest(skip_message)
            return func(self, *args, **kwargs)
        return wrapper
    return decorator


@tf_export("test.with_eager_op_as_function")
def with_eager_op_as_function(cls=None, only_as_function=False):
    """tf.test.with_eager_op_as_function(cls=None, only_as_function=False): the class unchanged
    (TensorFlow's own is a no-op now; graph-mode tests have no eager ops to run as functions)."""
    return cls if cls is not None else (lambda c: c)


_CHECKPOINT_TEMP = re.compile(rb"<_temp_[0-9a-f]{32}/part>")
_HASH_TABLE_NAME = re.compile(rb"hash_table_[0-9a-z\-]+")


def _stripped_nodes(graph_def, checkpoint_v2: bool, hash_table_shared_name: bool) -> dict:
    """{name: NodeDef} of a copy of graph_def, without what differs from run to run: a V2
    Saver's random temp file suffix, and the shared names hash tables make up."""
    nodes = {}
    for node in graph_def.node:
        node = type(node).FromString(node.SerializeToString())
        if checkpoint_v2 and node.op == "Const" and "value" in node.attr:
            strings = node.attr["value"].tensor.string_val
            for i, s in enumerate(strings):
                strings[i] = _CHECKPOINT_TEMP.sub(b"", s)
        if hash_table_shared_name and node.op.startswith("HashTable") and "shared_name" in node.attr:
            node.attr["shared_name"].s = _HASH_TABLE_NAME.sub(b"", node.attr["shared_name"].s)
        nodes[node.name] = node
    return nodes


def _node_differences(name: str, actual, expected) -> list:
    out = []
    if actual.op != expected.op:
        out.append(f"Node named '{name}' has op '{actual.op}' that does not match expected '{expected.op}'")
    data = [(i for i in node.input if not i.startswith("^")) for node in (actual, expected)]
    data_a, data_e = (list(d) for d in data)
    if data_a != data_e:
        out.append(f"Node named '{name}' has inputs {data_a} that do not match expected {data_e}")
    ctrl_a, ctrl_e = ({i for i in node.input if i.startswith("^")} for node in (actual, expected))
    if ctrl_a != ctrl_e:
        out.append(f"Node named '{name}' has control inputs {sorted(ctrl_a)} that do not match expected "
                   f"{sorted(ctrl_e)}")
    if actual.device != expected.device:
        out.append(f"Node named '{name}' has device '{actual.device}' that does not match expected "
                   f"'{expected.device}'")
    for key in sorted(set(actual.attr) | set(expected.attr)):
        if key not in expected.attr:
            out.append(f"Node named '{name}' has unexpected attr '{key}' with value: {actual.attr[key]}")
        elif key not in actual.attr:
            out.append(f"Node named '{name}' missing expected attr '{key}' with value: {expected.attr[key]}")
        elif actual.attr[key] != expected.attr[key]:
            out.append(f"Node named '{name}' has attr '{key}' with value: {actual.attr[key]} that does not match "
                       f"expected: {expected.attr[key]}")
    return out


@tf_export("test.assert_equal_graph_def")
def assert_equal_graph_def(actual, expected, checkpoint_v2=False, hash_table_shared_name=False) -> None:
    """tf.test.assert_equal_graph_def(actual, expected, checkpoint_v2=False,
    hash_table_shared_name=False): AssertionError, saying what differs, unless the two GraphDefs
    hold the same nodes (by name, in any order: op, inputs, control inputs as a set, device,
    attrs). checkpoint_v2 ignores a V2 Saver's random temp file names; hash_table_shared_name
    the shared names of hash tables. TypeError when either is not a GraphDef."""
    for what, g in (("actual", actual), ("expected", expected)):
        if not isinstance(g, graph_pb2.GraphDef):
            raise TypeError(f"Expected tf.GraphDef for {what}, got {type(g).__name__}")
    got = _stripped_nodes(actual, checkpoint_v2, hash_table_shared_name)
    want = _stripped_nodes(expected, checkpoint_v2, hash_table_shared_name)
    problems = [f"Found unexpected node '{got[n].name} = {got[n].op}({', '.join(got[n].input)})'"
                for n in got if n not in want]
    problems += [f"Did not find expected node '{want[n].name} = {want[n].op}({', '.join(want[n].input)})'"
                 for n in want if n not in got]
    for n in got:
        if n in want:
            problems += _node_differences(n, got[n], want[n])
    if problems:
        raise AssertionError("\n".join(problems))


@tf_export("test.StubOutForTesting")
class StubOutForTesting:
    """tf.test.StubOutForTesting(): replaces attributes for a test and puts them back.
    Set(parent, name, new) stubs parent.name itself; SmartSet(obj, name, new) stubs a module's or
    an instance's own attribute in place, and otherwise on the class (obj's class, for an
    instance), so subclasses and other instances see it too; UnsetAll / SmartUnsetAll / CleanUp
    (all of them, last first) restore; also a context manager."""

    def __init__(self):
        self.cache = []
        self.stubs = []

    def __enter__(self):
        return self

    def __exit__(self, unused_exc_type, unused_exc_value, unused_tb):
        self.CleanUp()

    def CleanUp(self) -> None:
        self.SmartUnsetAll()
        self.UnsetAll()

    def SmartSet(self, obj, attr_name, new_attr) -> None:
        own = isinstance(obj, type(sys)) or (not isinstance(obj, type) and attr_name in vars(obj))
        owner = obj if own or isinstance(obj, type) else type(obj)
        try:   # the raw attribute: a staticmethod or classmethod stays one when put back
            original = inspect.getattr_static(owner, attr_name)
        except AttributeError:
            raise AttributeError(f"Attribute not found: {attr_name}") from None
        self.stubs.append((owner, attr_name, original, attr_name in vars(owner)))
        setattr(owner, attr_name, new_attr)

    def SmartUnsetAll(self) -> None:
        for owner, attr_name, original, was_own in reversed(self.stubs):
            if was_own:
                setattr(owner, attr_name, original)
            else:   # it was inherited: drop the stub, and the base's shows through again
                delattr(owner, attr_name)
        self.stubs = []

    def Set(self, parent, child_name, new_child) -> None:
        old_child = getattr(parent, child_name)
        if isinstance(getattr(parent, "__dict__", {}).get(child_name), staticmethod):
            old_child = staticmethod(old_child)
        self.cache.append((parent, old_child, child_name))
        setattr(parent, child_name, new_child)

    def UnsetAll(self) -> None:
        for parent, old_child, child_name in reversed(self.cache):
            setattr(parent, child_name, old_child)
        self.cache = []


# TF's environment variable: a report's file is this prefix plus the benchmark's name ("/" as "__").
TEST_REPORTER_TEST_ENV = "TEST_REPORT_FILE_PREFIX"


def _report_benchmark(name, iters=None, cpu_time=None, wall_time=None, throughput=None, extras=None,
                      metrics=None) -> None:
    log_info("Benchmark [%s] iters: %d, wall_time: %g, cpu_time: %g, throughput: %g, extras: %s, metrics: %s",
             name, -1 if iters is None else iters, -1 if wall_time is None else wall_time,
             -1 if cpu_time is None else cpu_time, -1 if throughput is None else throughput,
             str(extras) if extras else "None", str(metrics) if metrics else "None")
    entries = BenchmarkEntries()
    entry = entries.entry.add()
    entry.name = name
    for field, value in (("iters", iters), ("cpu_time", cpu_time), ("wall_time", wall_time),
                         ("throughput", throughput)):
        if value is not None:
            setattr(entry, field, int(value) if field == "iters" else float(value))
    if extras is not None and not isinstance(extras, dict):
        raise TypeError("report_benchmark: extras must be a dict")
    if metrics is not None and not isinstance(metrics, list):
        raise TypeError("report_benchmark: metrics must be a list")
    for metric in metrics or []:
        for field in ("name", "value"):
            if field not in metric:
                raise TypeError(f"report_benchmark: metric must has a '{field}' field")
    for key, value in (extras or {}).items():
        if isinstance(value, numbers.Number):
            entry.extras[key].double_value = float(value)
        else:
            entry.extras[key].string_value = str(value)
    for metric in metrics or []:
        m = entry.metrics.add()
        m.name, m.value = metric["name"], float(metric["value"])
        if "min_value" in metric:
            m.min_value.value = float(metric["min_value"])
        if "max_value" in metric:
            m.max_value.value = float(metric["max_value"])
    prefix = os.environ.get(TEST_REPORTER_TEST_ENV)
    if prefix is None:
        print(str(entries))
        return
    path = prefix + name.replace("/", "__")
    if os.path.exists(path):
        raise IOError(f"File already exists: {path}")
    with open(path, "wb") as f:
        f.write(entries.SerializeToString())


@tf_export("test.Benchmark")
class Benchmark:
    """tf.test.Benchmark: a base class whose `benchmark*` methods measure something and call
    report_benchmark. A report is printed, or, when TEST_REPORT_FILE_PREFIX is set, written as
    TF's BenchmarkEntries protobuf (test_log.proto) to that prefix plus its name."""

    def _get_name(self, overwrite_name=None) -> str:
        """"<class>.<method>" of the outermost method of a Benchmark on the call stack (TF's
        rule), `overwrite_name` in place of the method's name when given."""
        frames, frame = [], sys._getframe(1)
        while frame is not None:
            frames.append(frame)
            frame = frame.f_back
        for frame in reversed(frames):
            caller = frame.f_locals.get("self")
            if isinstance(caller, Benchmark):
                return f"{type(caller).__name__}.{overwrite_name or frame.f_code.co_name}"
        raise ValueError("Unable to determine calling Benchmark class.")

    def report_benchmark(self, iters=None, cpu_time=None, wall_time=None, throughput=None, extras=None, name=None,
                         metrics=None) -> None:
        """Reports one benchmark: iters, cpu_time and wall_time (seconds per iteration),
        throughput, extras ({name: number or string}), metrics ([{"name", "value", optional
        "min_value", "max_value"}]); named "<class>.<calling method, or `name`>"."""
        _report_benchmark(self._get_name(name), iters=iters, cpu_time=cpu_time, wall_time=wall_time,
                          throughput=throughput, extras=extras, metrics=metrics)

    def run_op_benchmark(self, sess, op_or_tensor, feed_dict=None, burn_iters=2, min_iters=10,
                         store_trace=False, store_memory_usage=True, name=None, extras=None, mbs=0) -> dict:
        """Runs `op_or_tensor` burn_iters times unmeasured, then min_iters times timed, and
        reports the median wall time per run and throughput mbs / wall_time. With store_trace
        or store_memory_usage one more traced run adds the Chrome trace
        ("full_trace_chrome_format", returned only) or each allocator's peak bytes (reported
        as "allocator_maximum_num_bytes_<allocator>"). Returns the reported values, their
        extras also holding "wall_time_mean" and "wall_time_stdev"."""
        for _ in range(burn_iters):
            sess.run(op_or_tensor, feed_dict=feed_dict)
        deltas = []
        for _ in range(min_iters):
            start = time.time()
            sess.run(op_or_tensor, feed_dict=feed_dict)
            deltas.append(time.time() - start)
        extras = extras if extras is not None else {}
        unreported = {}
        if store_trace or store_memory_usage:
            run_metadata = RunMetadata()
            sess.run(op_or_tensor, feed_dict=feed_dict, options=RunOptions(trace_level=RunOptions.FULL_TRACE),
                     run_metadata=run_metadata)
            trace = Timeline(run_metadata.step_stats)
            if store_trace:
                unreported["full_trace_chrome_format"] = trace.generate_chrome_trace_format()
            if store_memory_usage:
                for allocator, peak in trace.analyze_step_stats(show_memory=True).allocator_maximums.items():
                    extras[f"allocator_maximum_num_bytes_{allocator}"] = peak.num_bytes
        ordered = sorted(deltas)
        median = (ordered[len(ordered) // 2] + ordered[(len(ordered) - 1) // 2]) / 2.0 if ordered else -1
        values = {"iters": min_iters, "wall_time": median, "extras": extras, "name": name,
                  "throughput": mbs / median}
        self.report_benchmark(**values)
        unreported["wall_time_mean"] = float(np.mean(deltas)) if deltas else -1
        unreported["wall_time_stdev"] = float(np.std(deltas, ddof=1)) if len(deltas) > 1 else -1
        values["extras"].update(unreported)
        return values


@tf_export("test.gpu_device_name")
def gpu_device_name() -> str:
    """The name of this process's first GPU ("/device:GPU:0"), "" without one."""
    return next((d.name for d in list_local_devices() if d.device_type == "GPU"), "")


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
