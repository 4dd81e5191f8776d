"""Configurable resource limits: what one client may make a server hold, and how large one
op's output may be before it is allocated.

Each limit has a name, an environment variable and a default. A value is read from the
environment the first time it is asked for (a server reads its own environment at start);
`override(limit, value)` sets it in process (tests, embedding programs). Going past a limit
is a ResourceExhaustedError whose message names the limit and the variable that raises it,
so an operator who meets one knows what to change:

    ResourceExhaustedError: message of 3221225472 bytes exceeds the limit
    max_message_bytes = 2147483648 bytes (TENSORWEAVE_MAX_MESSAGE_BYTES)

The limits on transport and server state are enforced by `tensorweave.distributed` and
`tensorweave.runtime`; `check_elements` is the one op kernels and shape functions call
before they allocate an output whose size they compute from their inputs (Fill, Tile, ...).
It lives here, in the lowest layer, so that ops/ can use it without importing the runtime.
So does `available_cores`, the CPUs a process may use (a container's quota is a limit too),
which every thread count derives from.
"""
from __future__ import annotations

import math
import os
import threading
from dataclasses import dataclass
from typing import Callable, Iterable, Optional, Union

from tensorweave.framework import errors


@dataclass(frozen=True, eq=False)
class Limit:
    """One configurable limit. Compared and hashed by identity: `value` looks one up on
    every message, and a field-wise dataclass hash cost more than the rest of the lookup."""
    name: str       # as named in error messages
    env: str        # the environment variable that sets it
    default: int
    unit: str       # "bytes", "elements", ...


# A message's bytes: TensorFlow's own gRPC transport cannot carry more than 2 GiB either.
MESSAGE_BYTES = Limit("max_message_bytes", "TENSORWEAVE_MAX_MESSAGE_BYTES", 2 << 30, "bytes")
# Tensors pushed to a task by one peer task and not (yet) taken by a Recv there.
UNCLAIMED_PUSH_BYTES = Limit("max_unclaimed_push_bytes_per_peer", "TENSORWEAVE_MAX_UNCLAIMED_PUSH_BYTES",
                             1 << 30, "bytes")
# Graphs registered with one task by one client (a Session) and not deregistered.
REGISTRATIONS_PER_CLIENT = Limit("max_registrations_per_client", "TENSORWEAVE_MAX_REGISTRATIONS_PER_CLIENT",
                                 10_000, "registered graphs")
# Threads one server runs requests on (requests that may block: run_graph, register_graph).
REQUEST_THREADS = Limit("max_request_threads", "TENSORWEAVE_MAX_REQUEST_THREADS", 512, "threads")
# Elements of one op's output whose size is computed from its inputs (1 Gi: 4 GiB of float32).
OP_OUTPUT_ELEMENTS = Limit("max_op_output_elements", "TENSORWEAVE_MAX_OP_OUTPUT_ELEMENTS", 1 << 30, "elements")

ALL = (MESSAGE_BYTES, UNCLAIMED_PUSH_BYTES, REGISTRATIONS_PER_CLIENT, REQUEST_THREADS, OP_OUTPUT_ELEMENTS)

_values: dict = {}          # Limit -> resolved value (environment read once)
_lock = threading.Lock()


def _from_env(limit: Limit) -> int:
    raw = os.environ.get(limit.env, "").strip()
    if not raw:
        return limit.default
    try:
        v = int(float(raw))
    except ValueError:
        raise ValueError(f"{limit.env}={raw!r}: expected a number of {limit.unit}") from None
    if v <= 0:
        raise ValueError(f"{limit.env}={raw!r}: a limit must be positive")
    return v


def value(limit: Limit) -> int:
    """The limit's value: an override, else its environment variable (read once), else its default."""
    v = _values.get(limit)
    if v is None:
        with _lock:
            v = _values.get(limit)
            if v is None:
                v = _values[limit] = _from_env(limit)
    return v


def override(limit: Limit, v: Optional[int]) -> Optional[int]:
    """Sets the limit in this process (None: back to the environment or default); returns the
    previous override or None."""
    with _lock:
        old = _values.pop(limit, None)
        if v is not None:
            if int(v) <= 0:
                raise ValueError(f"{limit.name} must be positive, got {v}")
            _values[limit] = int(v)
    return old


def exceeded(limit: Limit, amount: int, what: str, op_name: Optional[str] = None) -> errors.ResourceExhaustedError:
    """The error for `what` (e.g. "message") of `amount` units going past `limit`."""
    return errors.ResourceExhaustedError(
        None, op_name, f"{what} of {amount} {limit.unit} exceeds the limit {limit.name} = {value(limit)} "
                       f"{limit.unit} ({limit.env})")


def check(limit: Limit, amount: int, what: str, op_name: Optional[str] = None) -> None:
    """Raises ResourceExhaustedError when `amount` is more than the limit allows."""
    if amount > value(limit):
        raise exceeded(limit, amount, what, op_name)


def check_elements(shape_or_count: Union[int, Iterable[int]], op_name: Optional[str] = None,
                   what: Union[str, Callable[[], str]] = "output") -> int:
    """Before an op allocates an output whose size it computed: raises ResourceExhaustedError
    when the output's element count (an int, or the product of a shape's dimensions, in
    Python integers so that it cannot overflow) exceeds `max_op_output_elements`; returns the
    count. `what` names the output in the message ("Fill output", "one_hot depth x indices"),
    or makes that name when called (a kernel's check then formats nothing unless it raises)."""
    if isinstance(shape_or_count, int):
        count = shape_or_count
    else:
        count = 1
        for d in shape_or_count:
            count *= int(d)
    if count > value(OP_OUTPUT_ELEMENTS):
        raise exceeded(OP_OUTPUT_ELEMENTS, count, what() if callable(what) else what, op_name)
    return count


def available_cores(cgroup_root: str = "/sys/fs/cgroup") -> int:
    """The cores this process may use: its CPU affinity, capped by its cgroup's CPU quota
    (a container's `cpu.max`, or cgroup v1's cfs quota), rounded up. The thread counts derive
    from it (inter-op threads, OpenMP's team, numpy's splits, `tensorweave launch`'s share per
    task): a pod limited to 2 CPUs of a 64-core node that ran 64 threads would spend its quota
    on threads waiting for each other."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    quota = _cgroup_cpu_quota(cgroup_root)
    if quota is not None:
        cores = min(cores, math.ceil(quota))
    return max(1, cores)


def _cgroup_cpu_quota(root: str) -> Optional[float]:
    """The CPUs the cgroup's quota allows (quota / period), or None without a quota."""
    for path, period_path in (("cpu.max", None), ("cpu/cpu.cfs_quota_us", "cpu/cpu.cfs_period_us")):
        try:
            with open(os.path.join(root, path)) as f:
                fields = f.read().split()
            if period_path is not None:
                with open(os.path.join(root, period_path)) as f:
                    fields.append(f.read().strip())
            if fields[0] in ("max", "-1"):
                return None
            quota, period = float(fields[0]), float(fields[1])
            return quota / period if quota > 0 and period > 0 else None
        except (OSError, ValueError, IndexError):
            continue
    return None
