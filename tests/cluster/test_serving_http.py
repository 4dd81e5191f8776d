"""`tensorweave serve` as a real process on a loopback port, asked over HTTP as TF Serving's clients
ask it: predictions and classes of the MNIST-style model (exported by tensorweave) against numpy,
b64 strings, 8 clients at once, a malformed body, classify/regress of a TF-written model, and a
new version directory served without a restart."""
from __future__ import annotations

import base64
import concurrent.futures
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request

import numpy as np
import pytest

from tensorweave.distributed.cluster import free_ports

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURES = os.path.join(REPO, "tests", "unit", "fixtures", "tf_serving")
READY_TIMEOUT_S = 120.0
sys.path.insert(0, os.path.join(REPO, "tests", "unit"))
from fixtures.tw_serving_models import softmax  # noqa: E402  (the unit tests' model and its numpy answer)


class Server:
    """One `tensorweave serve` process over `base_path`, ready once its model answers."""

    def __init__(self, base_path: str, name: str):
        self.name = name
        self.port = free_ports(1)[0]
        self.url = f"http://127.0.0.1:{self.port}/v1/models/{name}"
        env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tensorweave.cli", "serve", "--model_base_path", base_path, "--model_name", name,
             "--rest_api_port", str(self.port), "--host", "127.0.0.1", "--file_system_poll_wait_seconds", "0.2"],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
        try:
            self.wait_for(lambda status: any(v["state"] == "AVAILABLE" for v in status["model_version_status"]))
        except BaseException:
            self.stop()
            raise

    def request(self, path: str = "", body=None):
        """(HTTP status, JSON) of a GET, or a POST of `body` (JSON data, or bytes sent as they are)."""
        data = body if isinstance(body, bytes) or body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method="GET" if data is None else "POST",
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read())

    def wait_for(self, predicate) -> dict:
        """Polls the model's status until `predicate(status)` holds (the process must stay up)."""
        deadline = time.monotonic() + READY_TIMEOUT_S
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"tensorweave serve exited with {self.proc.returncode}: "
                                   f"{self.proc.stderr.read().decode(errors='replace')}")
            try:
                status, out = self.request()
                if status == 200 and predicate(out):
                    return out
            except (urllib.error.URLError, ConnectionError):
                pass   # not listening yet
            if time.monotonic() > deadline:
                raise TimeoutError(f"{self.url} not ready after {READY_TIMEOUT_S} s")
            time.sleep(0.05)

    def stop(self) -> int:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
        self.proc.stdout.close()
        self.proc.stderr.close()
        return self.proc.returncode


@pytest.fixture(scope="module")
def mnist(tmp_path_factory):
    """The MNIST-style model exported by tensorweave's SavedModelBuilder (in a process of its own)."""
    base = tmp_path_factory.mktemp("mnist")
    export = ("import sys; sys.path.insert(0, 'tests/unit'); from fixtures.tw_serving_models import export_mnist; "
              f"export_mnist({str(base / '1')!r})")
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    subprocess.run([sys.executable, "-c", export], cwd=REPO, env=env, check=True, timeout=300)
    server = Server(str(base), "mnist")
    yield server
    assert server.stop() == 0   # SIGTERM: a clean exit


@pytest.fixture
def half_plus_two(tmp_path):
    shutil.copytree(os.path.join(FIXTURES, "half_plus_two", "1"), tmp_path / "1")
    server = Server(str(tmp_path), "half_plus_two")
    yield server, tmp_path
    server.stop()


def test_predict_answers_what_numpy_computes(mnist):
    images = np.random.RandomState(1).rand(3, 784).astype(np.float32)
    expected = softmax(images)
    status, out = mnist.request(":predict", {"instances": images.tolist()})
    assert status == 200
    assert [p["classes"] for p in out["predictions"]] == np.argmax(expected, 1).tolist()
    np.testing.assert_allclose([p["probabilities"] for p in out["predictions"]], expected, rtol=1e-5)
    status, out = mnist.request("/versions/1:predict", {"inputs": {"images": images.tolist()}})
    assert status == 200 and out["outputs"]["classes"] == np.argmax(expected, 1).tolist()
    np.testing.assert_allclose(out["outputs"]["probabilities"], expected, rtol=1e-5)


