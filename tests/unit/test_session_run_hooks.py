"""The basic session-run hooks in a MonitoredSession: what each one logs, writes, feeds or
stops, and SecondOrStepTimer."""
from __future__ import annotations

import json
import logging
import os
import threading
import time

import numpy as np
import pytest

import tensorweave as tf

pytestmark = pytest.mark.usefixtures("graph")


def _model():
    x = tf.Variable(1.0, name="x")
    step = tf.train.get_or_create_global_step()
    train = tf.group(x.assign_add(1.0), step.assign_add(1))
    return x, step, train


def _train(hooks, steps=None, train=None, **kwargs):
    with tf.train.MonitoredSession(hooks=hooks, **kwargs) as sess:
        n = 0
        while not sess.should_stop() and (steps is None or n < steps):
            sess.run(train)
            n += 1
    return n


def test_second_or_step_timer():
    timer = tf.train.SecondOrStepTimer(every_steps=3)
    assert timer.should_trigger_for_step(0)
    assert timer.update_last_triggered_step(0) == (None, None)
    assert not timer.should_trigger_for_step(0) and not timer.should_trigger_for_step(2)
    assert timer.should_trigger_for_step(3)
    secs, steps = timer.update_last_triggered_step(4)
    assert steps == 4 and secs >= 0 and timer.last_triggered_step() == 4
    by_time = tf.train.SecondOrStepTimer(every_secs=0.05)
    by_time.update_last_triggered_step(1)
    assert not by_time.should_trigger_for_step(2)
    time.sleep(0.06)
    assert by_time.should_trigger_for_step(2)
    with pytest.raises(ValueError, match="Either every_secs or every_steps"):
        tf.train.SecondOrStepTimer()
    with pytest.raises(ValueError, match="Can not provide both"):
        tf.train.SecondOrStepTimer(every_secs=1, every_steps=1)


def test_stop_at_step_hook_by_last_step_and_by_num_steps():
    x, step, train = _model()
    assert _train([tf.train.StopAtStepHook(last_step=4)], train=train) == 4
    with pytest.raises(ValueError, match="Only one of num_steps or last_step"):
        tf.train.StopAtStepHook(num_steps=1, last_step=1)
    with tf.Graph().as_default():
        x, step, train = _model()
        hooks = [tf.train.StopAtStepHook(num_steps=3), tf.train.FinalOpsHook(step)]
        assert _train(hooks, train=train) == 3
        assert hooks[1].final_ops_values == 3
    with tf.Graph().as_default(), pytest.raises(RuntimeError, match="Global step should be created"):
        tf.train.StopAtStepHook(last_step=1).begin()


def test_logging_tensor_hook_logs_every_n_iter_and_at_end(caplog):
    x, step, train = _model()
    hook = tf.train.LoggingTensorHook({"the_x": x, "the_step": "global_step"}, every_n_iter=2, at_end=True)
    with caplog.at_level(logging.INFO, logger="tensorweave"):
        _train([hook], steps=4, train=train)
    lines = [r.getMessage() for r in caplog.records if "the_x" in r.getMessage()]
    assert lines[0] == "the_step = 0, the_x = 1.0"
    assert lines[1].startswith("the_step = 2, the_x = 3.0 (") and lines[-1] == "the_step = 4, the_x = 5.0 (" \
        + lines[-1].split("(")[1]
    assert len(lines) == 3
    with pytest.raises(ValueError, match="exactly one of every_n_iter"):
        tf.train.LoggingTensorHook([x])


def test_nan_tensor_hook_raises_or_stops():
    x = tf.Variable(1.0)
    tf.train.get_or_create_global_step()
    nan = tf.Variable(0.0) * np.float32(np.nan) + x
    with pytest.raises(tf.train.NanLossDuringTrainingError, match="NaN loss during training"):
        _train([tf.train.NanTensorHook(nan)], steps=3, train=nan)
    assert _train([tf.train.NanTensorHook(nan, fail_on_nan_loss=False)], steps=5, train=nan) == 1


def test_step_counter_hook_writes_steps_per_second(tmp_path):
    x, step, train = _model()
    _train([tf.train.StepCounterHook(every_n_steps=2, output_dir=str(tmp_path))], steps=6, train=train)
    tf.summary.FileWriterCache.clear()
    events = [e for f in os.listdir(tmp_path) for e in tf.train.summary_iterator(str(tmp_path / f))]
    rates = [(e.step, v.simple_value) for e in events for v in e.summary.value if v.tag == "global_step/sec"]
    assert [s for s, _ in rates] == [3, 5] and all(r > 0 for _, r in rates)


