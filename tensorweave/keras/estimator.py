"""tf.keras.estimator.model_to_estimator (TF 1.15's tensorflow_estimator keras.py): an Estimator
whose model_fn clones a compiled Keras model onto the input_fn's features and trains it as
compile set it up.

The model_fn rebuilds the model from its config on the features (a dict keyed by the model's input
names, or a tensor when it has one input), with the learning phase fixed by the mode (Dropout
active only in TRAIN). TRAIN and EVAL use what the Keras model was compiled with
(saving/hdf5.compile_arguments) as Keras's training loop does: `loss` (a name, function or Loss,
or a list/dict of them per output), `loss_weights`, the model's own losses (regularizers) added,
the metrics as eval metrics named as Keras 2.2.4-tf names them ("acc", "mean_absolute_error", "<output>_acc" for several
outputs), and a fresh `optimizer` of the same class and config whose `iterations` is the global
step; the model's updates (get_updates_for None and its inputs) run with each train step.
Predictions are {output name: output}, exported as the PredictOutput "serving_default".

The Keras model's current weights are the warm start: written once, in a graph of their own, to
"<model_dir>/keras/keras_model.ckpt" (by variable name with checkpoint_format="saver", TF 1.15's
default; or as save_weights' TF-format checkpoint, keys "layer_with_weights-0/kernel/...", with
"checkpoint", warm-started through var_name_to_prev_var_name). The Estimator's own checkpoints in
model_dir are name-based (tf.train.Saver) in both cases, so with "checkpoint" an export or a
prediction restores from model_dir once trained (before that the warm start is by name only)."""
from __future__ import annotations

import logging
import os

from tensorweave import _api
from tensorweave.distribute.distribute_lib import get_replica_context
from tensorweave.estimator.estimator import Estimator, WarmStartSettings, _with_model_dir_and_session_config
from tensorweave.estimator.export import PredictOutput
from tensorweave.estimator.model_fn import EstimatorSpec, ModeKeys
from tensorweave.framework.api import GraphKeys, add_to_collection, control_dependencies
from tensorweave.framework.graph import Graph
from tensorweave.ops.random import set_random_seed
from tensorweave.framework.tf_export import tf_export
from tensorweave.keras import backend as K
from tensorweave.keras import losses as losses_module
from tensorweave.keras import metrics as metrics_module
from tensorweave.keras.models import Sequential, clone_model
from tensorweave.keras.saving.hdf5 import compile_arguments
from tensorweave.keras.saving.save import _checkpoint_of, load_model
from tensorweave.keras.utils.generic_utils import CustomObjectScope
from tensorweave.metrics.base import cross_replica_value
from tensorweave.ops.grouping import group
from tensorweave.ops.math.reduction import reduce_mean
from tensorweave.ops.math.binary import add_n
from tensorweave.train.checkpoint import _ObjectGraph
from tensorweave.train.checkpoint_management import latest_checkpoint
from tensorweave.client.session import Session
from tensorweave.train.saver import Saver
from tensorweave.train.training_util import get_or_create_global_step

_log = logging.getLogger("tensorweave.estimator")
_DEFAULT_SERVING_KEY = "serving_default"


def _per_output(value, model, what: str) -> list:
    """`value` (one for all outputs, a list in output order, or a dict by output name) per output."""
    names = model.output_names
    if isinstance(value, dict):
        unknown = sorted(set(value) - set(names))
        if unknown:
            raise ValueError(f"Unknown entries in {what} dictionary: {unknown}. Only expected following keys: {names}")
        return [value.get(name) for name in names]
    if isinstance(value, (list, tuple)):
        if len(value) != len(names):
            raise ValueError(f"When passing a list as {what}, it should have one entry per model output. The model "
                             f"has {len(names)} outputs, but you passed {what}={value}")
        return list(value)
    return [value] * len(names)


def _as_list(tensors, names: list, what: str) -> list:
    """The input_fn's features (or labels) in the model's input (output) order."""
    if isinstance(tensors, dict):
        missing = [name for name in names if name not in tensors]
        if missing:
            raise ValueError(f"The dict {what} has keys {sorted(tensors)}, but the Keras model expects {names} "
                             f"(missing {missing}).")
        return [tensors[name] for name in names]
    if isinstance(tensors, (list, tuple)):
        return list(tensors)
    if len(names) != 1:
        raise ValueError(f"The Keras model has {len(names)} {what} ({names}): give them as a dict keyed by those "
                         f"names, not a single tensor ({tensors}).")
    return [tensors]


