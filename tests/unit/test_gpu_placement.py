"""GPU devices without a GPU: TF's placement rules for GPU ops, and the executor's host/device
copy plan, run through stand-in GPUs (runtime/devices.py: host memory marked as a GPU's, and a
kernel given a value on the wrong side of a device boundary fails)."""
from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.framework import errors
from tensorweave.framework.graph_def import GraphDef, NodeDef
from tensorweave.runtime import devices, placer

W0 = "/job:worker/replica:0/task:0"
PS0 = "/job:ps/replica:0/task:0"


def node(name, op="Identity", inputs=(), device="", **attr):
    attr.setdefault("_num_outputs", 1)
    return NodeDef(name, op, tuple(inputs), device, attr)


def cluster(gpus=("GPU:0", "GPU:1")):
    return placer.ClusterDevices.from_cluster({"ps": ["h:1"], "worker": ["h:2"]}, W0, (),
                                              [W0 + "/device:CPU:0"] + [f"{W0}/device:{g}" for g in gpus])


# -- placement ---------------------------------------------------------------------------------
def test_an_op_with_a_gpu_kernel_goes_to_its_task_s_first_gpu_and_one_without_stays_on_the_cpu():
    gd = GraphDef([node("x", "Const"), node("y", inputs=["x"]), node("m", "MatMulNoGpuKernel", ["x", "x"]),
                   node("p", "Identity", ["x"], device="/job:ps"), node("g1", inputs=["x"], device="/gpu:1")])
    got = placer.place(gd, cluster())
    assert got["x"] == got["y"] == W0 + "/device:GPU:0"
    assert got["m"] == W0 + "/device:CPU:0"      # no GPU kernel
    assert got["p"] == PS0 + "/device:CPU:0"     # the ps has no GPU
    assert got["g1"] == W0 + "/device:GPU:1"
    assert placer.place(gd, cluster(gpus=()), allow_soft_placement=True)["y"] == W0 + "/device:CPU:0"


def test_a_gpu_request_for_an_op_without_a_gpu_kernel_needs_soft_placement():
    gd = GraphDef([node("x", "Const"), node("s", "ScalarSummary", ["x", "x"], device="/gpu:0")])
    with pytest.raises(errors.InvalidArgumentError, match="Could not satisfy explicit device specification "
                                                          "'/gpu:0' because no supported kernel for GPU devices"):
        placer.place(gd, cluster())
    assert placer.place(gd, cluster(), allow_soft_placement=True)["s"] == W0 + "/device:CPU:0"


def test_a_gpu_the_task_lacks_is_refused_unless_soft():
    gd = GraphDef([node("x", "Const", device="/gpu:2")])
    with pytest.raises(errors.InvalidArgumentError, match="Cannot assign a device for operation x"):
        placer.place(gd, cluster())
    assert placer.place(gd, cluster(), allow_soft_placement=True)["x"] == W0 + "/device:GPU:0"   # TF: the first GPU
    assert placer.place(gd, cluster(gpus=()), allow_soft_placement=True)["x"] == W0 + "/device:CPU:0"


def test_a_colocation_group_goes_to_the_gpu_only_when_every_member_has_a_gpu_kernel():
    gd = GraphDef([node("x", "Const"), node("y", inputs=["x"], _class=["loc:@x"]),
                   node("z", "NoGpuKernelOp", ["x"], _class=["loc:@x"])])
    got = placer.place(gd, cluster())
    assert got["x"] == got["y"] == got["z"] == W0 + "/device:CPU:0"


# -- local sessions on stand-in GPUs ----------------------------------------------------------
@pytest.fixture
def two_gpus(monkeypatch):
    monkeypatch.setenv(devices.STANDIN_ENV, "2")


def _fed(x):
    return {x: np.arange(6, dtype=np.float32).reshape(2, 3)}


def test_values_cross_device_boundaries_once_and_fetches_come_back_in_host_memory(two_gpus, monkeypatch):
    x = tf.placeholder(tf.float32, [2, 3])
    with tf.device("/gpu:0"):
        a = tf.identity(x)                  # host -> GPU:0
        b, c = tf.identity(a), tf.identity(a)
    with tf.device("/gpu:1"):
        d = tf.identity(b)                  # GPU:0 -> GPU:1
    e = tf.reshape(tf.identity(d, name="e_in"), [3, 2])
    moves = []
    for cls in (devices.StandInGpu,):
        real = cls.to_device
        monkeypatch.setattr(cls, "to_device", lambda self, v, real=real: (
            moves.append((self.name, type(v).__name__)), real(self, v))[1])
    with tf.Session(config=tf.ConfigProto(allow_soft_placement=False)) as sess:
        out = sess.run([a, b, c, d, e], _fed(x))
    for v in out:
        assert type(v) is np.ndarray
    np.testing.assert_array_equal(out[3], np.arange(6).reshape(2, 3))
    np.testing.assert_array_equal(out[4], np.arange(6).reshape(3, 2))
    copies = [m for m in moves if m[1] in ("ndarray", "StandInArray")]
    # one copy of x onto GPU:0 (for a, shared by nothing else), one of b onto GPU:1; the rest
    # stays where it is (outputs already in a GPU's memory pass through to_device untouched)
    assert ("GPU:0", "ndarray") in copies and ("GPU:1", "StandInArray") in copies


