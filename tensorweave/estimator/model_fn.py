"""tf.estimator.ModeKeys and tf.estimator.EstimatorSpec: what a model_fn is called with and what it
returns, checked as TF 1.15 checks them (the same exception classes and messages)."""
from __future__ import annotations

import collections
import inspect
import logging

from tensorweave.estimator.export import get_export_outputs
from tensorweave.framework.graph import get_default_graph
from tensorweave.framework.graph import Operation, Tensor
from tensorweave.framework.shapes import TensorShape
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.core import reshape
from tensorweave.ops.state.variables import Variable
from tensorweave.train.scaffold import Scaffold
from tensorweave.train.session_run_hook import SessionRunHook

_log = logging.getLogger("tensorweave")
LOSS_METRIC_KEY = "loss"
_VALID_MODEL_FN_ARGS = {"features", "labels", "mode", "params", "self", "config"}


@tf_export("estimator.ModeKeys")
class ModeKeys:
    """tf.estimator.ModeKeys: the mode a model_fn is called in (TRAIN, EVAL, PREDICT)."""
    TRAIN = "train"
    EVAL = "eval"
    PREDICT = "infer"


def fn_args(fn) -> tuple:
    """The names of the arguments `fn` can be called with (bound `self` and a partial's bound
    arguments left out), as TF's function_utils.fn_args."""
    params = inspect.signature(fn).parameters.values()
    return tuple(p.name for p in params if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD))


def verify_model_fn_args(model_fn, params) -> None:
    """TF's checks of a model_fn's arguments against `params`."""
    args = set(fn_args(model_fn))
    if "features" not in args:
        raise ValueError(f"model_fn ({model_fn}) must include features argument.")
    if params is not None and "params" not in args:
        raise ValueError(f"model_fn ({model_fn}) does not include params argument, but params ({params}) is "
                         "passed to Estimator.")
    if params is None and "params" in args:
        _log.warning("Estimator's model_fn (%s) includes params argument, but params are not passed to Estimator.",
                     model_fn)
    unexpected = list(args - _VALID_MODEL_FN_ARGS)
    if unexpected:
        raise ValueError(f"model_fn ({model_fn}) has following not expected args: {unexpected}")


_NOT_DEFAULT_GRAPH = ('{0} with "{1}" must be from the default graph. Possible causes of this error include: \n\n'
                      "1) {0} was created outside the context of the default graph.\n\n"
                      '2) The object passed through to EstimatorSpec was not created in the most recent call to '
                      '"model_fn".')


def _check_graph(value, what: str, name: str) -> None:
    if value.graph is not get_default_graph():
        raise ValueError(_NOT_DEFAULT_GRAPH.format(what, name))


def _check_is_tensor(x, name: str) -> Tensor:
    if isinstance(x, Variable):
        x = x.value()
    if not isinstance(x, Tensor):
        raise TypeError(f"{name} must be Tensor, given: {x}")
    return x


def _validate_train_op(train_op, mode):
    if train_op is None:
        if mode == ModeKeys.TRAIN:
            raise ValueError("Missing train_op.")
        return None
    if isinstance(train_op, Variable):
        train_op = train_op.op
    if not isinstance(train_op, (Operation, Tensor)):
        raise TypeError(f"train_op must be Operation or Tensor, given: {train_op}")
    _check_graph(train_op, "train_op", train_op.name)
    return train_op


def _validate_loss(loss, mode):
    if loss is None:
        if mode in (ModeKeys.TRAIN, ModeKeys.EVAL):
            raise ValueError("Missing loss.")
        return None
    loss = _check_is_tensor(loss, "loss")
    shape = loss.get_shape()
    if shape.num_elements() not in (None, 1):
        raise ValueError(f"Loss must be scalar, given: {loss}")
    if not shape.is_compatible_with(TensorShape([])):
        loss = reshape(loss, [])
    _check_graph(loss, "loss", loss.name)
    return loss


def _validate_predictions(predictions, mode):
    if predictions is None:
        if mode == ModeKeys.PREDICT:
            raise ValueError("Missing predictions.")
        return {}
    if isinstance(predictions, dict):
        predictions = {k: _check_is_tensor(v, f"predictions[{k}]") for k, v in predictions.items()}
        for k, v in predictions.items():
            _check_graph(v, "prediction values", f"{k}: {v.name}")
        return predictions
    predictions = _check_is_tensor(predictions, "predictions")
    _check_graph(predictions, "prediction values", predictions.name)
    return predictions


