"""The GPUs of this process, and how values move between host memory and theirs.

A GPU's tensors are CuPy arrays; a kernel is written once against the array module of its
inputs (ops/helpers.array_module: CuPy's for device arrays, numpy's otherwise) and runs on both. Which
GPUs exist follows TF: those CUDA shows the process (`CUDA_VISIBLE_DEVICES`), narrowed and
renumbered by `ConfigProto.gpu_options.visible_device_list`, none when
`ConfigProto.device_count["GPU"]` is 0 or CuPy (the extra `gpu`) is missing.

`TENSORWEAVE_STANDIN_GPUS=N` gives a process N stand-in GPUs instead: their memory is host
memory marked as theirs (`StandInArray`), so a machine without a GPU (CI) runs the placement
rules and the host/device copy plan through them, and a value on the wrong side of a device
boundary is an error naming the op. A stand-in has a nominal memory size (1 GiB, or the bytes
`TENSORWEAVE_STANDIN_GPU_MEMORY` says) and counts the bytes its live arrays hold, so the memory
options bound it as they bound a GPU.

Memory (TF's GPUOptions): one pool per GPU per process, bounded when the process first makes that
GPU (a Session's or Server's ConfigProto; later ones share it, as TF's one allocator per GPU).
`per_process_gpu_memory_fraction` caps it at that fraction of the GPU's memory (CuPy's default
memory pool's `set_limit`); without it the pool may take the whole GPU. `allow_growth` needs
nothing here: CuPy's pool always grows on demand, where TF without allow_growth takes the fraction
up front, so the limit alone is what the two options amount to. An allocation past the limit is
OUT_OF_MEMORY, which the executor reports as ResourceExhaustedError naming the op and the size.
"""
from __future__ import annotations

import os
import threading
import weakref
from typing import Optional

import numpy as np

from tensorweave.framework import errors
from tensorweave.ops.helpers import array_module, cupy  # noqa: F401 (the kernels. xp)

STANDIN_ENV = "TENSORWEAVE_STANDIN_GPUS"
_MOVABLE = frozenset("biufc")   # dtype kinds with device memory (strings and objects stay on the host)
STANDIN_MEMORY_ENV = "TENSORWEAVE_STANDIN_GPU_MEMORY"   # a stand-in GPU's nominal memory, bytes
STANDIN_MEMORY_BYTES = 1 << 30                          # ... when the variable is not set


class DeviceOutOfMemory(MemoryError):
    """An allocation past a GPU's memory pool limit: `size` bytes asked (of `shape` and `dtype`
    when known) with `in_use` bytes already held; CuPy's OutOfMemoryError says the same."""

    def __init__(self, size: int, in_use: int, limit: int, shape=None, dtype=None):
        super().__init__(f"Out of memory allocating {size:,} bytes (allocated so far: {in_use:,} bytes, limit set "
                         f"to: {limit:,} bytes).")
        self.size, self.shape, self.dtype = size, shape, dtype


OUT_OF_MEMORY = (DeviceOutOfMemory,) + ((cupy.cuda.memory.OutOfMemoryError,) if cupy is not None else ())


_TF_TYPE_NAMES = {"float32": "float", "float64": "double", "float16": "half"}   # TF's DataTypeString


def out_of_memory_message(e: MemoryError, device: str) -> str:
    """TF's words for an allocation that failed on `device` (e: one of OUT_OF_MEMORY)."""
    shape = getattr(e, "shape", None)
    if shape is None:   # (CuPy's own error: the size alone is known)
        return f"OOM when allocating tensor on {device}: {e}"
    name = np.dtype(e.dtype).name
    return (f"OOM when allocating tensor with shape[{','.join(map(str, shape))}] and type "
            f"{_TF_TYPE_NAMES.get(name, name)} on {device}: {e}")


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
        self.memory_limit = 0   # bytes its pool may hold (visible_gpus sets it)

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
                try:
                    return cupy.asarray(value)
                except cupy.cuda.memory.OutOfMemoryError as e:   # (here the shape is known: say it)
                    pool = cupy.get_default_memory_pool()
                    raise DeviceOutOfMemory(value.nbytes, pool.total_bytes(), pool.get_limit(), value.shape,
                                            value.dtype) from e
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

    def limit_pool(self, limit: int) -> None:
        """Bounds this GPU's memory pool (CuPy's default pool, per device) at `limit` bytes."""
        with cupy.cuda.Device(self.ordinal):
            cupy.get_default_memory_pool().set_limit(size=limit)

    def description(self) -> str:
        """device_lib's physical_device_desc, as TF words it for a CUDA GPU ("device:" its CUDA ordinal)."""
        props = cupy.cuda.runtime.getDeviceProperties(self.ordinal)
        name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
        bus = f"{props.get('pciDomainID', 0):04x}:{props.get('pciBusID', 0):02x}:{props.get('pciDeviceID', 0):02x}.0"
        return (f"device: {self.ordinal}, name: {name}, pci bus id: {bus}, "
                f"compute capability: {props['major']}.{props['minor']}")


