"""tf.config: the devices of this process and the soft-placement default of Sessions (the values
printed by TF 2.21's tf.config under tf.compat.v1 on a CPU machine)."""
import pytest

import tensorweave as tf
from tensorweave.client import device_config


@pytest.fixture(autouse=True)
def fresh_context(monkeypatch):
    monkeypatch.setattr(device_config, "_context", {"visible": None, "initialized": False, "soft_placement": False,
                                                       "log_placement": False})


def test_devices_listed_as_tf_names_them():
    cpu = tf.config.PhysicalDevice(name="/physical_device:CPU:0", device_type="CPU")
    assert tf.config.list_physical_devices() == [cpu]
    assert tf.config.experimental.list_physical_devices("CPU") == [cpu]
    assert tf.config.list_physical_devices("GPU") == []
    assert tf.config.list_physical_devices("cpu") == []          # device types are case-sensitive in TF
    assert tf.config.get_visible_devices() == [cpu]
    assert tf.config.list_logical_devices() == [tf.config.LogicalDevice("/device:CPU:0", "CPU")]
    assert repr(cpu) == "PhysicalDevice(name='/physical_device:CPU:0', device_type='CPU')"


def test_a_logical_device_name_is_what_tf_device_takes():
    name = tf.config.list_logical_devices("CPU")[0].name
    with tf.Graph().as_default():
        with tf.device(name):
            x = tf.constant(3.0) * 2
        with tf.Session() as sess:
            assert sess.run(x) == 6.0


def test_visible_devices_fixed_once_the_runtime_lists_its_devices():
    cpus = tf.config.list_physical_devices("CPU")
    tf.config.set_visible_devices(cpus, "CPU")                   # before initialisation: allowed
    with pytest.raises(ValueError, match="No CPU devices would be visible"):
        tf.config.set_visible_devices([], "CPU")
    with pytest.raises(ValueError, match="Unrecognized device"):
        tf.config.set_visible_devices([tf.config.PhysicalDevice("/physical_device:GPU:7", "GPU")])
    tf.config.list_logical_devices()
    tf.config.set_visible_devices(cpus)                          # no change: no error, as in TF
    device_config._context["visible"] = []                       # a change after initialisation:
    with pytest.raises(RuntimeError, match="cannot be modified after being initialized"):
        tf.config.set_visible_devices(cpus)


def test_memory_growth_is_a_gpu_setting():
    cpu = tf.config.list_physical_devices("CPU")[0]
    with pytest.raises(ValueError, match="non-GPU"):
        tf.config.experimental.set_memory_growth(cpu, True)
    for gpu in tf.config.experimental.list_physical_devices("GPU"):   # TF's idiom runs on any machine
        tf.config.experimental.set_memory_growth(gpu, True)


def test_soft_placement_reaches_sessions_created_without_a_config():
    assert tf.config.get_soft_device_placement() is False
    with tf.Graph().as_default():
        with tf.device("/device:GPU:0"):
            x = tf.constant(1.0) + 1
        with pytest.raises(tf.errors.InvalidArgumentError, match="GPU:0"):
            tf.Session().run(x)
        tf.config.set_soft_device_placement(True)
        assert tf.config.get_soft_device_placement() is True
        assert tf.Session().run(x) == 2.0
        with pytest.raises(tf.errors.InvalidArgumentError):       # an explicit ConfigProto wins
            tf.Session(config=tf.ConfigProto()).run(x)
