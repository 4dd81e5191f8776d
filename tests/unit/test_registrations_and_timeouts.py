"""Registrations and timeouts, without a server (issue 15): the registered-graph table's
limit per client and its leases, the connect timeout a Session reads from ConfigProto, and how
the connector reads session targets and task addresses."""
from __future__ import annotations

import time

import pytest

import tensorweave as tf
from tensorweave.distributed.connector import connect_timeout_s, target_address, task_address
from tensorweave.distributed.graphs import GraphTable, Registered
from tensorweave.framework import errors, limits



# -- registered graphs -----------------------------------------------------------------------------
def test_registrations_per_client_and_their_lease(limit):
    limit(limits.REGISTRATIONS_PER_CLIENT, 2)
    table = GraphTable(lease_s=10.0)
    for i in range(2):
        table.add(f"h{i}", Registered(None, [], [], "", table.client("a")))
    with pytest.raises(errors.ResourceExhaustedError, match="client 'a'.*max_registrations_per_client"):
        table.client("a")
    table.add("b0", Registered(None, [], [], "s", table.client("b")))
    table.add("local", Registered(None, [], [], "", table.client(None)))   # in process: no owner, no limit
    assert len(table) == 4
    table.remove("h0")
    table.client("a")   # room again
    now = time.monotonic()
    table.touch("b")
    table.sweep(now + 5)
    assert len(table) == 3
    table._last_sweep = 0
    table.sweep(now + 11)   # neither was heard from for the lease
    assert table.get("h1") is None and table.get("b0") is None and table.get("local") is not None
    table.add("s1", Registered(None, [], [], "sess", table.client("c")))
    table.remove_session("sess")
    assert table.get("s1") is None


# -- the connect timeout --------------------------------------------------------------------------
def test_the_connect_timeout_reads_configproto_then_the_environment(monkeypatch):
    monkeypatch.delenv("TENSORWEAVE_CONNECT_TIMEOUT_S", raising=False)
    assert connect_timeout_s(tf.ConfigProto()) == 60.0
    monkeypatch.setenv("TENSORWEAVE_CONNECT_TIMEOUT_S", "5")
    assert connect_timeout_s(None) == 5.0
    assert connect_timeout_s(tf.ConfigProto(experimental={"connect_timeout_in_ms": 1500})) == 1.5
    assert connect_timeout_s(tf.ConfigProto(operation_timeout_in_ms=800)) == 0.8   # never past the op timeout


# -- targets and task addresses --------------------------------------------------------------------
def test_session_targets_and_task_addresses():
    assert target_address("grpc://h:1") == target_address(b"h:1") == target_address("grpc+verbs://h:1") == "h:1"
    with pytest.raises(errors.InvalidArgumentError, match="Unsupported session target 'http://h:1'"):
        target_address("http://h:1")
    cluster = {"ps": ["p0:1"], "worker": {"3": "w3:1"}}   # (a sparse job's indices as JSON gives them)
    assert task_address(cluster, "/job:ps/replica:0/task:0") == "p0:1"
    assert task_address(cluster, "/job:worker/replica:0/task:3") == "w3:1"
    with pytest.raises(errors.InvalidArgumentError, match=r"Job 'chief' is not in the cluster \['ps', 'worker'\]"):
        task_address(cluster, "/job:chief/replica:0/task:0")
    with pytest.raises(errors.InvalidArgumentError, match="Task /job:ps/replica:0/task:1 is not in the cluster"):
        task_address(cluster, "/job:ps/replica:0/task:1")