def test_eight_clients_at_once(mnist):
    batches = [np.random.RandomState(seed).rand(2, 784).astype(np.float32) for seed in range(8 * 4)]

    def client(i):
        got = []
        for images in batches[i::8]:
            status, out = mnist.request(":predict", {"instances": images.tolist()})
            assert status == 200, out
            got.append((images, np.array([p["probabilities"] for p in out["predictions"]])))
        return got

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        results = [r for rs in pool.map(client, range(8)) for r in rs]
    assert len(results) == len(batches)
    for images, probabilities in results:
        np.testing.assert_allclose(probabilities, softmax(images), rtol=1e-5)


def test_bad_requests_get_tf_servings_errors_and_the_server_goes_on(mnist):
    status, out = mnist.request(":predict", b"{not json")
    assert status == 400 and list(out) == ["error"] and out["error"].startswith("JSON Parse error")
    status, out = mnist.request(":predict", {"instances": [[1.0, 2.0]]})
    assert status == 400 and "[1,2]" in out["error"] and "[-1,784]" in out["error"]
    status, out = mnist.request(":predict", {"signature_name": "nope", "instances": [[1.0]]})
    assert (status, out) == (400, {"error": 'Serving signature name: "nope" not found in signature def'})
    status, out = mnist.request("/versions/5:predict", {"instances": [[1.0]]})
    assert (status, out) == (404, {"error": "Servable not found for request: Specific(mnist, 5)"})
    status, out = mnist.request("/metadata")
    assert status == 200 and sorted(out["metadata"]["signature_def"]["signature_def"]) == [
        "classify", "classify_scores", "raw", "regress", "serving_default"]


def test_classify_examples_as_json(mnist):
    images = np.random.RandomState(2).rand(2, 784).astype(np.float32)
    status, out = mnist.request(":classify", {"signature_name": "classify",
                                              "examples": [{"x": row.tolist()} for row in images]})
    assert status == 200
    for result, want in zip(out["results"], softmax(images)):
        assert [label for label, _ in result] == [str(i) for i in range(10)]
        np.testing.assert_allclose([score for _, score in result], want, rtol=1e-5)


def test_b64_strings_and_a_new_version(half_plus_two):
    server, base = half_plus_two
    raw = b"\xff\x00raw"
    status, out = server.request(":predict", {"signature_name": "echo", "inputs": {
        "s": ["text", {"b64": base64.b64encode(raw).decode()}]}})
    assert status == 200 and out == {"outputs": {"length": [4, len(raw)],
                                                 "s_out": ["text", {"b64": base64.b64encode(raw).decode()}]}}
    # a version written beside the model's directory and renamed into it, as exporters do
    shutil.copytree(base / "1", base / "tmp-2")
    os.rename(base / "tmp-2", base / "2")
    status = server.wait_for(lambda s: s["model_version_status"][0] == {
        "version": "2", "state": "AVAILABLE", "status": {"error_code": "OK", "error_message": ""}})
    assert {v["version"]: v["state"] for v in status["model_version_status"]} == {"2": "AVAILABLE", "1": "END"}
    assert server.request("/versions/2:predict", {"instances": [[4.0]]}) == (200, {"predictions": [[4.0]]})
    assert server.request("/versions/1:predict", {"instances": [[4.0]]})[0] == 404


def test_classify_and_regress_over_http(tmp_path):
    shutil.copytree(os.path.join(FIXTURES, "half_plus_two_examples", "1"), tmp_path / "123")
    server = Server(str(tmp_path), "half_plus_two")
    try:
        assert server.request(":regress", {"signature_name": "regress_x_to_y", "examples": [{"x": 80.0}]}) == (
            200, {"results": [42.0]})
        assert server.request(":classify", {"signature_name": "classify_x_to_y", "examples": [{"x": 20.0}]}) == (
            200, {"results": [[["", 12.0]]]})
    finally:
        assert server.stop() == 0
