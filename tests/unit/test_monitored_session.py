"""MonitoredSession, SingularMonitoredSession, MonitoredTrainingSession and Scaffold in one
process: hooks around runs, stopping, step_fn, checkpoints written and restored, summaries
written, queue runners, and recreating the session after a lost task."""
from __future__ import annotations

import os

import numpy as np
import pytest

from google.protobuf import text_format

import tensorweave as tf
from tensorweave.train import monitored_session

pytestmark = pytest.mark.usefixtures("graph")


def _counter_model():
    x = tf.Variable(1.0, name="x")
    step = tf.train.get_or_create_global_step()
    train = tf.group(x.assign_add(1.0), step.assign_add(1))
    return x, step, train


class _Recorder(tf.train.SessionRunHook):
    def __init__(self, fetch=None, feed=None):
        self.calls, self.fetch, self.feed, self.results = [], fetch, feed, []

    def begin(self):
        self.calls.append("begin")

    def after_create_session(self, session, coord):
        self.calls.append("after_create_session")

    def before_run(self, run_context):
        self.calls.append("before_run")
        if self.fetch is not None or self.feed is not None:
            return tf.train.SessionRunArgs(self.fetch, feed_dict=self.feed)
        return None

    def after_run(self, run_context, run_values):
        self.calls.append("after_run")
        self.results.append(run_values.results)

    def end(self, session):
        self.calls.append("end")


def test_hooks_see_every_run_and_can_fetch_feed_and_stop():
    x, step, train = _counter_model()
    y = tf.placeholder_with_default(0.0, [])
    doubled = y * 2.0
    rec = _Recorder(fetch=x, feed={y: 5.0})
    with tf.train.MonitoredSession(hooks=[rec, tf.train.StopAtStepHook(num_steps=3)]) as sess:
        assert tf.get_default_graph().finalized
        got = []
        while not sess.should_stop():
            got.append(sess.run([train, doubled])[1])
    assert not tf.get_default_graph().finalized
    assert got == [10.0, 10.0, 10.0]
    assert rec.calls == ["begin", "after_create_session"] + ["before_run", "after_run"] * 3 + ["end"]
    assert rec.results == [1.0, 2.0, 3.0]   # x as read during each run, before its update lands


def test_feed_conflicts_and_run_after_stop_are_errors():
    x, step, train = _counter_model()
    y = tf.placeholder(tf.float32, [])
    with tf.train.MonitoredSession(hooks=[_Recorder(feed={y: 1.0})]) as sess:
        with pytest.raises(RuntimeError, match="Same tensor is fed by a SessionRunHook and user"):
            sess.run(y, feed_dict={y: 2.0})
    stopper = tf.train.StopAtStepHook(last_step=1)
    with tf.train.MonitoredSession(hooks=[stopper]) as sess:
        sess.run(train)
        assert sess.should_stop()
        with pytest.raises(RuntimeError, match="Run called even after should_stop requested"):
            sess.run(train)


def test_out_of_range_inside_the_block_is_a_clean_stop_and_end_hooks_run():
    q = tf.FIFOQueue(3, tf.int32, shapes=[()])
    tf.train.add_queue_runner(tf.train.QueueRunner(q, [q.enqueue_many([tf.train.limit_epochs(
        tf.constant([1, 2, 3]), num_epochs=1)])]))
    total = tf.Variable(0, name="total")
    add = total.assign_add(q.dequeue())
    tf.train.get_or_create_global_step()
    final = tf.train.FinalOpsHook(total)
    with tf.train.MonitoredSession(hooks=[final]) as sess:
        while not sess.should_stop():
            sess.run(add)
    assert final.final_ops_values == 6


def test_run_step_fn_gives_the_raw_session_and_run_with_hooks():
    x, step, train = _counter_model()
    rec = _Recorder()
    with tf.train.MonitoredSession(hooks=[rec]) as sess:
        def step_fn(step_context):
            assert step_context.session.run(x) == 1.0      # raw: no hooks
            return step_context.run_with_hooks(train)
        sess.run_step_fn(step_fn)
        assert rec.calls.count("before_run") == 1

        def stop_fn(step_context):
            step_context.request_stop()
        with pytest.raises(StopIteration):
            sess.run_step_fn(stop_fn)
        with pytest.raises(ValueError, match="step_context"):
            sess.run_step_fn(lambda ctx: None)


def test_singular_monitored_session_and_scaffold_defaults():
    x, step, train = _counter_model()
    set_ten = x.assign(10.0)
    scaffold = tf.train.Scaffold(init_fn=lambda scaffold, sess: sess.run(set_ten))
    with tf.train.SingularMonitoredSession(scaffold=scaffold) as sess:
        assert sess.raw_session().run(x) == 10.0
    assert scaffold.init_op is tf.get_collection(tf.GraphKeys.INIT_OP)[0]
    assert tf.get_collection(tf.GraphKeys.SAVERS) == [scaffold.saver]
    copied = tf.train.Scaffold(copy_from_scaffold=scaffold, init_feed_dict={})
    assert copied.ready_op is scaffold.ready_op and copied._user_init_fn is scaffold._user_init_fn
    tf.add_to_collection(tf.GraphKeys.INIT_OP, tf.no_op())
    with pytest.raises(RuntimeError, match='More than one item in the collection "init_op"'):
        tf.train.Scaffold.get_or_default("init_op", tf.GraphKeys.INIT_OP, tf.no_op)
    with pytest.raises(TypeError, match="not a Scaffold"):
        tf.train.Scaffold(copy_from_scaffold=object())


