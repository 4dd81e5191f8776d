"""The GPUs of this process, and how values move between host memory and theirs.

A GPU's tensors are CuPy arrays; a kernel is written once against the array module of its
inputs (ops/helpers.array_module: CuPy's for device arrays, numpy's otherwise) and runs on both. Which
GPUs exist follows TF: those CUDA shows the process (`CUDA_VISIBLE_DEVICES`), narrowed and
renumbered by `ConfigProto.gpu_options.visible_device_list`, none when
`ConfigProto.device_count["GPU"]` is 0 or CuPy (the extra `gpu`) is missing.

`TENSORWEAVE_STANDIN_GPUS=N` gives a process N stand-in GPUs instead: their memory is host
memory marked as theirs (`StandInArray`), so a machine without a GPU (CI) runs the placement
rules and the host/device copy plan through them, and a value on the wrong side of a device
boundary is an error naming the op.
"""
from __future__ import annotations

import os
from typing import Optional

import numpy as np

from tensorweave.framework import errors
from tensorweave.ops.helpers import array_module, cupy  # noqa: F401 (the kernels. xp)

STANDIN_ENV = "TENSORWEAVE_STANDIN_GPUS"
_MOVABLE = frozenset("biufc")   # dtype kinds with device memory (strings and objects stay on the host)


class StandInArray(np.ndarray):
    """A stand-in GPU's array: host memory that the copy plan treats as device memory."""


def to_host(value):
    """`value` in host memory: a device array copied back, anything else as it is."""
    if cupy is not None and isinstance(value, cupy.ndarray):
        return value.get()
    if type(value) is StandInArray:
        return value.view(np.ndarray).copy()
    return value


def on_device(value) -> bool:
    return type(value) is StandInArray or (cupy is not None and isinstance(value, cupy.ndarray))


class Gpu:
    """One GPU of this process: `/device:GPU:<index>`, CUDA device `ordinal`."""

    def __init__(self, index: int, ordinal: int):
        self.index, self.ordinal = index, ordinal
        self.name = f"GPU:{index}"

    def __repr__(self) -> str:
        return f"<{type(self).__name__} /device:{self.name} (CUDA device {self.ordinal})>"

    def to_device(self, value):
        """`value` in this GPU's memory (one copy; a value already there as it is)."""
        if isinstance(value, cupy.ndarray):
            if value.device.id == self.ordinal:
                return value
            with cupy.cuda.Device(self.ordinal):
                return cupy.array(value, copy=True)
        if isinstance(value, (np.ndarray, np.generic)) and value.dtype.kind in _MOVABLE:
            with cupy.cuda.Device(self.ordinal):
                return cupy.asarray(value)
        return value

    def kernel(self, fn, node, host_in: tuple = (), host_out: tuple = ()):
        """`fn` (a kernel) run with this GPU current; a host array it returns for an output
        not in `host_out` moves here. (`host_in`: the argument positions in host memory.)"""
        device, move = cupy.cuda.Device(self.ordinal), self._mover(host_out)

        def call(*args):
            with device:
                return move(fn(*args))
        return call

    def _mover(self, host_out: tuple):
        to_device = self.to_device
        if not host_out:
            return lambda out: tuple(map(to_device, out)) if type(out) is tuple else to_device(out)
        return lambda out: tuple(v if i in host_out else to_device(v) for i, v in enumerate(out)) \
            if type(out) is tuple else out if 0 in host_out else to_device(out)

    def memory_info(self) -> tuple:
        """(free, total) bytes of this GPU."""
        with cupy.cuda.Device(self.ordinal):
            return cupy.cuda.runtime.memGetInfo()


class StandInGpu(Gpu):
    """A GPU made of host memory (module docstring)."""

    def to_device(self, value):
        if type(value) is StandInArray:
            return value
        if isinstance(value, (np.ndarray, np.generic)) and value.dtype.kind in _MOVABLE:
            return np.array(value).view(StandInArray)
        return value

    def kernel(self, fn, node, host_in: tuple = (), host_out: tuple = ()):
        move = self._mover(host_out)

        def call(*args):
            for i, a in enumerate(args):
                if type(a) is np.ndarray and a.dtype.kind in _MOVABLE and i not in host_in:
                    raise errors.InternalError(node, node.name, f"{node.name} ({node.op}) on /device:{self.name} "
                                                                "was given a value in host memory")
            return move(fn(*args))
        return call

    def memory_info(self) -> tuple:
        return (1 << 30, 1 << 30)


def host_kernel(fn, node):
    """A CPU kernel of a process with stand-in GPUs: a device array given to it is an error."""
    def call(*args):
        for a in args:
            if type(a) is StandInArray:
                raise errors.InternalError(node, node.name, f"{node.name} ({node.op}) on the CPU was given a value in "
                                                            "a GPU's memory")
        return fn(*args)
    return call


def physical_gpu_count() -> int:
    """The GPUs CUDA shows this process (after CUDA_VISIBLE_DEVICES), or the stand-ins'."""
    standin = os.environ.get(STANDIN_ENV)
    if standin:
        return int(standin)
    if cupy is None:
        return 0
    try:
        return cupy.cuda.runtime.getDeviceCount()
    except cupy.cuda.runtime.CUDARuntimeError:   # no driver, no device
        return 0


def visible_gpus(config=None) -> list:
    """This process's GPUs as a session with ConfigProto `config` sees them: /device:GPU:i in
    the order of gpu_options.visible_device_list (CUDA ordinals), none when device_count["GPU"]
    is 0. A visible_device_list entry past the GPUs present is InvalidArgumentError, as in TF."""
    count = physical_gpu_count()
    ordinals = list(range(count))
    visible = _visible_list(config)
    if visible is not None:
        for o in visible:
            if o >= count:
                raise errors.InvalidArgumentError(
                    None, None, f"'visible_device_list' listed an invalid GPU id '{o}' but visible device count is "
                                f"{count}")
        ordinals = visible
    limit = (getattr(config, "device_count", None) or {}).get("GPU") if config is not None else None
    if limit is not None:
        ordinals = ordinals[:max(0, int(limit))]
    cls = StandInGpu if os.environ.get(STANDIN_ENV) else Gpu
    return [cls(i, o) for i, o in enumerate(ordinals)]


def _visible_list(config) -> Optional[list]:
    options = getattr(config, "gpu_options", None) if config is not None else None
    text = (getattr(options, "visible_device_list", "") or "") if options is not None else ""
    if not text.strip():
        return None
    try:
        return [int(x) for x in text.split(",")]
    except ValueError:
        raise errors.InvalidArgumentError(
            None, None, f"Could not parse entry in 'visible_device_list': '{text}'") from None
