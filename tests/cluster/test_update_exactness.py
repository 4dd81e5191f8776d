"""No lost or duplicated updates: two worker processes each add 1 to a counter variable on a
ps process 10,000 times with use_locking=True, at the same time; the counter ends at exactly
20,000 and the values the 20,000 increments returned are 1..20,000, each exactly once."""
from __future__ import annotations

import os
import sys

import tensorweave as tf

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from trainer_procs import TrainerCluster

TASK = os.path.join(os.path.dirname(os.path.abspath(__file__)), "shared_counter_task.py")
ADDS = 10000


def test_two_workers_adding_to_a_shared_counter_lose_and_duplicate_nothing():
    with TrainerCluster(ps=1, workers=2, args=[f"--adds={ADDS}"], script=TASK) as c:
        c.start_all()
        for i in range(2):
            assert c.wait("worker", i, timeout=120) == 0, c.describe()
        values = [c.result("worker", i)["values"] for i in range(2)]
        with tf.Graph().as_default():
            with tf.device("/job:ps/task:0"):
                counter = tf.Variable(0, dtype=tf.int64, name="counter")   # the same variable, by name
            with tf.Session("grpc://" + c.hosts["ps"][0]) as sess:
                final = sess.run(counter)
    assert final == 2 * ADDS
    for v in values:
        assert len(v) == ADDS and all(a < b for a, b in zip(v, v[1:]))   # each worker saw its own adds in order
    assert sorted(values[0] + values[1]) == list(range(1, 2 * ADDS + 1))
    # the two really ran at the same time: each one's values are spread over the whole range
    assert min(max(v) for v in values) > ADDS and max(min(v) for v in values) < ADDS
