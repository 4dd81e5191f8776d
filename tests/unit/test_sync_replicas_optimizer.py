"""tf.train.SyncReplicasOptimizer with two replicas as two threads, each with its own graph and
MonitoredTrainingSession on its own worker task of an in-process cluster (tf.test.create_local_cluster;
the variables on the ps): identical data gives exactly plain gradient descent's numbers, dense and
sparse (IndexedSlices, a row repeated) gradients alike, and the end of training ends both replicas. (Two replicas
on one task would share their local step variable, as in TF, and train on stale gradients.)"""
from __future__ import annotations

import sys
import threading
import traceback

import numpy as np
import pytest

import tensorweave as tf

pytestmark = pytest.mark.usefixtures("graph")
IDS = np.array([0, 2, 2, 5], np.int32)
X = np.random.RandomState(0).randn(4, 3).astype(np.float32)
Y = np.random.RandomState(1).randn(4, 1).astype(np.float32)


def _model():
    emb = tf.get_variable("emb", [6, 3], initializer=tf.constant_initializer(0.1))
    w = tf.get_variable("w", [3, 1], initializer=tf.constant_initializer(0.2))
    rows = tf.gather(emb, IDS)                      # a sparse (IndexedSlices) gradient for emb
    loss = tf.reduce_mean(tf.square(tf.matmul(rows * X, w) - Y))
    return emb, w, loss, tf.train.get_or_create_global_step()


def _sync_replica(index):
    """Replica `index`'s model and SyncReplicasOptimizer in the current graph, variables on the
    ps: (optimizer, train op, global step)."""
    with tf.device(tf.train.replica_device_setter(ps_tasks=1, worker_device=f"/job:worker/task:{index}")):
        _, _, loss, step = _model()
        opt = tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(0.5), replicas_to_aggregate=2)
        return opt, opt.minimize(loss, global_step=step), step


def _replica(target, index, last_step, out, errors):
    try:
        with tf.Graph().as_default():
            opt, train, step = _sync_replica(index)
            hooks = [opt.make_session_run_hook(index == 0), tf.train.StopAtStepHook(last_step=last_step)]
            with tf.train.MonitoredTrainingSession(master=target, is_chief=index == 0, hooks=hooks,
                                                  log_step_count_steps=0) as sess:
                while not sess.should_stop():
                    sess.run(train)
            out[index] = True
    except Exception as e:  # noqa: BLE001 - reported by the test
        errors.append(e)


def _stacks() -> str:
    """Every thread's stack (for a replica that does not end)."""
    names = {t.ident: t.name for t in threading.enumerate()}
    return "\n".join(f"--- {names.get(ident, ident)}\n" + "".join(traceback.format_stack(frame))
                     for ident, frame in sys._current_frames().items())


def test_two_replicas_on_identical_data_are_plain_gradient_descent_dense_and_sparse():
    workers, _ = tf.test.create_local_cluster(num_workers=2, num_ps=1)
    out, errors = {}, []
    threads = [threading.Thread(target=_replica, args=(workers[i].target, i, 12, out, errors), daemon=True)
               for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors
    assert not any(t.is_alive() for t in threads), "a replica still runs after 60 s:\n" + _stacks()
    assert out == {0: True, 1: True}
    with tf.Graph().as_default(), tf.device("/job:ps/task:0"):   # the trained values, once both are done
        with tf.Session(workers[0].target) as s:
            emb, w, step = s.run(_model()[:2] + (tf.train.get_global_step(),))
    with tf.Graph().as_default():
        emb2, w2, loss, step2 = _model()
        # emb's gradient summed per row, as the accumulator sums it (TF's sparse SGD would add a
        # repeated row's parts one at a time, in other bits)
        plain = tf.train.GradientDescentOptimizer(0.5)
        train = plain.apply_gradients([(tf.convert_to_tensor(g), v) for g, v in plain.compute_gradients(loss)],
                                      global_step=step2)
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            for _ in range(step):
                s.run(train)
            np.testing.assert_array_equal(emb, s.run(emb2))
            np.testing.assert_array_equal(w, s.run(w2))
    assert step >= 12


def test_misuse_is_reported():
    emb, w, loss, step = _model()
    opt = tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(0.1), replicas_to_aggregate=2,
                                         total_num_replicas=3)
    hook = opt.make_session_run_hook(True)
    with pytest.raises(ValueError, match="apply_gradient should be called before using the hook"):
        hook.begin()
    with pytest.raises(ValueError, match="should be called after apply_gradients"):
        opt.get_init_tokens_op()
    with pytest.raises(ValueError, match="Global step is required"):
        opt.apply_gradients(opt.compute_gradients(loss))
    opt.minimize(loss, global_step=step)
    with pytest.raises(ValueError, match="Too few tokens"):
        opt.get_init_tokens_op(num_tokens=-2)
    assert opt.get_chief_queue_runner().name == "dummy_queue"
    assert opt.get_slot_names() == []


def test_a_chief_one_run_behind_the_last_replica_does_not_wait_forever():
    """The end of training as StopAtStepHook can leave it: the other replica has gone, no token is
    left (the stale runs of a replica that ran ahead take tokens without adding to a step), and
    the chief, which read the global step just before the last step, starts one run more. Its
    gradient alone completes no step; the token the departed replica left lets its run return."""
    workers, _ = tf.test.create_local_cluster(num_workers=2, num_ps=1)
    trained = threading.Barrier(2, timeout=60)
    replica_gone = threading.Event()
    returned, errors = [], []

    def replica(index):
        try:
            with tf.Graph().as_default():
                opt, train, step = _sync_replica(index)
                tokens = opt._sync_token_queue
                drain = tokens.dequeue_many(tokens.size())
                with tf.train.MonitoredTrainingSession(master=workers[index].target, is_chief=index == 0,
                                                      hooks=[opt.make_session_run_hook(index == 0)],
                                                      log_step_count_steps=0) as sess:
                    for _ in range(3):           # three runs in lockstep: two steps (the first
                        sess.run(train)          # runs' tokens say step 0, so their second
                        trained.wait()           # gradients are stale)
                    if index == 1:
                        while sess.run(step) < 2:
                            pass
                        sess.run(drain)          # what stale runs of a replica that ran ahead take
                    else:
                        replica_gone.wait(60)
                        sess.run(train)          # one run more, after the other replica has gone
                        returned.append(True)
                if index == 1:
                    replica_gone.set()
        except Exception as e:  # noqa: BLE001 - reported by the test
            errors.append(e)
            replica_gone.set()

    threads = [threading.Thread(target=replica, args=(i,), daemon=True) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    stuck = any(t.is_alive() for t in threads)
    if stuck:   # release the chief so that nothing is left waiting after the test
        with tf.Graph().as_default(), tf.device("/job:ps/task:0"):
            q = tf.FIFOQueue(-1, tf.int64, shapes=(), shared_name="sync_token_q", name="sync_token_q")
            with tf.Session(workers[0].target) as s:
                s.run(q.close(cancel_pending_enqueues=True))
    assert not errors, errors
    assert not stuck, "the chief still waits for a token"
    assert returned == [True]
