"""Estimator.experimental_export_all_saved_models, tf.estimator.export.EvalOutput and
tf.estimator.experimental.build_raw_supervised_input_receiver_fn: the linear model of
estimator_cases.py exported with TRAIN ("train" tag), EVAL ("eval") and PREDICT ("serve") meta
graphs has the signatures TensorFlow 2.15's Estimator writes, and each loaded meta graph computes
here what TF's loader computed from TF's export and from ours (predictions, metrics after an
update, the loss after a run of the saved train op): fixtures/tf_estimator_export_all.json,
recorded by fixtures/record_tf_estimator_export_all.py."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

import tensorweave as tf
import estimator_cases as cases
from fixtures.recorded import decode
from tensorweave.saved_model.loader import parse_saved_model

with open(os.path.join(os.path.dirname(__file__), "fixtures", "tf_estimator_export_all.json")) as f:
    RECORDED = json.load(f)


@pytest.fixture(scope="module")
def export_dir(tmp_path_factory):
    base = tmp_path_factory.mktemp("all_modes")
    return cases.export_all_modes(tf, str(base / "model"), str(base / "export"))


def test_meta_graphs_have_tensorflows_tags_and_signatures(export_dir):
    meta_graphs = parse_saved_model(export_dir).meta_graphs
    assert [list(m.meta_info_def.tags) for m in meta_graphs] == [["train"], ["eval"], ["serve"]]
    for meta_graph, tag in zip(meta_graphs, ("train", "eval", "serve")):
        assert cases.signature_structure(meta_graph) == RECORDED["tf_export"][tag]["signatures"], tag
    assert os.path.exists(os.path.join(export_dir, "variables", "variables.index"))


@pytest.mark.parametrize("tag", ["train", "eval", "serve"])
def test_each_tag_loads_and_computes_what_tensorflow_computes(export_dir, tag):
    graph = tf.Graph()
    with graph.as_default(), tf.Session(graph=graph) as session:
        meta_graph = tf.saved_model.loader.load(session, [tag], export_dir)
        got = cases.run_all_modes_export(tf, session, meta_graph)
    assert sorted(got) == sorted(RECORDED["tf_export"][tag]["outputs"])
    for key, value in got.items():
        want = decode(RECORDED["tf_export"][tag]["outputs"][key])
        np.testing.assert_allclose(value, want, rtol=1e-5, err_msg=key)
        np.testing.assert_allclose(decode(RECORDED["tf_loads_ours"][tag]["outputs"][key]), want, rtol=1e-5,
                                   err_msg=key)
    if tag == "train":   # the saved train op took a gradient step
        assert got["loss_after_train_op"] < got["loss"]


def test_export_saved_model_of_one_mode(tmp_path):
    est = tf.estimator.Estimator(cases.all_modes_model_fn(tf), model_dir=str(tmp_path / "m"),
                                 params={"learning_rate": 0.1})
    est.train(cases.train_input_fn(tf), steps=2)
    receiver = tf.estimator.experimental.build_raw_supervised_input_receiver_fn(
        tf.placeholder(tf.float32, [None, 2]), tf.placeholder(tf.float32, [None, 1]))
    with pytest.raises(ValueError, match="Features and labels must have distinct keys. Found overlapping keys: "
                                         "{'label'}"):
        tf.estimator.experimental.build_raw_supervised_input_receiver_fn({"label": tf.placeholder(tf.float32)},
                                                                         tf.placeholder(tf.float32))
    export = est.export_saved_model(str(tmp_path / "e"), receiver, experimental_mode=tf.estimator.ModeKeys.EVAL)
    meta_graph, = parse_saved_model(export.decode()).meta_graphs
    assert list(meta_graph.meta_info_def.tags) == ["eval"]
    assert sorted(meta_graph.signature_def["eval"].inputs) == ["input", "label"]
    with pytest.raises(ValueError, match="No valid modes for exporting found"):
        est.experimental_export_all_saved_models(str(tmp_path / "e"), {tf.estimator.ModeKeys.PREDICT: None})


def test_eval_output_names_and_checks():
    with tf.Graph().as_default():
        loss, pred = tf.constant(1.), tf.constant([2.])
        value, update = tf.metrics.mean(pred)
        output = tf.estimator.export.EvalOutput(loss={"total": loss}, predictions=pred,
                                                metrics={("a", "b"): (value, update), "op": (value, tf.no_op())})
        assert sorted(output.loss) == ["loss/total"] and sorted(output.predictions) == ["predictions"]
        assert sorted(output.metrics) == ["metrics/a/b/update_op", "metrics/a/b/value", "metrics/op/update_op",
                                          "metrics/op/value"]
        assert output.metrics["metrics/op/update_op"].op.type == "Const"
        signature = output.as_signature_def({"x": pred})
        assert signature.method_name == "tensorflow/supervised/eval"
        with pytest.raises(ValueError, match="loss output value must be a Tensor; got 3"):
            tf.estimator.export.EvalOutput(loss=3)
        with pytest.raises(ValueError, match="metrics/m update_op must be a Tensor or Operation; got 1"):
            tf.estimator.export.EvalOutput(metrics={"m": (value, 1)})
        with pytest.raises(ValueError, match="tensorflow/supervised/eval `inputs` cannot be None or empty."):
            output.as_signature_def({})
