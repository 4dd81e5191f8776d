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
