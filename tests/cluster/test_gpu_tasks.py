"""Other tasks' GPUs, with real server processes that each have one stand-in GPU of 1 MiB
(TENSORWEAVE_STANDIN_GPUS=1, TENSORWEAVE_STANDIN_GPU_MEMORY): a session on task 0 places ops
pinned to task 1's GPU there, asks no task its graphs do not name (until a placement fails: its
message lists every task's GPUs), and a step past task 1's GPU memory is ResourceExhaustedError
naming the op while task 1 serves on."""
from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tf

W0, W1 = "/job:worker/replica:0/task:0", "/job:worker/replica:0/task:1"


@pytest.fixture(scope="module")
def cluster(start_cluster_module, module_env):
    """worker 0 and 1 serve; worker 2 is listed in the cluster but nothing serves it."""
    module_env.setenv("TENSORWEAVE_CONNECT_TIMEOUT_S", "10")
    return start_cluster_module({"worker": 3}, env={"TENSORWEAVE_STANDIN_GPUS": "1",
                                                    "TENSORWEAVE_STANDIN_GPU_MEMORY": str(1 << 20)},
                                in_process=(("worker", 2),))


def test_an_op_pinned_to_another_tasks_gpu_runs_there(cluster, capfd):
    with tf.Graph().as_default():
        with tf.device("/job:worker/task:0/cpu:0"):
            p = tf.placeholder(tf.float32, [None], name="p")
        with tf.device("/job:worker/task:1/gpu:0"):
            on_gpu = tf.identity(p, name="on_gpu")
        with tf.device("/job:worker/task:1"):
            unpinned = tf.identity(on_gpu, name="unpinned")      # a GPU kernel, no device type: the task's GPU
        config = tf.ConfigProto(log_device_placement=True)
        with tf.Session(cluster.target("worker", 0), config=config) as sess:
            feed = np.arange(5, dtype=np.float32)
            options = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
            metadata = tf.RunMetadata()
            got = sess.run([on_gpu, unpinned], {p: feed}, options=options, run_metadata=metadata)
            np.testing.assert_array_equal(got[0], feed)
            np.testing.assert_array_equal(got[1], feed)
            ran_on = {n.node_name: d.device for d in metadata.step_stats.dev_stats for n in d.node_stats}
            assert ran_on["on_gpu"] == ran_on["unpinned"] == f"{W1}/device:GPU:0"
        err = capfd.readouterr().err
        assert f"on_gpu: (Identity): {W1}/device:GPU:0" in err and f"unpinned: (Identity): {W1}/device:GPU:0" in err


def test_an_index_past_the_remote_tasks_gpus_is_invalid_argument(cluster):
    with tf.Graph().as_default():
        with tf.device("/job:worker/task:1/gpu:1"):
            c = tf.constant(1.0, name="past")
        with tf.Session(cluster.target("worker", 0)) as sess:
            with pytest.raises(tf.errors.InvalidArgumentError,
                               match=r"Cannot assign a device for operation past: Operation was explicitly assigned "
                                     r"to /job:worker/task:1/device:GPU:1 but available devices are \[ .*"
                                     + f"{W1}/device:GPU:0"):
                sess.run(c)
        with tf.Session(cluster.target("worker", 0), config=tf.ConfigProto(allow_soft_placement=True)) as sess:
            assert sess.run(c) == 1.0


def test_the_error_lists_the_gpus_of_tasks_no_node_names(cluster):
    """As TF's, the message lists the cluster's devices: task 1's GPU though no node names task 1
    (asked only on this error; worker 2, which nothing serves, is left out without a wait)."""
    with tf.Graph().as_default():
        with tf.device("/job:worker/task:0/gpu:5"):
            c = tf.constant(1.0, name="past")
        with tf.Session(cluster.target("worker", 0)) as sess:
            with pytest.raises(tf.errors.InvalidArgumentError) as caught:
                sess.run(c)
    message = caught.value.message
    assert message.startswith("Cannot assign a device for operation past: Operation was explicitly assigned to "
                              "/job:worker/task:0/device:GPU:5 but available devices are [ "), message
    assert f"{W0}/device:GPU:0" in message and f"{W1}/device:GPU:0" in message, message
    assert "task:2/device:GPU" not in message


def test_out_of_a_remote_gpus_memory_fails_the_step_and_the_task_serves_on(cluster):
    with tf.Graph().as_default():
        with tf.device("/job:worker/task:0/cpu:0"):
            p = tf.placeholder(tf.float32, [None], name="p")
        with tf.device("/job:worker/task:1/gpu:0"):
            on_gpu = tf.identity(p, name="too_big")
        with tf.Session(cluster.target("worker", 0)) as sess:
            with pytest.raises(tf.errors.ResourceExhaustedError) as caught:
                sess.run(on_gpu, {p: np.ones(1 << 19, np.float32)})      # 2 MiB
            message = caught.value.message
            assert message.startswith(f"OOM when allocating tensor with shape[524288] and type float on "
                                      f"{W1}/device:GPU:0: Out of memory allocating 2,097,152 bytes"), message
            assert "too_big" in message
            small = np.arange(1000, dtype=np.float32)
            for _ in range(2):
                np.testing.assert_array_equal(sess.run(on_gpu, {p: small}), small)
    assert cluster.alive("worker", 1)
