"""tf.estimator.RunConfig over TF_CONFIG: every case of estimator_cases.RUN_CONFIG_CASES gives the
properties (or the error) TensorFlow 2.15's tf.compat.v1.estimator.RunConfig gave
(fixtures/tf_estimator.json, recorded by fixtures/record_tf_estimator.py)."""
from __future__ import annotations

import json
import os

import pytest

import tensorweave as tf
from estimator_cases import RUN_CONFIG_CASES, clean_message, run_config_properties
from fixtures.recorded import error

with open(os.path.join(os.path.dirname(__file__), "fixtures", "tf_estimator.json")) as f:
    RECORDED = json.load(f)["run_config"]


@pytest.mark.parametrize("name", sorted(RUN_CONFIG_CASES))
def test_run_config_matches_tensorflow(name, monkeypatch):
    tf_config, kwargs, replace = RUN_CONFIG_CASES[name]
    if tf_config is None:
        monkeypatch.delenv("TF_CONFIG", raising=False)
    else:
        monkeypatch.setenv("TF_CONFIG", json.dumps(tf_config))
    got = {}

    def build():
        config = tf.estimator.RunConfig(**kwargs)
        if replace is not None:
            config = config.replace(**replace)
        got.update(run_config_properties(config))
    got["error"] = clean_message(error(build))
    want = RECORDED[name]
    assert got["error"] == want["error"]
    assert json.loads(json.dumps(got)) == want


def test_replace_keeps_the_original_and_the_cluster(monkeypatch):
    monkeypatch.setenv("TF_CONFIG", json.dumps({"cluster": {"chief": ["a:1"], "ps": ["b:1"], "worker": ["c:1"]},
                                                "task": {"type": "worker", "index": 0}}))
    config = tf.estimator.RunConfig(save_checkpoints_steps=5)
    other = config.replace(save_checkpoints_secs=7, keep_checkpoint_max=1)
    assert (config.save_checkpoints_steps, config.save_checkpoints_secs, config.keep_checkpoint_max) == (5, None, 5)
    assert (other.save_checkpoints_steps, other.save_checkpoints_secs, other.keep_checkpoint_max) == (None, 7, 1)
    assert other.master == "grpc://c:1" and other.cluster_spec == config.cluster_spec
    assert other.session_config.device_filters == ["/job:ps", "/job:worker/task:0"]


def test_experimental_distribute_gives_the_run_config_its_strategies(monkeypatch):
    """tf.contrib.distribute.DistributeConfig's strategies become RunConfig's train_distribute /
    eval_distribute (with a remote_cluster, the config of a standalone client of it, local but for its
    cluster_spec); one given both ways is TF's ValueError (TF 2.15's words, its missing space
    included); a between-graph strategy given so makes a cluster of workers only valid (worker 0
    the chief), as when given as train_distribute."""
    monkeypatch.delenv("TF_CONFIG", raising=False)
    one, mirrored = tf.distribute.OneDeviceStrategy("/cpu:0"), tf.distribute.MirroredStrategy(["/cpu:0"])
    assert tf.contrib.distribute.DistributeConfig() == (None, None, None)
    assert tf.contrib.distribute.DistributeConfig(remote_cluster={"worker": ["a:1"]}).remote_cluster == \
        {"worker": ["a:1"]}
    config = tf.estimator.RunConfig(experimental_distribute=tf.contrib.distribute.DistributeConfig(one, mirrored))
    assert config.train_distribute is one and config.eval_distribute is mirrored
    config = tf.estimator.RunConfig(train_distribute=one,
                                    experimental_distribute=tf.contrib.distribute.DistributeConfig(None, mirrored))
    assert config.train_distribute is one and config.eval_distribute is mirrored
    config = tf.estimator.RunConfig(experimental_distribute=tf.contrib.distribute.DistributeConfig())
    assert config.train_distribute is None and config.eval_distribute is None and config.is_chief
    with pytest.raises(ValueError, match=r"^Either `train_distribute` or`experimental_distribute.train_distribute` "
                                         r"can be set.$"):
        tf.estimator.RunConfig(train_distribute=one, experimental_distribute=tf.contrib.distribute.DistributeConfig(
            train_distribute=mirrored))
    with pytest.raises(ValueError, match=r"^Either `eval_distribute` or`experimental_distribute.eval_distribute` "
                                         r"can be set.$"):
        tf.estimator.RunConfig(eval_distribute=one, experimental_distribute=tf.contrib.distribute.DistributeConfig(
            eval_distribute=mirrored))
    remote = tf.contrib.distribute.DistributeConfig(one, remote_cluster={"worker": ["a:1", "a:2"]})
    config = tf.estimator.RunConfig(experimental_distribute=remote)   # a standalone client (TF 2.15's values)
    assert config.cluster_spec.as_dict() == {"worker": ["a:1", "a:2"]} and config.train_distribute is one
    assert (config.task_type, config.task_id, config.is_chief, config.master, config.num_ps_replicas,
            config.num_worker_replicas, config.global_id_in_cluster, config.session_config) == \
        ("worker", 0, True, "", 0, 1, 0, None)
    mwms_client = tf.contrib.distribute.DistributeConfig(tf.distribute.experimental.MultiWorkerMirroredStrategy(),
                                                         remote_cluster={"worker": ["a:1", "a:2"]})
    est = tf.estimator.Estimator(lambda features, labels, mode: None,
                                 config=tf.estimator.RunConfig(experimental_distribute=mwms_client))
    with pytest.raises(ValueError, match=r"^`Estimator.train` API is not supported for MultiWorkerMirroredStrategy "
                                         r"with `STANDALONE_CLIENT` mode.$"):
        est.train(lambda: None, max_steps=1)   # (train_and_evaluate is how a standalone client trains)
    assert not tf.estimator.RunConfig(experimental_distribute=remote._replace(train_distribute=None)).cluster_spec
    workers = {"cluster": {"worker": ["localhost:1", "localhost:2"]}, "task": {"type": "worker", "index": 0}}
    monkeypatch.setenv("TF_CONFIG", json.dumps(workers))
    with pytest.raises(ValueError, match='^Cannot set both "cluster_spec" of TF_CONFIG and '
                                         '`experimental_distribute.remote_cluster`$'):
        tf.estimator.RunConfig(experimental_distribute=remote)
    mwms = tf.distribute.experimental.MultiWorkerMirroredStrategy()
    config = tf.estimator.RunConfig(experimental_distribute=tf.contrib.distribute.DistributeConfig(mwms))
    assert config.train_distribute is mwms and config.is_chief and config.task_type == "worker"
    assert config.num_worker_replicas == 2
