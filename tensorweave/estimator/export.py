"""tf.estimator.export: what Estimator.export_saved_model needs to write a SavedModel a server
feeds: the serving input receivers (the placeholders the server feeds, and the features the
model_fn sees), the export outputs (predict, classify, regress signatures), and the helpers that
turn them into SignatureDefs and name the timestamped export directory."""
from __future__ import annotations

import collections
import logging
import os
import time

from tensorweave import _api
from tensorweave.framework import dtypes
from tensorweave.framework.api import control_dependencies
from tensorweave.framework.graph import Operation, Tensor
from tensorweave.framework.shapes import TensorShape
from tensorweave.framework.sparse_tensor import SparseTensor
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.core import constant, placeholder
from tensorweave.ops.io.parsing import parse_example
from tensorweave.saved_model import signature_constants, signature_def_utils
from tensorweave.saved_model.tag_constants import SERVING, TRAINING
from tensorweave.saved_model.utils import build_tensor_info

__getattr__, __dir__ = _api.lazy_attributes(__name__)
_log = logging.getLogger("tensorweave")
SINGLE_FEATURE_DEFAULT_NAME = "feature"
SINGLE_RECEIVER_DEFAULT_NAME = "input"
SINGLE_LABEL_DEFAULT_NAME = "label"
_DEFAULT_NAMES = {"feature": SINGLE_FEATURE_DEFAULT_NAME, "receiver_tensor": SINGLE_RECEIVER_DEFAULT_NAME,
                  "receiver_tensors_alternative": SINGLE_RECEIVER_DEFAULT_NAME, "label": SINGLE_LABEL_DEFAULT_NAME}
# The meta graph tags and signature keys of each mode's export (TF's model_utils EXPORT_TAG_MAP and
# SIGNATURE_KEY_MAP; "eval" is no public tag constant in TF 1.15).
EXPORT_TAG_MAP = {"train": [TRAINING], "eval": ["eval"], "infer": [SERVING]}
SIGNATURE_KEY_MAP = {"train": "train", "eval": "eval", "infer": signature_constants.DEFAULT_SERVING_SIGNATURE_DEF_KEY}
TRAIN_OP_KEY = "saved_model_train_op"   # the collection of a TRAIN export's train op (TF's builder's)
SUPERVISED_TRAIN_METHOD_NAME = "tensorflow/supervised/training"
SUPERVISED_EVAL_METHOD_NAME = "tensorflow/supervised/eval"


def _check_tensor(tensor, name, error_label: str = "feature") -> None:
    if not isinstance(tensor, (Tensor, SparseTensor)):
        fmt_name = f" {name}" if name else ""
        raise ValueError(f"{error_label}{fmt_name} must be a Tensor, SparseTensor, or RaggedTensor.")


def _wrap_and_check_input_tensors(tensors, field_name: str, allow_int_keys: bool = False) -> dict:
    if tensors is None:
        raise ValueError(f"{field_name}s must be defined.")
    if not isinstance(tensors, dict):
        tensors = {_DEFAULT_NAMES[field_name]: tensors}
    for name, tensor in tensors.items():
        if not isinstance(name, str):
            if not allow_int_keys:
                raise ValueError(f"{field_name} keys must be strings: {name}.")
            if not isinstance(name, int):
                raise ValueError(f"{field_name} keys must be strings or ints: {name}.")
        _check_tensor(tensor, name, error_label=field_name)
    return tensors


@tf_export("estimator.export.ServingInputReceiver")
class ServingInputReceiver(collections.namedtuple("ServingInputReceiver", [
        "features", "receiver_tensors", "receiver_tensors_alternatives"])):
    """tf.estimator.export.ServingInputReceiver(features, receiver_tensors,
    receiver_tensors_alternatives=None): what a serving_input_receiver_fn returns: the features
    the model_fn receives (a tensor or a dict) and the tensors a server feeds (a tensor or a
    dict; a lone tensor is named "input")."""

    def __new__(cls, features, receiver_tensors, receiver_tensors_alternatives=None):
        features = _wrap_and_check_input_tensors(features, "feature", allow_int_keys=True)
        receiver_tensors = _wrap_and_check_input_tensors(receiver_tensors, "receiver_tensor")
        if receiver_tensors_alternatives is not None:
            if not isinstance(receiver_tensors_alternatives, dict):
                raise ValueError(f"receiver_tensors_alternatives must be a dict: {receiver_tensors_alternatives}.")
            for name, alternative in receiver_tensors_alternatives.items():
                receiver_tensors_alternatives[name] = _wrap_and_check_input_tensors(
                    alternative, "receiver_tensors_alternative")
        return super().__new__(cls, features=features, receiver_tensors=receiver_tensors,
                               receiver_tensors_alternatives=receiver_tensors_alternatives)