def test_a_gpu_consumer_of_a_host_value_gets_one_copy_however_many_consumers():
    x = tf.placeholder(tf.float32, [2, 3])
    ys = []
    with tf.device("/gpu:0"):
        for _ in range(3):
            ys.append(tf.identity(x))
    from tensorweave.framework.graph_def import graph_to_graph_def
    from tensorweave.runtime.executor import KernelContext, Plan
    from tensorweave.runtime.resources import ResourceManager
    gpu = devices.StandInGpu(0, 0)
    gd = graph_to_graph_def(tf.get_default_graph())
    nodes = [NodeDef(n.name, n.op, n.input, "/job:localhost/replica:0/task:0/device:GPU:0" if n.device else "",
                     n.attr) for n in gd.node]
    plan = Plan(nodes, [x.name], [y.name for y in ys], [], KernelContext(ResourceManager(), gpus={"GPU:0": gpu}))
    copies = [s for s in plan._steps if getattr(s[1], "__func__", None) is devices.StandInGpu.to_device]
    assert len(copies) == 1
    out = plan.run([np.ones((2, 3), np.float32)])
    assert all(type(v) is np.ndarray for v in out)


def test_shape_arguments_stay_in_host_memory(two_gpus):
    x = tf.placeholder(tf.float32, [None, 3])
    with tf.device("/gpu:0"):
        r = tf.reshape(x, tf.shape(x)[::-1])   # Reshape's shape input is host memory on a GPU
    with tf.Session(config=tf.ConfigProto(allow_soft_placement=True)) as sess:
        assert sess.run(r, _fed(x)).shape == (3, 2)


def test_device_count_and_visible_device_list(two_gpus):
    assert [g.name for g in devices.visible_gpus(tf.ConfigProto(device_count={"GPU": 0}))] == []
    only = devices.visible_gpus(tf.ConfigProto(gpu_options=tf.GPUOptions(visible_device_list="1")))
    assert [(g.name, g.ordinal) for g in only] == [("GPU:0", 1)]
    with pytest.raises(errors.InvalidArgumentError, match="invalid GPU id '5'"):
        devices.visible_gpus(tf.ConfigProto(gpu_options=tf.GPUOptions(visible_device_list="0,5")))
    with tf.Session() as sess:
        assert [d.name.rpartition("/")[2] for d in sess.list_devices()] == ["device:CPU:0", "device:GPU:0",
                                                                           "device:GPU:1"]


def test_without_gpus_a_gpu_request_needs_soft_placement_as_in_tf():
    with tf.device("/gpu:0"):
        y = tf.identity(tf.constant([1.0]))
    with pytest.raises(errors.InvalidArgumentError, match="Cannot assign a device"):
        tf.Session().run(y)
    np.testing.assert_array_equal(tf.Session(config=tf.ConfigProto(allow_soft_placement=True)).run(y), [1.0])


def test_a_gpu_constant_read_in_host_memory_costs_no_copy_per_step(two_gpus):
    x = tf.placeholder(tf.float32, [2, 3])
    with tf.device("/gpu:0"):
        y = tf.reshape(tf.identity(x), tf.constant([3, 2]))   # the shape: a GPU Const, read on the host
    from tensorweave.framework.graph_def import graph_to_graph_def
    from tensorweave.runtime.executor import KernelContext, Plan
    from tensorweave.runtime.resources import ResourceManager
    gpu = devices.StandInGpu(0, 0)
    nodes = [NodeDef(n.name, n.op, n.input, "/job:localhost/replica:0/task:0/device:GPU:0", n.attr)
             for n in graph_to_graph_def(tf.get_default_graph()).node if n.name != x.op.name]
    plan = Plan(nodes, [x.name], [y.name], [], KernelContext(ResourceManager(), gpus={"GPU:0": gpu}))
    copies = [s[1] for s in plan._steps if getattr(s[1], "__func__", None) in (devices.StandInGpu.to_device,)
              or s[1] is devices.to_host]
    assert len(copies) == 2   # the fed x onto the GPU, the fetched y back: none for the shape
    np.testing.assert_array_equal(plan.run([np.arange(6, dtype=np.float32).reshape(2, 3)])[0],
                                  np.arange(6).reshape(3, 2))
