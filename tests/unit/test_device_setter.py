"""tf.train.replica_device_setter: TF 1.15's placement of variables and compute ops."""
from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tf
from tensorweave._api_table import NAMESPACES
from tensorweave.framework import dtypes
from tensorweave.framework.graph_def import graph_to_graph_def
from tensorweave.framework.shapes import TensorShape
from tensorweave.runtime import placer
from tensorweave.train import device_setter as ds


class FakeOp:
    """What a device function sees: the op's type, its current device, attrs, outputs."""

    def __init__(self, op_type, device="", attrs=None):
        self.type, self.device, self._attrs, self.outputs = op_type, device, attrs or {}, [object()]

    def get_attr(self, name):
        return self._attrs[name]


def test_variables_round_robin_over_ps_tasks_and_the_rest_on_the_worker():
    fn = tf.train.replica_device_setter(ps_tasks=3)
    got = [fn(FakeOp(t)) for t in ["VarHandleOp", "VariableV2", "Add", "VarHandleOp", "VarHandleOp", "MatMul"]]
    assert got == ["/job:ps/task:0", "/job:ps/task:1", "/job:worker", "/job:ps/task:2", "/job:ps/task:0",
                   "/job:worker"]


def test_cluster_gives_the_number_of_ps_tasks_and_worker_device_is_merged():
    cluster = tf.train.ClusterSpec({"ps": ["a:1", "a:2"], "worker": ["a:3"]})
    fn = tf.train.replica_device_setter(cluster=cluster, worker_device="/job:worker/task:0")
    assert [fn(FakeOp("VarHandleOp")) for _ in range(3)] == ["/job:ps/task:0", "/job:ps/task:1", "/job:ps/task:0"]
    assert fn(FakeOp("Add")) == "/job:worker/task:0"
    assert fn(FakeOp("Add", "/device:CPU:0")) == "/job:worker/task:0/device:CPU:0"
    assert fn(FakeOp("Add", "/job:ps/task:1")) == "/job:ps/task:1"    # the op's own fields win
    assert tf.train.replica_device_setter(cluster={"worker": ["a:1"]}) is None
    assert tf.train.replica_device_setter(ps_tasks=0) is None


def test_an_op_already_on_another_job_keeps_its_task():
    fn = tf.train.replica_device_setter(ps_tasks=2)
    assert fn(FakeOp("VarHandleOp", "/job:other/task:5")) == "/job:other/task:5"
    assert fn(FakeOp("VarHandleOp", "/job:ps")) == "/job:ps/task:0"


def test_merge_devices_false_keeps_a_set_device():
    fn = tf.train.replica_device_setter(ps_tasks=1, merge_devices=False)
    assert fn(FakeOp("Add", "/device:CPU:0")) == "/device:CPU:0"
    assert fn(FakeOp("Add")) == "/job:worker"


def test_custom_ps_ops_and_strategy():
    fn = tf.train.replica_device_setter(ps_tasks=4, ps_ops=["Placeholder"], ps_strategy=lambda op: 3)
    assert fn(FakeOp("Placeholder")) == "/job:ps/task:3"
    assert fn(FakeOp("VarHandleOp")) == "/job:worker"
    with pytest.raises(TypeError, match="ps_strategy must be callable"):
        tf.train.replica_device_setter(ps_tasks=1, ps_strategy=5)


def test_as_a_device_scope_on_a_real_graph():
    with tf.Graph().as_default() as g:
        with tf.device(tf.train.replica_device_setter(ps_tasks=2, ps_ops=["Placeholder"])):
            a = tf.placeholder(tf.float32, name="a")
            b = tf.placeholder(tf.float32, name="b")
            c = tf.identity(a, name="c")
            with tf.device("/job:worker/task:1"):
                d = tf.identity(b, name="d")
        assert a.op.device == "/job:ps/task:0"
        assert b.op.device == "/job:ps/task:1"
        assert c.op.device == "/job:worker"
        assert d.op.device == "/job:worker/task:1"
        assert g is a.graph


def test_variables_land_on_ps_tasks():
    with tf.Graph().as_default():
        with tf.device(tf.train.replica_device_setter(ps_tasks=2)):
            v1 = tf.Variable(1.0, name="v1")
            v2 = tf.Variable(2.0, name="v2")
            s = tf.add(v1, v2, name="s")
        assert "/job:ps/task:0" in v1.op.device
        assert "/job:ps/task:1" in v2.op.device
        assert s.op.device == "/job:worker"


def test_greedy_load_balancing_by_byte_size():
    strategy = ds.GreedyLoadBalancingStrategy(2, ds.byte_size_load_fn)
    fn = tf.train.replica_device_setter(ps_tasks=2, ps_strategy=strategy)
    big = FakeOp("VarHandleOp", attrs={"dtype": dtypes.float32, "shape": TensorShape([1000])})
    small = FakeOp("VarHandleOp", attrs={"dtype": dtypes.float32, "shape": TensorShape([10])})
    got = [fn(op) for op in (big, small, small, small)]
    assert got == ["/job:ps/task:0", "/job:ps/task:1", "/job:ps/task:1", "/job:ps/task:1"]
    np.testing.assert_array_equal(strategy._ps_loads, [4000, 120])
    assert ds.byte_size_load_fn(FakeOp("VarHandleOp", attrs={"dtype": dtypes.float64, "shape": [3, 4]})) == 96
    with pytest.raises(ValueError):
        ds.byte_size_load_fn(FakeOp("VarHandleOp", attrs={"dtype": dtypes.float32, "shape": [None, 3]}))


def test_exported_names():
    assert [n for n, (source, _) in NAMESPACES["tensorweave.train"].items()
            if source == "tensorweave.train.device_setter"] == ["replica_device_setter"]
    assert "VarHandleOp" in ds.STANDARD_PS_OPS and "VariableV2" in ds.STANDARD_PS_OPS


def test_adam_over_variables_on_two_ps_tasks_places():
    """Adam reads beta1_power (on ps 0) while updating a variable on ps 1: each read runs where its
    variable lives, so the graph places (it failed with 'Cannot colocate nodes a and b')."""
    cluster = tf.train.ClusterSpec({"ps": ["localhost:1", "localhost:2"], "worker": ["localhost:3"]})
    with tf.Graph().as_default() as g:
        with tf.device(tf.train.replica_device_setter(cluster=cluster)):
            a, b = tf.Variable(1.0, name="a"), tf.Variable(2.0, name="b")
            tf.train.AdamOptimizer(0.1).minimize(a * a + b * b, global_step=tf.train.get_or_create_global_step())
        devices = placer.ClusterDevices.from_cluster(cluster.as_dict(), "/job:worker/replica:0/task:0")
        placed = placer.place(graph_to_graph_def(g), devices)
    assert placed["Adam/update_b/ResourceApplyAdam"].startswith("/job:ps/replica:0/task:1")
    assert placed["Adam/update_a/ResourceApplyAdam"].startswith("/job:ps/replica:0/task:0")
    assert all(len(op._attrs.get("_class", [])) <= 1 for op in g.get_operations())
