"""Placement over plain GraphDefs: device completion, colocation, soft placement, resources."""
from __future__ import annotations

import pytest

from tensorweave.framework import errors
from tensorweave.framework.device import task_of
from tensorweave.framework.graph_def import GraphDef, NodeDef
from tensorweave.runtime import placer

CLUSTER = {"ps": ["h:1", "h:2"], "worker": ["h:3", "h:4"]}
W0 = "/job:worker/replica:0/task:0"
W1 = "/job:worker/replica:0/task:1"
PS0 = "/job:ps/replica:0/task:0"
PS1 = "/job:ps/replica:0/task:1"
CPU = "/device:CPU:0"


def node(name, op="Const", inputs=(), device="", **attr):
    attr.setdefault("_num_outputs", 1)
    return NodeDef(name, op, tuple(inputs), device, attr)


def devices(default=W0, filters=(), local=()):
    return placer.ClusterDevices.from_cluster(CLUSTER, default, filters, local)


def test_explicit_partial_and_unplaced_devices():
    gd = GraphDef([node("a"), node("b", device="/job:ps"), node("c", device="/job:worker/task:1"),
                   node("d", device="/device:CPU:0"), node("e", device="/job:ps/task:1/device:CPU:0")])
    got = placer.place(gd, devices())
    assert got == {"a": W0 + CPU, "b": PS0 + CPU, "c": W1 + CPU, "d": W0 + CPU, "e": PS1 + CPU}


def test_default_task_is_the_master_task():
    gd = GraphDef([node("a"), node("b", device="/cpu:0")])
    assert placer.place(gd, devices(default=W1)) == {"a": W1 + CPU, "b": W1 + CPU}


@pytest.mark.parametrize("dev", ["/job:nope", "/job:ps/task:7", "/job:worker/replica:3/task:0"])
def test_unknown_job_or_task_is_invalid_argument_even_with_soft_placement(dev):
    gd = GraphDef([node("bad_op", device=dev)])
    for soft in (False, True):
        with pytest.raises(errors.InvalidArgumentError) as e:
            placer.place(gd, devices(), allow_soft_placement=soft)
        assert "Cannot assign a device for operation bad_op" in str(e.value)
        assert e.value.op == "bad_op"


def test_gpu_request_needs_soft_placement():
    gd = GraphDef([node("g", device="/job:worker/task:1/device:GPU:0")])
    with pytest.raises(errors.InvalidArgumentError, match="Cannot assign a device for operation g"):
        placer.place(gd, devices())
    assert placer.place(gd, devices(), allow_soft_placement=True) == {"g": W1 + CPU}


def test_gpu_reported_by_the_task_is_used():
    gd = GraphDef([node("g", device="/gpu:0")])
    cd = devices(local=[W0 + CPU, W0 + "/device:GPU:0"])
    assert placer.place(gd, cd) == {"g": W0 + "/device:GPU:0"}


def test_colocation_group_follows_its_placed_member():
    gd = GraphDef([node("v", device="/job:ps/task:1"),
                   node("init", _class=["loc:@v"]),
                   node("other", _class=[b"loc:@v"])])
    got = placer.place(gd, devices())
    assert got["init"] == got["other"] == got["v"] == PS1 + CPU


def test_colocation_merges_compatible_partial_requests():
    gd = GraphDef([node("v", device="/job:ps"), node("w", device="/task:1", _class=["loc:@v"])])
    got = placer.place(gd, devices())
    assert got["v"] == got["w"] == PS1 + CPU


def test_colocation_conflict_names_both_ops():
    gd = GraphDef([node("v", device="/job:ps/task:0"),
                   node("x", device="/job:worker/task:1", _class=["loc:@v"])])
    with pytest.raises(errors.InvalidArgumentError) as e:
        placer.place(gd, devices())
    assert "Cannot colocate nodes v and x" in str(e.value)


def test_colocation_with_a_missing_op_still_groups():
    gd = GraphDef([node("a", device="/job:ps/task:1", _class=["loc:@gone"]),
                   node("b", _class=["loc:@gone"])])
    got = placer.place(gd, devices())
    assert got["a"] == got["b"] == PS1 + CPU


def test_resource_consumers_run_on_the_handle_task():
    gd = GraphDef([node("var", "VarHandleOp", device="/job:ps/task:1"),
                   node("read", "ReadVariableOp", ["var"], device="/job:worker/task:0"),
                   node("assign", "AssignVariableOp", ["var", "val"], _num_outputs=0),
                   node("val", device="/job:worker/task:1"),
                   node("use", "Identity", ["read"], device="/job:worker/task:1")])
    got = placer.place(gd, devices(), resource_tensors={"var:0"})
    assert got["read"] == got["assign"] == PS1 + CPU
    assert got["val"] == got["use"] == W1 + CPU
    # Without dtype information, *HandleOp outputs are taken as handles.
    assert placer.place(gd, devices())["read"] == PS1 + CPU


def test_device_filters_exclude_tasks():
    cd = devices(filters=["/job:ps", "/job:worker/task:0"])
    assert set(cd.tasks) == {W0, PS0, PS1}
    gd = GraphDef([node("far", device="/job:worker/task:1")])
    with pytest.raises(errors.InvalidArgumentError, match="Cannot assign a device for operation far"):
        placer.place(gd, cd)


def test_filters_always_keep_the_master_task():
    cd = devices(default=W1, filters=["/job:ps/task:0"])
    assert set(cd.tasks) == {W1, PS0}


def test_only_requested_nodes_are_checked():
    gd = GraphDef([node("ok"), node("bad", device="/job:nope")])
    assert placer.place(gd, devices(), nodes=["ok"]) == {"ok": W0 + CPU}


def test_sparse_cluster_and_task_names():
    cd = placer.ClusterDevices.from_cluster({"w": {0: "a:1", 3: "a:2"}}, "/job:w/replica:0/task:0")
    assert cd.tasks == ("/job:w/replica:0/task:0", "/job:w/replica:0/task:3")
    assert task_of("/job:w/replica:0/task:3/device:CPU:0") == "/job:w/replica:0/task:3"
    gd = GraphDef([node("a", device="/job:w/task:3")])
    assert placer.place(gd, cd) == {"a": "/job:w/replica:0/task:3" + CPU}


def test_log_device_placement_prints_each_op(capsys):
    gd = GraphDef([node("a"), node("b", device="/job:ps/task:1")])
    placer.place(gd, devices(), log_device_placement=True)
    err = capsys.readouterr().err
    assert f"a: (Const): {W0}{CPU}" in err
    assert f"b: (Const): {PS1}{CPU}" in err
