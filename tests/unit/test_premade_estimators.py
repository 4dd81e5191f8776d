"""Premade Estimators (tf.estimator.DNNClassifier, ..., BaselineRegressor) against TensorFlow
2.15's tf.compat.v1.estimator (fixtures/record_tf_premade.py): from the same initial weights
(TF's checkpoint, warm-started) and the same data, ours trains the same steps and then evaluates
and predicts what TF did; TF's trained checkpoint restored into ours evaluates and predicts the
same; the iris premade-estimator tutorial's DNNClassifier as written."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

import tensorweave as tf
import premade_cases as cases
from fixtures.recorded import decode

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures")
RECORDED = json.load(open(os.path.join(FIXTURES, "tf_premade.json")))["cases"]
# RMSProp divides by sqrt of a mean square a few steps old: float32 rounding grows over the steps
RTOL = {"dnn_regressor": 1e-3}

def _estimator(name, model_dir, **extra):
    cls_name, _, kwargs = cases.CASES[name]
    return getattr(tf.estimator, cls_name)(model_dir=str(model_dir), **kwargs(tf), **extra)


def _assert_metrics(got: dict, recorded: dict, rtol: float = 1e-5) -> None:
    assert sorted(got) == sorted(recorded)
    for key, want in recorded.items():
        np.testing.assert_allclose(float(got[key]), want, rtol=rtol, atol=rtol, err_msg=key)


def _assert_predictions(est, recorded: dict, rtol: float = 1e-5) -> None:
    predictions = list(est.predict(cases.predict_input_fn(tf)))
    assert len(predictions) == cases.N_EXAMPLES
    assert sorted(predictions[0]) == sorted(recorded)
    for key, want in recorded.items():
        want = decode(want)
        got = np.stack([p[key] for p in predictions])
        assert got.shape == want.shape, key
        if want.dtype.kind == "f":
            np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol, err_msg=key)
        else:
            assert got.tolist() == want.tolist(), key


def _restored(name, tmp_path, checkpoint="trained", **extra):
    """The premade Estimator of case `name` over a copy of TF's checkpoint."""
    cases.seed_model_dir(str(tmp_path / "model"), os.path.join(FIXTURES, "tf_premade", name, checkpoint))
    return _estimator(name, tmp_path / "model", **extra)


@pytest.mark.parametrize("name", sorted(cases.CASES))
def test_trains_evaluates_and_predicts_as_tf(name, tmp_path):
    """TF's initial weights (warm start; DNNLinearCombinedEstimator, which takes none: resumed from
    TF's initial checkpoint), TRAIN_STEPS steps of the same batches: TF's metrics, predictions and
    variable names."""
    cls_name = cases.CASES[name][0]
    init = os.path.join(FIXTURES, "tf_premade", name, "init", "model.ckpt")
    if cls_name.startswith("Baseline"):   # (they start at zero)
        est = _estimator(name, tmp_path / "model")
    elif cls_name == "DNNLinearCombinedEstimator":
        est = _restored(name, tmp_path, "init")
    else:
        est = _estimator(name, tmp_path / "model", warm_start_from=init)
    est.train(cases.input_fn(tf, name, True), steps=cases.TRAIN_STEPS)
    recorded = RECORDED[name]
    # every variable as TF names it, optimizer slots too ("dnn/hiddenlayer_0/kernel/t_0/Adagrad":
    # TF's slot of a partition, made inside variable scope 'dnn')
    assert sorted(est.get_variable_names()) == sorted(recorded["variables"])
    for var, shape in recorded["variables"].items():
        assert list(est.get_variable_value(var).shape) == shape, var
    rtol = RTOL.get(name, 1e-4)
    _assert_metrics(est.evaluate(cases.input_fn(tf, name, False)), recorded["metrics"], rtol)
    _assert_predictions(est, recorded["predictions"], rtol)


@pytest.mark.parametrize("name", cases.TRAINED_CHECKPOINTS)
def test_restores_tf_trained_checkpoint(name, tmp_path):
    """A checkpoint TF's premade Estimator wrote, as ours's model_dir: the same evaluation and
    predictions (its variables are named as ours)."""
    est = _restored(name, tmp_path)
    _assert_metrics(est.evaluate(cases.input_fn(tf, name, False)), RECORDED[name]["metrics"])
    _assert_predictions(est, RECORDED[name]["predictions"])


