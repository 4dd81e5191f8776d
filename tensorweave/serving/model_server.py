"""`tensorweave serve`: TensorFlow Serving's REST API (rest_api.py) over HTTP, for the versions
of one model directory.

    tensorweave serve --model_dir /models/mnist --model_name mnist --port 8501
    curl -d '{"instances": [[...784 floats...]]}' localhost:8501/v1/models/mnist:predict

The versions are the numeric subdirectories of --model_dir (TF Serving's --model_base_path),
kept by model_versions.py: the newest complete one is served, a newer one taken up without a
restart. Requests run on a thread pool (Session.run is thread-safe), so one slow request does not
hold the others, and a bad request gets its error, never the server's end. HTTP is aiohttp's
(the `serving` extra).
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import os
import signal
import sys
from typing import Optional

from aiohttp import web

from tensorweave.saved_model.tag_constants import SERVING
from tensorweave.serving.model_versions import ModelVersions
from tensorweave.serving.rest_api import RestApi

MAX_REQUEST_BYTES = 1 << 30   # TF Serving takes large batches of images; aiohttp's default is 1 MiB


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
