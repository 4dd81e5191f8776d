"""tf.train.SessionManager (prepare, recover, wait) and tf.train.Supervisor, on an in-process
server so that sessions share their variables."""
from __future__ import annotations

import os
import threading
import time

import numpy as np
import pytest

from google.protobuf import text_format

import tensorweave as tf
from tensorweave.train import session_manager

pytestmark = pytest.mark.usefixtures("graph")


@pytest.fixture(scope="module")
def server():
    return tf.train.Server.create_local_server()


def _reset(server):
    tf.Session.reset(server.target)


def test_prepare_session_initialises_or_restores_from_the_latest_checkpoint(server, tmp_path):
    _reset(server)
    v = tf.Variable([1.0, 2.0], name="v")
    bump = v.assign_add([1.0, 1.0])
    saver = tf.train.Saver()
    sm = tf.train.SessionManager()
    sess = sm.prepare_session(server.target, init_op=tf.global_variables_initializer())
    sess.run(bump)
    saver.save(sess, str(tmp_path / "model.ckpt"), global_step=7)
    sess.run(bump)
    sess.close()
    sess = sm.prepare_session(server.target, init_op=tf.global_variables_initializer(), saver=saver,
                              checkpoint_dir=str(tmp_path))
    np.testing.assert_array_equal(sess.run(v), [2.0, 3.0])   # restored, not initialised
    again, restored = sm.recover_session(server.target, saver=saver,
                                         checkpoint_filename_with_path=str(tmp_path / "model.ckpt-7"))
    assert restored
    again.close()
    empty, restored = sm.recover_session(server.target, saver=saver, checkpoint_dir=str(tmp_path / "none"))
    assert not restored
    empty.close()
    with pytest.raises(RuntimeError, match="no init_op or init_fn or local_init_op"):
        sm.prepare_session(server.target)
    with pytest.raises(ValueError, match="Can not provide both"):
        sm.prepare_session(server.target, saver=saver, checkpoint_dir="a", checkpoint_filename_with_path="b")
    sess.close()


def test_prepare_session_fails_clearly_when_init_leaves_the_model_not_ready(server):
    _reset(server)
    a = tf.Variable(1.0, name="a")
    b = tf.Variable(2.0, name="b")
    sm = tf.train.SessionManager(ready_op=tf.report_uninitialized_variables())
    with pytest.raises(RuntimeError, match="Init operations did not make model ready.*Variables not initialized: b"):
        sm.prepare_session(server.target, init_op=a.initializer)
    with pytest.raises(ValueError, match="you must also pass a local_init_op"):
        tf.train.SessionManager(ready_for_local_init_op=tf.report_uninitialized_variables())
    del b


def test_wait_for_session_runs_local_init_then_returns_once_the_chief_is_done(server):
    _reset(server)
    g = tf.Variable(5.0, name="g")
    loc = tf.Variable(0.0, name="loc", collections=[tf.GraphKeys.LOCAL_VARIABLES])
    local_init = loc.assign(g * 2.0)
    sm = tf.train.SessionManager(ready_op=tf.report_uninitialized_variables(),
                                 ready_for_local_init_op=tf.report_uninitialized_variables(tf.global_variables()),
                                 local_init_op=local_init)
    start = time.monotonic()
    with pytest.raises(tf.errors.DeadlineExceededError, match="Session was not ready after waiting 0.3 secs"):
        sm.wait_for_session(server.target, max_wait_secs=0.3)
    assert time.monotonic() - start < 2
    init = g.initializer
    graph = tf.get_default_graph()

    def chief():
        time.sleep(0.3)
        with tf.Session(server.target, graph=graph) as s:
            s.run(init)
    threading.Thread(target=chief, daemon=True).start()
    sess = sm.wait_for_session(server.target, max_wait_secs=10)
    assert sess.run(loc) == 10.0
    sess.close()


