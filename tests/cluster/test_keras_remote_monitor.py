"""keras.callbacks.RemoteMonitor posts each epoch's logs to an HTTP server (here one on a free
loopback port, in this process)."""
from __future__ import annotations

import http.server
import json
import threading
import urllib.parse

import numpy as np

import tensorweave as tf

keras = tf.keras


def test_remote_monitor_posts_each_epoch_s_logs():
    received = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers["Content-Length"]))
            received.append((self.path, self.headers["Content-Type"], body))
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        keras.backend.clear_session()
        model = keras.Sequential([keras.layers.Dense(1, input_shape=(2,))])
        model.compile("sgd", "mse")
        x = np.ones((4, 2), np.float32)
        root = f"http://127.0.0.1:{server.server_address[1]}"
        history = model.fit(x, x[:, :1], epochs=2, verbose=0, callbacks=[keras.callbacks.RemoteMonitor(root)])
        model.fit(x, x[:, :1], epochs=1, verbose=0,
                  callbacks=[keras.callbacks.RemoteMonitor(root, path="/json", send_as_json=True)])
    finally:
        server.shutdown()
        server.server_close()
        keras.backend.clear_session()
    assert [path for path, _, _ in received] == ["/publish/epoch/end/"] * 2 + ["/json"]
    first = json.loads(urllib.parse.parse_qs(received[0][2].decode())["data"][0])
    assert first == {"epoch": 0, "loss": history.history["loss"][0]}
    assert received[2][1] == "application/json" and json.loads(received[2][2])["epoch"] == 0
