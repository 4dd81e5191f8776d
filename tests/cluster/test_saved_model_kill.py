"""A SavedModel export killed midway leaves nothing a loader takes for a SavedModel: a real process
exports with tf.saved_model.simple_save and is SIGKILLed at the last moment before the export is
put in place (variables and saved_model.pb fully written in the temporary sibling, the rename onto
export_dir not done); it stops there by a file handshake, not a sleep. A new export into the same
directory then succeeds and loads, and the killed export's temporary directory is gone."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import numpy as np

import tensorweave as tf

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHILD = r"""
import os, sys, time
import numpy as np
import tensorweave as tf

export_dir, ready, values = sys.argv[1], sys.argv[2], float(sys.argv[3])
rename = os.rename

def rename_then_wait(src, dst, *args, **kwargs):
    if os.path.abspath(dst) == os.path.abspath(export_dir):   # the builder's last step: stop before it
        with open(ready, "w") as f:
            f.write(src)
        while True:
            time.sleep(1)
    return rename(src, dst, *args, **kwargs)

os.rename = rename_then_wait
with tf.Graph().as_default(), tf.Session() as sess:
    x = tf.placeholder(tf.float32, [None, 2], name="x")
    y = tf.matmul(x, tf.Variable(np.full((2, 1), values, np.float32), name="w"), name="y")
    sess.run(tf.global_variables_initializer())
    tf.saved_model.simple_save(sess, export_dir, {"x": x}, {"y": y})
"""


def read(path: str) -> str:
    """The file's text ('' while it does not exist)."""
    try:
        with open(path) as f:
            return f.read()
    except FileNotFoundError:
        return ""


def test_an_export_killed_before_it_is_in_place_leaves_no_saved_model(tmp_path):
    export_dir, ready = str(tmp_path / "model"), str(tmp_path / "ready")
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    stderr = open(tmp_path / "stderr", "wb")
    child = subprocess.Popen([sys.executable, "-c", CHILD, export_dir, ready, "3"], cwd=str(tmp_path), env=env,
                             stderr=stderr)
    try:
        deadline = time.monotonic() + 120
        while not read(ready):
            assert child.poll() is None, (tmp_path / "stderr").read_text()
            assert time.monotonic() < deadline, "the exporting process never reached its last step"
            time.sleep(0.05)
        staging = read(ready)
        assert sorted(os.listdir(staging)) == ["saved_model.pb", "variables"]   # the export, all written
        assert not tf.saved_model.contains_saved_model(export_dir)
        child.send_signal(signal.SIGKILL)
        assert child.wait(timeout=60) == -signal.SIGKILL
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        stderr.close()
    assert os.listdir(export_dir) == []
    assert not tf.saved_model.contains_saved_model(export_dir)

    with tf.Graph().as_default(), tf.Session() as sess:   # the directory is still free for a new export
        x = tf.placeholder(tf.float32, [None, 2], name="x")
        y = tf.matmul(x, tf.Variable(np.full((2, 1), 5.0, np.float32), name="w"), name="y")
        sess.run(tf.global_variables_initializer())
        tf.saved_model.simple_save(sess, export_dir, {"x": x}, {"y": y})
    assert tf.saved_model.contains_saved_model(export_dir)
    assert not os.path.exists(staging)   # the next builder removed the killed export's temporary
    assert [n for n in os.listdir(tmp_path) if "_temp_" in n] == []
    with tf.Graph().as_default(), tf.Session() as sess:
        meta = tf.saved_model.loader.load(sess, ["serve"], export_dir)
        sig = meta.signature_def["serving_default"]
        assert sess.run(sig.outputs["y"].name, {sig.inputs["x"].name: [[1.0, 1.0]]}).tolist() == [[10.0]]
