"""What tests/unit/fixtures/record_tf_estimator.py records from TensorFlow 2.15's tf.compat.v1.estimator
and tests/unit/test_estimator.py / test_run_config.py replay against tensorweave: a table of
TF_CONFIGs and RunConfig arguments, and a linear model_fn with fixed initial values trained by
gradient descent on fixed data. Pure Python and numpy; `tf` is the TF1 namespace of either side."""
from __future__ import annotations

import re

import numpy as np

# -- RunConfig over TF_CONFIG ----------------------------------------------------------------------
CLUSTER = {"chief": ["host0:2222"], "ps": ["host1:2222", "host2:2222"],
           "worker": ["host3:2222", "host4:2222", "host5:2222"]}
MASTER_CLUSTER = {"master": ["host0:2222"], "ps": ["host1:2222"], "worker": ["host3:2222", "host4:2222"]}


def device_fn_of_op(op):
    return "/cpu:0"


def device_fn_of_x(x):
    return "/cpu:0"


def _tf_config(cluster=None, task_type=None, index=None, **extra):
    config = dict(extra)
    if cluster is not None:
        config["cluster"] = cluster
    if task_type is not None or index is not None:
        config["task"] = {k: v for k, v in (("type", task_type), ("index", index)) if v is not None}
    return config


# name -> (TF_CONFIG dict or None, RunConfig kwargs, replace() kwargs or None)
RUN_CONFIG_CASES = {
    "no_tf_config": (None, {}, None),
    "empty_tf_config": ({}, {}, None),
    "chief": (_tf_config(CLUSTER, "chief", 0), {}, None),
    "worker_1": (_tf_config(CLUSTER, "worker", 1), {}, None),
    "worker_2_index_as_string": (_tf_config(CLUSTER, "worker", "2"), {}, None),
    "ps_1": (_tf_config(CLUSTER, "ps", 1), {}, None),
    "evaluator": (_tf_config(CLUSTER, "evaluator", 0), {}, None),
    "evaluator_eval_session_master": (_tf_config(CLUSTER, "evaluator", 0, eval_session_master="grpc://e:1"), {},
                                      None),
    "session_master": (_tf_config(CLUSTER, "worker", 0, session_master="grpc://elsewhere:1"), {}, None),
    "single_chief": (_tf_config({"chief": ["host0:2222"]}, "chief", 0), {}, None),
    "master": (_tf_config(MASTER_CLUSTER, "master", 0), {}, None),
    "master_cluster_worker": (_tf_config(MASTER_CLUSTER, "worker", 1), {}, None),
    "master_cluster_ps": (_tf_config(MASTER_CLUSTER, "ps", 0), {}, None),
    "no_cluster_worker_task": (_tf_config(None, "worker", 0), {}, None),
    "no_cluster_session_master": (_tf_config(None, None, None, session_master="grpc://m:1"), {}, None),
    "model_dir_in_tf_config": (_tf_config(CLUSTER, "chief", 0, model_dir="/tmp/from_tf_config"), {}, None),
    "model_dir_both_same": (_tf_config(None, model_dir="/tmp/same"), {"model_dir": "/tmp/same"}, None),
    "service": (_tf_config(CLUSTER, "chief", 0, service={"name": "x"}), {}, None),
    "custom_session_config_kept": (_tf_config(CLUSTER, "worker", 0), {"save_checkpoints_steps": 10,
                                                                      "keep_checkpoint_max": 2}, None),
    "all_arguments": (None, {"model_dir": "/tmp/m", "tf_random_seed": 7, "save_summary_steps": 3,
                             "save_checkpoints_secs": 30, "keep_checkpoint_max": 0,
                             "keep_checkpoint_every_n_hours": 2, "log_step_count_steps": 9,
                             "protocol": "grpc", "experimental_max_worker_delay_secs": 4,
                             "session_creation_timeout_secs": 60}, None),
    "save_steps_none_none": (None, {"save_checkpoints_steps": None, "save_checkpoints_secs": None}, None),
    "replace_steps": (None, {}, {"save_checkpoints_steps": 10}),
    "replace_secs": (None, {"save_checkpoints_steps": 10}, {"save_checkpoints_secs": 5}),
    "replace_model_dir_and_seed": (_tf_config(CLUSTER, "worker", 1), {}, {"model_dir": "/tmp/r", "tf_random_seed": 3}),
    "device_fn": (None, {"device_fn": device_fn_of_op}, None),
    # errors
    "err_no_chief": (_tf_config({"ps": ["h:1"], "worker": ["h:2"]}, "worker", 0), {}, None),
    "err_two_chiefs": (_tf_config({"chief": ["h:1", "h:2"], "worker": ["h:3"]}, "chief", 0), {}, None),
    "err_no_task_type": (_tf_config(CLUSTER, None, 0), {}, None),
    "err_no_task_index": (_tf_config(CLUSTER, "worker", None), {}, None),
    "err_negative_index": (_tf_config(CLUSTER, "worker", -1), {}, None),
    "err_unknown_task_type": (_tf_config(CLUSTER, "trainer", 0), {}, None),
    "err_index_out_of_range": (_tf_config(CLUSTER, "worker", 3), {}, None),
    "err_no_cluster_ps": (_tf_config(None, "ps", 0), {}, None),
    "err_no_cluster_index_1": (_tf_config(None, "worker", 1), {}, None),
    "err_master_and_chief": (_tf_config(dict(MASTER_CLUSTER, chief=["h:9"]), "master", 0), {}, None),
    "err_master_evaluator": (_tf_config(MASTER_CLUSTER, "evaluator", 0), {}, None),
    "err_service_not_dict": (_tf_config(CLUSTER, "chief", 0, service="x"), {}, None),
    "err_model_dir_conflict": (_tf_config(None, model_dir="/tmp/a"), {"model_dir": "/tmp/b"}, None),
    "err_empty_model_dir": (None, {"model_dir": ""}, None),
    "err_both_save": (None, {"save_checkpoints_steps": 1, "save_checkpoints_secs": 1}, None),
    "err_summary_steps": (None, {"save_summary_steps": -1}, None),
    "err_save_steps_negative": (None, {"save_checkpoints_steps": -1}, None),
    "err_keep_max": (None, {"keep_checkpoint_max": -1}, None),
    "err_keep_hours": (None, {"keep_checkpoint_every_n_hours": 0}, None),
    "err_log_steps": (None, {"log_step_count_steps": 0}, None),
    "err_seed": (None, {"tf_random_seed": 1.5}, None),
    "err_delay": (None, {"experimental_max_worker_delay_secs": 1.5}, None),
    "err_timeout": (None, {"session_creation_timeout_secs": 0}, None),
    "err_protocol": (None, {"protocol": "http"}, None),
    "err_device_fn_args": (None, {"device_fn": device_fn_of_x}, None),
    "err_replace_unknown": (None, {}, {"master": "grpc://x:1"}),
    "err_replace_both": (None, {}, {"save_checkpoints_steps": 1, "save_checkpoints_secs": 1}),
}

