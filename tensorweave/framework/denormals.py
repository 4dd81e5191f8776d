"""Denormal floats flushed to zero while kernels run, as TF's CPU runtime computes.

TF turns on the processor's flush-to-zero and denormals-are-zero modes on every thread of its
pools and around each kernel it runs on a caller's thread (tensorflow/core/platform/denormal.h,
ScopedFlushDenormal), and rounds to nearest there (ScopedSetRound): a result too small to be a
normal float is 0.0 and such an input reads as 0.0. So in a TF session float32 exp(-100.0) is 0.0
(numpy alone gives 3.7e-44), log(exp(-100.0)) is -inf and 1e-8 * 1e-30 is 0.0. `Plan.run` runs a
step's kernels between `enter()` and `leave()`, which restores the calling thread's own modes; the
runtime's own threads, which only run kernels, keep them on (`flush_this_thread`), and so do
oneDNN's OpenMP threads, which start from a thread that has them (a new thread copies its
creator's modes). `computed_as` runs code with the modes of a given thread: a kernel's parts on
the intra-op threads, tests' expectations.

On x86-64 Linux: glibc's femode_t (fegetmode/fesetmode, glibc 2.25 on) holds the x87 control
word and the SSE control register, MXCSR, whose bits 15 (FTZ) and 6 (DAZ) these are (bits 13-14
its rounding); setting the modes keeps the exception flags. Elsewhere the modes stay as they are.
"""
from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import platform
import threading
from typing import Optional

_FTZ_DAZ = 0x8040
_ROUNDING = 0x6000   # MXCSR's rounding control: 0 rounds to nearest


def _kernel_modes(mxcsr: int) -> int:
    """MXCSR as TF's kernels run: denormals flushed, rounding to nearest (ScopedSetRound)."""
    return (mxcsr | _FTZ_DAZ) & ~_ROUNDING


class _Modes(ctypes.Structure):
    """glibc's x86-64 femode_t: the x87 control word, then MXCSR."""
    _fields_ = [("x87_control", ctypes.c_uint16), ("reserved", ctypes.c_uint16), ("mxcsr", ctypes.c_uint32)]


def _femode() -> Optional[tuple]:
    """(fegetmode, fesetmode) of the C library where femode_t is _Modes, else None."""
    if platform.system() != "Linux" or platform.machine() not in ("x86_64", "AMD64"):
        return None
    try:
        libm = ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6")
        get, put = libm.fegetmode, libm.fesetmode
    except (OSError, AttributeError):
        return None
    get.argtypes = put.argtypes = [ctypes.POINTER(_Modes)]
    get.restype = put.restype = ctypes.c_int
    return get, put


_FEMODE = _femode()
AVAILABLE = _FEMODE is not None
_this_thread = threading.local()


def _modes() -> _Modes:
    modes = _this_thread.__dict__.get("modes")
    if modes is None:
        modes = _this_thread.modes = _Modes()
    return modes


def flush_this_thread() -> None:
    """Turns the modes on for good on this thread (a runtime thread that only runs kernels)."""
    if AVAILABLE and not _this_thread.__dict__.get("on"):
        modes = _modes()
        _FEMODE[0](modes)
        modes.mxcsr = _kernel_modes(modes.mxcsr)
        _FEMODE[1](modes)
        _this_thread.on = True


def flushing() -> bool:
    """Whether this thread computes with the modes on (as far as `enter`, `flush_this_thread` and
    `computed_as` have seen: a thread started from a flushing one has them on unseen until then)."""
    return bool(_this_thread.__dict__.get("on"))


def enter() -> Optional[_Modes]:
    """Turns the modes on for this thread; returns what `leave` restores (None: they were on
    already)."""
    if not AVAILABLE or _this_thread.__dict__.get("on"):
        return None
    modes = _modes()
    _FEMODE[0](modes)
    own = modes.mxcsr
    if own == _kernel_modes(own):
        _this_thread.on = True   # (on for good: copied from the thread that started this one)
        return None
    modes.mxcsr = _kernel_modes(own)
    _FEMODE[1](modes)
    modes.mxcsr = own   # (the thread's own modes again, for leave)
    _this_thread.on = True
    return modes


def leave(own: Optional[_Modes]) -> None:
    """Restores the modes `enter` returned (the thread's own)."""
    if own is not None:
        _FEMODE[1](own)
        _this_thread.on = False


@contextlib.contextmanager
def computed_as(flushing: bool):
    """Within it, this thread computes with the modes on (`flushing`) or off; as before after it.
    A kernel's part on another thread runs as the kernel's thread computes (ops/intra_op.py), and
    values computed once and kept are computed alike whichever thread asks first."""
    if not AVAILABLE or flushing == bool(_this_thread.__dict__.get("on")):
        yield
        return
    modes = _Modes()   # (not the thread's: a plan's run on this thread may hold that one for `leave`)
    _FEMODE[0](modes)
    own = modes.mxcsr
    modes.mxcsr = _kernel_modes(own) if flushing else own & ~_FTZ_DAZ
    _FEMODE[1](modes)
    was = _this_thread.__dict__.get("on", False)
    _this_thread.on = flushing
    try:
        yield
    finally:
        modes.mxcsr = own
        _FEMODE[1](modes)
        _this_thread.on = was
