"""Denormal floats flushed to zero while kernels run, as TF's CPU runtime computes.

TF turns on the processor's flush-to-zero and denormals-are-zero modes on every thread of its
pools and around each kernel it runs on a caller's thread (tensorflow/core/platform/denormal.h,
ScopedFlushDenormal): a result too small to be a normal float is 0.0 and such an input reads as
0.0. So in a TF session float32 exp(-100.0) is 0.0 (numpy alone gives 3.7e-44), log(exp(-100.0))
is -inf and 1e-8 * 1e-30 is 0.0. `Plan.run` runs a step's kernels between `enter()` and
`leave()`, which restores the calling thread's own modes; the runtime's own threads, which only
run kernels, keep them on (`flush_this_thread`), and so do oneDNN's OpenMP threads, which start
from a thread that has them (a new thread copies its creator's modes). `computed_as` runs code
with the modes of a given thread: a kernel's parts on the intra-op threads, tests' expectations.

On x86-64 Linux: glibc's fenv_t ends with the SSE control register, MXCSR, whose bits 15 (FTZ)
and 6 (DAZ) these are. Elsewhere the modes stay as they are.
"""
from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import platform
import threading
from typing import Optional

_FTZ_DAZ = 0x8040


class _Env(ctypes.Structure):
    """glibc's x86-64 fenv_t: the x87 environment (28 bytes), then MXCSR."""
    _fields_ = [("x87", ctypes.c_uint8 * 28), ("mxcsr", ctypes.c_uint32)]


def _fenv() -> Optional[tuple]:
    """(fegetenv, fesetenv) of the C library where fenv_t is _Env, else None."""
    if platform.system() != "Linux" or platform.machine() not in ("x86_64", "AMD64"):
        return None
    try:
        libm = ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6")
        get, put = libm.fegetenv, libm.fesetenv
    except (OSError, AttributeError):
        return None
    get.argtypes = put.argtypes = [ctypes.POINTER(_Env)]
    get.restype = put.restype = ctypes.c_int
    return get, put


_FENV = _fenv()
AVAILABLE = _FENV is not None
_this_thread = threading.local()


def _env() -> _Env:
    env = _this_thread.__dict__.get("env")
    if env is None:
        env = _this_thread.env = _Env()
    return env


def flush_this_thread() -> None:
    """Turns the modes on for good on this thread (a runtime thread that only runs kernels)."""
    if AVAILABLE and not _this_thread.__dict__.get("on"):
        env = _env()
        _FENV[0](env)
        env.mxcsr |= _FTZ_DAZ
        _FENV[1](env)
        _this_thread.on = True


def flushing() -> bool:
    """Whether this thread computes with the modes on (as far as `enter`, `flush_this_thread` and
    `computed_as` have seen: a thread started from a flushing one has them on unseen until then)."""
    return bool(_this_thread.__dict__.get("on"))


def enter() -> Optional[_Env]:
    """Turns the modes on for this thread; returns what `leave` restores (None: they were on
    already)."""
    if not AVAILABLE or _this_thread.__dict__.get("on"):
        return None
    env = _env()
    _FENV[0](env)
    own = env.mxcsr
    if own & _FTZ_DAZ == _FTZ_DAZ:
        _this_thread.on = True   # (on for good: copied from the thread that started this one)
        return None
    env.mxcsr = own | _FTZ_DAZ
    _FENV[1](env)
    env.mxcsr = own   # (the thread's own environment again, for leave)
    _this_thread.on = True
    return env


def leave(own: Optional[_Env]) -> None:
    """Restores the environment `enter` returned (the thread's own modes)."""
    if own is not None:
        _FENV[1](own)
        _this_thread.on = False


@contextlib.contextmanager
def computed_as(flushing: bool):
    """Within it, this thread computes with the modes on (`flushing`) or off; as before after it.
    A kernel's part on another thread runs as the kernel's thread computes (ops/intra_op.py), and
    values computed once and kept are computed alike whichever thread asks first."""
    if not AVAILABLE or flushing == bool(_this_thread.__dict__.get("on")):
        yield
        return
    env = _Env()   # (not the thread's: a plan's run on this thread may hold that one for `leave`)
    _FENV[0](env)
    own = env.mxcsr
    env.mxcsr = own | _FTZ_DAZ if flushing else own & ~_FTZ_DAZ
    _FENV[1](env)
    was = _this_thread.__dict__.get("on", False)
    _this_thread.on = flushing
    try:
        yield
    finally:
        env.mxcsr = own
        _FENV[1](env)
        _this_thread.on = was