RUN_CONFIG_PROPERTIES = ("cluster_spec", "task_type", "task_id", "num_ps_replicas", "num_worker_replicas", "is_chief",
                         "master", "evaluation_master", "global_id_in_cluster", "model_dir", "service",
                         "tf_random_seed", "save_summary_steps", "save_checkpoints_steps", "save_checkpoints_secs",
                         "keep_checkpoint_max", "keep_checkpoint_every_n_hours", "log_step_count_steps", "protocol",
                         "experimental_max_worker_delay_secs", "session_creation_timeout_secs", "device_filters")


def run_config_properties(config) -> dict:
    """The recorded properties of a RunConfig, as JSON values."""
    out = {}
    for name in RUN_CONFIG_PROPERTIES:
        if name == "device_filters":
            sc = config.session_config
            out[name] = None if sc is None else list(sc.device_filters)
        elif name == "cluster_spec":
            out[name] = config.cluster_spec.as_dict()
        else:
            out[name] = getattr(config, name)
    return out


def clean_message(text: str) -> str:
    """An error message without object addresses (`<function f at 0x7f...>` -> `<function f>`)."""
    return re.sub(r" at 0x[0-9a-f]+>", ">", text)


# -- a linear model_fn ----------------------------------------------------------------------------
_R = np.random.RandomState(7)
X = _R.randn(16, 2).round(3).astype(np.float32)
Y = (X @ np.array([[1.5], [-2.0]], np.float32) + 0.3 + 0.1 * _R.randn(16, 1)).round(3).astype(np.float32)
W0 = [[0.5], [-0.3]]
B0 = [0.1]