def test_training_session_saves_checkpoints_and_summaries_and_a_new_one_restores(tmp_path):
    x, step, train = _counter_model()
    tf.summary.scalar("x_value", x)
    with tf.train.MonitoredTrainingSession(checkpoint_dir=str(tmp_path), save_checkpoint_steps=2,
                                           save_summaries_steps=1, log_step_count_steps=1,
                                           hooks=[tf.train.StopAtStepHook(last_step=5)]) as sess:
        while not sess.should_stop():
            sess.run(train)
    assert tf.train.latest_checkpoint(str(tmp_path)).endswith("model.ckpt-5")
    assert os.path.exists(tmp_path / "graph.pbtxt")
    # TF's GraphDef, with the _output_shapes TF writes there
    graph_def = text_format.Parse((tmp_path / "graph.pbtxt").read_text(), tf.GraphDef())
    assert "_output_shapes" in next(n for n in graph_def.node if n.name == "x").attr
    events = [e for f in os.listdir(tmp_path) if f.startswith("events.out")
              for e in tf.train.summary_iterator(str(tmp_path / f))]
    values = {(v.tag, e.step): v.simple_value for e in events for v in e.summary.value}
    assert values[("x_value", 1)] == 2.0 and ("global_step/sec", 5) in values
    with tf.Graph().as_default():
        x2, step2, _ = _counter_model()
        with tf.train.MonitoredTrainingSession(checkpoint_dir=str(tmp_path), save_checkpoint_secs=None) as sess:
            assert sess.run([x2, step2]) == [6.0, 5]


class _FlakyCreator(monitored_session.SessionCreator):
    """Fails `failures` times with UnavailableError, then makes ChiefSessionCreator's sessions."""

    def __init__(self, failures):
        self.failures, self.made = failures, 0
        self._inner = tf.train.ChiefSessionCreator()

    def create_session(self):
        if self.failures:
            self.failures -= 1
            raise tf.errors.UnavailableError(None, None, "ps is restarting")
        self.made += 1
        return self._inner.create_session()


class _AbortOnce(tf.train.SessionRunHook):
    def __init__(self, at):
        self.at, self.n = at, 0

    def before_run(self, run_context):
        self.n += 1
        if self.n == self.at:
            raise tf.errors.AbortedError(None, None, "ps restarted")


def test_a_lost_task_recreates_the_session_and_a_lasting_loss_ends_in_bounded_time(monkeypatch):
    x, step, train = _counter_model()
    creator = _FlakyCreator(failures=2)
    rec = _Recorder()
    with tf.train.MonitoredSession(session_creator=creator, hooks=[rec, _AbortOnce(at=2)]) as sess:
        for _ in range(3):
            sess.run(train)
        assert creator.made == 2   # made again after the AbortedError
    assert rec.calls.count("after_create_session") == 2
    monkeypatch.setenv("TENSORWEAVE_RECOVERY_TIMEOUT_S", "0.3")
    with pytest.raises(tf.errors.UnavailableError,
                       match=r"No session could be created .* \(TENSORWEAVE_RECOVERY_TIMEOUT_S=0.3\)"):
        tf.train.MonitoredSession(session_creator=_FlakyCreator(failures=10 ** 6))


def test_queue_runners_start_with_the_session_and_stop_with_it():
    q = tf.FIFOQueue(2, tf.float32, shapes=[()])
    tf.train.add_queue_runner(tf.train.QueueRunner(q, [q.enqueue(1.0)] * 2))
    tf.train.get_or_create_global_step()
    deq = q.dequeue()
    with tf.train.MonitoredSession() as sess:
        assert sum(sess.run(deq) for _ in range(10)) == 10.0
        coord = sess._coordinated_creator.coord
        threads = list(coord._registered_threads)
    assert threads and not any(t.is_alive() for t in threads)


def test_monitored_training_session_numbers_match_a_plain_session():
    rng = np.random.RandomState(0)
    data = rng.randn(16, 3).astype(np.float32)
    target = data.dot([[1.0], [-2.0], [0.5]]).astype(np.float32)

    def build():
        w = tf.Variable(np.zeros((3, 1), np.float32), name="w")
        loss = tf.reduce_mean(tf.square(tf.matmul(data, w) - target))
        step = tf.train.get_or_create_global_step()
        return w, tf.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=step)
    w, train = build()
    final = tf.train.FinalOpsHook(w)
    with tf.train.MonitoredTrainingSession(hooks=[tf.train.StopAtStepHook(last_step=20), final]) as sess:
        while not sess.should_stop():
            sess.run(train)
    with tf.Graph().as_default():
        w2, train2 = build()
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            for _ in range(20):
                s.run(train2)
            np.testing.assert_array_equal(final.final_ops_values, s.run(w2))
