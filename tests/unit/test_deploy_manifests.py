"""deploy/kubernetes/estimator-*.yaml and collective-*.yaml: the manifests parse, and the
TF_CONFIG each of their pods gets (from the TFJob operator's rule, or from the StatefulSet pod's
own shell command, run here) gives tf.estimator.RunConfig the task type, index and cluster the
manifest intends, each address naming that very pod: for the ps job 1 ps, a chief, 2 workers and
an evaluator outside the training cluster; for the collective job (MultiWorkerMirroredStrategy,
no ps) 2 workers, worker 0 the chief, and the evaluator."""
from __future__ import annotations

import json
import os
import re
import subprocess

import pytest
import yaml

import tensorweave as tf


REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
KUBE = os.path.join(REPO, "deploy", "kubernetes")
TRAINER = "/opt/tensorweave/examples/mnist_estimator.py"
COLLECTIVE = "--strategy=multi_worker_mirrored"


class Job:
    """What one pair of manifests (TFJob, StatefulSets) intends."""

    def __init__(self, prefix: str, name: str, replicas: dict, collective: bool):
        self.tfjob, self.statefulset = f"{prefix}-tfjob.yaml", f"{prefix}-statefulset.yaml"
        self.name, self.replicas, self.collective = name, replicas, collective
        self.claim, self.model_dir = f"{name}-model", f"/model/{name}"
        self.num_ps = replicas.get("ps", 0)
        self.num_workers = replicas.get("chief", 0) + replicas["worker"]

    def is_chief(self, job: str, index: int) -> bool:
        return job == "chief" or (job == "worker" and index == 0 and "chief" not in self.replicas)


JOBS = [Job("estimator", "mnist", {"ps": 1, "chief": 1, "worker": 2, "evaluator": 1}, collective=False),
        Job("collective", "mnist-collective", {"worker": 2, "evaluator": 1}, collective=True)]


def _load(name: str) -> list:
    with open(os.path.join(KUBE, name)) as f:
        docs = [d for d in yaml.safe_load_all(f) if d]
    return [item for d in docs for item in (d["items"] if d["kind"] == "List" else [d])]


def _the_image_has_the_trainer() -> None:
    with open(os.path.join(REPO, "deploy", "Dockerfile")) as f:
        dockerfile = f.read()
    assert "WORKDIR /opt/tensorweave" in dockerfile and "COPY examples/mnist_estimator.py ./examples/" in dockerfile
    assert os.path.exists(os.path.join(REPO, "examples", "mnist_estimator.py"))


def _assert_args(spec: Job, args: list) -> None:
    assert f"--model_dir={spec.model_dir}" in args and (COLLECTIVE in args) == spec.collective


def _assert_run_config(monkeypatch, spec: Job, tf_config: dict, job: str, index: int, cluster: dict,
                       model_dir_claim) -> None:
    monkeypatch.setenv("TF_CONFIG", json.dumps(tf_config))
    # (what the trainer's --strategy makes: the strategy reads the same TF_CONFIG)
    strategy = tf.distribute.experimental.MultiWorkerMirroredStrategy() if spec.collective else None
    config = tf.estimator.RunConfig(model_dir=spec.model_dir, train_distribute=strategy)
    assert (config.task_type, config.task_id) == (job, index)
    if job == "evaluator":   # not a member of the training cluster (TF's rule)
        assert config.cluster_spec.as_dict() == {} and not config.is_chief and config.master == ""
        return
    # (a TFJob's cluster names its evaluator too; TF keeps it there but counts no evaluator as a worker)
    assert config.cluster_spec.as_dict() == cluster
    assert config.master == "grpc://" + cluster[job][index]
    assert (config.num_ps_replicas, config.num_worker_replicas, config.is_chief) == \
        (spec.num_ps, spec.num_workers, spec.is_chief(job, index))
    if spec.collective:   # one replica per worker, all-reduced between the workers
        assert strategy.num_replicas_in_sync == spec.num_workers
    assert model_dir_claim == spec.claim


def _model_claim(pod_spec: dict) -> str:
    (container,) = pod_spec["containers"]
    mount = next(m for m in container["volumeMounts"] if m["mountPath"] == "/model")
    return next(v for v in pod_spec["volumes"] if v["name"] == mount["name"])["persistentVolumeClaim"]["claimName"]


