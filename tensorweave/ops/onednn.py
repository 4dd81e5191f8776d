"""oneDNN's float32 kernels for convolutions, pooling, MatMul, BiasAdd and ReluGrad, called
through its C API with ctypes.

Optional: `pip install tensorweave[onednn]` installs Intel's `onednn-cpu-gomp` wheel (oneDNN 3.2,
a C library and nothing else). Its JIT kernels run the CIFAR-10 net's 5x5x64 convolution and
both its gradients at about 260 GFLOP/s on a 2-core AVX-512 machine, where numpy's im2col and
OpenBLAS's sgemm reach 150 at best (docs/PERFORMANCE.md, "Convolutions"). Without the library,
or with TENSORWEAVE_ONEDNN=0, AVAILABLE is False and the numpy kernels run; TENSORWEAVE_ONEDNN
may also name the libdnnl.so file to load.

Each function takes and returns numpy arrays and returns None where it does not apply (not
float32, an empty tensor, a layout oneDNN has only its slow reference kernel for): the caller
then runs its numpy kernel. Arrays go in as contiguous NHWC (an NCHW view is copied first: the
fast kernels take dense layouts only). Primitives are made once per shape and layout and
kept (a bounded cache); each call wraps the arrays' buffers in oneDNN memory objects, runs on
this thread's stream and waits, with a scratchpad of this thread's own, so two threads may run
the same primitive at once.
"""
from __future__ import annotations

import contextlib
import ctypes
import glob
import os
import sys
import threading
import time
import weakref
from collections import OrderedDict
from typing import Callable, Optional

import numpy as np
import threadpoolctl

from tensorweave.framework.limits import available_cores
from tensorweave.ops import intra_op

_MAJOR = 3                    # the C API (enums, signatures) below is oneDNN 3's
_CACHE_SIZE = 128             # primitives kept, least recently used dropped
_GEMM_MIN = 1 << 15           # multiply-adds below which a MatMul stays with numpy
_GEMM_TEAM_MIN = 1 << 23      # multiply-adds below which sgemm runs on the calling thread alone
_GEMM_SERIAL_MAX = 1 << 25    # ... and below which it runs on the team only where that gives the same bits
_CONV_SERIAL_MAX = 1 << 25    # multiply-adds below which a convolution runs on the calling thread alone
_MIN_INPUT_GRAD_CHANNELS = 16  # fewer: Conv2DBackpropInput stays with numpy (measured faster)
_ELTWISE_MIN = 1 << 17        # elements below which BiasAdd and ReluGrad stay with numpy
_LOGISTIC_MIN = 1 << 13       # elements below which Sigmoid stays with numpy
_ELTWISE_TEAM_MIN = 1 << 20   # elements from which a pass runs on the team while its cores are free
_TEAM_SPIN = 4000             # spins of a team's idle thread before it sleeps (GOMP_SPINCOUNT)
_TEAM_SPIN_S = 3e-4           # ... about that long (docs/PERFORMANCE.md, wave 21)

# oneDNN 3 enum values (dnnl_types.h, dnnl_common_types.h)
_CPU, _IN_ORDER, _F32, _ANY = 1, 1, 3, 1
_FORWARD_TRAINING, _FORWARD_INFERENCE = 64, 96
_CONV_DIRECT, _POOL_MAX, _POOL_AVG_EXCLUDE_PADDING = 1, 511, 1023
_BINARY_ADD, _BINARY_MUL, _BINARY_LT = 131056, 131057, 131065
_ELTWISE_RELU, _ELTWISE_LOGISTIC = 32, 41
_SRC_1, _POST_OP_SRC_1 = 2, 32768   # DNNL_ARG_SRC_1; post-op i's operand: 32768 * (i + 1) | DNNL_ARG_SRC_1
_Q_IMPL_INFO, _Q_WEIGHTS, _Q_DIFF_WEIGHTS, _Q_WORKSPACE, _Q_SCRATCHPAD = 8, 131, 132, 135, 136
_SRC, _DST, _WEIGHTS, _WORKSPACE, _SCRATCHPAD = 1, 17, 33, 64, 80
_DIFF_SRC, _DIFF_DST, _DIFF_WEIGHTS = 129, 145, 161
_SCRATCHPAD_USER = 1

_Dims = ctypes.c_int64 * 12
_p = ctypes.c_void_p
_pp = ctypes.POINTER(ctypes.c_void_p)
_i = ctypes.c_int


class _Arg(ctypes.Structure):
    _fields_ = [("arg", ctypes.c_int), ("memory", ctypes.c_void_p)]


class _Version(ctypes.Structure):
    _fields_ = [("major", ctypes.c_int), ("minor", ctypes.c_int), ("patch", ctypes.c_int),
                ("hash", ctypes.c_char_p), ("cpu_runtime", ctypes.c_uint), ("gpu_runtime", ctypes.c_uint)]


_SIGNATURES = {
    "dnnl_engine_create": [_pp, _i, ctypes.c_size_t],
    "dnnl_stream_create": [_pp, _p, ctypes.c_uint],
    "dnnl_stream_wait": [_p],
    "dnnl_memory_desc_create_with_strides": [_pp, _i, _Dims, _i, _Dims],
    "dnnl_memory_desc_create_with_tag": [_pp, _i, _Dims, _i, _i],
    "dnnl_memory_desc_destroy": [_p],
    "dnnl_memory_create": [_pp, _p, _p, _p],
    "dnnl_memory_destroy": [_p],
    "dnnl_primitive_attr_create": [_pp],
    "dnnl_primitive_attr_set_scratchpad_mode": [_p, _i],
    "dnnl_primitive_desc_query": [_p, _i, _i, _p],
    "dnnl_primitive_desc_destroy": [_p],
    "dnnl_primitive_create": [_pp, _p],
    "dnnl_primitive_destroy": [_p],
    "dnnl_primitive_execute": [_p, _p, _i, ctypes.POINTER(_Arg)],
    "dnnl_reorder_primitive_desc_create": [_pp, _p, _p, _p, _p, _p],
    "dnnl_convolution_forward_primitive_desc_create": [_pp, _p, _i, _i, _p, _p, _p, _p, _Dims, _Dims, _Dims, _Dims, _p],
    "dnnl_convolution_backward_data_primitive_desc_create": [_pp, _p, _i, _p, _p, _p, _Dims, _Dims, _Dims, _Dims,
                                                              _p, _p],
    "dnnl_convolution_backward_weights_primitive_desc_create": [_pp, _p, _i, _p, _p, _p, _p, _Dims, _Dims, _Dims,
                                                                 _Dims, _p, _p],
    "dnnl_binary_primitive_desc_create": [_pp, _p, _i, _p, _p, _p, _p],
    "dnnl_eltwise_forward_primitive_desc_create": [_pp, _p, _i, _i, _p, _p, ctypes.c_float, ctypes.c_float, _p],
    "dnnl_post_ops_create": [_pp],
    "dnnl_post_ops_append_binary": [_p, _i, _p],
    "dnnl_post_ops_append_eltwise": [_p, _i, ctypes.c_float, ctypes.c_float],
    "dnnl_post_ops_destroy": [_p],
    "dnnl_primitive_attr_destroy": [_p],
    "dnnl_primitive_attr_set_post_ops": [_p, _p],
    "dnnl_pooling_forward_primitive_desc_create": [_pp, _p, _i, _i, _p, _p, _Dims, _Dims, _Dims, _Dims, _Dims, _p],
    "dnnl_pooling_backward_primitive_desc_create": [_pp, _p, _i, _p, _p, _Dims, _Dims, _Dims, _Dims, _Dims, _p, _p],
}