@pytest.mark.parametrize("name", cases.TRAINED_CHECKPOINTS)
def test_resumes_training_from_tf_checkpoint(name, tmp_path):
    """Training resumed from TF's checkpoint (model, optimizer slots, global step) continues as TF's."""
    est = _restored(name, tmp_path)
    est.train(cases.input_fn(tf, name, True), steps=cases.RESUMED_STEPS)
    _assert_metrics(est.evaluate(cases.input_fn(tf, name, False)), RECORDED[name]["resumed_metrics"], 1e-4)


def test_export_serves_tf_trained_classifier(tmp_path):
    """export_saved_model of a DNNClassifier: TF's signatures (serving_default and classification:
    the class names and probabilities; predict: every prediction) computing TF's predictions
    from serialized tf.Examples."""
    est = _restored("dnn_iris", tmp_path)
    columns = cases.CASES["dnn_iris"][2](tf)["feature_columns"]
    receiver_fn = tf.estimator.export.build_parsing_serving_input_receiver_fn(
        tf.feature_column.make_parse_example_spec(columns))
    export_dir = est.export_saved_model(str(tmp_path / "exports"), receiver_fn).decode()
    features, _, _ = cases.data()
    examples = [tf.train.Example(features=tf.train.Features(feature={
        k: tf.train.Feature(float_list=tf.train.FloatList(value=[float(features[k][i])])) for k in cases.NUMERIC}))
        .SerializeToString() for i in range(4)]
    graph = tf.Graph()
    with tf.Session(graph=graph) as session:
        signatures = tf.saved_model.loader.load(session, [tf.saved_model.tag_constants.SERVING],
                                                export_dir).signature_def
        assert sorted(signatures) == ["classification", "predict", "serving_default"]
        assert signatures["serving_default"].method_name == "tensorflow/serving/classify"

        def run(key):
            signature = signatures[key]
            fetches = {k: graph.get_tensor_by_name(v.name) for k, v in signature.outputs.items()}
            feed = {graph.get_tensor_by_name(v.name): examples for v in signature.inputs.values()}
            return session.run(fetches, feed)
        want = decode(RECORDED["dnn_iris"]["predictions"]["probabilities"])[:4]
        classified = run("classification")
        np.testing.assert_allclose(classified["scores"], want, rtol=1e-5, atol=1e-6)
        assert classified["classes"].tolist() == [[b"0", b"1", b"2"]] * 4
        predicted = run("predict")
        assert sorted(predicted) == sorted(RECORDED["dnn_iris"]["predictions"])
        np.testing.assert_allclose(predicted["probabilities"], want, rtol=1e-5, atol=1e-6)


# The iris premade-estimator tutorial (premade_estimator.py) as written, on iris-like data: three
# species around the real ones' means.
SPECIES = ["Setosa", "Versicolor", "Virginica"]
SPECIES_MEANS = [(5.0, 3.4, 1.5, 0.2), (5.9, 2.8, 4.3, 1.3), (6.6, 3.0, 5.6, 2.0)]


def _iris(n_per_species: int, seed: int):
    rng = np.random.RandomState(seed)
    x = np.concatenate([rng.normal(m, 0.15, size=(n_per_species, 4)) for m in SPECIES_MEANS]).astype(np.float32)
    y = np.repeat(np.arange(3), n_per_species)
    return {name: x[:, i] for i, name in enumerate(cases.NUMERIC)}, y


def test_iris_tutorial_dnn_classifier(tmp_path):
    train_x, train_y = _iris(40, 0)
    test_x, test_y = _iris(10, 1)

    def train_input_fn(features, labels, batch_size):
        dataset = tf.data.Dataset.from_tensor_slices((dict(features), labels))
        return dataset.shuffle(1000).repeat().batch(batch_size)

    def eval_input_fn(features, labels, batch_size):
        inputs = dict(features) if labels is None else (dict(features), labels)
        return tf.data.Dataset.from_tensor_slices(inputs).batch(batch_size)

    my_feature_columns = [tf.feature_column.numeric_column(key=key) for key in train_x]
    # (seeded: an unseeded init leaves a ReLU net of 10 units stuck on one class now and then)
    classifier = tf.estimator.DNNClassifier(feature_columns=my_feature_columns, hidden_units=[10, 10], n_classes=3,
                                            model_dir=str(tmp_path / "iris"),
                                            config=tf.estimator.RunConfig(tf_random_seed=1))
    classifier.train(input_fn=lambda: train_input_fn(train_x, train_y, 20), steps=300)
    eval_result = classifier.evaluate(input_fn=lambda: eval_input_fn(test_x, test_y, 20))
    assert sorted(eval_result) == ["accuracy", "average_loss", "global_step", "loss"]
    assert eval_result["global_step"] == 300
    assert eval_result["accuracy"] >= 0.9
    # SUM reduction (the v1 classes' default): loss is each batch's summed loss, averaged over batches
    np.testing.assert_allclose(eval_result["loss"], eval_result["average_loss"] * 15, rtol=1e-5)
    expected = ["Setosa", "Versicolor", "Virginica"]
    predict_x = {"SepalLength": [5.1, 5.9, 6.9], "SepalWidth": [3.3, 3.0, 3.1], "PetalLength": [1.7, 4.2, 5.4],
                 "PetalWidth": [0.5, 1.5, 2.1]}
    predictions = classifier.predict(input_fn=lambda: eval_input_fn(
        {k: np.array(v, np.float32) for k, v in predict_x.items()}, labels=None, batch_size=20))
    for pred_dict, expec in zip(predictions, expected):
        class_id = pred_dict["class_ids"][0]
        assert SPECIES[class_id] == expec
        assert pred_dict["probabilities"][class_id] > 0.5
        assert pred_dict["classes"] == [str(class_id).encode()]


