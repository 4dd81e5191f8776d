"""What tests/unit/fixtures/record_tf_premade.py records from TensorFlow 2.15's
tf.compat.v1.estimator premade Estimators and tests/unit/test_premade_estimators.py replays against
tensorweave: iris-like data (4 numeric features, a colour word, a weight, 3 classes), and one
constructor per case. Pure Python and numpy; `tf` is the TF1 namespace of either side."""
from __future__ import annotations

import os
import shutil

import numpy as np

N_EXAMPLES, BATCH, TRAIN_STEPS, RESUMED_STEPS = 30, 10, 10, 5
NUMERIC = ("SepalLength", "SepalWidth", "PetalLength", "PetalWidth")
COLORS = ("red", "green", "blue")


def data():
    """(features dict of numpy arrays, int class labels 0..2, float regression targets)."""
    rng = np.random.RandomState(7)
    x = rng.uniform(0.0, 4.0, size=(N_EXAMPLES, 4)).astype(np.float32)
    classes = (x[:, 2] + 0.5 * x[:, 3] > 3.0).astype(np.int64) + (x[:, 0] > 2.5).astype(np.int64)
    features = {name: x[:, i] for i, name in enumerate(NUMERIC)}
    features["color"] = np.array([COLORS[i % 3].encode() for i in range(N_EXAMPLES)], dtype=object)
    features["w"] = rng.uniform(0.5, 2.0, size=N_EXAMPLES).astype(np.float32)
    target = (x @ np.array([0.5, -1.0, 2.0, 0.25], np.float32) + 1.0).astype(np.float32)
    return features, classes, target


def labels_of(case):
    _, classes, target = data()
    kind = CASES[case][1]
    if kind == "binary_vocab":
        return np.array([b"yes" if c > 0 else b"no" for c in classes], dtype=object)
    if kind == "binary":
        return (classes > 0).astype(np.int64)
    if kind == "regression":
        return target
    if kind == "regression2":
        return np.stack([target, 0.5 * target - 1.0], axis=1)
    if kind == "counts":
        return np.round(np.abs(target)).astype(np.float32)
    if kind == "binary_float":
        return (classes > 0).astype(np.float32)
    if kind == "multi_vocab":
        return np.array([b"abc"[c:c + 1] for c in classes], dtype=object)
    return classes


def seed_model_dir(model_dir: str, checkpoint_dir: str) -> None:
    """model_dir holding a copy of checkpoint_dir's model.ckpt as its latest checkpoint."""
    os.makedirs(model_dir)
    for suffix in (".index", ".data-00000-of-00001"):
        shutil.copy(os.path.join(checkpoint_dir, "model.ckpt" + suffix), os.path.join(model_dir, "model.ckpt" + suffix))
    with open(os.path.join(model_dir, "checkpoint"), "w") as f:
        f.write('model_checkpoint_path: "model.ckpt"\n')


def input_fn(tf, case, train):
    """A tf.data input_fn over the data in order, BATCH examples a batch (repeated for training)."""
    features, _, _ = data()
    labels = labels_of(case)

    def fn():
        ds = tf.data.Dataset.from_tensor_slices((dict(features), labels)).batch(BATCH)
        return ds.repeat() if train else ds
    return fn


def predict_input_fn(tf):
    features, _, _ = data()
    return lambda: tf.data.Dataset.from_tensor_slices(dict(features)).batch(BATCH)


def _numeric(tf):
    return [tf.feature_column.numeric_column(k) for k in NUMERIC]


def _color(tf):
    return tf.feature_column.categorical_column_with_vocabulary_list("color", COLORS)


def sgd(tf):
    return tf.train.GradientDescentOptimizer(0.1)


def _weighted_softmax_loss(tf):
    """A loss_fn(labels, logits, features): softmax cross entropy times the example's weight feature."""
    def loss_fn(labels, logits, features):
        loss = tf.losses.sparse_softmax_cross_entropy(tf.reshape(labels, [-1]), logits,
                                                      reduction=tf.losses.Reduction.NONE)
        return tf.expand_dims(loss * features["w"], -1)
    return loss_fn


def _wide_deep(tf):
    """The census tutorial's kinds of columns: bucketized and crossed (hashed) ones in the linear
    part, an embedding, an indicator of hashed words and a numeric one in the DNN."""
    fc = tf.feature_column
    sepal = fc.bucketized_column(fc.numeric_column("SepalLength"), boundaries=[1.0, 2.0, 3.0])
    return dict(linear_feature_columns=[sepal, fc.crossed_column([sepal, "color"], hash_bucket_size=10)],
                dnn_feature_columns=[fc.embedding_column(_color(tf), dimension=2), fc.numeric_column("PetalLength"),
                                     fc.indicator_column(fc.categorical_column_with_hash_bucket("color", 5))],
                dnn_hidden_units=[5], n_classes=3)