@tf_export("estimator.export.TensorServingInputReceiver")
class TensorServingInputReceiver(collections.namedtuple("TensorServingInputReceiver", [
        "features", "receiver_tensors", "receiver_tensors_alternatives"])):
    """tf.estimator.export.TensorServingInputReceiver(features, receiver_tensors,
    receiver_tensors_alternatives=None): a ServingInputReceiver whose features are one tensor,
    handed to the model_fn as that tensor (not a dict)."""

    def __new__(cls, features, receiver_tensors, receiver_tensors_alternatives=None):
        if features is None:
            raise ValueError("features must be defined.")
        _check_tensor(features, None)
        receiver = ServingInputReceiver(features, receiver_tensors, receiver_tensors_alternatives)
        return super().__new__(cls, features=receiver.features[SINGLE_FEATURE_DEFAULT_NAME],
                               receiver_tensors=receiver.receiver_tensors,
                               receiver_tensors_alternatives=receiver.receiver_tensors_alternatives)


class SupervisedInputReceiver(collections.namedtuple("SupervisedInputReceiver", [
        "features", "labels", "receiver_tensors"])):
    """What a TRAIN or EVAL input_receiver_fn of experimental_export_all_saved_models returns: the
    features and labels the model_fn receives (tensors or dicts, passed as given) and the tensors
    the SavedModel's user feeds."""

    def __new__(cls, features, labels, receiver_tensors):
        _wrap_and_check_input_tensors(features, "feature", allow_int_keys=True)
        _wrap_and_check_input_tensors(labels, "label", allow_int_keys=True)
        receiver_tensors = _wrap_and_check_input_tensors(receiver_tensors, "receiver_tensor")
        return super().__new__(cls, features=features, labels=labels, receiver_tensors=receiver_tensors)


@tf_export("estimator.export.build_parsing_serving_input_receiver_fn")
def build_parsing_serving_input_receiver_fn(feature_spec, default_batch_size=None):
    """tf.estimator.export.build_parsing_serving_input_receiver_fn(feature_spec,
    default_batch_size=None): a serving_input_receiver_fn feeding serialized tf.Examples
    ("examples", the string placeholder input_example_tensor) parsed by feature_spec."""
    def serving_input_receiver_fn():
        serialized = placeholder(dtypes.string, shape=[default_batch_size], name="input_example_tensor")
        return ServingInputReceiver(parse_example(serialized, feature_spec), {"examples": serialized})
    return serving_input_receiver_fn


def _placeholder_from_tensor(t, default_batch_size=None):
    shape = TensorShape([default_batch_size]).concatenate(t.get_shape()[1:])
    return placeholder(dtype=t.dtype, shape=shape, name=getattr(getattr(t, "op", None), "name", None))


@tf_export("estimator.export.build_raw_serving_input_receiver_fn")
def build_raw_serving_input_receiver_fn(features, default_batch_size=None):
    """tf.estimator.export.build_raw_serving_input_receiver_fn(features, default_batch_size=None):
    a serving_input_receiver_fn feeding the features themselves: one placeholder per tensor of
    `features` (a dict), with its dtype, its shape past the batch dimension and its op's name."""
    def serving_input_receiver_fn():
        tensors = {name: _placeholder_from_tensor(t, default_batch_size) for name, t in features.items()}
        return ServingInputReceiver(tensors, tensors)
    return serving_input_receiver_fn


