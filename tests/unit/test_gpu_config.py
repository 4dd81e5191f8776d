"""GPU configuration and bad input, through two stand-in GPUs (TENSORWEAVE_STANDIN_GPUS=2): the
memory options bound each GPU's pool, out of GPU memory is ResourceExhaustedError naming the op
and the size and the session serves on, tf.test / device_lib / tf.config answer from the GPUs,
a device index past them is InvalidArgumentError as TF words it."""
import os
import unittest

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.client import device_config
from tensorweave.python.client import device_lib
from tensorweave.runtime import devices, placer
from tensorweave.runtime.executor import LOCAL_TASK

GIB = 1 << 30
GPU0 = f"{LOCAL_TASK}/device:GPU:0"


@pytest.fixture(autouse=True)
def standin_gpus(monkeypatch):
    """Two stand-in GPUs of 1 GiB, whose pools this test makes first (as a fresh process would)."""
    monkeypatch.setenv("TENSORWEAVE_STANDIN_GPUS", "2")
    monkeypatch.delenv("TENSORWEAVE_STANDIN_GPU_MEMORY", raising=False)
    monkeypatch.setattr(devices, "_POOL_LIMITS", {})
    monkeypatch.setattr(devices, "_STANDIN_MEMORY", {})
    monkeypatch.setattr(device_config, "_context", {"visible": None, "initialized": False, "soft_placement": False,
                                                       "log_placement": False})


def memory_config(fraction=0.0, allow_growth=False) -> tf.ConfigProto:
    return tf.ConfigProto(gpu_options=tf.GPUOptions(per_process_gpu_memory_fraction=fraction,
                                                    allow_growth=allow_growth))


