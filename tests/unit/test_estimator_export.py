"""Estimator.export_saved_model / export_savedmodel, tf.estimator.export and the exporters: the
linear model of estimator_cases.py exported as a SavedModel (raw, raw-bytes and tf.Example-parsing
receivers; predict, regress and classify signatures) has the signatures TensorFlow 2.15's
Estimator exports, loads with tf.saved_model.loader.load and computes what TF computed from its
own export and from ours (fixtures/tf_estimator_export.json, fixtures/record_tf_estimator_export.py);
TF's errors for bad receivers, outputs and exports."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

import tensorweave as tf
import estimator_cases as cases
from fixtures.recorded import decode
from tensorweave.saved_model.loader import parse_saved_model

with open(os.path.join(os.path.dirname(__file__), "fixtures", "tf_estimator_export.json")) as f:
    RECORDED = json.load(f)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    est = tf.estimator.Estimator(cases.linear_model_fn(tf), model_dir=str(tmp_path_factory.mktemp("export") / "m"),
                                 params={"learning_rate": 0.1})
    est.train(cases.train_input_fn(tf), steps=10)
    predicted = np.array([p["y"] for p in est.predict(cases.predict_input_fn(tf))])
    return est, predicted


def _load(export_dir):
    """(session, graph, signature map) of a SavedModel's "serve" meta graph, in a new graph."""
    graph = tf.Graph()
    session = tf.Session(graph=graph)
    with graph.as_default():
        meta_graph = tf.saved_model.loader.load(session, [tf.saved_model.tag_constants.SERVING], export_dir)
    return session, graph, meta_graph.signature_def


def _run(session, graph, signature, feeds: dict) -> dict:
    fetches = {k: graph.get_tensor_by_name(v.name) for k, v in signature.outputs.items()}
    feed_dict = {graph.get_tensor_by_name(signature.inputs[k].name): v for k, v in feeds.items()}
    return session.run(fetches, feed_dict)


def test_raw_receiver_export_loads_and_predicts_as_the_estimator(trained, tmp_path):
    est, predicted = trained
    extra = tmp_path / "notes.txt"
    extra.write_text("exported")
    receiver_fn = tf.estimator.export.build_raw_serving_input_receiver_fn(
        {"x": tf.placeholder(tf.float32, [None, 2], name="x")})
    export_dir = est.export_saved_model(str(tmp_path / "exports"), receiver_fn,
                                        assets_extra={"docs/notes.txt": str(extra)})
    assert isinstance(export_dir, bytes)
    export_dir = export_dir.decode()
    assert os.path.dirname(export_dir) == str(tmp_path / "exports") and os.path.basename(export_dir).isdigit()
    assert sorted(os.listdir(str(tmp_path / "exports"))) == [os.path.basename(export_dir)]   # no temp- left
    assert open(os.path.join(export_dir, "assets.extra", "docs", "notes.txt")).read() == "exported"
    session, graph, signatures = _load(export_dir)
    assert list(signatures) == ["serving_default"]
    serving = signatures["serving_default"]
    assert serving.method_name == "tensorflow/serving/predict"
    assert sorted(serving.inputs) == ["x"] and sorted(serving.outputs) == ["double", "y"]
    got = _run(session, graph, serving, {"x": cases.X})
    np.testing.assert_allclose(got["y"], predicted, rtol=1e-6)
    np.testing.assert_allclose(got["double"], 2 * predicted, rtol=1e-6)


def test_regress_classify_and_predict_signatures_load_and_serve(trained, tmp_path):
    est, predicted = trained
    serving_est = tf.estimator.Estimator(cases.serving_model_fn(tf), model_dir=est.model_dir,
                                         params={"learning_rate": 0.1})
    export_dir = serving_est.export_savedmodel(str(tmp_path), cases.raw_bytes_receiver_fn(tf)).decode()
    session, graph, signatures = _load(export_dir)
    assert sorted(signatures) == ["classify", "predict", "serving_default"]
    assert signatures["serving_default"].method_name == "tensorflow/serving/regress"
    assert signatures["classify"].method_name == "tensorflow/serving/classify"
    examples = np.array([row.tobytes() for row in cases.X], dtype=object)
    regress = _run(session, graph, signatures["serving_default"], {"inputs": examples})
    np.testing.assert_allclose(regress["outputs"], predicted[:, 0], rtol=1e-6)
    classify = _run(session, graph, signatures["classify"], {"inputs": examples})
    assert [c[0].decode() for c in classify["classes"]] == ["positive" if v > 0 else "negative"
                                                            for v in predicted[:, 0]]
    np.testing.assert_allclose(classify["scores"][:, 0], np.abs(predicted[:, 0]), rtol=1e-6)
    predict = _run(session, graph, signatures["predict"], {"examples": examples})
    np.testing.assert_allclose(predict["y"], predicted[:, 0], rtol=1e-6)


