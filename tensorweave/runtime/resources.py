"""Stateful resources (variables, queues, accumulators, random generators) held by container and
name. What a resource is belongs to its op family (ops/state/variable_ops.py defines variables);
this table only finds, creates and drops them."""
from __future__ import annotations

import threading
from typing import Callable, Optional

from tensorweave.framework import errors

DEFAULT_CONTAINER = ""


class ResourceManager:
    """Resources of one task (or one local Session), by (container, name)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._containers: dict[str, dict[str, object]] = {}

    def lookup_or_create(self, container: str, name: str, factory: Callable[[], object]):
        with self._lock:
            c = self._containers.setdefault(container or DEFAULT_CONTAINER, {})
            res = c.get(name)
            if res is None:
                res = c[name] = factory()
            return res

    def lookup(self, container: str, name: str):
        with self._lock:
            res = self._containers.get(container or DEFAULT_CONTAINER, {}).get(name)
        if res is None:
            raise errors.NotFoundError(None, None, f"Resource {container}/{name} does not exist.")
        return res

    def cleanup(self, containers: Optional[list] = None) -> None:
        """Drops the named containers (all of them when None), closing what can be closed."""
        with self._lock:
            names = list(self._containers) if not containers else [c or DEFAULT_CONTAINER for c in containers]
            dropped = [self._containers.pop(n, {}) for n in names]
        for c in dropped:
            for res in c.values():
                close = getattr(res, "close_on_reset", None)
                if close is not None:
                    close()

    def items(self):
        with self._lock:
            return [(c, n, r) for c, d in self._containers.items() for n, r in d.items()]