def test_a_waiting_task_checks_every_20_ms_for_a_second_then_backs_off_to_its_cap():
    # (the intervals wait_for_session sleeps between readiness checks: a worker started beside its
    # chief, which initialises within about a second, sees the model ready within 20 ms of it)
    waits = session_manager.Backoff(cap=0.5)
    first_second = []
    while sum(first_second) < 1.0 - 1e-9:
        first_second.append(waits.next())
    assert first_second == [0.02] * 50
    later = [waits.next() for _ in range(30)]
    assert later[0] == 0.025 and all(b >= a for a, b in zip(later, later[1:]))
    assert later[-1] == 0.5
    assert {session_manager.Backoff(cap=0.005).next() for _ in range(3)} == {0.005}   # recovery_wait_secs


def test_supervisor_managed_session_saves_summarises_and_restores(server, tmp_path):
    x = tf.Variable(1.0, name="x")
    step = tf.train.get_or_create_global_step()
    tf.summary.scalar("x_value", x)
    train = tf.group(x.assign_add(1.0), step.assign_add(1))
    sv = tf.train.Supervisor(logdir=str(tmp_path), save_summaries_secs=0.05, save_model_secs=0.05)
    assert tf.get_default_graph().finalized and sv.is_chief and sv.global_step is step
    with sv.managed_session() as sess:
        for _ in range(5):
            sess.run(train)
        time.sleep(0.3)
        sv.summary_computed(sess, sess.run(sv.summary_op))
        assert not sv.should_stop()
    assert sv.should_stop()
    assert tf.train.load_variable(str(tmp_path), "x") == 6.0
    assert os.path.exists(tmp_path / "graph.pbtxt")
    # TF's GraphDef, with the _output_shapes TF writes there
    graph_def = text_format.Parse((tmp_path / "graph.pbtxt").read_text(), tf.GraphDef())
    assert "_output_shapes" in next(n for n in graph_def.node if n.name == "x").attr
    events = [e for f in os.listdir(tmp_path) if f.startswith("events")
              for e in tf.train.summary_iterator(str(tmp_path / f))]
    assert any(v.tag == "x_value" for e in events for v in e.summary.value)
    assert any(v.tag == "global_step/sec" for e in events for v in e.summary.value)
    with tf.Graph().as_default():
        x2 = tf.Variable(1.0, name="x")
        tf.train.get_or_create_global_step()
        sv2 = tf.train.Supervisor(logdir=str(tmp_path), save_model_secs=0, save_summaries_secs=0)
        with sv2.managed_session() as sess:
            assert sess.run(x2) == 6.0


def test_supervisor_reraises_an_error_of_the_block_and_non_chiefs_wait(server):
    _reset(server)
    v = tf.Variable(3.0, name="v")
    sv = tf.train.Supervisor(is_chief=False, recovery_wait_secs=0.1)
    graph = tf.get_default_graph()
    initializing = threading.Event()

    def chief():
        time.sleep(0.3)
        with tf.Session(server.target, graph=graph) as s:
            initializing.set()
            s.run(v.initializer)
    threading.Thread(target=chief, daemon=True).start()
    with sv.managed_session(server.target) as sess:  # waits for the chief's initialisation
        assert initializing.is_set() and sess.run(v) == 3.0
    with pytest.raises(ValueError, match="inside the block"):
        with sv.managed_session(server.target):
            raise ValueError("inside the block")


def test_basic_train_loop_runs_until_stopped_and_starts_over_after_an_aborted_task(tmp_path):
    step = tf.train.get_or_create_global_step()
    bump = step.assign_add(1)
    sv = tf.train.Supervisor(logdir=str(tmp_path), save_summaries_secs=0, save_model_secs=0)
    calls = []

    def train_step(sess, limit):
        calls.append(int(sess.run(bump)))
        if len(calls) == 2:
            raise tf.errors.AbortedError(None, None, "a ps restarted")
        if calls[-1] >= limit:
            sv.request_stop()
    tf.train.basic_train_loop(sv, train_step, args=[4])
    assert calls == [1, 2, 1, 2, 3, 4]   # after the abort: a new session, initialised again