@pytest.mark.parametrize("intended", JOBS, ids=lambda j: j.tfjob)
def test_tfjob_replicas_get_the_tasks_the_manifest_intends(monkeypatch, intended):
    _the_image_has_the_trainer()
    objects = _load(intended.tfjob)
    (claim,) = [o for o in objects if o["kind"] == "PersistentVolumeClaim"]
    assert claim["spec"]["accessModes"] == ["ReadWriteMany"] and claim["metadata"]["name"] == intended.claim
    (job,) = [o for o in objects if o["kind"] == "TFJob"]
    assert job["metadata"]["name"] == intended.name
    specs = job["spec"]["tfReplicaSpecs"]
    assert {rtype.lower(): spec["replicas"] for rtype, spec in specs.items()} == intended.replicas
    # The training operator's TF_CONFIG: every replica type, lower-cased, at
    # <job>-<type>-<index>.<namespace>.svc:<the container port named tfjob-port>.
    namespace = job["metadata"].get("namespace", "default")
    cluster = {}
    for rtype, spec in specs.items():
        (container,) = spec["template"]["spec"]["containers"]
        assert container["name"] == "tensorflow"
        assert container["command"] == ["python", TRAINER]
        _assert_args(intended, container["args"])
        (port,) = [p["containerPort"] for p in container["ports"] if p["name"] == "tfjob-port"]
        cluster[rtype.lower()] = [f"{job['metadata']['name']}-{rtype.lower()}-{i}.{namespace}.svc:{port}"
                                  for i in range(spec["replicas"])]
    chief = "chief" if "chief" in cluster else "worker"
    assert cluster[chief][0] == f"{intended.name}-{chief}-0.default.svc:2222"
    for rtype, spec in specs.items():
        for index in range(spec["replicas"]):
            tf_config = {"cluster": cluster, "task": {"type": rtype.lower(), "index": index}, "environment": "cloud"}
            _assert_run_config(monkeypatch, intended, tf_config, rtype.lower(), index, cluster,
                               _model_claim(spec["template"]["spec"]))


@pytest.mark.parametrize("intended", JOBS, ids=lambda j: j.statefulset)
def test_statefulset_pods_build_the_tf_config_the_manifest_intends(monkeypatch, tmp_path, intended):
    _the_image_has_the_trainer()
    objects = _load(intended.statefulset)
    (config_map,) = [o for o in objects if o["kind"] == "ConfigMap"]
    services = {o["metadata"]["name"]: o for o in objects if o["kind"] == "Service"}
    sets = [o for o in objects if o["kind"] == "StatefulSet"]
    jobs = {s["spec"]["template"]["metadata"]["labels"]["job"]: s for s in sets}
    assert {job: s["spec"]["replicas"] for job, s in jobs.items()} == intended.replicas
    cluster = json.loads(config_map["data"]["cluster.json"])
    assert "evaluator" not in cluster
    for job, addresses in cluster.items():   # each address names that pod of that job's StatefulSet
        s = jobs[job]
        service = services[s["spec"]["serviceName"]]
        assert service["spec"]["clusterIP"] == "None"
        assert service["spec"]["selector"] == s["spec"]["template"]["metadata"]["labels"]
        (container,) = s["spec"]["template"]["spec"]["containers"]
        port = container["ports"][0]["containerPort"]
        assert addresses == [f"{s['metadata']['name']}-{i}.{service['metadata']['name']}:{port}"
                             for i in range(s["spec"]["replicas"])]
    for job, s in jobs.items():
        pod = s["spec"]["template"]["spec"]
        (container,) = pod["containers"]
        (script,) = container["args"]
        mount = next(m for m in container["volumeMounts"] if m["name"] == "cluster")
        assert next(v for v in pod["volumes"] if v["name"] == "cluster")["configMap"]["name"] == \
            config_map["metadata"]["name"]
        files = tmp_path / job
        files.mkdir()
        (files / "cluster.json").write_text(config_map["data"]["cluster.json"])
        # the pod's own command, with the ConfigMap where this test put it and TF_CONFIG printed
        # where the pod would exec the trainer
        prefix, trainer = script.split("&& exec ")
        assert trainer.split()[:2] == ["python", TRAINER]
        _assert_args(intended, trainer.split())
        shell = prefix.replace(mount["mountPath"], str(files)) + '&& printf %s "$TF_CONFIG"'
        (task_type_env,) = [e for e in container["env"] if e["name"] == "TASK_TYPE"]
        label = re.fullmatch(r"metadata\.labels\['(\w+)'\]", task_type_env["valueFrom"]["fieldRef"]["fieldPath"])
        for index in range(s["spec"]["replicas"]):
            env = {"PATH": os.environ.get("PATH", "/bin:/usr/bin"), "HOSTNAME": f"{s['metadata']['name']}-{index}",
                   "TASK_TYPE": s["spec"]["template"]["metadata"]["labels"][label.group(1)]}
            out = subprocess.run(container["command"] + [shell], env=env, capture_output=True, text=True,
                                 check=True).stdout
            _assert_run_config(monkeypatch, intended, json.loads(out), job, index, cluster, _model_claim(pod))
