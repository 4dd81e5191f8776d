"""cuDNN's convolutions for a GPU's Conv2D and its two gradients, through NVIDIA's cuDNN frontend.

Optional, in the extra `gpu` (`nvidia-cudnn-frontend` and a `nvidia-cudnn-cu*` wheel holding
libcudnn): CuPy 14 dropped its own cuDNN binding. Each function takes CuPy arrays in NHWC and
returns a CuPy array, or None where cuDNN does not apply: the frontend or libcudnn missing,
TENSORWEAVE_CUDNN=0, host arrays (a stand-in GPU's), a dtype other than float16/32/64, an empty
tensor, a geometry no cuDNN engine takes. The caller then runs im2col's kernel (ops/nn/im2col.py).

An operation graph is built once per kind, shapes, geometry, dtype and GPU (a bounded cache; a
failed build is remembered too) with the heuristics' first plan that supports it. float32 and
float64 plans may not use tensor cores: on them cuDNN computes a float32 convolution in TF32 (10
bits of mantissa), where TF 1.x's are float32 throughout. float16 computes in float32, as TF's
cuDNN calls do. The filter goes in as cuDNN's KRSC (TF's HWIO transposed: one copy of the small
tensor). Kernels run on CuPy's current stream with a handle per GPU; one lock per GPU keeps two
threads off a handle at once, as cuDNN asks.
"""
from __future__ import annotations

import os
import threading
from collections import OrderedDict
from dataclasses import replace
from typing import Optional

from tensorweave.ops.helpers import cupy

_CACHE_SIZE = 128          # graphs kept, least recently used dropped
_COMPUTE = {"float16": "FLOAT", "float32": "FLOAT", "float64": "DOUBLE"}
_IO = {"float16": "HALF", "float32": "FLOAT", "float64": "DOUBLE"}

_api = None                # the `cudnn` module once loaded; False where it cannot be
_devices: dict = {}        # CUDA ordinal -> _Device
_devices_lock = threading.Lock()


def api():
    """The cuDNN frontend module, or None where it is missing, disabled or without a libcudnn."""
    global _api
    if _api is None:
        _api = False
        if cupy is not None and os.environ.get("TENSORWEAVE_CUDNN", "1") != "0":
            try:
                import cudnn
                _api = cudnn
            except Exception:  # noqa: BLE001 - a frontend that cannot load (no libcudnn, a mismatched one) leaves im2col
                pass
    return _api or None


class _Device:
    """One GPU's cuDNN handle, its graphs and the lock that serializes their use."""

    def __init__(self, handle):
        self.handle = handle
        self.graphs: OrderedDict = OrderedDict()
        self.lock = threading.Lock()


def _device() -> Optional[_Device]:
    """The current GPU's, or None where cuDNN cannot make a handle on it (a libcudnn this driver
    does not run: im2col's kernels run there)."""
    ordinal = cupy.cuda.Device().id
    with _devices_lock:
        if ordinal not in _devices:
            try:
                _devices[ordinal] = _Device(api().create_handle())
            except Exception:  # noqa: BLE001 - cudnnCreate's failure, whatever its status: im2col runs
                _devices[ordinal] = None
        return _devices[ordinal]


class _Graph:
    """A built convolution graph: the uids of its operands in call order, its workspace size.
    (It runs with the operands' addresses in that order: the frontend's quickest call.)"""

    def __init__(self, graph, uids: tuple, workspace: int):
        self.graph, self.uids, self.workspace = graph, uids, workspace


def _build(cudnn, handle, kind: str, shapes: tuple, g, dtype: str) -> _Graph:
    io = getattr(cudnn.data_type, _IO[dtype])
    compute = getattr(cudnn.data_type, _COMPUTE[dtype])
    graph = cudnn.pygraph(io_data_type=io, intermediate_data_type=compute, compute_data_type=compute,
                          handle=handle)

    def nhwc(name, n, h, w, c):   # cuDNN's dims are NCHW whatever the layout: the strides say NHWC
        return graph.tensor(name=name, dim=[n, c, h, w], stride=[h * w * c, 1, w * c, c], data_type=io)

    (n, h, w, ci), (kh, kw, _, co), (_, oh, ow, _) = shapes
    geometry = dict(pre_padding=[g.pt, g.pl], post_padding=[g.pb, g.pr], stride=[g.sh, g.sw],
                    dilation=[g.dh, g.dw], compute_data_type=compute)
    if kind == "fprop":
        a, b = nhwc("x", n, h, w, ci), nhwc("w", co, kh, kw, ci)
        out, dims = graph.conv_fprop(image=a, weight=b, **geometry), (n, oh, ow, co)
    elif kind == "dgrad":
        a, b = nhwc("dy", n, oh, ow, co), nhwc("w", co, kh, kw, ci)
        out, dims = graph.conv_dgrad(loss=a, filter=b, **geometry), (n, h, w, ci)
    else:
        a, b = nhwc("x", n, h, w, ci), nhwc("dy", n, oh, ow, co)
        out, dims = graph.conv_wgrad(image=a, loss=b, **geometry), (co, kh, kw, ci)
    d0, d1, d2, d3 = dims
    out.set_output(True).set_data_type(io).set_dim([d0, d3, d1, d2]).set_stride([d1 * d2 * d3, 1, d2 * d3, d3])
    graph.validate()
    graph.build_operation_graph()
    graph.create_execution_plans([cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])
    if dtype != "float16":
        graph.deselect_numeric_notes([cudnn.numerical_note.TENSOR_CORE, cudnn.numerical_note.DOWN_CONVERT_INPUTS])
    graph.check_support()
    graph.build_plans()
    return _Graph(graph, (a.uid, b.uid, out.uid), graph.get_workspace_size())