def _validate_hooks(hooks) -> tuple:
    hooks = tuple(hooks or [])
    for hook in hooks:
        if not isinstance(hook, SessionRunHook):
            raise TypeError(f"All hooks must be SessionRunHook instances, given: {hook}")
    return hooks


def _validate_eval_metric_ops(eval_metric_ops) -> dict:
    if eval_metric_ops is None:
        return {}
    if not isinstance(eval_metric_ops, dict):
        raise TypeError(f"eval_metric_ops must be a dict, given: {eval_metric_ops}")
    for key, value in eval_metric_ops.items():
        if not isinstance(value, tuple) or len(value) != 2:
            raise TypeError(f"Values of eval_metric_ops must be (metric_value, update_op) tuples, given: {value} "
                            f"for key: {key}")
        for v in value:
            _check_graph(v, "eval_metric_ops", f"{key}: {v.name}")
    return dict(eval_metric_ops)


@tf_export("estimator.EstimatorSpec")
class EstimatorSpec(collections.namedtuple("EstimatorSpec", [
        "mode", "predictions", "loss", "train_op", "eval_metric_ops", "export_outputs", "training_chief_hooks",
        "training_hooks", "scaffold", "evaluation_hooks", "prediction_hooks"])):
    """tf.estimator.EstimatorSpec(mode, predictions=None, loss=None, train_op=None,
    eval_metric_ops=None, export_outputs=None, training_chief_hooks=None, training_hooks=None,
    scaffold=None, evaluation_hooks=None, prediction_hooks=None): what a model_fn returns.

    TRAIN needs loss and train_op, EVAL needs loss, PREDICT needs predictions (a tensor or a dict
    of tensors); every tensor must come from the graph the model_fn was called in; loss must hold
    one element (it is reshaped to a scalar); eval_metric_ops maps names to (value, update_op)."""

    def __new__(cls, mode, predictions=None, loss=None, train_op=None, eval_metric_ops=None, export_outputs=None,
                training_chief_hooks=None, training_hooks=None, scaffold=None, evaluation_hooks=None,
                prediction_hooks=None):
        train_op = _validate_train_op(train_op, mode)
        loss = _validate_loss(loss, mode)
        predictions = _validate_predictions(predictions, mode)
        if mode == ModeKeys.PREDICT:
            export_outputs = get_export_outputs(export_outputs, predictions)
        scaffold = scaffold or Scaffold()
        if not isinstance(scaffold, Scaffold):
            raise TypeError(f"scaffold must be tf.train.Scaffold. Given: {scaffold}")
        return super().__new__(
            cls, mode=mode, predictions=predictions, loss=loss, train_op=train_op,
            eval_metric_ops=_validate_eval_metric_ops(eval_metric_ops), export_outputs=export_outputs,
            training_chief_hooks=_validate_hooks(training_chief_hooks), training_hooks=_validate_hooks(training_hooks),
            scaffold=scaffold, evaluation_hooks=_validate_hooks(evaluation_hooks),
            prediction_hooks=_validate_hooks(prediction_hooks))

    def _replace(self, **kwds):
        if "mode" in kwds and self.mode != kwds["mode"]:
            raise ValueError("mode of EstimatorSpec cannot be changed.")
        return EstimatorSpec(*map(kwds.pop, self._fields, list(self)))


@tf_export("estimator.experimental.call_logit_fn")
def call_logit_fn(logit_fn, features, mode, params, config):
    """tf.estimator.experimental.call_logit_fn(logit_fn, features, mode, params, config): calls
    logit_fn(features, [mode, params, config]) with those of the three it takes; it must return a
    Tensor or a dict of string keys to Tensors."""
    args = fn_args(logit_fn)
    kwargs = {k: v for k, v in (("mode", mode), ("params", params), ("config", config)) if k in args}
    result = logit_fn(features=features, **kwargs)
    valid_dict = isinstance(result, dict) and all(isinstance(k, str) and isinstance(v, Tensor)
                                                  for k, v in result.items())
    if not (valid_dict or isinstance(result, Tensor)):
        raise ValueError(f"logit_fn should return a Tensor or a dictionary mapping strings to Tensors.  logit_fn "
                         f"returned: {result}")
    return result
