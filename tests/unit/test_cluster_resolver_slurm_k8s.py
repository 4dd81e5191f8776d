"""SlurmClusterResolver and KubernetesClusterResolver against TensorFlow's (fixtures/
tf_cluster_resolvers.json, recorded by fixtures/record_tf_cluster_resolvers.py): the same Slurm
environments and the same Kubernetes pods (from a fake client, as TF's tests use) resolve to the
same clusters, tasks, masters and errors."""
from __future__ import annotations

import json
import os
import sys

import pytest
from fixtures.record_tf_cluster_resolvers import FakeClient, k8s_case, slurm_case

import tensorweave as tf
from tensorweave.distribute.cluster_resolver import expand_hostlist

with open(os.path.join(os.path.dirname(__file__), "fixtures", "tf_cluster_resolvers.json")) as f:
    RECORDED = json.load(f)

resolvers = tf.distribute.cluster_resolver


def _same(got: dict, want: dict) -> None:
    if "error" in want:
        assert got.get("error") == want["error"], got
        # TF's message after the last ': ' quotes its own assertion; the part naming the input is the contract
        assert got["message"].startswith(want["message"].rpartition(": ")[0] or want["message"]), got
    else:
        assert got == want


@pytest.mark.parametrize("case", RECORDED["slurm"], ids=lambda c: json.dumps(c["env"].get("SLURM_STEP_NODELIST")))
def test_slurm_resolves_as_tensorflow(case):
    _same(slurm_case(resolvers.SlurmClusterResolver, case["env"], case["kwargs"]), case["result"])


@pytest.mark.parametrize("hostlist", sorted(RECORDED["hostlists"]))
def test_slurm_hostlist_expansion_as_tensorflow(hostlist):
    want = RECORDED["hostlists"][hostlist]
    try:
        got = {"value": expand_hostlist(hostlist)}
    except ValueError as e:
        got = {"error": "ValueError", "message": str(e)}
    _same(got, want)


def test_slurm_sets_cuda_visible_devices_of_its_rank(monkeypatch):
    monkeypatch.setenv("SLURM_PROCID", "3")
    monkeypatch.setenv("SLURM_STEP_NODELIST", "g[1-2]")
    monkeypatch.setenv("SLURM_STEP_TASKS_PER_NODE", "2(x2)")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1,2,3")
    r = resolvers.SlurmClusterResolver(jobs={"worker": 4})
    assert r.num_accelerators() == {"GPU": 2}
    spec = r.cluster_spec()
    assert spec.task_address("worker", 3) == "g2:8889" and r.get_task_info() == ("worker", 3)
    assert os.environ["CUDA_VISIBLE_DEVICES"] == "2,3"


def test_slurm_without_gpus_gives_tasks_none(monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setenv("PATH", "/nonexistent")   # no nvidia-smi
    monkeypatch.setenv("SLURM_PROCID", "1")
    monkeypatch.setenv("SLURM_STEP_NUM_TASKS", "2")
    monkeypatch.setenv("SLURM_STEP_NODELIST", "c1")
    monkeypatch.setenv("SLURM_STEP_TASKS_PER_NODE", "2")
    r = resolvers.SlurmClusterResolver()
    assert r.cluster_spec().as_dict() == {"worker": ["c1:8888", "c1:8889"]}
    assert r.master() == "grpc://c1:8889" and r.num_accelerators() == {"GPU": 0}
    assert os.environ["CUDA_VISIBLE_DEVICES"] == ""


@pytest.mark.parametrize("case", RECORDED["k8s"], ids=lambda c: json.dumps(c["kwargs"])[:40])
def test_kubernetes_resolves_as_tensorflow(case):
    _same(k8s_case(resolvers.KubernetesClusterResolver, case["kwargs"]), case["result"])


def test_kubernetes_asks_the_client_anew_each_time():
    pods = {"app=w": [("w-0", "Running", "10.0.0.1")]}
    r = resolvers.KubernetesClusterResolver({"worker": ["app=w"]}, override_client=FakeClient(pods))
    assert r.cluster_spec().as_dict() == {"worker": ["10.0.0.1:8470"]}
    pods["app=w"].append(("w-1", "Running", "10.0.0.2"))
    assert r.master("worker", 1) == "grpc://10.0.0.2:8470"


def test_kubernetes_without_the_package_names_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "kubernetes", None)   # as when it is not installed
    want = RECORDED["k8s_no_client"]
    assert want["error"] == "ImportError"
    with pytest.raises(ImportError, match="pip install kubernetes"):
        resolvers.KubernetesClusterResolver()
    assert resolvers.KubernetesExecutableLocation.OFF_CLUSTER.value == 1


def test_resolvers_feed_a_union():
    k8s = resolvers.KubernetesClusterResolver({"ps": ["app=p"]}, override_client=FakeClient({"app=p": [
        ("p-0", "Running", "10.0.0.9")]}))
    simple = resolvers.SimpleClusterResolver(tf.train.ClusterSpec({"worker": ["h:1"]}))
    assert resolvers.UnionResolver(simple, k8s).cluster_spec().as_dict() == {"worker": ["h:1"],
                                                                              "ps": ["10.0.0.9:8470"]}