def test_parsing_receiver_feeds_serialized_examples(trained, tmp_path):
    est, _ = trained
    serving_est = tf.estimator.Estimator(cases.serving_model_fn(tf), model_dir=est.model_dir,
                                         params={"learning_rate": 0.1})
    receiver_fn = tf.estimator.export.build_parsing_serving_input_receiver_fn(
        {"x": tf.FixedLenFeature([2], tf.float32)}, default_batch_size=4)
    with tf.Graph().as_default():
        receiver = receiver_fn()
        serialized = receiver.receiver_tensors["examples"]
        assert list(receiver.receiver_tensors) == ["examples"] and serialized.op.name == "input_example_tensor"
        assert serialized.dtype == tf.string and serialized.shape.as_list() == [4]
        assert receiver.features["x"].shape.as_list() == [4, 2]
    export_dir = serving_est.export_saved_model(str(tmp_path), receiver_fn).decode()
    meta_graph = parse_saved_model(export_dir).meta_graphs[0]
    assert list(meta_graph.meta_info_def.tags) == ["serve"]
    regress = meta_graph.signature_def["serving_default"]
    assert regress.inputs["inputs"].name == "input_example_tensor:0"
    assert regress.inputs["inputs"].tensor_shape.dim[0].size == 4


def test_export_errors(trained, tmp_path):
    est, _ = trained
    receiver_fn = tf.estimator.export.build_raw_serving_input_receiver_fn({"x": tf.placeholder(tf.float32, [None, 2])})
    with pytest.raises(ValueError, match="An input_receiver_fn must be defined."):
        est.export_saved_model(str(tmp_path), None)
    fresh = tf.estimator.Estimator(cases.linear_model_fn(tf), model_dir=str(tmp_path / "fresh"),
                                   params={"learning_rate": 0.1})
    with pytest.raises(ValueError, match="Couldn't find trained model at "):
        fresh.export_saved_model(str(tmp_path), receiver_fn)
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 2])
        with pytest.raises(ValueError, match="feature must be a Tensor, SparseTensor, or RaggedTensor."):
            tf.estimator.export.ServingInputReceiver(3, x)
        with pytest.raises(ValueError, match="receiver_tensor keys must be strings: 1."):
            tf.estimator.export.ServingInputReceiver(x, {1: x})
        with pytest.raises(ValueError, match="Classification scores must be a float32 Tensor"):
            tf.estimator.export.ClassificationOutput(scores=tf.constant([1]))
        with pytest.raises(ValueError, match="Cannot create a ClassificationOutput with empty arguments."):
            tf.estimator.export.ClassificationOutput()
        with pytest.raises(ValueError, match="Regression output value must be a float32 Tensor"):
            tf.estimator.export.RegressionOutput(tf.constant(["a"]))
        with pytest.raises(ValueError, match="Multiple `export_outputs` were provided, but none of them are "):
            tf.estimator.EstimatorSpec(tf.estimator.ModeKeys.PREDICT, predictions=x, export_outputs={
                "a": tf.estimator.export.PredictOutput(x), "b": tf.estimator.export.PredictOutput(x)})
        spec = tf.estimator.EstimatorSpec(tf.estimator.ModeKeys.PREDICT, predictions={"p": x})
        assert list(spec.export_outputs) == ["serving_default"]
        assert spec.export_outputs["serving_default"].outputs == {"p": x}
        single = tf.estimator.export.TensorServingInputReceiver(x, {"x": x})
        assert single.features is x and single.receiver_tensors == {"x": x}


def test_exporters_of_train_and_evaluate(tmp_path):
    receiver_fn = tf.estimator.export.build_raw_serving_input_receiver_fn(
        {"x": tf.placeholder(tf.float32, [None, 2], name="x")})
    est = tf.estimator.Estimator(cases.linear_model_fn(tf), model_dir=str(tmp_path),
                                 config=tf.estimator.RunConfig(save_checkpoints_steps=4),
                                 params={"learning_rate": 0.1})
    exporters = [tf.estimator.LatestExporter("latest", receiver_fn, exports_to_keep=2),
                 tf.estimator.FinalExporter("final", receiver_fn),
                 tf.estimator.BestExporter("best", receiver_fn, exports_to_keep=None)]
    metrics, exports = tf.estimator.train_and_evaluate(
        est, tf.estimator.TrainSpec(cases.train_input_fn(tf), max_steps=12),
        tf.estimator.EvalSpec(cases.eval_input_fn(tf), steps=None, throttle_secs=0, exporters=exporters))
    assert int(metrics["global_step"]) == 12
    export_base = os.path.join(str(tmp_path), "export")
    assert len(os.listdir(os.path.join(export_base, "latest"))) == 2   # of three evaluations (steps 4, 8, 12)
    assert len(os.listdir(os.path.join(export_base, "final"))) == 1
    assert len(os.listdir(os.path.join(export_base, "best"))) == 3     # the loss fell at every evaluation
    latest, final, best = exports
    assert os.path.dirname(final.decode()) == os.path.join(export_base, "final")
    assert latest.decode() in [os.path.join(export_base, "latest", d) for d in os.listdir(
        os.path.join(export_base, "latest"))] and best is not None
    session, graph, signatures = _load(final.decode())
    got = _run(session, graph, signatures["serving_default"], {"x": cases.X})
    predicted = np.array([p["y"] for p in est.predict(cases.predict_input_fn(tf))])
    np.testing.assert_allclose(got["y"], predicted, rtol=1e-6)


