"""The GPU memory options and out-of-memory on a real GPU (CuPy's default memory pool)."""
import re

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.python.client import device_lib
from tensorweave.runtime import devices
from tensorweave.runtime.executor import LOCAL_TASK


@pytest.fixture
def fresh_pools(cupy, monkeypatch):
    """This test makes the GPUs' pools first, as a fresh process; their limits are lifted after."""
    monkeypatch.delenv(devices.STANDIN_ENV, raising=False)
    monkeypatch.setattr(devices, "_POOL_LIMITS", {})
    yield cupy
    for ordinal in range(cupy.cuda.runtime.getDeviceCount()):
        with cupy.cuda.Device(ordinal):
            cupy.get_default_memory_pool().set_limit(size=0)


def test_fraction_limits_cupys_pool_and_device_lib_says_so(fresh_pools):
    cupy = fresh_pools
    total = cupy.cuda.runtime.memGetInfo()[1]
    config = tf.ConfigProto(gpu_options=tf.GPUOptions(per_process_gpu_memory_fraction=0.01,
                                                      visible_device_list="0"))
    gpu = device_lib.list_local_devices(config)[1]
    assert gpu.name == "/device:GPU:0" and gpu.memory_limit == int(total * 0.01)
    assert re.match(r"device: 0, name: .+, pci bus id: .+, compute capability: \d+\.\d+$", gpu.physical_device_desc)
    with cupy.cuda.Device(0):
        assert cupy.get_default_memory_pool().get_limit() == int(total * 0.01)
    assert tf.test.is_gpu_available(cuda_only=True, min_cuda_compute_capability=(3, 0))
    assert tf.test.gpu_device_name() == "/device:GPU:0"


def test_out_of_gpu_memory_is_resource_exhausted_and_the_session_serves_on(fresh_pools):
    cupy = fresh_pools
    fraction = (64 << 20) / cupy.cuda.runtime.memGetInfo()[1]        # a 64 MiB pool
    with tf.Graph().as_default():
        with tf.device("/cpu:0"):
            p = tf.placeholder(tf.float32, [None], name="p")
        with tf.device("/gpu:0"):
            on_gpu = tf.identity(p, name="on_gpu")
        config = tf.ConfigProto(gpu_options=tf.GPUOptions(per_process_gpu_memory_fraction=fraction))
        with tf.Session(config=config) as sess:
            with pytest.raises(tf.errors.ResourceExhaustedError) as caught:
                sess.run(on_gpu, {p: np.ones(32 << 20, np.float32)})     # 128 MiB
            assert caught.value.message.startswith(
                f"OOM when allocating tensor with shape[33554432] and type float on {LOCAL_TASK}/device:GPU:0")
            assert "on_gpu" in caught.value.message
            small = np.arange(1000, dtype=np.float32)
            np.testing.assert_array_equal(sess.run(on_gpu, {p: small}), small)