def linear_model_fn(tf, step_losses=None):
    """model_fn(features, labels, mode, params): y = x w + b with w, b starting at W0, B0; mean
    squared error; GradientDescent(params["learning_rate"]); eval metrics mae and rmse. Each
    training step's loss is appended to `step_losses` (through a training hook)."""

    class RecordLoss(tf.train.SessionRunHook):
        def __init__(self, loss):
            self._loss = loss

        def before_run(self, run_context):
            return tf.train.SessionRunArgs(self._loss)

        def after_run(self, run_context, run_values):
            step_losses.append(float(run_values.results))

    def model_fn(features, labels, mode, params):
        w = tf.get_variable("w", initializer=tf.constant(W0))
        b = tf.get_variable("b", initializer=tf.constant(B0))
        x = features["x"] if isinstance(features, dict) else features
        pred = tf.matmul(x, w) + b
        predictions = {"y": pred, "double": pred * 2.0}
        if mode == tf.estimator.ModeKeys.PREDICT:
            return tf.estimator.EstimatorSpec(mode, predictions=predictions)
        loss = tf.losses.mean_squared_error(labels, pred)
        train_op = tf.train.GradientDescentOptimizer(params["learning_rate"]).minimize(
            loss, global_step=tf.train.get_global_step())
        metrics = {"mae": tf.metrics.mean_absolute_error(labels, pred),
                   "rmse": tf.metrics.root_mean_squared_error(labels, pred)}
        hooks = [RecordLoss(loss)] if step_losses is not None else []
        return tf.estimator.EstimatorSpec(mode, predictions=predictions, loss=loss, train_op=train_op,
                                          eval_metric_ops=metrics, training_hooks=hooks)
    return model_fn


def train_input_fn(tf):
    return lambda: tf.data.Dataset.from_tensor_slices(({"x": X}, Y)).batch(4).repeat()


def eval_input_fn(tf):
    return lambda: tf.data.Dataset.from_tensor_slices(({"x": X}, Y)).batch(4)


def predict_input_fn(tf):
    return lambda: tf.data.Dataset.from_tensor_slices({"x": X}).batch(5)


def tensor_input_fn(tf):
    """(features, labels) as tensors of a one-shot iterator, features a plain tensor."""
    def input_fn(params, mode):
        assert params["learning_rate"] == 0.1 and mode == tf.estimator.ModeKeys.TRAIN
        features, labels = tf.data.make_one_shot_iterator(
            tf.data.Dataset.from_tensor_slices((X, Y)).batch(8).repeat()).get_next()
        return features, labels
    return input_fn


# -- numpy_input_fn -------------------------------------------------------------------------------
NP_X = {"b": np.arange(14, dtype=np.float32).reshape(7, 2), "a": np.arange(7, dtype=np.int64)}
NP_Y = np.arange(7, dtype=np.float64) * 10


def numpy_input_cases(tf):
    """name -> numpy_input_fn, read until its input ends (or for 4 batches when it repeats)."""
    fn = tf.estimator.inputs.numpy_input_fn
    return {
        "dict_x_array_y_2_epochs": fn(NP_X, NP_Y, batch_size=3, num_epochs=2, shuffle=False),
        "dict_y": fn({"a": NP_X["a"]}, {"t1": NP_Y, "t0": NP_Y + 1}, batch_size=4, num_epochs=1, shuffle=False),
        "array_x_no_y_forever": fn(NP_X["b"], None, batch_size=3, num_epochs=None, shuffle=False),
    }


def numpy_input_errors(tf):
    fn = tf.estimator.inputs.numpy_input_fn
    return {
        "shuffle_none": lambda: fn(NP_X, NP_Y),
        "empty_dict": lambda: fn({}, NP_Y, shuffle=False)(),
        "list_x": lambda: fn([1, 2], NP_Y, shuffle=False)(),
        "length_mismatch": lambda: fn(NP_X, NP_Y[:5], shuffle=False)(),
        "duplicate_keys": lambda: fn(NP_X, {"a": NP_Y}, shuffle=False)(),
        "empty_y_dict": lambda: fn(NP_X, {}, shuffle=False)(),
    }