def test_dropout_only_in_training_and_optimizer_instance(tmp_path):
    """dropout drops units in training only (predictions repeat); an Optimizer instance is used as given."""
    est = tf.estimator.DNNRegressor(hidden_units=[8], feature_columns=[tf.feature_column.numeric_column("x")],
                                    dropout=0.5, optimizer=tf.train.GradientDescentOptimizer(0.01),
                                    model_dir=str(tmp_path / "m"))
    x = np.linspace(0, 1, 8).astype(np.float32)

    def input_fn():
        return tf.data.Dataset.from_tensor_slices(({"x": x}, 2 * x)).batch(8).repeat()
    est.train(input_fn, steps=3)
    assert "dnn/hiddenlayer_0/kernel/GradientDescent" not in est.get_variable_names()   # (no slots)

    def predict_fn():
        return tf.data.Dataset.from_tensor_slices({"x": x}).batch(8)
    first = [p["predictions"] for p in est.predict(predict_fn)]
    assert np.array_equal(first, [p["predictions"] for p in est.predict(predict_fn)])


def test_bad_arguments_raise_tfs_errors(tmp_path):
    columns = [tf.feature_column.numeric_column("x")]
    with pytest.raises(ValueError, match=r"n_classes must be > 2: 1\."):
        tf.estimator.DNNClassifier(hidden_units=[2], feature_columns=columns, n_classes=1)
    with pytest.raises(ValueError, match="Invalid loss_reduction: none"):
        tf.estimator.LinearRegressor(columns, loss_reduction=tf.losses.Reduction.NONE)
    with pytest.raises(ValueError, match="Either linear_feature_columns or dnn_feature_columns must be defined"):
        tf.estimator.DNNLinearCombinedClassifier()
    est = tf.estimator.LinearClassifier(columns, optimizer="Nadam", model_dir=str(tmp_path / "a"))

    def input_fn():
        return {"x": tf.constant([[1.], [2.]])}, tf.constant([[0], [1]])
    with pytest.raises(ValueError, match=r"Unsupported optimizer name: Nadam\. Supported names are: "
                                         r"\('Adagrad', 'Adam', 'Ftrl', 'RMSProp', 'SGD'\)"):
        est.train(input_fn, steps=1)
    est = tf.estimator.LinearClassifier(columns, n_classes=3, model_dir=str(tmp_path / "b"))
    with pytest.raises(tf.errors.InvalidArgumentError, match="Labels must <= n_classes - 1"):
        est.train(lambda: ({"x": tf.constant([[1.], [2.]])}, tf.constant([[0], [5]])), steps=1)
    with pytest.raises(ValueError, match="Labels dtype should be integer"):
        est.train(lambda: ({"x": tf.constant([[1.], [2.]])}, tf.constant([[0.], [1.]])), steps=1)
    with pytest.raises(ValueError, match="SparseTensor labels are not supported"):
        est.train(lambda: ({"x": tf.constant([[1.], [2.]])},
                           tf.SparseTensor([[0, 0], [1, 0]], tf.constant([0, 1], tf.int64), [2, 1])), steps=1)
    with pytest.raises(ValueError, match="features should be a dictionary of `Tensor`s"):
        est.train(lambda: (tf.constant([[1.], [2.]]), tf.constant([[0], [1]])), steps=1)