def _library_path() -> Optional[str]:
    setting = os.environ.get("TENSORWEAVE_ONEDNN", "")
    if setting == "0":
        return None
    if setting and setting != "1":
        return setting
    # The wheel's file list, read from its RECORD as importlib.metadata.distribution(...).files
    # would (the first on sys.path): importing importlib.metadata cost every process ~15 ms of
    # CPU at start-up (an Estimator job starts three at once).
    for entry in sys.path:
        for record in glob.glob(os.path.join(entry or ".", "onednn_cpu_gomp-*.dist-info", "RECORD")):
            with open(record, encoding="utf-8") as f:
                found = [path for path, *_ in (line.split(",") for line in f)
                         if os.path.basename(path).startswith("libdnnl.so")]
            if found:
                return os.path.join(entry or ".", min(found, key=len))
    return None


def _load():
    path = _library_path()
    if path is None:
        return None
    # GNU OpenMP reads this once, when it loads. Its default lets a team's idle threads spin at
    # each barrier; on a machine busier than its cores (other tasks, other processes, two session
    # threads each running a team) the spinning threads take the CPU the working ones need, and a
    # training step ran 10x slower (docs/PERFORMANCE.md, "OpenMP threads"). Passive threads sleep,
    # after a short spin (_TEAM_SPIN): waking a sleeping one cost an LSTM step's 32x400x800 product
    # more than the team saved, where a spinning one halves it (docs/PERFORMANCE.md, wave 21).
    # GNU OpenMP cuts the spin short while its threads outnumber the cores.
    if "OMP_WAIT_POLICY" not in os.environ:
        os.environ.setdefault("GOMP_SPINCOUNT", str(_TEAM_SPIN))
        os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
    # Its team is a thread per core of the affinity; a container's CPU quota caps that (a pod
    # given 2 CPUs of a 64-core node would run teams of 64 threads on 2 CPUs' worth of time).
    cores = available_cores()
    affinity = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else cores
    if "OMP_NUM_THREADS" not in os.environ and cores < affinity:   # (only where a quota caps it)
        os.environ["OMP_NUM_THREADS"] = str(cores)
    try:
        lib = ctypes.CDLL(path)
    except OSError:
        return None
    lib.dnnl_version.restype = ctypes.POINTER(_Version)
    if lib.dnnl_version().contents.major != _MAJOR:
        return None
    for name, args in _SIGNATURES.items():
        fn = getattr(lib, name)
        fn.argtypes, fn.restype = args, ctypes.c_int
    lib.dnnl_primitive_desc_query_md.argtypes = [_p, _i, _i]
    lib.dnnl_primitive_desc_query_md.restype = _p
    lib.dnnl_memory_desc_get_size.argtypes = [_p]
    lib.dnnl_memory_desc_get_size.restype = ctypes.c_size_t
    lib.dnnl_memory_desc_equal.argtypes = [_p, _p]
    lib.dnnl_memory_desc_equal.restype = ctypes.c_int
    lib.dnnl_sgemm.argtypes = [ctypes.c_char, ctypes.c_char, *[ctypes.c_int64] * 3, ctypes.c_float, _p, ctypes.c_int64,
                               _p, ctypes.c_int64, ctypes.c_float, _p, ctypes.c_int64]
    lib.dnnl_sgemm.restype = ctypes.c_int
    lib.omp_get_max_threads.restype = ctypes.c_int
    lib.omp_set_num_threads.argtypes = [ctypes.c_int]
    # numpy's BLAS runs on the calling thread: the products worth a team run here, by the rules
    # below, and numpy's BLAS threads spin for a while after each of its products (OpenBLAS's
    # busy wait), holding the core that oneDNN's team or another op's thread needs next (a
    # CIFAR-10 worker given 2 cores ran no faster than given 1). A user's own BLAS setting stands.
    if not any(name in os.environ for name in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")):
        threadpoolctl.threadpool_limits(1, user_api="blas")
    return lib


_lib = _load()
AVAILABLE = _lib is not None


def _forked() -> None:
    # GNU OpenMP's threads do not survive fork(): a child's first oneDNN call would wait for them
    # forever. A forked child runs the numpy kernels instead.
    global AVAILABLE
    AVAILABLE = False


os.register_at_fork(after_in_child=_forked)


class Unsupported(Exception):
    """oneDNN refused a primitive, or would run only its reference kernel for it."""


def _check(status: int, what: str) -> None:
    if status != 0:
        raise Unsupported(f"oneDNN {what}: status {status}")


def _new(fn, *args) -> ctypes.c_void_p:
    handle = ctypes.c_void_p()
    _check(fn(ctypes.byref(handle), *args), fn.__name__)
    return handle


if AVAILABLE:
    _engine = _new(_lib.dnnl_engine_create, _CPU, 0)
    _attr = _new(_lib.dnnl_primitive_attr_create)
    _check(_lib.dnnl_primitive_attr_set_scratchpad_mode(_attr, _SCRATCHPAD_USER), "scratchpad mode")
_local = threading.local()


def _stream() -> ctypes.c_void_p:
    stream = getattr(_local, "stream", None)
    if stream is None:
        stream = _local.stream = _new(_lib.dnnl_stream_create, _engine, _IN_ORDER)
    return stream


def _scratch(size: int) -> np.ndarray:
    buf = getattr(_local, "scratch", None)
    if buf is None or buf.size < size:
        buf = _local.scratch = np.empty(max(size, 1), np.uint8)
    return buf


class _Desc:
    """A memory descriptor this module created (and destroys)."""

    def __init__(self, dims, strides=None):
        self._destroy = _lib.dnnl_memory_desc_destroy   # kept: module globals are gone at exit
        d = _Dims(*dims)
        if strides is None:
            self.handle = _new(_lib.dnnl_memory_desc_create_with_tag, len(dims), d, _F32, _ANY)
        else:
            self.handle = _new(_lib.dnnl_memory_desc_create_with_strides, len(dims), d, _F32, _Dims(*strides))

    def __del__(self):
        if getattr(self, "handle", None) is not None:
            self._destroy(self.handle)


def _nhwc_desc(shape) -> _Desc:
    """A contiguous NHWC array in oneDNN's logical NCHW order."""
    n, h, w, c = shape
    return _Desc((n, c, h, w), (h * w * c, 1, w * c, c))


def _filter_dims(shape, depthwise: bool) -> tuple:
    """oneDNN's logical dims of TF's filter: OIHW from HWIO, or for a depthwise filter
    (kh, kw, channels, multiplier) a grouped convolution's GOIHW, one group per channel."""
    kh, kw, i, o = shape
    return (i, o, 1, kh, kw) if depthwise else (o, i, kh, kw)


def _filter_desc(shape, depthwise: bool) -> _Desc:
    """TF's contiguous filter, in _filter_dims order."""
    kh, kw, i, o = shape
    strides = (o, 1, 1, kw * i * o, i * o) if depthwise else (1, o, kw * i * o, i * o)
    return _Desc(_filter_dims(shape, depthwise), strides)


class _Primitive:
    """A primitive and its descriptor; refuses the reference implementations."""

    def __init__(self, pd: ctypes.c_void_p):
        self._destroy = _lib.dnnl_primitive_destroy, _lib.dnnl_primitive_desc_destroy
        self.pd = pd
        info = ctypes.c_char_p()
        _lib.dnnl_primitive_desc_query(pd, _Q_IMPL_INFO, 0, ctypes.byref(info))
        self.impl = (info.value or b"").decode()
        if self.impl.startswith("ref"):
            _lib.dnnl_primitive_desc_destroy(pd)
            self.pd = None
            raise Unsupported(f"oneDNN has only {self.impl} for this primitive")
        self.handle = _new(_lib.dnnl_primitive_create, pd)
        self.scratch = _lib.dnnl_memory_desc_get_size(self.md(_Q_SCRATCHPAD))

    def md(self, query: int) -> ctypes.c_void_p:
        return ctypes.c_void_p(_lib.dnnl_primitive_desc_query_md(self.pd, query, 0))

    def __call__(self, args: list) -> None:
        """Runs on this thread's stream: args are (argument, memory descriptor, array) triples."""
        mems = []
        try:
            if self.scratch:
                args = args + [(_SCRATCHPAD, self.md(_Q_SCRATCHPAD), _scratch(self.scratch))]
            for _, md, arr in args:
                mems.append(_new(_lib.dnnl_memory_create, md, _engine, ctypes.c_void_p(arr.ctypes.data)))
            packed = (_Arg * len(args))(*[_Arg(a, m) for (a, _, _), m in zip(args, mems)])
            _check(_lib.dnnl_primitive_execute(self.handle, _stream(), len(args), packed), "execute")
            _check(_lib.dnnl_stream_wait(_stream()), "stream wait")
        finally:
            for m in mems:
                _lib.dnnl_memory_destroy(m)

    def __del__(self):
        if getattr(self, "handle", None) is not None:
            self._destroy[0](self.handle)
        if self.pd is not None:
            self._destroy[1](self.pd)


def _reorder(src_md, dst_md) -> Optional[_Primitive]:
    """A copy between two layouts of one tensor (TF's filter and the kernel's blocked one); None
    when the layouts are the same."""
    if _lib.dnnl_memory_desc_equal(src_md, dst_md):
        return None
    return _Primitive(_new(_lib.dnnl_reorder_primitive_desc_create, src_md, _engine, dst_md, _engine, None))


_plans: OrderedDict = OrderedDict()
_plans_lock = threading.Lock()


def _plan(key: tuple, build: Callable[[], object]):
    """The cached plan for `key`, built on first use; None (also cached) where oneDNN declines."""
    with _plans_lock:
        if key in _plans:
            _plans.move_to_end(key)
            return _plans[key]
    try:
        plan = build()
    except Unsupported:
        plan = None
    with _plans_lock:
        _plans[key] = plan
        while len(_plans) > _CACHE_SIZE:
            _plans.popitem(last=False)
    return plan


def _dense(*arrays: np.ndarray) -> Optional[list]:
    """The arrays as contiguous float32 4-D arrays, or None where oneDNN is not for them."""
    if not AVAILABLE or not all(a.dtype == np.float32 and a.size and a.ndim == 4 for a in arrays):
        return None
    return [np.ascontiguousarray(a) for a in arrays]


def _pads(pt: int, pb: int, pl: int, pr: int) -> tuple:
    """oneDNN's left and right pads. A right pad below zero is clamped: it only says the last rows
    or columns are not reached, which the output size (floor division) already implies."""
    return _Dims(pt, pl), _Dims(max(pb, 0), max(pr, 0))


def _conv_params(g) -> tuple:
    """strides, dilations (oneDNN counts from 0), left and right pads."""
    return (_Dims(g.sh, g.sw), _Dims(g.dh - 1, g.dw - 1), *_pads(g.pt, g.pb, g.pl, g.pr))


def _conv_fwd_pd(src, wany, dst, g, attr=None):
    return _new(_lib.dnnl_convolution_forward_primitive_desc_create, _engine, _FORWARD_TRAINING, _CONV_DIRECT,
                src.handle, wany.handle, None, dst.handle, *_conv_params(g), attr or _attr)


def _post_ops_attr(bias: Optional[_Desc], relu: bool):
    """A primitive attribute (the caller destroys it) with a user scratchpad and post-ops: + bias
    (a binary add, broadcast), then ReLU."""
    attr = _new(_lib.dnnl_primitive_attr_create)
    ops = _new(_lib.dnnl_post_ops_create)
    try:   # (a primitive descriptor keeps copies of its attributes and post-ops)
        if bias is not None:
            _check(_lib.dnnl_post_ops_append_binary(ops, _BINARY_ADD, bias.handle), "post-op")
        if relu:
            _check(_lib.dnnl_post_ops_append_eltwise(ops, _ELTWISE_RELU, 0.0, 0.0), "post-op")
        _check(_lib.dnnl_primitive_attr_set_scratchpad_mode(attr, _SCRATCHPAD_USER), "scratchpad mode")
        _check(_lib.dnnl_primitive_attr_set_post_ops(attr, ops), "post-ops")
    except Unsupported:
        _lib.dnnl_primitive_attr_destroy(attr)
        raise
    finally:
        _lib.dnnl_post_ops_destroy(ops)
    return attr


class _ConvPlan:
    """Primitives for one of Conv2D's (or DepthwiseConv2dNative's) three kernels at one geometry,
    with the reorder between TF's filter layout and the kernel's."""

    def __init__(self, kind: str, x_shape, w_shape, y_shape, g, depthwise: bool):
        src, dst = _nhwc_desc(x_shape), _nhwc_desc(y_shape)
        wany = _Desc(_filter_dims(w_shape, depthwise))
        self.descs = src, wany, dst
        self.shapes = tuple(x_shape), tuple(w_shape), tuple(y_shape)
        self.tf_filter = _filter_desc(w_shape, depthwise)
        if kind in _FUSED:   # Conv2D + BiasAdd (+ Relu): the bias a (1, O, 1, 1) operand of the first post-op
            o = y_shape[3]
            self.bias = _Desc((1, o, 1, 1), (o, 1, 1, 1))
            attr = _post_ops_attr(self.bias, relu=kind == "bias_relu")
            try:
                self.prim = _Primitive(_conv_fwd_pd(src, wany, dst, g, attr))
            finally:
                _lib.dnnl_primitive_attr_destroy(attr)
            self.reorder = _reorder(self.tf_filter.handle, self.prim.md(_Q_WEIGHTS))
            return
        fwd = _conv_fwd_pd(src, wany, dst, g)
        if kind == "forward":
            self.prim = _Primitive(fwd)
            self.reorder = _reorder(self.tf_filter.handle, self.prim.md(_Q_WEIGHTS))
            return
        try:
            if kind == "input":
                pd = _new(_lib.dnnl_convolution_backward_data_primitive_desc_create, _engine, _CONV_DIRECT,
                          src.handle, wany.handle, dst.handle, *_conv_params(g), fwd, _attr)
                self.prim = _Primitive(pd)
                self.reorder = _reorder(self.tf_filter.handle, self.prim.md(_Q_WEIGHTS))
            else:
                pd = _new(_lib.dnnl_convolution_backward_weights_primitive_desc_create, _engine, _CONV_DIRECT,
                          src.handle, wany.handle, None, dst.handle, *_conv_params(g), fwd, _attr)
                self.prim = _Primitive(pd)
                self.reorder = _reorder(self.prim.md(_Q_DIFF_WEIGHTS), self.tf_filter.handle)
        finally:
            _lib.dnnl_primitive_desc_destroy(fwd)

    def blocked(self, query: int) -> tuple:
        md = self.prim.md(query)
        return md, np.empty(_lib.dnnl_memory_desc_get_size(md) // 4, np.float32)

    def weights_in(self, w: np.ndarray) -> tuple:
        if self.reorder is None:
            return self.tf_filter.handle, w
        md, buf = self.blocked(_Q_WEIGHTS)
        self.reorder([(_SRC, self.tf_filter.handle, w), (_DST, md, buf)])
        return md, buf


def _conv_plan(kind: str, serial: bool, *shapes_and_geometry) -> Optional[_ConvPlan]:
    """The plan for `kind`; a serial one is made for one thread (oneDNN fixes a kernel's thread
    count when it makes the primitive), so call it inside _threads(True)."""
    return _plan((kind, serial, *shapes_and_geometry), lambda: _ConvPlan(kind, *shapes_and_geometry))


def _conv_forward(plan: _ConvPlan, x: np.ndarray, w: np.ndarray, *bias: np.ndarray, out=None) -> np.ndarray:
    """The forward convolution (into `out` when given); with a bias, a fused plan's (the bias is
    its first post-op's operand)."""
    y = np.empty(plan.shapes[2], np.float32) if out is None else out
    wmd, wbuf = plan.weights_in(w)
    plan.prim([(_SRC, plan.descs[0].handle, x), (_WEIGHTS, wmd, wbuf), (_DST, plan.descs[2].handle, y)]
              + [(_POST_OP_SRC_1 | _SRC_1, plan.bias.handle, b) for b in bias])
    return y


def _conv_input_grad(plan: _ConvPlan, w: np.ndarray, dy: np.ndarray) -> np.ndarray:
    dx = np.empty(plan.shapes[0], np.float32)
    wmd, wbuf = plan.weights_in(w)
    plan.prim([(_DIFF_DST, plan.descs[2].handle, dy), (_WEIGHTS, wmd, wbuf), (_DIFF_SRC, plan.descs[0].handle, dx)])
    return dx


def _conv_filter_grad(plan: _ConvPlan, x: np.ndarray, dy: np.ndarray) -> np.ndarray:
    dw = np.empty(plan.shapes[1], np.float32)
    md, buf = plan.blocked(_Q_DIFF_WEIGHTS) if plan.reorder is not None else (plan.tf_filter.handle, dw)
    plan.prim([(_SRC, plan.descs[0].handle, x), (_DIFF_DST, plan.descs[2].handle, dy), (_DIFF_WEIGHTS, md, buf)])
    if plan.reorder is not None:
        plan.reorder([(_SRC, md, buf), (_DST, plan.tf_filter.handle, dw)])
    return dw


# each kernel's run and the indices (into x, w, y shapes) of its two operands
_CONV_KERNELS = {"forward": (_conv_forward, (0, 1)), "input": (_conv_input_grad, (1, 2)),
                 "filter": (_conv_filter_grad, (0, 2)), "bias": (_conv_forward, (0, 1)),
                 "bias_relu": (_conv_forward, (0, 1))}
_FUSED = ("bias", "bias_relu")   # the forward convolution with BiasAdd (and Relu) as post-ops


def _conv(kind: str, a: np.ndarray, b: np.ndarray, x_shape, w_shape, y_shape, g,
          depthwise: bool) -> Optional[np.ndarray]:
    """One of a convolution's three kernels on operands a and b. Below _CONV_SERIAL_MAX
    multiply-adds (the MNIST CNN's first layer at batch 128: 25M) it runs on the calling thread
    alone where that gives the team's bits (_conv_serial_agrees): a woken OpenMP thread costs
    more than it saves there, several times more while the cores are busy (docs/PERFORMANCE.md,
    "The Keras MNIST CNN")."""
    key = (tuple(x_shape), tuple(w_shape), tuple(y_shape), g, depthwise)
    return _conv_run(kind, _conv_serial(kind, key), a, b, key)


def _conv_serial(kind: str, key: tuple) -> bool:
    """Whether `kind` at `key` runs on the calling thread alone: below _CONV_SERIAL_MAX
    multiply-adds, where that gives the team's bits (_conv)."""
    _, (kh, kw, i, _), y_shape, _, depthwise = key
    return int(np.prod(y_shape)) * kh * kw * (1 if depthwise else i) < _CONV_SERIAL_MAX and \
        _conv_serial_agrees(kind, key)


def _conv_run(kind: str, serial: bool, a: np.ndarray, b: np.ndarray, key: tuple) -> Optional[np.ndarray]:
    """`kind` on the team, or on this thread alone when `serial`. A serial filter gradient is
    summed from the gradients of the batch's parts as the team splits it (one part a thread,
    the first ones larger, added in order): that, not one pass over the batch, is what gives
    the team's bits where the team splits the batch."""
    if serial and kind == "filter" and (parts := _lib.omp_get_max_threads()) > 1:
        x_shape, w_shape, y_shape, g, depthwise = key
        dw = None
        for xs, dys in zip(np.array_split(a, parts), np.array_split(b, parts)):
            if len(xs):
                part = _conv_once(kind, True, xs, dys, (xs.shape, w_shape, dys.shape, g, depthwise))
                if part is None:
                    return None
                dw = part if dw is None else dw + part
        return dw
    return _conv_once(kind, serial, a, b, key)


def _conv_once(kind: str, serial: bool, a: np.ndarray, b: np.ndarray, key: tuple,
               *bias: np.ndarray) -> Optional[np.ndarray]:
    run = _CONV_KERNELS[kind][0]
    with _threads(serial):
        plan = _conv_plan(kind, serial, *key)
        return None if plan is None else run(plan, a, b, *bias)


def _conv_serial_agrees(kind: str, key: tuple) -> bool:
    """Whether `kind` at `key` gives the same bits on one thread as on the team (a team's forward
    splits the outputs, each summed as one thread does; its filter gradient may split the batch
    some other way than _conv_run's parts)."""
    def trial():
        a, b = _probe_operands(*(key[i] for i in _CONV_KERNELS[kind][1]))
        return lambda serial: _conv_run(kind, serial, a, b, key)
    return _serial_agrees((kind, key), trial)


def conv2d(x: np.ndarray, w: np.ndarray, g, oh: int, ow: int, depthwise: bool = False) -> Optional[np.ndarray]:
    """Conv2D of an NHWC x with an HWIO filter at geometry g (a conv_kernels.Geometry), or with
    depthwise=True DepthwiseConv2dNative with a (kh, kw, channels, multiplier) filter."""
    if (arrays := _dense(x, w)) is None:
        return None
    x, w = arrays
    y_shape = (x.shape[0], oh, ow, w.shape[3] * (w.shape[2] if depthwise else 1))
    return _conv("forward", x, w, x.shape, w.shape, y_shape, g, depthwise)


# the largest sum a fused convolution may reach: its post-op ReLU (x86's max) makes a NaN 0, where
# Relu's np.maximum keeps it, so only sums that cannot overflow to an inf (nor to inf - inf) fuse
_FUSED_SUM_MAX = 1e37


def conv2d_bias(x: np.ndarray, w: np.ndarray, bias: np.ndarray, g, oh: int, ow: int,
                relu: bool, run_calls: Optional[Callable] = None) -> Optional[np.ndarray]:
    """Conv2D then BiasAdd (then Relu, with `relu`) as one primitive whose post-ops add the bias
    to (and ReLU) each output as it is stored (grappler's _FusedConv2D): two passes over the
    output fewer. The three ops' bits, or None (the caller runs them): not for NaN or infinite
    operands, nor ones whose sums might overflow (the post-op ReLU makes a NaN 0, Relu keeps
    it), nor a shape where a probe with random operands gives other bits than the three ops.

    With `run_calls` (intra_op.run_calls: calls made at once on threads that each take the next
    one nobody has taken), the two halves of the batch are two calls, each on its thread alone,
    where a probe finds that gives the same bits: a thread that finds the other half not yet
    taken runs it itself, where a team of two waits for its second thread (below the team's
    size, the MNIST CNN's first layer, that ran on one thread alone)."""
    if (arrays := _dense(x, w)) is None or bias.dtype != np.float32 or bias.shape != (w.shape[3],):
        return None
    x, w = arrays
    bias = np.ascontiguousarray(bias)
    kh, kw, i, o = w.shape
    with np.errstate(invalid="ignore", over="ignore"):
        reach = _extent(x, run_calls) * _extent(w) * kh * kw * i + _extent(bias)
    if not reach < _FUSED_SUM_MAX:   # (NaN too)
        return None
    y_shape = (x.shape[0], oh, ow, o)
    key = (x.shape, w.shape, y_shape, g, False)
    kind = "bias_relu" if relu else "bias"
    serial = _conv_serial("forward", key)
    if not _fused_agrees(kind, serial, key):
        return None
    if run_calls is not None and x.shape[0] > 1 and _same_bits(("halves", kind, key),
                                                                lambda: _halves_pair(kind, key)):
        y = np.empty(y_shape, np.float32)
        run_calls([lambda a=a, b=b: _conv_rows(kind, x, w, bias, y, g, a, b) for a, b in _halves(x.shape[0])])
        return y
    return _conv_once(kind, serial, x, w, key, bias)


def _halves(n: int) -> tuple:
    return (0, (n + 1) // 2), ((n + 1) // 2, n)


def _conv_rows(kind: str, x: np.ndarray, w: np.ndarray, bias: np.ndarray, y: np.ndarray, g, a: int, b: int) -> None:
    """The fused forward `kind` of the batch's rows a:b into y's, on this thread alone."""
    key = ((b - a,) + x.shape[1:], w.shape, (b - a,) + y.shape[1:], g, False)
    with _threads(True):
        plan = _conv_plan(kind, True, *key)
        if plan is None:
            raise Unsupported(f"oneDNN declined {kind} at {key}")
        _conv_forward(plan, x[a:b], w, bias, out=y[a:b])


def _halves_pair(kind: str, key: tuple) -> tuple:
    """The fused `kind` at `key` of random operands whole (as conv2d_bias runs it) and by halves."""
    x, w, bias = _fused_operands(key)
    whole = _conv_once(kind, _conv_serial("forward", key), x, w, key, bias)
    y = np.empty(key[2], np.float32)
    try:
        for a, b in _halves(x.shape[0]):
            _conv_rows(kind, x, w, bias, y, key[3], a, b)
    except Unsupported:
        return whole, None
    return whole, y


def _fused_operands(key: tuple) -> tuple:
    """Random x, filter and bias of a fused convolution's shapes (`key`), for the probes."""
    return _probe_operands(*key[:2], key[1][3])


def _probe_operands(*shapes) -> list:
    """Random float32 arrays of `shapes`, uniform in [-0.5, 0.5), for the probes that compare two
    ways of computing a kernel bit for bit: sums of values of both signs and many magnitudes show
    any other order of additions, and uniform draws cost a sixth of normal ones (784 x 256: 0.25
    ms against 1.6, paid in a program's first step)."""
    rng = np.random.default_rng(0)
    return [rng.random(shape, np.float32) - np.float32(0.5) for shape in shapes]


def _extent(a: np.ndarray, run_calls: Optional[Callable] = None) -> float:
    """max |a|, NaN where a has a NaN; a large array's halves on two threads with `run_calls`
    (the second input of the MNIST CNN's second layer: 2.8M elements, two passes)."""
    if run_calls is None or a.size < _EXTENT_SPLIT_MIN:
        return max(float(a.max()), -float(a.min()))
    flat = a.reshape(-1)
    ends = run_calls([lambda half=half: _ends(half) for half in (flat[:flat.size // 2], flat[flat.size // 2:])])
    return float(np.max(np.abs(np.array(ends, np.float64))))   # (np.max: a NaN stays)


def _ends(a: np.ndarray) -> tuple:
    return float(a.max()), float(a.min())


_EXTENT_SPLIT_MIN = 1 << 20


def _fused_agrees(kind: str, serial: bool, key: tuple) -> bool:
    """Whether the fused `kind` at `key` gives the bits of the forward convolution, + bias and
    np.maximum with 0: the post-ops run on each sum once the sum is complete (a probe of random
    operands, once per key)."""
    def pair():
        x, w, bias = _fused_operands(key)
        plain = _conv_once("forward", serial, x, w, key)
        if plain is not None:
            plain = np.add(plain, bias)
            if kind == "bias_relu":
                plain = np.maximum(plain, np.float32(0))
        return _conv_once(kind, serial, x, w, key, bias), plain
    return _same_bits((kind, serial, key), pair)


def conv2d_input_grad(x_shape, w: np.ndarray, dy: np.ndarray, g, depthwise: bool = False) -> Optional[np.ndarray]:
    """Conv2DBackpropInput (DepthwiseConv2dNativeBackpropInput): the gradient for an NHWC input
    of shape x_shape. Not for fewer than _MIN_INPUT_GRAD_CHANNELS input channels (an image),
    where numpy's col2im is faster (24x24x3->64 at batch 64: 6.9 ms against oneDNN's 9.1)."""
    x_shape = tuple(x_shape)
    if (not all(x_shape) or (x_shape[3] < _MIN_INPUT_GRAD_CHANNELS and not depthwise)
            or (arrays := _dense(w, dy)) is None):
        return None
    w, dy = arrays
    return _conv("input", w, dy, x_shape, w.shape, dy.shape, g, depthwise)


def conv2d_grad_calls(x: np.ndarray, dy: np.ndarray, w_shape, g, w: Optional[np.ndarray] = None) -> Optional[list]:
    """Conv2DBackpropFilter (and with the filter `w`, Conv2DBackpropInput) of one NHWC dy as calls
    to make on threads of their own at once, each primitive on its calling thread alone:
    [input_grad,] filter_grad; or None where oneDNN is not for them or where one thread would
    give other bits than the team (the probes of _conv_serial_agrees). Where the team waits at
    its barrier for its slower half (a busy machine holds one of its threads), independent
    products each go at their own pace; TF's executor runs the ops at once so too."""
    w_shape = tuple(w_shape)
    if (arrays := _dense(x, dy, *(() if w is None else (w,)))) is None or x.shape[3] != w_shape[2] or \
            (w is not None and (w.shape != w_shape or x.shape[3] < _MIN_INPUT_GRAD_CHANNELS)):
        return None
    x, dy = arrays[:2]
    key = (x.shape, w_shape, dy.shape, g, False)
    if not _conv_serial_agrees("filter", key) or (w is not None and not _conv_serial_agrees("input", key)):
        return None
    calls = [lambda: _conv_run("filter", True, x, dy, key)]
    if w is not None:
        w = arrays[2]
        calls.insert(0, lambda: _conv_run("input", True, w, dy, key))
    return calls


def conv2d_filter_grad(x: np.ndarray, dy: np.ndarray, kh: int, kw: int, g,
                       depthwise: bool = False) -> Optional[np.ndarray]:
    """Conv2DBackpropFilter (DepthwiseConv2dNativeBackpropFilter): the filter's gradient."""
    if (arrays := _dense(x, dy)) is None:
        return None
    x, dy = arrays
    c = x.shape[3]
    w_shape = (kh, kw, c, dy.shape[3] // c if depthwise else dy.shape[3])
    return _conv("filter", x, dy, x.shape, w_shape, dy.shape, g, depthwise)


class _PoolPlan:
    """Pooling forward (and, for a gradient, the forward that records max pooling's argmax in a
    workspace, then the backward)."""

    def __init__(self, alg: int, grad: bool, x_shape, y_shape, window):
        kh, kw, sh, sw, pt, pb, pl, pr = window
        self.src, self.dst = _nhwc_desc(x_shape), _nhwc_desc(y_shape)
        params = (_Dims(sh, sw), _Dims(kh, kw), _Dims(0, 0), *_pads(pt, pb, pl, pr))
        fwd = _new(_lib.dnnl_pooling_forward_primitive_desc_create, _engine,
                   _FORWARD_TRAINING if grad else _FORWARD_INFERENCE, alg, self.src.handle, self.dst.handle,
                   *params, _attr)
        self.forward = _Primitive(fwd)
        self.workspace = _lib.dnnl_memory_desc_get_size(self.forward.md(_Q_WORKSPACE)) if grad else 0
        if grad:
            pd = _new(_lib.dnnl_pooling_backward_primitive_desc_create, _engine, alg, self.src.handle,
                      self.dst.handle, *params, fwd, _attr)
            self.backward = _Primitive(pd)


def _window(x_shape, oh, ow, kh, kw, sh, sw, pt, pl) -> tuple:
    return kh, kw, sh, sw, pt, (oh - 1) * sh + kh - x_shape[1] - pt, pl, (ow - 1) * sw + kw - x_shape[2] - pl


def _pool(alg: int, x: np.ndarray, oh: int, ow: int, *window) -> Optional[np.ndarray]:
    if (arrays := _dense(x)) is None:
        return None
    x, = arrays
    y_shape = (x.shape[0], oh, ow, x.shape[3])
    win = _window(x.shape, oh, ow, *window)
    plan = _plan(("pool", alg, x.shape, win), lambda: _PoolPlan(alg, False, x.shape, y_shape, win))
    if plan is None:
        return None
    y = np.empty(y_shape, np.float32)
    plan.forward([(_SRC, plan.src.handle, x), (_DST, plan.dst.handle, y)])
    return y


def max_pool(x: np.ndarray, oh: int, ow: int, kh, kw, sh, sw, pt, pl) -> Optional[np.ndarray]:
    """MaxPool (NHWC); padding never wins. Each window's argmax is kept beside the output while
    it lives, for max_pool_grad of that output (the forward that records it costs no more)."""
    if (arrays := _dense(x)) is None:
        return None
    given, (x,) = x, arrays
    y_shape = (x.shape[0], oh, ow, x.shape[3])
    win = _window(x.shape, oh, ow, kh, kw, sh, sw, pt, pl)
    plan = _plan(("max_grad", x.shape, y_shape, win), lambda: _PoolPlan(_POOL_MAX, True, x.shape, y_shape, win))
    if plan is None:
        return _pool(_POOL_MAX, x, oh, ow, kh, kw, sh, sw, pt, pl)
    y, ws = np.empty(y_shape, np.float32), np.empty(plan.workspace, np.uint8)
    plan.forward([(_SRC, plan.src.handle, x), (_DST, plan.dst.handle, y),
                  (_WORKSPACE, plan.forward.md(_Q_WORKSPACE), ws)])
    key = id(y)
    _ARGMAX[key] = (weakref.ref(y, lambda _: _ARGMAX.pop(key, None)), weakref.ref(given), win, ws)
    return y


# a max pooling's output, by id -> (weak references to it and to its input, its window, its argmax
# workspace)
_ARGMAX: dict = {}


def avg_pool(x: np.ndarray, oh: int, ow: int, kh, kw, sh, sw, pt, pl) -> Optional[np.ndarray]:
    """AvgPool (NHWC), dividing by the number of unpadded inputs in each window, as TF does."""
    return _pool(_POOL_AVG_EXCLUDE_PADDING, x, oh, ow, kh, kw, sh, sw, pt, pl)


def max_pool_grad(x: np.ndarray, g: np.ndarray, kh, kw, sh, sw, pt, pl,
                  y: Optional[np.ndarray] = None) -> Optional[np.ndarray]:
    """MaxPoolGrad: each output's gradient to the first maximum of its window (row-major), from
    the argmax max_pool recorded when `y` is its output for this very x and window, else found
    by pooling x again."""
    entry = _ARGMAX.get(id(y)) if y is not None else None
    given = x
    if (arrays := _dense(x, g)) is None:
        return None
    x, g = arrays
    win = _window(x.shape, g.shape[1], g.shape[2], kh, kw, sh, sw, pt, pl)
    plan = _plan(("max_grad", x.shape, g.shape, win), lambda: _PoolPlan(_POOL_MAX, True, x.shape, g.shape, win))
    if plan is None:
        return None
    ws_md = plan.forward.md(_Q_WORKSPACE)
    if entry is not None and entry[0]() is y and entry[1]() is given and entry[2] == win and y.shape == g.shape:
        ws = entry[3]
    else:
        ws = np.empty(plan.workspace, np.uint8)
        plan.forward([(_SRC, plan.src.handle, x), (_DST, plan.dst.handle, np.empty(g.shape, np.float32)),
                      (_WORKSPACE, ws_md, ws)])
    dx = np.empty(x.shape, np.float32)
    plan.backward([(_DIFF_DST, plan.dst.handle, g), (_WORKSPACE, ws_md, ws), (_DIFF_SRC, plan.src.handle, dx)])
    return dx


def avg_pool_grad(x_shape, g: np.ndarray, kh, kw, sh, sw, pt, pl) -> Optional[np.ndarray]:
    """AvgPoolGrad: each output's gradient spread evenly over the unpadded inputs of its window."""
    x_shape = tuple(x_shape)
    if not all(x_shape) or (arrays := _dense(g)) is None:
        return None
    g, = arrays
    win = _window(x_shape, g.shape[1], g.shape[2], kh, kw, sh, sw, pt, pl)
    plan = _plan(("avg_grad", x_shape, g.shape, win),
                 lambda: _PoolPlan(_POOL_AVG_EXCLUDE_PADDING, True, x_shape, g.shape, win))
    if plan is None:
        return None
    dx = np.empty(x_shape, np.float32)
    plan.backward([(_DIFF_DST, plan.dst.handle, g), (_DIFF_SRC, plan.src.handle, dx)])
    return dx


def _gemm_operand(a: np.ndarray, transpose: bool) -> tuple:
    """(row-major matrix, whether oneDNN reads it transposed, its leading dimension) for the
    operand a or a.T. Rows of dense elements a whole number of elements apart (a slice of
    columns: a Split of a kernel) are read in place, not copied: sgemm gives the same bits as
    for the copy (it does not for a single column, nor for a transposed read of a strided matrix)."""
    (rows, cols), (s0, s1), size = a.shape, a.strides, a.itemsize
    if s1 == size and s0 >= cols * size and s0 % size == 0 and rows > 1 and cols > 1:
        return a, transpose, s0 // size
    if not a.flags.c_contiguous and a.flags.f_contiguous:
        return a.T, not transpose, rows
    a = np.ascontiguousarray(a)
    return a, transpose, a.shape[1]


def matmul(a: np.ndarray, b: np.ndarray, transpose_a: bool, transpose_b: bool) -> Optional[np.ndarray]:
    """MatMul of float32 matrices by oneDNN's sgemm, which runs on the same threads as its
    convolutions; None below _GEMM_MIN multiply-adds, where numpy's own call is cheaper.

    Products below _GEMM_TEAM_MIN multiply-adds (an LSTM step's 32x128x128) run on the calling
    thread alone: waking a second thread costs more than it saves. Products below _GEMM_SERIAL_MAX
    (an MLP's at batch 100, 100x784x256; the GAN's 128x784x256) run on the team only while the
    cores its other threads need are free, and only where the team gives the calling thread's bits
    for their shape and layout (_team_gives_serial_bits: a team splits some products along k, and
    adds in another order), so their results are the same bits on machines of any core count. On
    a busy machine a team's static split waits for its woken thread to get a core, 3-10x longer
    (docs/PERFORMANCE.md, "Whole programs"). A larger product runs on the team while its cores are
    free, else on the calling thread where the two give the same bits; else on the team."""
    if not AVAILABLE or a.dtype != np.float32 or b.dtype != np.float32 or a.ndim != 2 or b.ndim != 2:
        return None
    m, k = a.shape[::-1] if transpose_a else a.shape
    k2, n = b.shape[::-1] if transpose_b else b.shape
    size = m * n * k
    if k != k2 or size < _GEMM_MIN:
        return None
    (a, ta, lda), (b, tb, ldb) = _gemm_operand(a, transpose_a), _gemm_operand(b, transpose_b)
    gemm = (b"T" if ta else b"N", b"T" if tb else b"N", m, n, k, lda, ldb)
    team = 1 if size < _GEMM_TEAM_MIN else _lib.omp_get_max_threads()
    if team == 1 or (size < _GEMM_SERIAL_MAX and (intra_op.thread_share() or team) < team):
        serial = True   # (its share of the cores is one thread's: a thread's first team, the probe's
        # too, is a second set of OpenMP threads, and past the cores they no longer spin: _load)
    else:   # (the probe first, whatever the load: in the first step that meets the shape, always)
        same = _team_gives_serial_bits(gemm, team, a, b)
        serial = (_cores_taken(team) or not same) if size < _GEMM_SERIAL_MAX else (_cores_taken(team) and same)
    return _sgemm(gemm, a, b, serial)


def _sgemm(gemm: tuple, a: np.ndarray, b: np.ndarray, serial: bool) -> np.ndarray:
    """c = op(a) op(b) by sgemm (`gemm`: its transposes, m, n, k and leading dimensions), on the
    calling thread alone when `serial`, else on the OpenMP team."""
    ta, tb, m, n, k, lda, ldb = gemm
    c = np.empty((m, n), np.float32)
    # (_threads inlined: a generator's context costs ~1.5 us, a tenth of an LSTM's 32x128x128 product)
    team = _lib.omp_get_max_threads() if serial else 1
    if team != 1:
        _lib.omp_set_num_threads(1)
    try:
        _check(_lib.dnnl_sgemm(ta, tb, m, n, k, 1.0, _address(a), lda, _address(b), ldb, 0.0, _address(c), n), "sgemm")
    finally:
        if team != 1:
            _lib.omp_set_num_threads(team)
        else:
            _team_spins[0] = time.perf_counter() + _TEAM_SPIN_S
    return c


@contextlib.contextmanager
def _threads(serial: bool):
    """Within it, oneDNN's calls from this thread run on this thread alone when `serial` (this
    thread's own OpenMP setting, restored after), else on the team."""
    team = _lib.omp_get_max_threads() if serial else 1
    if team != 1:
        _lib.omp_set_num_threads(1)
    try:
        yield
    finally:
        if team != 1:
            _lib.omp_set_num_threads(team)
        else:
            _team_spins[0] = time.perf_counter() + _TEAM_SPIN_S


def _address(a: np.ndarray) -> int:
    """The address of a's first element. A writable dense array lends ctypes its buffer, in a
    quarter of `a.ctypes.data`'s time (1 us, three times for each of an LSTM's ~2,000 products a
    batch); a read-only or strided one (a slice of a kernel's columns) does not."""
    try:
        return ctypes.addressof(ctypes.c_char.from_buffer(a))
    except (TypeError, ValueError, BufferError):
        return a.ctypes.data


# sgemm's (transposes, m, n, k, leading dimensions, team size), or a convolution's (kernel, shapes and geometry)
# -> whether the team and the calling thread give the same bits; (fused kind, serial, shapes and
# geometry) -> whether a fused convolution gives the unfused ops' bits (_fused_agrees)
_SERIAL_BITS: dict = {}


def _team_gives_serial_bits(gemm: tuple, team: int, a: np.ndarray, b: np.ndarray) -> bool:
    """Whether sgemm gives the same bits on the team (of `team` threads) as on the calling thread
    for this shape and layout: a team that splits the rows or columns of the result runs each
    element's sum as one thread does, one that splits k adds the partial sums in another order."""
    def trial():
        # the operands' layouts: their rows as far apart (empty_like of a slice of columns is dense,
        # and sgemm read it with the slice's leading dimension, past its end)
        pa, pb = _probe_operands((a.shape[0], gemm[5]), (b.shape[0], gemm[6]))
        pa, pb = pa[:, :a.shape[1]], pb[:, :b.shape[1]]
        return lambda serial: _sgemm(gemm, pa, pb, serial)
    return _serial_agrees(gemm + (team,), trial)   # (a team of another size splits otherwise)


def _serial_agrees(key: tuple, trial: Callable[[], Callable[[bool], Optional[np.ndarray]]]) -> bool:
    """Whether a kernel gives the same bits on the calling thread alone as on the team, found once
    per `key`: `trial()` makes random operands of the key's shapes and layout and returns
    run(serial), which random operands show any other order of sums by."""
    def pair():
        run = trial()
        return run(False), run(True)
    return _same_bits(key, pair)


def _same_bits(key: tuple, pair: Callable[[], tuple]) -> bool:
    """Whether the two arrays pair() computes (None: a kernel that did not run) have the same
    bits, found once per `key` (in _SERIAL_BITS)."""
    same = _SERIAL_BITS.get(key)
    if same is None:
        a, b = pair()
        same = _SERIAL_BITS[key] = a is not None and b is not None and bool(
            np.array_equal(a.view(np.int32), b.view(np.int32)))
    return same


def _cores_taken(team: int) -> bool:
    """Whether fewer cores are free now than a team of `team` threads needs beside the calling
    thread: the calling thread's share of the cores in a parallel step is smaller (its other
    threads run ops beside it: intra_op.thread_share), or the tasks running or ready to run
    (/proc/loadavg's fourth field, this thread among them, the last team's idle threads not while
    they spin after it: they are the next team's) outnumber the cores. On a busy
    machine a team's static split waits for its slowest thread, which waits for a core (a 51M
    multiply-add product took 4-10 ms against 0.5 quiet; a GAN step's two parts, each with its
    products on a team, 8.4 ms against 7.1 with them on their own threads)."""
    global _loadavg
    if team <= 1:
        return False
    share = intra_op.thread_share()
    if share is not None and share < team:
        return True
    try:
        if _loadavg is None:   # (kept open: pread of an open file is a sixth of open, read and close's 17 us)
            _loadavg = os.open("/proc/loadavg", os.O_RDONLY | os.O_CLOEXEC)
        running = int(os.pread(_loadavg, 128, 0).split()[3].split(b"/")[0])
    except (OSError, ValueError, IndexError):
        return False
    if time.perf_counter() < _team_spins[0]:   # (the last team's idle threads, spinning: ours to use)
        running -= team - 1
    return _CPUS - running < team - 1


_loadavg: Optional[int] = None   # /proc/loadavg's descriptor, once opened
_team_spins = [0.0]   # until when the last team's idle threads spin (time.perf_counter)
_CPUS = os.cpu_count() or 1


class _BinaryPlan:
    """dst = src0 <alg> src1 (src1 broadcast), then dst = dst <alg_i> operand_i for each post-op."""

    def __init__(self, alg: int, shape0: tuple, shape1: tuple, posts: tuple = ()):
        self.src0 = _Desc(shape0, _row_major(shape0))
        self.src1 = _Desc(shape1, _row_major(shape1))
        self.post_descs = [_Desc(shape, _row_major(shape)) for _, shape in posts]
        attr = _attr if not posts else _new(_lib.dnnl_primitive_attr_create)
        ops = _new(_lib.dnnl_post_ops_create) if posts else None
        try:   # a primitive descriptor keeps copies of its attributes and post-ops
            for (post, _), desc in zip(posts, self.post_descs):
                _check(_lib.dnnl_post_ops_append_binary(ops, post, desc.handle), "post-op")
            if posts:
                _check(_lib.dnnl_primitive_attr_set_scratchpad_mode(attr, _SCRATCHPAD_USER), "scratchpad mode")
                _check(_lib.dnnl_primitive_attr_set_post_ops(attr, ops), "post-ops")
            self.prim = _Primitive(_new(_lib.dnnl_binary_primitive_desc_create, _engine, alg, self.src0.handle,
                                        self.src1.handle, self.src0.handle, attr))
        finally:
            if posts:
                _lib.dnnl_post_ops_destroy(ops)
                _lib.dnnl_primitive_attr_destroy(attr)

    def __call__(self, src0: np.ndarray, src1: np.ndarray, *operands: np.ndarray, out=None) -> np.ndarray:
        dst = np.empty_like(src0) if out is None else out
        self.prim([(_SRC, self.src0.handle, src0), (_SRC_1, self.src1.handle, src1), (_DST, self.src0.handle, dst)]
                  + [(_POST_OP_SRC_1 * (i + 1) | _SRC_1, d.handle, a)
                     for i, (d, a) in enumerate(zip(self.post_descs, operands))])
        return dst


def _row_major(shape) -> tuple:
    return tuple(int(np.prod(shape[i + 1:])) for i in range(len(shape)))


def _eltwise_ok(*arrays: np.ndarray, least: int = _ELTWISE_MIN) -> bool:
    """Whether an elementwise pass over `arrays` is oneDNN's: float32, contiguous, the first of
    `least` elements or more."""
    return AVAILABLE and arrays[0].size >= least and all(a.dtype == np.float32 and a.flags.c_contiguous for a in arrays)


def bias_add(x: np.ndarray, b: np.ndarray) -> Optional[np.ndarray]:
    """BiasAdd (channels last): x + b in one pass on oneDNN's threads."""
    if not _eltwise_ok(x, b) or b.ndim != 1 or x.ndim < 2 or x.shape[-1] != b.shape[0]:
        return None
    shape = (x.size // b.shape[0], b.shape[0])
    plan = _plan(("bias_add", shape), lambda: _BinaryPlan(_BINARY_ADD, shape, (1, shape[1])))
    return None if plan is None else plan(x.reshape(shape), b).reshape(x.shape)


def logistic(x: np.ndarray) -> Optional[np.ndarray]:
    """Sigmoid of a float32 array in one pass of oneDNN's logistic, within 5 ulp of the exact
    value (TF's Eigen kernel: within 6); None where numpy's kernel is for it (small, other dtypes,
    not contiguous). Its elements are independent, so the team gives the calling thread's bits.
    Below x = -86.99 its exp underflows to 0 where the value is still a normal float: callers
    compute those elements otherwise."""
    if not _eltwise_ok(x, least=_LOGISTIC_MIN):
        return None
    shape = (x.size,)

    def build():
        desc = _Desc(shape, (1,))
        return desc, _Primitive(_new(_lib.dnnl_eltwise_forward_primitive_desc_create, _engine, _FORWARD_INFERENCE,
                                     _ELTWISE_LOGISTIC, desc.handle, desc.handle, 0.0, 0.0, _attr))
    plan = _plan(("logistic", shape), build)
    if plan is None:
        return None
    desc, prim = plan
    y = np.empty_like(x)
    with _threads(x.size < _ELTWISE_TEAM_MIN or _cores_taken(_lib.omp_get_max_threads())):
        prim([(_SRC, desc.handle, x), (_DST, desc.handle, y)])
    return y


_MINUS_ONE, _ZERO = np.full(1, -1, np.float32), np.zeros(1, np.float32)


def relu_grad(g: np.ndarray, y: np.ndarray, into_g: bool = False) -> Optional[np.ndarray]:
    """ReluGrad from Relu's output y: g * (y > 0), TF's multiply (a NaN or infinite g gives NaN
    where y <= 0; a NaN y gives 0), in one pass on oneDNN's threads: -y, then < 0 (oneDNN's
    comparisons other than < and <= are true for NaN), then times g. With `into_g`, written over
    g (each element read before it is written), as TF forwards the gradient's buffer: no new
    output whose lines the stores must first read."""
    if not _eltwise_ok(g, y) or g.shape != y.shape:
        return None
    shape = (g.size,)
    plan = _plan(("relu_grad", shape),
                 lambda: _BinaryPlan(_BINARY_MUL, shape, (1,), ((_BINARY_LT, (1,)), (_BINARY_MUL, shape))))
    if plan is None:
        return None
    flat = g.reshape(shape)
    return plan(y.reshape(shape), _MINUS_ONE, _ZERO, flat, out=flat if into_g else None).reshape(g.shape)


# sgemm makes its kernels on its first call, whatever the shape (25 ms of a process's first step
# here): a thread of their own makes them when the library loads, while the graph is built.
_EIGHTS = np.ones((8, 8), np.float32)
_kernels_made = threading.Thread(target=_sgemm, args=((b"N", b"N", 8, 8, 8, 8, 8), _EIGHTS, _EIGHTS, True),
                                 name="tensorweave-onednn-kernels", daemon=True)
if AVAILABLE:
    _kernels_made.start()