def test_memory_fraction_bounds_each_gpus_pool_for_the_process():
    config = memory_config(fraction=1 / 1024)                     # 1 MiB of each stand-in's 1 GiB
    listed = device_lib.list_local_devices(config)
    assert [(d.name, d.device_type, d.memory_limit) for d in listed] == [
        ("/device:CPU:0", "CPU", 268435456), ("/device:GPU:0", "GPU", GIB // 1024),
        ("/device:GPU:1", "GPU", GIB // 1024)]
    # One pool per GPU per process, as TF's one allocator: a later ConfigProto does not change it.
    assert [d.memory_limit for d in device_lib.list_local_devices(memory_config(fraction=0.5))][1:] == [GIB // 1024] * 2


def test_without_a_fraction_the_pool_may_take_the_whole_gpu_grown_or_not():
    assert [d.memory_limit for d in device_lib.list_local_devices(memory_config(allow_growth=True))][1:] == [GIB] * 2


def test_out_of_gpu_memory_names_the_op_and_the_size_and_the_session_serves_on():
    with tf.Graph().as_default():
        with tf.device("/cpu:0"):
            a = tf.placeholder(tf.float32, [None], name="a")
            b = tf.placeholder(tf.float32, [None], name="b")
        with tf.device("/gpu:0"):
            on_gpu_a = tf.identity(a, name="on_gpu_a")
            on_gpu_b = tf.identity(b, name="on_gpu_b")
        with tf.Session(config=memory_config(fraction=1 / 1024)) as sess:
            small = np.arange(1000, dtype=np.float32)
            np.testing.assert_array_equal(sess.run(on_gpu_a, {a: small}), small)
            with pytest.raises(tf.errors.ResourceExhaustedError) as caught:
                sess.run(on_gpu_a, {a: np.ones(1 << 19, np.float32)})          # 2 MiB
            assert "[[node on_gpu_a (op: Identity)" in caught.value.message
            assert caught.value.message.startswith(
                f"OOM when allocating tensor with shape[524288] and type float on {GPU0}: Out of memory allocating "
                "2,097,152 bytes")
            # The pool counts what is live: two 600 KiB tensors of one step do not fit in 1 MiB ...
            half = np.ones(150_000, np.float32)
            with pytest.raises(tf.errors.ResourceExhaustedError, match="allocated so far: 600,000 bytes"):
                sess.run([on_gpu_a, on_gpu_b], {a: half, b: half})
            # ... and a step's tensors are freed with it: each alone fits, again and again.
            for _ in range(3):
                np.testing.assert_array_equal(sess.run(on_gpu_b, {b: half}), half)
            np.testing.assert_array_equal(sess.run(on_gpu_a, {a: small}), small)


def test_a_constant_past_the_pool_is_refused_when_the_step_is_planned():
    with tf.Graph().as_default():
        with tf.device("/gpu:1"):
            big = tf.constant(np.zeros((1024, 512), np.float64), name="big_const")
        with tf.Session(config=memory_config(fraction=1 / 1024)) as sess:
            with pytest.raises(tf.errors.ResourceExhaustedError,
                               match=r"OOM when allocating tensor with shape\[1024,512\] and type double on "
                                     + f"{LOCAL_TASK}/device:GPU:1") as caught:
                sess.run(big)
            assert "[[node big_const (op: Const)" in caught.value.message


def test_nominal_stand_in_memory_is_settable(monkeypatch):
    monkeypatch.setenv("TENSORWEAVE_STANDIN_GPU_MEMORY", str(1 << 20))
    assert [d.memory_limit for d in device_lib.list_local_devices(memory_config(fraction=0.5))][1:] == [1 << 19] * 2


def test_tf_test_answers_from_the_gpus(monkeypatch):
    assert tf.test.is_gpu_available() and tf.test.is_gpu_available(cuda_only=True)
    assert not tf.test.is_gpu_available(True, (3, 0))     # a stand-in has no compute capability: TF reads (0, 0)
    assert tf.test.is_built_with_cuda() and tf.test.is_built_with_gpu_support()
    assert tf.test.gpu_device_name() == "/device:GPU:0"
    monkeypatch.delenv("TENSORWEAVE_STANDIN_GPUS")
    if devices.cupy is None:                                # (a machine with the gpu extra has CUDA)
        assert not tf.test.is_gpu_available() and not tf.test.is_built_with_cuda()
        assert tf.test.gpu_device_name() == ""
        assert [d.device_type for d in device_lib.list_local_devices()] == ["CPU"]


def test_device_lib_lists_the_gpus_a_config_makes_visible():
    listed = device_lib.list_local_devices(tf.ConfigProto(gpu_options=tf.GPUOptions(visible_device_list="1")))
    assert [(d.name, d.physical_device_desc) for d in listed[1:]] == [
        ("/device:GPU:0", "device: 1, name: TensorWeave stand-in GPU (host memory)")]   # renumbered; CUDA's ordinal
    assert [d.name for d in device_lib.list_local_devices(tf.ConfigProto(device_count={"GPU": 0}))] == [
        "/device:CPU:0"]
    with pytest.raises(tf.errors.InvalidArgumentError, match="invalid GPU id '2' but visible device count is 2"):
        device_lib.list_local_devices(tf.ConfigProto(gpu_options=tf.GPUOptions(visible_device_list="0,2")))


def test_tf_config_lists_the_gpus_and_narrows_sessions_to_the_visible_ones():
    gpus = tf.config.list_physical_devices("GPU")
    assert gpus == tf.config.experimental.list_physical_devices("GPU") == [
        tf.config.PhysicalDevice("/physical_device:GPU:0", "GPU"),
        tf.config.PhysicalDevice("/physical_device:GPU:1", "GPU")]
    assert devices._POOL_LIMITS == {}                        # listing physical devices sets up no GPU
    for gpu in gpus:
        tf.config.experimental.set_memory_growth(gpu, True)
    assert all(tf.config.experimental.get_memory_growth(g) for g in gpus)
    tf.config.set_visible_devices(gpus[1], "GPU")
    assert tf.config.get_visible_devices("GPU") == [gpus[1]]
    assert tf.config.get_visible_devices("CPU") == tf.config.list_physical_devices("CPU")
    with tf.Graph().as_default():
        with tf.device("/gpu:0"):
            x = tf.identity(tf.constant([1.0, 2.0]), name="x")
        with tf.Session() as sess:                           # config=None: the context's visible GPUs
            assert [d.name for d in sess.list_devices()] == [f"{LOCAL_TASK}/device:CPU:0", GPU0]
            np.testing.assert_array_equal(sess.run(x), [1.0, 2.0])
    with tf.Graph().as_default():
        with tf.device("/gpu:1"):
            y = tf.constant([1.0, 2.0], name="y")
        with pytest.raises(tf.errors.InvalidArgumentError, match="Cannot assign a device for operation y"):
            tf.Session().run(y)
    assert tf.config.list_logical_devices("GPU") == [tf.config.LogicalDevice("/device:GPU:0", "GPU")]
    with pytest.raises(RuntimeError, match="cannot be modified after being initialized"):
        tf.config.experimental.set_memory_growth(gpus[0], False)


def test_no_visible_gpu_leaves_sessions_on_the_cpu():
    tf.config.set_visible_devices([], "GPU")
    with tf.Graph().as_default():
        x = tf.identity(tf.constant(3.0), name="x")             # (a GPU kernel: on a GPU when there is one)
        with tf.Session() as sess:
            assert [d.name for d in sess.list_devices()] == [f"{LOCAL_TASK}/device:CPU:0"]
            assert sess.run(x) == 3.0


def test_a_device_index_past_the_gpus_is_invalid_argument_as_tf_words_it(capfd):
    with tf.Graph().as_default():
        with tf.device("/gpu:2"):
            z = tf.constant(1.0, name="z")
        with pytest.raises(tf.errors.InvalidArgumentError) as caught:
            tf.Session(config=tf.ConfigProto()).run(z)
        assert caught.value.message.startswith(
            f"Cannot assign a device for operation z: Operation was explicitly assigned to /device:GPU:2 but "
            f"available devices are [ {LOCAL_TASK}/device:CPU:0, {GPU0}, {LOCAL_TASK}/device:GPU:1 ]. Make sure the "
            "device specification refers to a valid device.")
        # Soft placement: TF takes the first GPU for an op that has a GPU kernel.
        config = tf.ConfigProto(allow_soft_placement=True, log_device_placement=True)
        assert tf.Session(config=config).run(z) == 1.0
        assert f"z: (Const): {GPU0}" in capfd.readouterr().err


def test_the_placer_uses_the_gpus_a_remote_task_lists():
    w0, w1 = "/job:worker/replica:0/task:0", "/job:worker/replica:0/task:1"
    cluster = placer.ClusterDevices.from_cluster({"worker": ["a:1", "b:2"]}, w0, (), [f"{w0}/device:CPU:0"])
    gd = tf.GraphDef()
    gd.node.add(name="g", op="Identity", device="/job:worker/task:1/device:GPU:0")
    gd.node.add(name="h", op="Identity", device="/job:worker/task:1")
    with pytest.raises(tf.errors.InvalidArgumentError, match="Cannot assign a device for operation g"):
        placer.place(gd, cluster)
    learned = cluster.with_task_devices(w1, [f"{w1}/device:CPU:0", f"{w1}/device:GPU:0"])
    assert placer.place(gd, learned) == {"g": f"{w1}/device:GPU:0", "h": f"{w1}/device:GPU:0"}
    assert learned.with_task_devices(w1, [f"{w1}/device:CPU:0"]).gpus == ()


def test_a_test_cases_session_pins_to_the_cpu_unless_use_gpu_and_to_the_gpu_with_force_gpu():
    placed = {}

    class Case(tf.test.TestCase):
        def test_devices(self):
            for kwargs in ({}, {"use_gpu": True}, {"force_gpu": True}):
                with self.session(**kwargs) as sess:
                    x = tf.identity(tf.constant([1.0, 2.0]), name="x")
                    metadata = tf.RunMetadata()
                    self.assertAllEqual(sess.run(x, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
                                                 run_metadata=metadata), [1.0, 2.0])
                    placed[tuple(kwargs)] = {d.device for d in metadata.step_stats.dev_stats
                                             for n in d.node_stats if n.node_name == x.op.name}

    result = unittest.TextTestRunner(stream=open(os.devnull, "w")).run(
        unittest.defaultTestLoader.loadTestsFromTestCase(Case))
    assert result.wasSuccessful(), result.errors + result.failures
    assert placed == {(): {f"{LOCAL_TASK}/device:CPU:0"}, ("use_gpu",): {GPU0}, ("force_gpu",): {GPU0}}
