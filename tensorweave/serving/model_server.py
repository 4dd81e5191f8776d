"""`tensorweave serve`: TensorFlow Serving's REST API (rest_api.py) over HTTP, for the versions
of one model directory.

    tensorweave serve --model_dir /models/mnist --model_name mnist --port 8501
    curl -d '{"instances": [[...784 floats...]]}' localhost:8501/v1/models/mnist:predict

The versions are the numeric subdirectories of --model_dir (TF Serving's --model_base_path). The
newest complete one (servable.contains_saved_model) is served; the directory is polled every
--file_system_poll_wait_seconds, and a newer version is loaded beside the served one, then takes
its place without a restart (the old one closes when its last request is done). Requests run on
a thread pool (Session.run is thread-safe), so one slow request does not hold the others, and a
bad request gets its error, never the server's end. HTTP is aiohttp's (the `serving` extra).
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import os
import signal
import sys
import threading
from typing import Optional

from aiohttp import web

from tensorweave.framework import errors
from tensorweave.serving.rest_api import RestApi
from tensorweave.saved_model.tag_constants import SERVING
from tensorweave.serving.servable import Servable, contains_saved_model, tag_set

_log = logging.getLogger("tensorweave")
MAX_REQUEST_BYTES = 1 << 30   # TF Serving takes large batches of images; aiohttp's default is 1 MiB


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
        """Loads the newest complete version if it is newer than the one served; a version whose
        load failed is tried again once its directory changes."""
        versions = self.versions_on_disk()
        if not versions:
            return
        newest = versions[-1]
        served = self._served
        if served is not None and served.version >= newest:
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


def make_app(api: RestApi, pool: concurrent.futures.Executor) -> web.Application:
    """An aiohttp application answering every path with `api`, each request on `pool`."""
    async def handle(request: web.Request) -> web.Response:
        body = await request.read()
        status, text = await asyncio.get_running_loop().run_in_executor(
            pool, api.handle, request.method, request.path, body)
        return web.Response(status=status, text=text, content_type="application/json")

    app = web.Application(client_max_size=MAX_REQUEST_BYTES)
    app.router.add_route("*", "/{tail:.*}", handle)
    return app


async def _serve(app: web.Application, host: str, port: int, stop: asyncio.Event) -> None:
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    try:
        await web.TCPSite(runner, host, port).start()
        print(f"tensorweave serve: REST API at http://{host}:{port}/v1/models/", file=sys.stderr, flush=True)
        await stop.wait()
    finally:
        await runner.cleanup()


def serve(model_name: str, model_base_path: str, port: int, host: str = "0.0.0.0", tags=(SERVING,),
          poll_wait_s: float = 1.0, num_threads: Optional[int] = None) -> int:
    """Serves the model until SIGTERM/SIGINT; returns the exit status."""
    if not os.path.isdir(model_base_path):
        print(f"tensorweave serve: --model_base_path {model_base_path} is not a directory", file=sys.stderr)
        return 2
    models = ModelVersions(model_name, model_base_path, tags, poll_wait_s)
    models.poll()
    if models.versions_on_disk() == []:
        print(f"tensorweave serve: no versions of servable {model_name} found under base path {model_base_path} "
              "(waiting for one)", file=sys.stderr, flush=True)
    models.start()
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=num_threads or os.cpu_count() or 4,
                                                 thread_name_prefix="tensorweave-rest")

    async def main():
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for s in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(s, stop.set)
        await _serve(make_app(RestApi(models), pool), host, port, stop)

    try:
        asyncio.run(main())
    finally:
        pool.shutdown(wait=True)
        models.stop()
    return 0