@tf_export("estimator.experimental.build_raw_supervised_input_receiver_fn")
def build_raw_supervised_input_receiver_fn(features, labels, default_batch_size=None):
    """tf.estimator.experimental.build_raw_supervised_input_receiver_fn(features, labels,
    default_batch_size=None): an input_receiver_fn (for TRAIN or EVAL exports) of placeholders
    shaped as `features` and `labels` (tensors or dicts of tensors) past the batch dimension, fed
    as the receiver tensors (a lone feature as "input", a lone label as "label"; the keys must
    differ)."""
    feature_keys = features.keys() if isinstance(features, dict) else [SINGLE_RECEIVER_DEFAULT_NAME]
    label_keys = labels.keys() if isinstance(labels, dict) else [SINGLE_LABEL_DEFAULT_NAME]
    overlap = set(feature_keys) & set(label_keys)
    if overlap:
        raise ValueError(f"Features and labels must have distinct keys. Found overlapping keys: {overlap}")

    def placeholders(tensors, single_name):
        if isinstance(tensors, dict):
            tensors = {name: _placeholder_from_tensor(t, default_batch_size) for name, t in tensors.items()}
            return tensors, tensors
        tensor = _placeholder_from_tensor(tensors, default_batch_size)
        return tensor, {single_name: tensor}

    def supervised_input_receiver_fn():
        features_in, receiver_features = placeholders(features, SINGLE_RECEIVER_DEFAULT_NAME)
        labels_in, receiver_labels = placeholders(labels, SINGLE_LABEL_DEFAULT_NAME)
        return SupervisedInputReceiver(features_in, labels_in, {**receiver_features, **receiver_labels})
    return supervised_input_receiver_fn


# -- export outputs -------------------------------------------------------------------------------
@tf_export("estimator.export.ExportOutput")
class ExportOutput:
    """tf.estimator.export.ExportOutput: one output signature of an export (as_signature_def)."""
    _SEPARATOR_CHAR = "/"

    def as_signature_def(self, receiver_tensors):
        raise NotImplementedError(f"{type(self).__name__} defines no signature.")

    def _check_output_key(self, key, error_label: str) -> str:
        if isinstance(key, tuple):
            key = self._SEPARATOR_CHAR.join(key)
        if not isinstance(key, str):
            raise ValueError(f"{error_label} output key must be a string; got {key}.")
        return key

    def _wrap_and_check_outputs(self, outputs, single_output_default_name: str, error_label=None) -> dict:
        if not isinstance(outputs, dict):
            outputs = {single_output_default_name: outputs}
        checked = {}
        for key, value in outputs.items():
            error_name = error_label or single_output_default_name
            key = self._check_output_key(key, error_name)
            if not isinstance(value, Tensor):
                raise ValueError(f"{error_name} output value must be a Tensor; got {value}.")
            checked[key] = value
        return checked


def _single_string_input(kind: str, receiver_tensors: dict) -> Tensor:
    message = (f"{kind} signatures can only accept a single tensor input of type tf.string. Please check to make "
               "sure that you have structured the serving_input_receiver_fn so that it creates a single string "
               "placeholder. If your model function expects multiple inputs, then use `tf.io.parse_example()` to "
               f"parse the string into multiple tensors.\n Received: {receiver_tensors}")
    if len(receiver_tensors) != 1:
        raise ValueError(message)
    (_, examples), = receiver_tensors.items()
    if examples.dtype != dtypes.string:
        raise ValueError(message)
    return examples


@tf_export("estimator.export.ClassificationOutput")
class ClassificationOutput(ExportOutput):
    """tf.estimator.export.ClassificationOutput(scores=None, classes=None): TF Serving's classify
    signature (float scores and/or string classes, from serialized examples)."""

    def __init__(self, scores=None, classes=None):
        if scores is not None and not (isinstance(scores, Tensor) and scores.dtype.is_floating):
            raise ValueError(f"Classification scores must be a float32 Tensor; got {scores}")
        if classes is not None and not (isinstance(classes, Tensor) and classes.dtype == dtypes.string):
            raise ValueError(f"Classification classes must be a string Tensor; got {classes}")
        if scores is None and classes is None:
            raise ValueError("Cannot create a ClassificationOutput with empty arguments. At least one of `scores` and "
                             "`classes` must be defined.")
        self._scores, self._classes = scores, classes

    scores = property(lambda self: self._scores)
    classes = property(lambda self: self._classes)

    def as_signature_def(self, receiver_tensors):
        examples = _single_string_input("Classification", receiver_tensors)
        return signature_def_utils.classification_signature_def(examples, self.classes, self.scores)


