"""The versions of one model directory, as TensorFlow Serving keeps them: the numeric
subdirectories of the base path; the newest complete one (servable.contains_saved_model) is
loaded and served, and a newer one, found by `poll` (every --file_system_poll_wait_seconds with
`start`), is loaded beside it and then takes its place, without a restart; the old one closes
when its last request is done. When the served version's directory goes, the newest left is
served again. A version that fails to load is reported in the status (state
END, its error) and tried again once its directory changes; the served one stays. ModelVersions
is rest_api.Models: what `tensorweave serve` answers requests from.
"""
from __future__ import annotations

import contextlib
import logging
import os
import threading
from typing import Optional

from tensorweave.framework import errors
from tensorweave.saved_model.tag_constants import SERVING
from tensorweave.serving.servable import Servable, contains_saved_model, tag_set

_log = logging.getLogger("tensorweave")


def _status(version: int, state: str, code: str = "OK", message: str = "") -> dict:
    return {"version": str(version), "state": state, "status": {"error_code": code, "error_message": message}}


class ModelVersions:
    """The versions of one model under `base_path`: the newest complete one loaded and served,
    newer ones loaded as they appear (`poll`, or `start` for a polling thread)."""

    def __init__(self, name: str, base_path: str, tags=(SERVING,), poll_wait_s: float = 1.0):
        self.name, self.base_path = name, os.path.abspath(base_path)
        self.tags, self.poll_wait_s = tag_set(tags), poll_wait_s
        self._lock = threading.Lock()
        self._served: Optional[Servable] = None
        self._states: dict = {}        # version -> status dict, for GET /v1/models/M
        self._failed: dict = {}        # version -> the directory's mtime when its load failed
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None

    def versions_on_disk(self) -> list:
        """The complete versions under the base path, oldest first."""
        try:
            names = os.listdir(self.base_path)
        except OSError:
            return []
        return sorted(int(n) for n in names if n.isdigit()
                      and contains_saved_model(os.path.join(self.base_path, n)))

    def poll(self) -> None:
        """Loads the newest complete version when it is not the one served (a newer one, or an
        older one once the served version's directory is gone); a version whose load failed is
        tried again once its directory changes."""
        versions = self.versions_on_disk()
        if not versions:
            return
        newest = versions[-1]
        served = self._served
        if served is not None and served.version == newest:
            return
        path = os.path.join(self.base_path, str(newest))
        mtime = os.stat(path).st_mtime_ns
        if self._failed.get(newest) == mtime:
            return
        with self._lock:
            self._states[newest] = _status(newest, "LOADING")
        try:
            servable = Servable.load(path, self.tags, self.name, newest)
        except Exception as e:  # noqa: BLE001 - a bad version is reported and skipped; the served one stays
            self._failed[newest] = mtime
            with self._lock:
                self._states[newest] = _status(newest, "END", "UNKNOWN", f"{type(e).__name__}: {e}")
            _log.error("tensorweave serve: version %d of model %s failed to load: %s", newest, self.name, e)
            return
        with self._lock:
            old, self._served = self._served, servable
            self._states[newest] = _status(newest, "AVAILABLE")
            if old is not None:
                self._states[old.version] = _status(old.version, "END")
        if old is not None:
            old.retire()
        _log.info("tensorweave serve: serving version %d of model %s", newest, self.name)

    def start(self) -> None:
        def loop():
            while not self._stop.wait(self.poll_wait_s):
                try:
                    self.poll()
                except Exception:  # noqa: BLE001 - the poller outlives a bad scan (a directory vanishing mid-way)
                    _log.exception("tensorweave serve: polling %s failed", self.base_path)

        self._thread = threading.Thread(target=loop, name="tensorweave-version-poll", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self._served is not None:
            self._served.retire()

    # -- rest_api.Models --
    @contextlib.contextmanager
    def servable(self, name: str, version: Optional[int]):
        with self._lock:   # held before a newer version can retire it
            served = self._served
            if name != self.name or served is None or (version is not None and version != served.version):
                spec = f"Latest({name})" if version is None else f"Specific({name}, {version})"
                raise errors.NotFoundError(None, None, f"Servable not found for request: {spec}")
            served.acquire()
        try:
            yield served
        finally:
            served.release()

    def version_status(self, name: str, version: Optional[int]) -> list:
        with self._lock:
            states = dict(self._states)
        if name != self.name or not states:
            raise errors.NotFoundError(None, None, f"Could not find any versions of model {name}")
        if version is not None:
            if version not in states:
                raise errors.NotFoundError(None, None, f"Could not find version {version} of model {name}")
            return [states[version]]
        return [states[v] for v in sorted(states, reverse=True)]