# -- exports --------------------------------------------------------------------------------------
def raw_receiver_fn(tf):
    """Serving inputs: the feature x itself, a float32 [None, 2] placeholder."""
    return tf.estimator.export.build_raw_serving_input_receiver_fn(
        {"x": tf.placeholder(tf.float32, [None, 2], name="x")})


def raw_bytes_receiver_fn(tf):
    """Serving inputs: serialized examples as raw float32 bytes, two per row (a string input, as TF
    Serving's classify and regress signatures take)."""
    def receiver_fn():
        examples = tf.placeholder(tf.string, [None], name="examples")
        features = {"x": tf.reshape(tf.io.decode_raw(examples, tf.float32), [-1, 2])}
        return tf.estimator.export.ServingInputReceiver(features, {"examples": examples})
    return receiver_fn


def serving_model_fn(tf):
    """linear_model_fn with regress (the default), classify and predict export outputs."""
    linear = linear_model_fn(tf)

    def model_fn(features, labels, mode, params):
        spec = linear(features, labels, mode, params)
        if mode != tf.estimator.ModeKeys.PREDICT:
            return spec
        y = tf.squeeze(spec.predictions["y"], 1)
        classes = tf.where(y > 0, tf.fill(tf.shape(y), "positive"), tf.fill(tf.shape(y), "negative"))
        outputs = {"serving_default": tf.estimator.export.RegressionOutput(y),
                   "classify": tf.estimator.export.ClassificationOutput(scores=tf.expand_dims(tf.abs(y), 1),
                                                                      classes=tf.expand_dims(classes, 1)),
                   "predict": tf.estimator.export.PredictOutput({"y": y})}
        return tf.estimator.EstimatorSpec(mode, predictions=spec.predictions, export_outputs=outputs)
    return model_fn


def export_all(tf, model_dir: str, export_base: str) -> dict:
    """Trains the linear model 10 steps in model_dir and exports it three times (raw receiver with
    the default predict signature; raw-bytes and tf.Example-parsing receivers with
    serving_model_fn's signatures): {"raw", "serving", "parsing": export dir}."""
    est = tf.estimator.Estimator(linear_model_fn(tf), model_dir=model_dir, params={"learning_rate": 0.1})
    est.train(train_input_fn(tf), steps=10)
    raw = est.export_saved_model(export_base + "/raw", raw_receiver_fn(tf))
    serving = tf.estimator.Estimator(serving_model_fn(tf), model_dir=model_dir, params={"learning_rate": 0.1})
    serving_dir = serving.export_saved_model(export_base + "/serving", raw_bytes_receiver_fn(tf))
    parsing_dir = serving.export_saved_model(export_base + "/parsing", parsing_receiver_fn(tf))
    return {"raw": raw.decode(), "serving": serving_dir.decode(), "parsing": parsing_dir.decode()}


def all_modes_model_fn(tf):
    """linear_model_fn with one more metric whose update is an Operation (a group), which a
    TRAIN/EVAL signature holds as an empty constant run after it."""
    linear = linear_model_fn(tf)

    def model_fn(features, labels, mode, params):
        spec = linear(features, labels, mode, params)
        if mode == tf.estimator.ModeKeys.PREDICT:
            return spec
        value, update = tf.metrics.mean(spec.loss)
        metrics = dict(spec.eval_metric_ops, mean_loss=(value, tf.group(update)))
        return spec._replace(eval_metric_ops=metrics)
    return model_fn


def export_all_modes(tf, model_dir: str, export_base: str) -> str:
    """Trains all_modes_model_fn 10 steps in model_dir and exports its TRAIN, EVAL and PREDICT
    graphs as one SavedModel (features {"x": [None, 2]}, a [None, 1] label): the export dir."""
    est = tf.estimator.Estimator(all_modes_model_fn(tf), model_dir=model_dir, params={"learning_rate": 0.1})
    est.train(train_input_fn(tf), steps=10)
    supervised = tf.estimator.experimental.build_raw_supervised_input_receiver_fn(
        {"x": tf.placeholder(tf.float32, [None, 2], name="x")}, tf.placeholder(tf.float32, [None, 1], name="y"))
    receivers = {tf.estimator.ModeKeys.TRAIN: supervised, tf.estimator.ModeKeys.EVAL: supervised,
                 tf.estimator.ModeKeys.PREDICT: raw_receiver_fn(tf)}
    return est.experimental_export_all_saved_models(export_base, receivers).decode()