@tf_export("estimator.export.RegressionOutput")
class RegressionOutput(ExportOutput):
    """tf.estimator.export.RegressionOutput(value): TF Serving's regress signature (a float value
    from serialized examples)."""

    def __init__(self, value):
        if not (isinstance(value, Tensor) and value.dtype.is_floating):
            raise ValueError(f"Regression output value must be a float32 Tensor; got {value}")
        self._value = value

    value = property(lambda self: self._value)

    def as_signature_def(self, receiver_tensors):
        examples = _single_string_input("Regression", receiver_tensors)
        return signature_def_utils.regression_signature_def(examples, self.value)


@tf_export("estimator.export.PredictOutput")
class PredictOutput(ExportOutput):
    """tf.estimator.export.PredictOutput(outputs): TF Serving's predict signature over the
    receiver tensors and `outputs` (a tensor, named "output", or a dict of tensors)."""

    def __init__(self, outputs):
        self._outputs = self._wrap_and_check_outputs(outputs, "output", error_label="Prediction")

    outputs = property(lambda self: self._outputs)

    def as_signature_def(self, receiver_tensors):
        return signature_def_utils.predict_signature_def(receiver_tensors, self.outputs)


class _SupervisedOutput(ExportOutput):
    """The outputs of a TRAIN or EVAL meta graph: the loss ("loss", or "loss/KEY"), the predictions
    ("predictions/KEY") and each metric's value and update ("metrics/NAME/value",
    "metrics/NAME/update_op"; an update that is an Operation becomes an empty constant run after
    it, since signatures hold tensors only)."""

    _method_name = None

    def __init__(self, loss=None, predictions=None, metrics=None):
        self._loss = self._prefixed(self._wrap_and_check_outputs(loss, "loss"), "loss") if loss is not None else None
        self._predictions = None if predictions is None else self._prefixed(
            self._wrap_and_check_outputs(predictions, "predictions"), "predictions")
        self._metrics = None if metrics is None else self._wrap_and_check_metrics(metrics)

    loss = property(lambda self: self._loss)
    predictions = property(lambda self: self._predictions)
    metrics = property(lambda self: self._metrics)

    def _prefix_key(self, key: str, name: str) -> str:
        return key if key.find(name) == 0 else f"{name}{self._SEPARATOR_CHAR}{key}"

    def _prefixed(self, outputs: dict, name: str) -> dict:
        return {self._prefix_key(key, name): value for key, value in outputs.items()}

    def _wrap_and_check_metrics(self, metrics) -> dict:
        if not isinstance(metrics, dict):
            metrics = {"metrics": metrics}
        outputs = {}
        for key, (value, update_op) in metrics.items():
            key = self._prefix_key(self._check_output_key(key, "metrics"), "metrics")
            if not isinstance(value, Tensor):
                raise ValueError(f"{key} output value must be a Tensor; got {value}.")
            if not isinstance(update_op, (Tensor, Operation)):
                raise ValueError(f"{key} update_op must be a Tensor or Operation; got {update_op}.")
            if isinstance(update_op, Operation):
                with control_dependencies([update_op]):
                    update_op = constant([], name="metric_op_wrapper")
            outputs[f"{key}{self._SEPARATOR_CHAR}value"] = value
            outputs[f"{key}{self._SEPARATOR_CHAR}update_op"] = update_op
        return outputs

    def as_signature_def(self, receiver_tensors):
        if not receiver_tensors:
            raise ValueError(f"{self._method_name} `inputs` cannot be None or empty.")
        outputs = {}
        for output_set in (self.loss, self.predictions, self.metrics):
            outputs.update({k: build_tensor_info(t) for k, t in (output_set or {}).items()})
        return signature_def_utils.build_signature_def({k: build_tensor_info(t) for k, t in receiver_tensors.items()},
                                                       outputs, self._method_name)


class TrainOutput(_SupervisedOutput):
    """The "train" signature of a TRAIN export (method tensorflow/supervised/training)."""
    _method_name = SUPERVISED_TRAIN_METHOD_NAME


@tf_export("estimator.export.EvalOutput")
class EvalOutput(_SupervisedOutput):
    """tf.estimator.export.EvalOutput(loss=None, predictions=None, metrics=None): the "eval"
    signature of an EVAL export (method tensorflow/supervised/eval): outputs "loss",
    "predictions/KEY" and "metrics/NAME/value" and "metrics/NAME/update_op" of each
    (value, update_op) metric."""
    _method_name = SUPERVISED_EVAL_METHOD_NAME


