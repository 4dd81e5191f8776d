"""tf.train.ClusterSpec: construction forms, accessors, equality and TF's errors."""
from __future__ import annotations

import json
import pathlib

import pytest

import tensorweave as tf
from tensorweave.distributed.cluster import ClusterSpec, from_tf_config, parse_task_name

FIXTURES = pathlib.Path(__file__).parent / "fixtures"
SPEC = {"ps": ["ps0:2222", "ps1:2222"], "worker": ["w0:2222", "w1:2222", "w2:2222"]}


def test_from_dict_of_lists():
    c = ClusterSpec(SPEC)
    assert c.jobs == ["ps", "worker"]
    assert c.num_tasks("worker") == 3
    assert c.task_indices("ps") == [0, 1]
    assert c.task_address("worker", 2) == "w2:2222"
    assert c.job_tasks("ps") == ["ps0:2222", "ps1:2222"]
    assert c.as_dict() == SPEC
    assert bool(c) and not bool(ClusterSpec({}))


def test_sparse_dict_tasks():
    c = ClusterSpec({"worker": {1: "w1:2222", 3: "w3:2222"}})
    assert c.task_indices("worker") == [1, 3]
    assert c.num_tasks("worker") == 2
    assert c.job_tasks("worker") == [None, "w1:2222", None, "w3:2222"]
    assert c.as_dict() == {"worker": {1: "w1:2222", 3: "w3:2222"}}
    with pytest.raises(ValueError, match="No task with index 0 in job 'worker'"):
        c.task_address("worker", 0)


def test_from_cluster_spec_and_cluster_def_roundtrip():
    c = ClusterSpec(SPEC)
    assert ClusterSpec(c) == c
    cd = c.as_cluster_def()
    assert isinstance(cd, tf.train.ClusterDef)
    assert [j.name for j in cd.job] == ["ps", "worker"]
    assert dict(cd.job[0].tasks) == {0: "ps0:2222", 1: "ps1:2222"}
    assert ClusterSpec(cd) == c
    assert c == SPEC and c != {"ps": ["ps0:2222"]}
    assert c != 3


def test_cluster_def_and_server_def_are_tfs_messages():
    """TF 2.21's serialized ClusterDef and ServerDef (fixtures/record_tf_server_defs.py) parse to
    what ClusterSpec writes, and ours reparse to TF's fields."""
    recorded = json.loads((FIXTURES / "tf_server_defs.json").read_text())
    tf_cluster_def = tf.train.ClusterDef.FromString(bytes.fromhex(recorded["cluster_def"]))
    ours = ClusterSpec(recorded["cluster_spec"]).as_cluster_def()
    assert ours == tf_cluster_def
    assert ClusterSpec(tf_cluster_def).as_dict() == {"ps": ["ps0:2222", "ps1:2222"],
                                                     "worker": {0: "w0:2222", 2: "w2:2222"}}
    assert isinstance(ours.job[0], tf.train.JobDef)
    tf_server_def = tf.train.ServerDef.FromString(bytes.fromhex(recorded["server_def"]))
    assert (tf_server_def.job_name, tf_server_def.task_index, tf_server_def.protocol) == ("worker", 1, "grpc")
    assert (tf_server_def.port, tf_server_def.replica) == (7, 2)
    assert tf_server_def.default_session_config.intra_op_parallelism_threads == 3
    assert dict(tf_server_def.cluster.job[0].tasks) == {1: "localhost:7"}
    ours = tf.train.ServerDef(cluster=ClusterSpec({"worker": {1: "localhost:7"}}).as_cluster_def(),
                              job_name="worker", task_index=1, protocol="grpc", port=7, replica=2)
    ours.default_session_config.intra_op_parallelism_threads = 3
    assert ours.SerializeToString() == bytes.fromhex(recorded["server_def"])   # one task: no map order


def test_errors():
    c = ClusterSpec(SPEC)
    for fn in (c.num_tasks, c.task_indices, c.job_tasks):
        with pytest.raises(ValueError, match="No such job in cluster: 'chief'"):
            fn("chief")
    with pytest.raises(ValueError, match="No such job"):
        c.task_address("chief", 0)
    with pytest.raises(ValueError, match="No task with index 7"):
        c.task_address("ps", 7)
    with pytest.raises(TypeError):
        ClusterSpec(["ps0:2222"])
    with pytest.raises(TypeError):
        ClusterSpec({"ps": "ps0:2222"})
    with pytest.raises(TypeError):
        ClusterSpec({"ps": {"a": "ps0:2222"}})


def test_json_keys_and_tf_config():
    c = ClusterSpec({"worker": {"0": "w0:1", "1": "w1:1"}})
    assert c.as_dict() == {"worker": ["w0:1", "w1:1"]}
    cluster, job, index = from_tf_config('{"cluster": {"ps": ["a:1"]}, "task": {"type": "ps", "index": 0}}')
    assert cluster == {"ps": ["a:1"]} and job == "ps" and index == 0
    assert from_tf_config("") == (None, None, None)
    assert parse_task_name("/job:ps/replica:0/task:1/device:CPU:0") == ("ps", 1)
    assert c.address_of("/job:worker/replica:0/task:1") == "w1:1"


def test_train_namespace_exports():
    import tensorweave as tf
    assert tf.train.ClusterSpec is ClusterSpec
    assert tf.train.Server.__name__ == "Server"
