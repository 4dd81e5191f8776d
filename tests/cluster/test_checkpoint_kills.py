"""Checkpoint hygiene with real kills and restarts: a trainer process that saves a 16 MB variable
in a loop is SIGKILLed at a random moment of a save, again and again (bounded), until a kill lands
while a save's temporaries are on disk; the restarted trainer resumes from latest_checkpoint, its
first save removes what the killed one left, and what it restores is what was saved. Restarted
trainers keep max_to_keep checkpoints in all, not max_to_keep per run."""
from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

import tensorweave as tf

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHILD = r"""
import sys
import tensorweave as tf

train_dir, sharded, saves = sys.argv[1], sys.argv[2] == "1", int(sys.argv[3])
with tf.Graph().as_default():
    step = tf.train.get_or_create_global_step()
    big = tf.Variable(tf.zeros([4 << 20]), name="big")
    bump = tf.group(tf.assign_add(step, 1), tf.assign_add(big, tf.ones([4 << 20])))
    saver = tf.train.Saver(max_to_keep=2, sharded=sharded)
    with tf.Session() as sess:
        latest = tf.train.latest_checkpoint(train_dir)
        if latest:
            saver.restore(sess, latest)
        else:
            sess.run(tf.global_variables_initializer())
        for _ in range(saves):
            sess.run(bump)
            print("saving", flush=True)
            saver.save(sess, train_dir + "/model.ckpt", global_step=step)
            print("saved", flush=True)
"""


def trainer(train_dir: str, sharded: bool, saves: int) -> subprocess.Popen:
    """The trainer, its stderr in a file beside train_dir (a pipe nobody drains could block it)."""
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    with open(train_dir + ".stderr", "w") as stderr:
        return subprocess.Popen([sys.executable, "-c", CHILD, train_dir, "1" if sharded else "0", str(saves)],
                                stdout=subprocess.PIPE, stderr=stderr, env=env, text=True)


def stderr_of(train_dir: str) -> str:
    with open(train_dir + ".stderr") as f:
        return f.read()


def leftovers(train_dir: str) -> list:
    """Temporaries of a save: ours (named for their writer), a sharded save's `_temp_` shard
    directories, safetensors' hidden `.tmp` files."""
    return sorted(n for n in os.listdir(train_dir) if ".tempstate" in n or "_temp_" in n or n.startswith("."))


def run_to_end(train_dir: str, sharded: bool, saves: int) -> None:
    child = trainer(train_dir, sharded, saves)
    child.communicate(timeout=300)
    assert child.returncode == 0, stderr_of(train_dir)


def checkpoints(train_dir: str) -> list:
    return sorted(n[:-len(".index")] for n in os.listdir(train_dir) if n.endswith(".index"))


@pytest.mark.parametrize("sharded", [False, True], ids=["single", "sharded"])
def test_a_save_killed_mid_write_leaves_nothing_after_the_restart(tmp_path, sharded):
    train_dir = str(tmp_path / "train")
    os.makedirs(train_dir)
    rng = random.Random(0)
    landed = None
    for attempt in range(30):   # bounded: each kill has a fair chance of landing inside a save
        child = trainer(train_dir, sharded, 1000)
        try:
            for _ in range(rng.randint(1, 3)):
                line = child.stdout.readline()
                while line and line.strip() != "saving":
                    line = child.stdout.readline()
                assert line, stderr_of(train_dir)
            # a save is starting: kill it somewhere in its writes (16 MB take tens of ms)
            time.sleep(rng.uniform(0.0, 0.25))
            child.send_signal(signal.SIGKILL)
            assert child.wait(timeout=60) == -signal.SIGKILL
        finally:
            if child.poll() is None:
                child.kill()
                child.wait()
            child.stdout.close()
        if leftovers(train_dir):
            landed = leftovers(train_dir)
            break
    assert landed, "no kill landed during a save in 30 tries"

    run_to_end(train_dir, sharded, 2)   # the restart: resumes, saves twice
    assert leftovers(train_dir) == [], f"after the kill: {landed}"
    latest = tf.train.latest_checkpoint(train_dir)
    reader = tf.train.load_checkpoint(latest)
    step = int(reader.get_tensor("global_step"))
    assert latest.endswith(f"-{step}")
    np.testing.assert_array_equal(reader.get_tensor("big"), np.full(4 << 20, step, np.float32))


def test_max_to_keep_holds_across_restarts(tmp_path):
    train_dir = str(tmp_path / "train")
    os.makedirs(train_dir)
    for _ in range(3):   # three runs of three saves each, every one resuming the last
        run_to_end(train_dir, False, 3)
    assert checkpoints(train_dir) == ["model.ckpt-8", "model.ckpt-9"]   # TF's Saver would keep 6
    state = tf.train.get_checkpoint_state(train_dir)
    assert [os.path.basename(p) for p in state.all_model_checkpoint_paths] == ["model.ckpt-8", "model.ckpt-9"]
    metas = sorted(n for n in os.listdir(train_dir) if n.endswith(".meta"))
    assert metas == ["model.ckpt-8.meta", "model.ckpt-9.meta"]


def test_another_series_in_the_same_directory_is_left_alone(tmp_path):
    train_dir = str(tmp_path / "train")
    os.makedirs(train_dir)
    run_to_end(train_dir, False, 3)
    with tf.Graph().as_default():
        v = tf.Variable(1.0)
        saver = tf.train.Saver(max_to_keep=1)
        with tf.Session() as sess:
            sess.run(v.initializer)
            best = saver.save(sess, os.path.join(train_dir, "best"), global_step=1, latest_filename="best_state")
    state = tf.train.get_checkpoint_state(train_dir)   # the state file lists another series' checkpoint too
    tf.train.update_checkpoint_state(train_dir, state.model_checkpoint_path,
                                     [best] + list(state.all_model_checkpoint_paths))
    run_to_end(train_dir, False, 3)   # saves 4, 5, 6: deletes 2, 3 and 4, never best-1
    assert checkpoints(train_dir) == ["best-1", "model.ckpt-5", "model.ckpt-6"]