def run_all_modes_export(tf, session, meta_graph) -> dict:
    """What a loaded meta graph of export_all_modes computes on X, Y: "serve": its predictions;
    "eval": the metrics' values after one update (and loss, predictions); "train": loss and
    predictions, then the loss after one run of the saved train op."""
    signature = meta_graph.signature_def[sorted(meta_graph.signature_def)[0]]
    graph = session.graph
    feeds = {graph.get_tensor_by_name(signature.inputs[k].name): {"x": X, "label": Y}[k] for k in signature.inputs}

    def run(keys):
        return {k: session.run(graph.get_tensor_by_name(signature.outputs[k].name), feeds) for k in sorted(keys)}
    if "train" in meta_graph.signature_def:
        out = run(k for k in signature.outputs if not k.startswith("metrics/"))
        session.run(graph.get_collection("saved_model_train_op"), feeds)
        out["loss_after_train_op"] = run(["loss"])["loss"]
        return out
    run(k for k in signature.outputs if k.endswith("/update_op"))
    return run(k for k in signature.outputs if not k.endswith("/update_op"))


def parsing_receiver_fn(tf):
    """Serving inputs: serialized tf.Examples with a float feature x of 2 values."""
    return tf.estimator.export.build_parsing_serving_input_receiver_fn({"x": tf.FixedLenFeature([2], tf.float32)})


def serving_feeds(tf) -> dict:
    """{export name: {signature key: {input key: value}}} for export_all's exports."""
    raw_bytes = np.array([row.tobytes() for row in X], dtype=object)
    examples = np.array([tf.train.Example(features=tf.train.Features(feature={
        "x": tf.train.Feature(float_list=tf.train.FloatList(value=row))})).SerializeToString() for row in X],
        dtype=object)
    signatures = (("serving_default", "inputs"), ("classify", "inputs"), ("predict", "examples"))
    return {"raw": {"serving_default": {"x": X}},
            "serving": {key: {name: raw_bytes} for key, name in signatures},
            "parsing": {key: {name: examples} for key, name in signatures}}


def signature_structure(meta_graph) -> dict:
    """{signature key: [method name, {input key: [dtype enum, dims]}, {output key: [dtype enum, dims]}]}."""
    def infos(m):
        return {k: [int(v.dtype), [int(d.size) for d in v.tensor_shape.dim]] for k, v in sorted(m.items())}
    return {k: [s.method_name, infos(s.inputs), infos(s.outputs)] for k, s in sorted(meta_graph.signature_def.items())}


# -- classifier/regressor_parse_example_spec --------------------------------------------------------
def parse_spec_cases(tf) -> dict:
    """name -> a call of tf.estimator.classifier_/regressor_parse_example_spec (errors included)."""
    fc, est = tf.feature_column, tf.estimator
    columns = [fc.numeric_column("a", shape=(2,)), fc.categorical_column_with_identity("c", 4),
               fc.bucketized_column(fc.numeric_column("b"), [0., 1.])]
    return {
        "classifier": lambda: est.classifier_parse_example_spec(columns, "y"),
        "classifier_string_weight": lambda: est.classifier_parse_example_spec(
            columns, "y", label_dtype=tf.string, label_default="no", weight_column="w"),
        "regressor_column_weight": lambda: est.regressor_parse_example_spec(
            columns, "y", label_dimension=3, label_default=[0., 0., 0.],
            weight_column=fc.numeric_column("w", dtype=tf.float64)),
        "label_is_feature": lambda: est.regressor_parse_example_spec(columns, "a"),
        "weight_is_feature": lambda: est.classifier_parse_example_spec(columns, "y", weight_column="b"),
        "weight_not_numeric": lambda: est.classifier_parse_example_spec(columns, "y", weight_column=columns[1]),
    }