def _takes(*arrays) -> bool:
    """Whether cuDNN is here and takes arrays of these types (CuPy's, of one float dtype)."""
    if api() is None or any(type(a) is not cupy.ndarray for a in arrays):
        return False
    return arrays[0].dtype.name in _IO and all(a.dtype == arrays[0].dtype for a in arrays)


def _run(kind: str, a, b, shapes: tuple, g):
    """`kind`'s convolution of a and b (NHWC; a filter in KRSC) of these (input, filter, output)
    shapes, into a new array; None where cuDNN does not build it."""
    cudnn = api()
    (n, h, w, ci), (kh, kw, _, co), y_shape = shapes
    out_shape = {"fprop": y_shape, "dgrad": (n, h, w, ci), "wgrad": (co, kh, kw, ci)}[kind]
    if 0 in out_shape or 0 in a.shape or 0 in b.shape:
        return None
    device = _device()
    if device is None:
        return None
    key = (kind, shapes, g, a.dtype.name)
    with device.lock:
        built = device.graphs.get(key)
        if built is None and key not in device.graphs:
            try:
                built = _build(cudnn, device.handle, kind, shapes, g, a.dtype.name)
            except Exception:  # noqa: BLE001 - any engine's refusal (unsupported geometry, layout, dtype): im2col runs
                built = None
            device.graphs[key] = built
            if len(device.graphs) > _CACHE_SIZE:
                device.graphs.popitem(last=False)
        else:
            device.graphs.move_to_end(key)
        if built is None:
            return None
        a, b = cupy.ascontiguousarray(a), cupy.ascontiguousarray(b)
        out = cupy.empty(out_shape, a.dtype)
        workspace = cupy.empty(max(1, built.workspace), cupy.uint8)
        cudnn.set_stream(device.handle, cupy.cuda.get_current_stream().ptr)
        built.graph.execute((a.data.ptr, b.data.ptr, out.data.ptr), workspace.data.ptr, handle=device.handle,
                            tensor_uids=built.uids)
    return out


def _even(g):
    """TF's way with cuDNN: padding that differs between the two sides of an axis (SAME's extra
    row at the bottom, explicit padding) is cut to the smaller side's, and the excess is added to
    the input as zeros; some cuDNN engines give wrong filter gradients for uneven padding.
    (geometry with even padding, the input's (top, bottom, left, right) extra zeros)"""
    top, left = min(g.pt, g.pb), min(g.pl, g.pr)
    return replace(g, pt=top, pb=top, pl=left, pr=left), (g.pt - top, g.pb - top, g.pl - left, g.pr - left)


def _pad(x, extra: tuple):
    top, bottom, left, right = extra
    return cupy.pad(x, ((0, 0), (top, bottom), (left, right), (0, 0))) if any(extra) else x


def _krsc(w):
    return w.transpose(3, 0, 1, 2)


def conv2d(x, w, g, oh: int, ow: int) -> Optional[object]:
    """Conv2D of x (NHWC) and w (HWIO): (n, oh, ow, out_channels)."""
    if not _takes(x, w):
        return None
    g, extra = _even(g)
    x = _pad(x, extra)
    return _run("fprop", x, _krsc(w), (x.shape, w.shape, (x.shape[0], oh, ow, w.shape[3])), g)


def conv2d_input_grad(x_shape, w, dy, g) -> Optional[object]:
    """Conv2DBackpropInput: the gradient to an input of x_shape (NHWC) from dy (NHWC)."""
    if not _takes(w, dy):
        return None
    g, (top, bottom, left, right) = _even(g)
    n, h, wd, c = x_shape
    dx = _run("dgrad", dy, _krsc(w), ((n, h + top + bottom, wd + left + right, c), w.shape, dy.shape), g)
    if dx is None or not (top or bottom or left or right):
        return dx
    return cupy.ascontiguousarray(dx[:, top:top + h, left:left + wd])


def conv2d_filter_grad(x, dy, kh: int, kw: int, g) -> Optional[object]:
    """Conv2DBackpropFilter: the gradient to a (kh, kw, in, out) filter, HWIO."""
    if not _takes(x, dy):
        return None
    g, extra = _even(g)
    x = _pad(x, extra)
    dw = _run("wgrad", x, dy, (x.shape, (kh, kw, x.shape[3], dy.shape[3]), dy.shape), g)
    return None if dw is None else cupy.ascontiguousarray(dw.transpose(1, 2, 3, 0))