def _metric_name_and_fn(metric, output_shape, loss_fn):
    """Keras 2.2.4-tf's name and function of a compile metric on one output."""
    if isinstance(metric, metrics_module.Metric):
        return metric.name, type(metric).from_config(metric.get_config())
    if metric in ("accuracy", "acc", "crossentropy", "ce"):
        loss_name = getattr(getattr(loss_fn, "fn", loss_fn), "__name__", type(loss_fn).__name__)
        binary = output_shape[-1] == 1 or loss_name in ("binary_crossentropy", "BinaryCrossentropy")
        sparse = loss_name in ("sparse_categorical_crossentropy", "SparseCategoricalCrossentropy")
        kind = "binary" if binary else "sparse_categorical" if sparse else "categorical"
        if metric in ("accuracy", "acc"):
            return "acc", metrics_module.get(f"{kind}_accuracy")
        return "ce", losses_module.get(f"{kind}_crossentropy")
    fn = metrics_module.get(metric)
    return getattr(fn, "name", None) or fn.__name__, fn


def _metric_ops(model, metrics, targets: list, loss_fns: list) -> dict:
    """eval_metric_ops of the compile metrics: each a Keras Metric whose variables are local
    (so evaluation resets them), as (result, update_state)."""
    if not metrics:
        return {}
    if isinstance(metrics, (list, tuple)) and not all(isinstance(m, (list, tuple)) for m in metrics):
        metrics = [list(metrics)] * len(model.outputs)   # a flat list: every output's metrics
    per_output = _per_output(metrics, model, "metrics")
    ops = {}
    for output, target, name, loss_fn, metrics in zip(model.outputs, targets, model.output_names, loss_fns,
                                                      per_output):
        for metric in (metrics if isinstance(metrics, (list, tuple)) else [metrics] if metrics else []):
            metric_name, fn = _metric_name_and_fn(metric, K.int_shape(output), loss_fn)
            if len(model.outputs) > 1:
                metric_name = f"{name}_{metric_name}"
            metric_object = fn if isinstance(fn, metrics_module.Metric) else \
                metrics_module.MeanMetricWrapper(fn, name=metric_name)
            update = metric_object.update_state(target, output)
            for variable in metric_object.variables:
                add_to_collection(GraphKeys.LOCAL_VARIABLES, variable)
            # under eval_distribute: read over every replica's state (cross-replica), as TF
            ops[metric_name] = (cross_replica_value(metric_object.result), update)
    return ops


def _total_loss(model, loss, loss_weights, targets: list):
    """(the compiled loss: the weighted sum of each output's mean loss plus the model's own losses,
    the loss function of each output)."""
    loss_fns = [losses_module.get(fn) for fn in _per_output(loss, model, "loss")]
    weights = _per_output(loss_weights if loss_weights is not None else 1.0, model, "loss_weights")
    terms = []
    for output, target, fn, weight, name in zip(model.outputs, targets, loss_fns, weights, model.output_names):
        if fn is None:
            continue
        with K.name_scope(name + "_loss"):
            value = fn(target, output)
            value = reduce_mean(value) if value.shape.ndims else value
            terms.append(value if weight == 1.0 else value * weight)
    terms += list(model.losses)
    return (add_n(terms) if len(terms) > 1 else terms[0]), loss_fns


def _clone(keras_model, custom_objects, features=None):
    """The model rebuilt from its config (on `features` when given), its layers new."""
    inputs = None if features is None else _as_list(features, keras_model.input_names, "features")
    with CustomObjectScope(custom_objects or {}):
        return clone_model(keras_model, input_tensors=inputs)


def _fresh_optimizer(keras_model, iterations):
    optimizer = type(keras_model.optimizer).from_config(keras_model.optimizer.get_config())
    optimizer.iterations = iterations
    return optimizer