def export_outputs_for_mode(mode, serving_export_outputs=None, predictions=None, loss=None, metrics=None) -> dict:
    """The export outputs of a mode's meta graph: PREDICT's serving outputs (get_export_outputs),
    TRAIN's TrainOutput under "train", EVAL's EvalOutput under "eval"."""
    if mode not in SIGNATURE_KEY_MAP:
        raise ValueError(f"Export output type not found for `mode`: {mode}. Expected one of: "
                         f"{list(SIGNATURE_KEY_MAP)}.")
    if mode == "infer":
        return get_export_outputs(serving_export_outputs, predictions)
    output_type = TrainOutput if mode == "train" else EvalOutput
    return {SIGNATURE_KEY_MAP[mode]: output_type(loss=loss, predictions=predictions, metrics=metrics)}


def get_export_outputs(export_outputs, predictions) -> dict:
    """A PREDICT EstimatorSpec's export_outputs: the given ones (with a serving default), or a
    PredictOutput of its predictions under "serving_default"."""
    default_key = signature_constants.DEFAULT_SERVING_SIGNATURE_DEF_KEY
    if export_outputs is None:
        return {default_key: PredictOutput(predictions)}
    if not isinstance(export_outputs, dict):
        raise TypeError(f"`export_outputs` must be dict, received: {export_outputs}.")
    for v in export_outputs.values():
        if not isinstance(v, ExportOutput):
            raise TypeError(f"Values in `export_outputs` must be ExportOutput objects, received: {export_outputs}.")
    export_outputs = dict(export_outputs)
    if len(export_outputs) == 1:
        (key, value), = export_outputs.items()
        export_outputs.setdefault(default_key, value)
    elif default_key not in export_outputs:
        raise ValueError("Multiple `export_outputs` were provided, but none of them are specified as the default. "
                         "Use`tf.saved_model.DEFAULT_SERVING_SIGNATURE_DEF_KEY` to specify a default.")
    return export_outputs


def build_all_signature_defs(receiver_tensors, export_outputs, receiver_tensors_alternatives=None,
                             serving_only=True) -> dict:
    """{signature key: SignatureDef} of every export output over the receiver tensors (and each
    alternative's, keyed "alternative:output"); signatures that cannot be built, or (serving_only)
    that TF Serving could not serve, are left out and logged."""
    if not isinstance(receiver_tensors, dict):
        receiver_tensors = {SINGLE_RECEIVER_DEFAULT_NAME: receiver_tensors}
    if not isinstance(export_outputs, dict):
        raise ValueError(f"`export_outputs` must be a dict. Received {export_outputs} with type "
                         f"{type(export_outputs).__name__}.")
    signatures, excluded = {}, {}
    receivers = [(None, receiver_tensors)] + [
        (name, alt if isinstance(alt, dict) else {SINGLE_RECEIVER_DEFAULT_NAME: alt})
        for name, alt in (receiver_tensors_alternatives or {}).items()]
    for receiver_name, tensors in receivers:
        for output_key, export_output in export_outputs.items():
            key = f"{output_key or 'None'}" if receiver_name is None else f"{receiver_name}:{output_key or 'None'}"
            try:
                signatures[key] = export_output.as_signature_def(tensors)
            except ValueError as e:
                excluded[key] = str(e)
    for key, message in excluded.items():
        _log.info("Signature '%s' EXCLUDED from export: %s", key, message)
    if not signatures:
        _log.warning("Export includes no signatures!")
    elif signature_constants.DEFAULT_SERVING_SIGNATURE_DEF_KEY not in signatures:
        _log.warning("Export includes no default signature!")
    if not serving_only:
        return signatures
    return {k: v for k, v in signatures.items() if signature_def_utils.is_valid_signature(v)}


def get_timestamped_export_dir(export_dir_base: str) -> str:
    """export_dir_base/<seconds since the epoch>, a name not yet taken."""
    for _ in range(10):
        result = os.path.join(os.fsdecode(export_dir_base), str(int(time.time())))
        if not os.path.exists(result):
            return result
        time.sleep(1)
        _log.warning("Directory %s already exists; retrying", result)
    raise RuntimeError("Failed to obtain a unique export directory name after 10 attempts.")