def test_exporter_arguments_are_checked():
    fn = tf.estimator.export.build_raw_serving_input_receiver_fn({})
    with pytest.raises(ValueError, match="`exports_to_keep`, if provided, must be positive number"):
        tf.estimator.LatestExporter("latest", fn, exports_to_keep=0)
    with pytest.raises(ValueError, match="must include current_eval_result argument"):
        tf.estimator.BestExporter(serving_input_receiver_fn=fn, compare_fn=lambda best_eval_result: True)
    with pytest.raises(ValueError, match="`exporters` must have unique names."):
        tf.estimator.EvalSpec(cases.eval_input_fn(tf), exporters=[tf.estimator.FinalExporter("a", fn),
                                                                  tf.estimator.LatestExporter("a", fn)])
    with pytest.raises(TypeError, match="`exporters` must be an Exporter, an iterable of Exporter, or `None`"):
        tf.estimator.EvalSpec(cases.eval_input_fn(tf), exporters=[3])


def test_exports_have_tensorflows_signatures_and_compute_its_outputs(tmp_path):
    exports = cases.export_all(tf, str(tmp_path / "model"), str(tmp_path / "export"))
    for name, export_dir in exports.items():
        session, graph, _ = _load(export_dir)
        meta_graph = parse_saved_model(export_dir).meta_graphs[0]
        assert cases.signature_structure(meta_graph) == RECORDED["tf_exports"][name]["signatures"], name
        for key, feeds in cases.serving_feeds(tf)[name].items():
            got = _run(session, graph, meta_graph.signature_def[key], feeds)
            for out_key, want in RECORDED["tf_exports"][name]["outputs"][key].items():
                want, ours_in_tf = decode(want), decode(RECORDED["tf_loads_ours"][name]["outputs"][key][out_key])
                if want.dtype == object:   # TF read the same classes from its export and from ours
                    assert got[out_key].tolist() == want.tolist() == ours_in_tf.tolist()
                else:
                    np.testing.assert_allclose(got[out_key], want, rtol=1e-6)
                    np.testing.assert_allclose(ours_in_tf, want, rtol=1e-6)


def test_warm_start_from_a_saved_model(trained, tmp_path):
    est, _ = trained
    export_dir = est.export_saved_model(str(tmp_path / "exports"), cases.raw_receiver_fn(tf)).decode()
    warm = tf.estimator.Estimator(cases.linear_model_fn(tf), model_dir=str(tmp_path / "warm"),
                                  params={"learning_rate": 0.1}, warm_start_from=export_dir)
    got, want = warm.evaluate(cases.eval_input_fn(tf)), est.evaluate(cases.eval_input_fn(tf))
    assert int(got["global_step"]) == 0   # trainable variables only, as TF's warm start
    for k in ("loss", "mae", "rmse"):
        np.testing.assert_allclose(got[k], want[k], rtol=1e-6)


def test_parsing_receiver_export_serves_tf_examples(trained, tmp_path):
    est, predicted = trained
    serving_est = tf.estimator.Estimator(cases.serving_model_fn(tf), model_dir=est.model_dir,
                                         params={"learning_rate": 0.1})
    receiver_fn = tf.estimator.export.build_parsing_serving_input_receiver_fn(
        {"x": tf.FixedLenFeature([2], tf.float32)})
    session, graph, signatures = _load(serving_est.export_saved_model(str(tmp_path), receiver_fn).decode())
    examples = [tf.train.Example(features=tf.train.Features(feature={
        "x": tf.train.Feature(float_list=tf.train.FloatList(value=row))})).SerializeToString() for row in cases.X]
    regress = _run(session, graph, signatures["serving_default"], {"inputs": examples})
    np.testing.assert_allclose(regress["outputs"], predicted[:, 0], rtol=1e-6)
    classify = _run(session, graph, signatures["classify"], {"inputs": examples})
    assert [c[0].decode() for c in classify["classes"]] == ["positive" if v > 0 else "negative"
                                                            for v in predicted[:, 0]]