class _StandInMemory:
    """A stand-in GPU's memory: `total` nominal bytes, a pool of at most `limit` of them holding
    its live arrays (each buffer counted once, released when it is collected)."""

    def __init__(self, total: int):
        self.total = self.limit = total
        self.in_use = 0
        self._live: set = set()
        self._lock = threading.Lock()

    def check(self, array: np.ndarray) -> None:
        """Refuses a new buffer for `array` past the limit (before it is made)."""
        if self.in_use + array.nbytes > self.limit:
            raise DeviceOutOfMemory(array.nbytes, self.in_use, self.limit, array.shape, array.dtype)

    def hold(self, array: np.ndarray) -> None:
        buffer = array
        while isinstance(buffer.base, np.ndarray):
            buffer = buffer.base
        with self._lock:
            if id(buffer) in self._live:
                return
            self.check(buffer)
            self._live.add(id(buffer))
            self.in_use += buffer.nbytes
        weakref.finalize(buffer, self._release, id(buffer), buffer.nbytes)

    def _release(self, key: int, nbytes: int) -> None:
        with self._lock:
            self._live.discard(key)
            self.in_use -= nbytes


_STANDIN_MEMORY: dict = {}   # stand-in ordinal -> its _StandInMemory (one pool per GPU per process)


class StandInGpu(Gpu):
    """A GPU made of host memory (module docstring)."""

    def to_device(self, value):
        if type(value) is StandInArray:
            self._memory().hold(value)
            return value
        if isinstance(value, (np.ndarray, np.generic)) and value.dtype.kind in _MOVABLE:
            self._memory().check(np.asarray(value))   # (refused before the copy is made)
            value = np.array(value).view(StandInArray)
            self._memory().hold(value)
        return value

    def _memory(self) -> _StandInMemory:
        memory = _STANDIN_MEMORY.get(self.ordinal)
        if memory is None:
            total = int(os.environ.get(STANDIN_MEMORY_ENV) or STANDIN_MEMORY_BYTES)
            memory = _STANDIN_MEMORY.setdefault(self.ordinal, _StandInMemory(total))
        return memory

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
        memory = self._memory()
        return (memory.total - memory.in_use, memory.total)

    def limit_pool(self, limit: int) -> None:
        self._memory().limit = limit

    def description(self) -> str:
        return f"device: {self.ordinal}, name: TensorWeave stand-in GPU (host memory)"


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
    fraction = float(getattr(getattr(config, "gpu_options", None), "per_process_gpu_memory_fraction", 0) or 0)
    gpus = [cls(i, o) for i, o in enumerate(ordinals)]
    for gpu in gpus:
        gpu.memory_limit = _pool_limit(gpu, fraction)
    return gpus


_POOL_LIMITS: dict = {}   # (GPU class, CUDA ordinal) -> bytes its pool may hold, fixed by the first Session/Server
_POOL_LOCK = threading.Lock()


def _pool_limit(gpu: Gpu, fraction: float) -> int:
    """The memory limit of `gpu`'s pool: set the first time this process makes that GPU, from
    that ConfigProto's per_process_gpu_memory_fraction (0: the whole GPU), kept afterwards."""
    key = (type(gpu), gpu.ordinal)
    with _POOL_LOCK:
        if key not in _POOL_LIMITS:
            total = gpu.memory_info()[1]
            if fraction < 0:
                raise errors.InvalidArgumentError(
                    None, None, f"gpu_options.per_process_gpu_memory_fraction must be >= 0, got {fraction}")
            if fraction > 0:
                gpu.limit_pool(int(total * fraction))
            _POOL_LIMITS[key] = int(total * fraction) if fraction > 0 else total
        return _POOL_LIMITS[key]


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