def describe_parse_spec(spec: dict) -> dict:
    """{key: [feature class name, shape or None, dtype name, default]} of a parse_example spec."""
    def default(v):
        return None if v is None else np.asarray(v).tolist()
    return {k: [type(v).__name__, list(v.shape) if hasattr(v, "shape") else None, v.dtype.name,
                default(getattr(v, "default_value", None))] for k, v in sorted(spec.items())}


# -- tf.estimator.*Head ---------------------------------------------------------------------------
_H = np.random.RandomState(11)
HEAD_WEIGHTS = np.array([[1.], [0.5], [2.], [1.], [0.], [1.5]], np.float32)
HEAD_DATA = {
    "binary": (_H.randn(6, 1).round(2), np.array([[1], [0], [1], [1], [0], [0]])),
    "binary_vocab": (_H.randn(6, 1).round(2), np.array([[b"pos"], [b"neg"], [b"pos"], [b"neg"], [b"neg"], [b"pos"]])),
    "multi_class": (_H.randn(6, 3).round(2), np.array([[0], [2], [1], [1], [0], [2]])),
    "multi_class_vocab": (_H.randn(6, 3).round(2), np.array([[b"b"], [b"c"], [b"a"], [b"b"], [b"a"], [b"c"]])),
    "regression": (_H.randn(6, 2).round(2), _H.randn(6, 2).round(2)),
    "logistic": (_H.randn(6, 1).round(2), np.array([[0.2], [0.9], [0.5], [0.], [1.], [0.7]])),
    "poisson": (_H.randn(6, 1).round(2), np.array([[1.], [0.], [3.], [2.], [1.], [5.]])),
    "multi_label": (_H.randn(6, 3).round(2), np.array([[1, 0, 1], [0, 0, 1], [1, 1, 0], [0, 1, 0], [1, 0, 0],
                                                      [0, 1, 1]])),
    "multi_head": ({"a": _H.randn(6, 3).round(2), "b": _H.randn(6, 1).round(2)},
                   {"a": np.array([[0], [2], [1], [1], [0], [2]]), "b": _H.randn(6, 1).round(2)}),
}


def head_cases(tf) -> dict:
    """name -> the tf.estimator head of HEAD_DATA[name] (weights in feature "w" where used)."""
    est = tf.estimator
    return {
        "binary": lambda: est.BinaryClassHead(weight_column="w", thresholds=[0.3, 0.7]),
        "binary_vocab": lambda: est.BinaryClassHead(label_vocabulary=["neg", "pos"],
                                                    loss_reduction="sum"),  # tf.keras.losses.Reduction.SUM
        "multi_class": lambda: est.MultiClassHead(3, weight_column="w"),
        "multi_class_vocab": lambda: est.MultiClassHead(3, label_vocabulary=["a", "b", "c"], name="letters"),
        "regression": lambda: est.RegressionHead(label_dimension=2, weight_column="w"),
        "logistic": lambda: est.LogisticRegressionHead(weight_column="w"),
        "poisson": lambda: est.PoissonRegressionHead(),
        "multi_label": lambda: est.MultiLabelHead(3, weight_column="w", thresholds=[0.4]),
        "multi_head": lambda: est.MultiHead([est.MultiClassHead(3, name="a"), est.RegressionHead(name="b")],
                                            head_weights=[1., 2.]),
    }


def _head_features(logits) -> dict:
    logits = logits if isinstance(logits, dict) else {"": logits}
    return dict({f"logits{k}": v.astype(np.float32) for k, v in logits.items()}, w=HEAD_WEIGHTS)


def head_input_fn(tf, name: str, with_labels: bool = True):
    """HEAD_DATA[name] as one batch: the logits as features "logits" ("logitsNAME" for MultiHead)."""
    logits, labels = HEAD_DATA[name]
    labels = {k: v.astype(np.float32) if v.dtype.kind == "f" else v for k, v in labels.items()} \
        if isinstance(labels, dict) else (labels.astype(np.float32) if labels.dtype.kind == "f" else labels)
    data = (_head_features(logits), labels) if with_labels else _head_features(logits)
    return lambda: tf.data.Dataset.from_tensors(data)