def test_global_step_waiter_hook_holds_the_first_run_until_the_step():
    x, step, train = _model()
    bump = step.assign_add(1)
    server = tf.train.Server.create_local_server()
    released = {}

    graph = tf.get_default_graph()

    def other_worker():
        with tf.Session(server.target, graph=graph) as s:
            time.sleep(0.3)
            for _ in range(3):
                s.run(bump)
            released["at"] = time.monotonic()
    creator = tf.train.ChiefSessionCreator(master=server.target)
    with tf.train.MonitoredSession(session_creator=creator, hooks=[tf.train.GlobalStepWaiterHook(3)]) as sess:
        threading.Thread(target=other_worker, daemon=True).start()
        start = time.monotonic()
        sess.run(train)
        assert time.monotonic() - start > 0.25 and "at" in released


def test_feed_fn_hook_and_final_ops_hook():
    tf.train.get_or_create_global_step()
    y = tf.placeholder(tf.float32, [])
    total = tf.Variable(0.0)
    add = total.assign_add(y)
    values = iter([1.0, 2.0, 3.0])
    final = tf.train.FinalOpsHook(total * 10.0)
    _train([tf.train.FeedFnHook(lambda: {y: next(values)}), final], steps=3, train=add)
    assert final.final_ops_values == 60.0


def test_profiler_hook_writes_a_chrome_trace_every_n_steps(tmp_path):
    x, step, train = _model()
    _train([tf.train.ProfilerHook(save_steps=2, output_dir=str(tmp_path))], steps=5, train=train)
    traces = sorted(f for f in os.listdir(tmp_path) if f.startswith("timeline-"))
    assert traces == ["timeline-2.json", "timeline-4.json"]
    events = json.load(open(tmp_path / traces[0]))["traceEvents"]
    assert any(e.get("args", {}).get("name", "").endswith("AssignAddVariableOp") for e in events)


def test_checkpoint_saver_hook_calls_listeners_and_a_listener_can_stop(tmp_path):
    x, step, train = _model()

    class Listener(tf.train.CheckpointSaverListener):
        def __init__(self):
            self.calls = []

        def before_save(self, session, global_step_value):
            self.calls.append(("before", global_step_value))

        def after_save(self, session, global_step_value):
            self.calls.append(("after", global_step_value))
            return global_step_value >= 4

        def end(self, session, global_step_value):
            self.calls.append(("end", global_step_value))
    listener = Listener()
    saver = tf.train.Saver()
    hook = tf.train.CheckpointSaverHook(str(tmp_path), save_steps=2, saver=saver, listeners=[listener])
    assert _train([hook], steps=100, train=train) == 4
    assert listener.calls == [("before", 0), ("after", 0), ("before", 2), ("after", 2), ("before", 4),
                              ("after", 4), ("end", 4)]
    assert tf.train.latest_checkpoint(str(tmp_path)).endswith("model.ckpt-4")
    assert tf.train.load_variable(str(tmp_path), "x") == 5.0
    with pytest.raises(ValueError, match="both saver and scaffold"):
        tf.train.CheckpointSaverHook(str(tmp_path), save_steps=1, saver=saver, scaffold=tf.train.Scaffold())


def test_summary_saver_hook_writes_the_summary_op(tmp_path):
    x, step, train = _model()
    summary = tf.summary.scalar("x_value", x)
    _train([tf.train.SummarySaverHook(save_steps=2, output_dir=str(tmp_path), summary_op=summary)], steps=5,
           train=train)
    tf.summary.FileWriterCache.clear()
    events = [e for f in os.listdir(tmp_path) for e in tf.train.summary_iterator(str(tmp_path / f))]
    written = [(e.step, v.simple_value) for e in events for v in e.summary.value if v.tag == "x_value"]
    # (the summary reads x in the same run that adds 1 to it, unordered: before or after)
    assert [st for st, _ in written] == [1, 3, 5] and all(v in (st, st + 1) for st, v in written)
    with pytest.raises(ValueError, match="Exactly one of scaffold or summary_op"):
        tf.train.SummarySaverHook(save_steps=1)