def _create_keras_model_fn(keras_model, custom_objects):
    def model_fn(features, labels, mode):
        K.set_learning_phase(int(mode == ModeKeys.TRAIN))
        model = _clone(keras_model, custom_objects, features)
        predictions = dict(zip(model.output_names, model.outputs))
        if mode == ModeKeys.PREDICT:
            return EstimatorSpec(mode, predictions=predictions,
                                 export_outputs={_DEFAULT_SERVING_KEY: PredictOutput(predictions)})
        compiled = compile_arguments(keras_model)
        targets = _as_list(labels, model.output_names, "labels")
        loss, loss_fns = _total_loss(model, compiled["loss"], compiled["loss_weights"], targets)
        train_op = None
        if mode == ModeKeys.TRAIN:
            optimizer = _fresh_optimizer(keras_model, get_or_create_global_step())
            updates = model.get_updates_for(None) + model.get_updates_for(model.inputs)
            # in a replica of train_distribute's strategy the gradients are summed over the N
            # replicas: each replica's mean loss counts 1/N (TF's scale_loss_for_distribution)
            context = get_replica_context()
            replicas = context.num_replicas_in_sync if context is not None else 1
            with control_dependencies(updates):
                train_op = group(*optimizer.get_updates(loss / replicas if replicas > 1 else loss,
                                                        model.trainable_weights))
        return EstimatorSpec(mode, predictions=predictions, loss=loss, train_op=train_op,
                             eval_metric_ops=_metric_ops(model, compiled["metrics"], targets, loss_fns),
                             export_outputs={_DEFAULT_SERVING_KEY: PredictOutput(predictions)})

    return model_fn


def _save_first_checkpoint(keras_model, custom_objects, config, checkpoint_format: str):
    """Writes the Keras model's weights as <model_dir>/keras/keras_model.ckpt (once: an existing
    checkpoint there is kept) in a graph of their own; returns the warm start."""
    keras_model_dir = os.path.join(config.model_dir, "keras")
    path = latest_checkpoint(keras_model_dir)
    weights = keras_model.get_weights()
    with Graph().as_default():
        set_random_seed(config.tf_random_seed)
        global_step = get_or_create_global_step()
        model = _clone(keras_model, custom_objects)
        names = {key: variable.op.name for key, variable in _ObjectGraph(_checkpoint_of(model, {})).keys.items()}
        if not path:
            os.makedirs(keras_model_dir, exist_ok=True)
            path = os.path.join(keras_model_dir, "keras_model.ckpt")
            with Session(config=config.session_config) as session:   # the default session: Keras's here
                model.set_weights(weights)
                session.run(global_step.initializer)
                if checkpoint_format == "checkpoint":
                    model.save_weights(path)
                else:
                    Saver().save(session, path)   # the weights and global_step, which a restore of it needs
    if checkpoint_format == "checkpoint":
        return WarmStartSettings(path, vars_to_warm_start=".*",
                                 var_name_to_prev_var_name={name: key for key, name in names.items()})
    return WarmStartSettings(path, vars_to_warm_start=".*")


@tf_export("keras.estimator.model_to_estimator")
def model_to_estimator(keras_model=None, keras_model_path=None, custom_objects=None, model_dir=None, config=None,
                       checkpoint_format="saver"):
    """tf.keras.estimator.model_to_estimator: an Estimator training, evaluating and exporting the
    compiled `keras_model` (or the model saved at `keras_model_path`, HDF5), warm-started from its
    current weights; `custom_objects` resolves custom layers, losses and metrics by name;
    checkpoint_format "saver" (name-based) or "checkpoint" (object-based) for that warm start."""
    if not (keras_model or keras_model_path):
        raise ValueError("Either `keras_model` or `keras_model_path` needs to be provided.")
    if keras_model and keras_model_path:
        raise ValueError("Please specity either `keras_model` or `keras_model_path`, but not both.")
    if checkpoint_format not in ("saver", "checkpoint"):
        raise ValueError(f'Checkpoint format must be one of "checkpoint" or "saver". Got {checkpoint_format}')
    config = _with_model_dir_and_session_config(config, model_dir)
    if not keras_model:
        _log.info("Loading models from %s", keras_model_path)
        keras_model = load_model(keras_model_path, custom_objects=custom_objects)
    if not (keras_model._is_graph_network or isinstance(keras_model, Sequential)):
        raise ValueError("model_to_estimator needs a functional or Sequential model (it rebuilds the model from its "
                         f"config); {keras_model.name} is a subclassed model.")
    if not getattr(keras_model, "optimizer", None):
        raise ValueError("The given keras model has not been compiled yet. Please compile the model with "
                         "`model.compile()` before calling `model_to_estimator()`.")
    warm_start = _save_first_checkpoint(keras_model, custom_objects, config, checkpoint_format)
    return Estimator(_create_keras_model_fn(keras_model, custom_objects), config=config, warm_start_from=warm_start)


__getattr__, __dir__ = _api.lazy_attributes(__name__)