def head_model_fn(tf, name: str):
    """model_fn whose logits are the "logits" features; it trains by a train_op_fn that steps the
    global step (the logits have no variables)."""
    def model_fn(features, labels, mode):
        head = head_cases(tf)[name]()
        keys = [k[len("logits"):] for k in features if k.startswith("logits")]
        logits = features["logits"] if keys == [""] else {k: features["logits" + k] for k in keys}
        return head.create_estimator_spec(
            features, mode, logits, labels=labels,
            train_op_fn=lambda loss: tf.assign_add(tf.train.get_global_step(), 1))
    return model_fn


def run_head_case(tf, name: str, model_dir: str) -> dict:
    """{"evaluate": metrics after one training step, "predictions": {key: stacked values}} of
    head_model_fn over HEAD_DATA[name]."""
    est = tf.estimator.Estimator(head_model_fn(tf, name), model_dir=model_dir)
    est.train(head_input_fn(tf, name), steps=1)
    metrics = {k: float(v) for k, v in est.evaluate(head_input_fn(tf, name)).items() if k != "global_step"}
    rows = list(est.predict(head_input_fn(tf, name, with_labels=False)))
    keys = sorted(rows[0], key=str)
    predictions = {"/".join(k) if isinstance(k, tuple) else k: np.stack([r[k] for r in rows]) for k in keys}
    return {"evaluate": metrics, "predictions": predictions}


HEAD_X = _H.randn(8, 2).round(2).astype(np.float32)
HEAD_MULTI_HOT = np.array([[1, 0, 1], [0, 0, 1], [1, 1, 0], [0, 1, 0], [1, 0, 0], [0, 1, 1], [1, 1, 1], [0, 0, 0]])
HEAD_CLASS = np.array([[0], [2], [1], [1], [0], [2], [1], [0]])


def head_estimator_cases(tf, estimators=None, sgd=None) -> dict:
    """name -> (Estimator taking a head, its labels): LinearEstimator (zero initial weights,
    gradient descent: TF's numbers) and DNN / DNNLinearCombined Estimators (random initial weights:
    TF's metric keys). `estimators` holds the Estimator classes (default tf.estimator) and
    sgd(learning_rate) makes the optimizer (default tf.train.GradientDescentOptimizer): TF 2.15
    records with its v2 Estimators and a Keras SGD, since its v1 Estimators hand the head a
    tf.train optimizer, which TF's Head classes refuse."""
    est, fc = tf.estimator, tf.feature_column
    estimators = estimators or est
    sgd = sgd or tf.train.GradientDescentOptimizer
    x = [fc.numeric_column("x", shape=(2,))]
    multi_head = lambda: est.MultiHead([est.MultiLabelHead(3, name="tags"), est.MultiClassHead(3, name="kind")])  # noqa
    return {
        "linear_multi_label": (lambda d: estimators.LinearEstimator(
            est.MultiLabelHead(3, thresholds=[0.5]), x, model_dir=d, optimizer=sgd(0.5)), HEAD_MULTI_HOT),
        "linear_multi_head": (lambda d: estimators.LinearEstimator(multi_head(), x, model_dir=d, optimizer=sgd(0.5)),
                              {"tags": HEAD_MULTI_HOT, "kind": HEAD_CLASS}),
        "dnn_binary": (lambda d: estimators.DNNEstimator(est.BinaryClassHead(), [4], x, model_dir=d), HEAD_CLASS % 2),
        "combined_regression": (lambda d: estimators.DNNLinearCombinedEstimator(
            est.RegressionHead(label_dimension=3), model_dir=d, linear_feature_columns=x, dnn_feature_columns=x,
            dnn_hidden_units=[3]), HEAD_MULTI_HOT.astype(np.float32)),
    }


def run_head_estimator_case(tf, name: str, model_dir: str, **kwargs) -> dict:
    """{"evaluate": metrics after training on the one batch, "variables": {linear weights: value}}."""
    make, labels = head_estimator_cases(tf, **kwargs)[name]
    estimator = make(model_dir)

    def input_fn():
        return tf.data.Dataset.from_tensors(({"x": HEAD_X}, labels))
    estimator.train(input_fn)
    metrics = {k: float(v) for k, v in estimator.evaluate(input_fn).items()}
    variables = {n: estimator.get_variable_value(n).tolist() for n in estimator.get_variable_names()
                 if n.startswith("linear/linear_model/") and "Ftrl" not in n}
    return {"evaluate": metrics, "variables": variables}