# name -> (class name, label kind, constructor kwargs of (tf))
CASES = {
    "dnn_iris": ("DNNClassifier", "multi", lambda tf: dict(
        hidden_units=[10, 10], feature_columns=_numeric(tf), n_classes=3)),
    "dnn_binary": ("DNNClassifier", "binary_vocab", lambda tf: dict(
        hidden_units=[4], feature_columns=_numeric(tf), weight_column="w", label_vocabulary=["no", "yes"],
        optimizer="Adam", activation_fn=tf.nn.tanh, batch_norm=True)),
    "dnn_regressor": ("DNNRegressor", "regression", lambda tf: dict(
        hidden_units=[5, 3], feature_columns=_numeric(tf), weight_column="w", optimizer="RMSProp",
        loss_reduction=tf.losses.Reduction.SUM_OVER_BATCH_SIZE)),
    "linear_multi": ("LinearClassifier", "multi", lambda tf: dict(
        feature_columns=_numeric(tf)[:2] + [_color(tf)], n_classes=3)),
    "linear_binary": ("LinearClassifier", "binary", lambda tf: dict(
        feature_columns=_numeric(tf), optimizer=lambda: sgd(tf), weight_column="w")),
    "linear_regressor": ("LinearRegressor", "regression", lambda tf: dict(
        feature_columns=_numeric(tf) + [_color(tf)], optimizer="Adagrad")),
    "combined_classifier": ("DNNLinearCombinedClassifier", "multi", lambda tf: dict(
        linear_feature_columns=[_color(tf)] + _numeric(tf)[:1], dnn_feature_columns=_numeric(tf),
        dnn_hidden_units=[4], n_classes=3)),
    "combined_regressor": ("DNNLinearCombinedRegressor", "regression", lambda tf: dict(
        linear_feature_columns=[_color(tf)], dnn_feature_columns=_numeric(tf), dnn_hidden_units=[3],
        dnn_optimizer="SGD", linear_optimizer="Ftrl", weight_column="w")),
    "dnn_multi_vocab": ("DNNClassifier", "multi_vocab", lambda tf: dict(
        hidden_units=[6], feature_columns=_numeric(tf), n_classes=3, label_vocabulary=["a", "b", "c"],
        weight_column="w", optimizer="SGD", loss_reduction=tf.losses.Reduction.SUM_BY_NONZERO_WEIGHTS)),
    "linear_regressor_2d": ("LinearRegressor", "regression2", lambda tf: dict(
        feature_columns=_numeric(tf), label_dimension=2, loss_reduction=tf.losses.Reduction.SUM_OVER_BATCH_SIZE,
        weight_column=tf.feature_column.numeric_column("w", normalizer_fn=lambda w: 2.0 * w))),
    "wide_deep": ("DNNLinearCombinedClassifier", "multi", lambda tf: _wide_deep(tf)),
    # the head-taking Estimators, with tf.contrib.estimator's heads
    "dnn_estimator_binary_head": ("DNNEstimator", "binary", lambda tf: dict(
        head=tf.contrib.estimator.binary_classification_head(weight_column="w", thresholds=[0.3, 0.7], name="bin"),
        hidden_units=[4], feature_columns=_numeric(tf))),
    "linear_estimator_poisson": ("LinearEstimator", "counts", lambda tf: dict(
        head=tf.contrib.estimator.poisson_regression_head(), feature_columns=_numeric(tf), optimizer="Adagrad")),
    "combined_estimator_loss_fn": ("DNNLinearCombinedEstimator", "multi", lambda tf: dict(
        head=tf.contrib.estimator.multi_class_head(3, loss_fn=_weighted_softmax_loss(tf), name="m"),
        linear_feature_columns=[_color(tf)], dnn_feature_columns=_numeric(tf), dnn_hidden_units=[4])),
    "baseline_estimator_logistic": ("BaselineEstimator", "binary_float", lambda tf: dict(
        head=tf.contrib.estimator.logistic_regression_head(weight_column="w"), optimizer="SGD")),
    "baseline_classifier": ("BaselineClassifier", "multi", lambda tf: dict(n_classes=3)),
    "baseline_regressor": ("BaselineRegressor", "regression", lambda tf: dict(weight_column="w")),
    "baseline_binary": ("BaselineClassifier", "binary", lambda tf: dict(optimizer="SGD")),
}
# the cases whose TF-trained checkpoint is a fixture too (ours restores it and evaluates/predicts)
TRAINED_CHECKPOINTS = ("dnn_iris", "dnn_binary", "linear_multi", "combined_classifier")