@pytest.mark.parametrize("name, signatures", [
    ("linear_binary", ["classification", "predict", "regression", "serving_default"]),
    ("linear_regressor", ["predict", "regression", "serving_default"])])
def test_export_signatures_of_binary_and_regression_heads(name, signatures, tmp_path):
    """The binary head also serves its logistic as `regression`; a regressor serves regress by default."""
    est = _estimator(name, tmp_path / "model")
    est.train(cases.input_fn(tf, name, True), steps=1)
    columns = cases.CASES[name][2](tf)["feature_columns"]
    receiver_fn = tf.estimator.export.build_parsing_serving_input_receiver_fn(
        tf.feature_column.make_parse_example_spec(columns))
    export_dir = est.export_saved_model(str(tmp_path / "exports"), receiver_fn).decode()
    with tf.Session(graph=tf.Graph()) as session:
        signature_def = tf.saved_model.loader.load(session, [tf.saved_model.tag_constants.SERVING],
                                                   export_dir).signature_def
    assert sorted(signature_def) == signatures
    assert signature_def["regression"].method_name == "tensorflow/serving/regress"
    assert sorted(signature_def["predict"].outputs) == sorted(RECORDED[name]["predictions"])


def test_logit_fn_builders_build_the_premade_models():
    """tf.estimator.experimental.dnn_logit_fn_builder / linear_logit_fn_builder in scopes 'dnn' and
    'linear': the premade models' variables, so TF's trained checkpoints restore into them and the
    logits are TF's."""
    features, _, _ = cases.data()
    for name, scope in (("dnn_iris", "dnn"), ("linear_multi", "linear")):
        kwargs = cases.CASES[name][2](tf)
        with tf.Graph().as_default():
            inputs = {k: tf.constant(v) for k, v in features.items()}
            with tf.variable_scope(scope, partitioner=tf.min_max_variable_partitioner(max_partitions=0)):
                if scope == "dnn":
                    logits = tf.estimator.experimental.dnn_logit_fn_builder(
                        3, kwargs["hidden_units"], kwargs["feature_columns"], tf.nn.relu, None, None, False)(
                        inputs, tf.estimator.ModeKeys.PREDICT)
                else:
                    logits = tf.estimator.experimental.linear_logit_fn_builder(3, kwargs["feature_columns"])(inputs)
            with tf.Session() as session:
                session.run(tf.tables_initializer())
                tf.train.Saver().restore(session, os.path.join(FIXTURES, "tf_premade", name, "trained", "model.ckpt"))
                np.testing.assert_allclose(session.run(logits), decode(RECORDED[name]["predictions"]["logits"]),
                                           rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="units must be an int"):
        tf.estimator.experimental.dnn_logit_fn_builder("3", [2], [], tf.nn.relu, None, None, False)


def test_contrib_head_in_a_custom_model_fn_with_regularization(tmp_path):
    """A tf.contrib.estimator head's create_estimator_spec(optimizer=..., regularization_losses=...):
    the loss is the reduced loss plus the regularization, reported as regularization_loss."""
    head = tf.contrib.estimator.regression_head()
    x = np.arange(6, dtype=np.float32)
    y = 3 * x + 1

    def model_fn(features, labels, mode):
        w = tf.get_variable("w", [], initializer=tf.constant_initializer(2.0))
        logits = tf.expand_dims(w * features["x"], -1)
        return head.create_estimator_spec(features, mode, logits, labels=labels,
                                          optimizer=tf.train.GradientDescentOptimizer(0.0),
                                          regularization_losses=[tf.constant(0.5), 0.25 * w])

    def input_fn():
        return tf.data.Dataset.from_tensor_slices(({"x": x}, y)).batch(3)
    est = tf.estimator.Estimator(model_fn, model_dir=str(tmp_path / "m"))
    est.train(input_fn, steps=2)
    metrics = est.evaluate(input_fn)
    errors = (2 * x - y) ** 2
    np.testing.assert_allclose(metrics["average_loss"], errors.mean(), rtol=1e-6)
    np.testing.assert_allclose(metrics["regularization_loss"], 1.0, rtol=1e-6)
    # SUM_OVER_BATCH_SIZE per batch, plus the regularization, averaged over the two batches
    np.testing.assert_allclose(metrics["loss"], (errors[:3].mean() + errors[3:].mean()) / 2 + 1.0, rtol=1e-6)
    with pytest.raises(ValueError, match=r"loss_fn has unexpected args: \['weights'\]"):
        tf.contrib.estimator.regression_head(loss_fn=lambda labels, logits, weights: labels)
