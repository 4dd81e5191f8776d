"""tf.keras.Model: a Network (engine/network.py) that trains, as TF 1.15's tf.keras does in graph
mode. `compile` builds the loss and metric graph once (per output: a target placeholder, a
sample-weight placeholder defaulting to ones, the loss reduced as Keras reduces it, stateful
metrics); the train, test and predict functions are `backend.function`s made on first use (the
train one holds the optimizer's updates, the model's own updates and the learning phase), run in
`backend.get_session()`. The loops over arrays, datasets and generators are training_loops.py's."""
from __future__ import annotations

import contextlib

from tensorweave.framework import nest
from tensorweave.framework.tf_export import tf_export
from tensorweave.logging import warning
from tensorweave.ops.array.core import placeholder_with_default
from tensorweave.ops.math.binary import add_n
from tensorweave.ops.grouping import group
from tensorweave.ops.state.variables import Variable
from tensorweave.distribute.distribute_lib import get_strategy, in_cross_replica_context
from tensorweave.distribute.values import MirroredVariable
from tensorweave.keras import backend as K, losses as losses_module, metrics as metrics_module, optimizers
from tensorweave.keras.engine import training_distributed as distributed, training_loops as loops
from tensorweave.keras.engine.network import Network
from tensorweave.keras.saving import save as saving

_FUNCTION_KWARGS = {"feed_dict", "fetches"}


def _loss_function(loss):
    """Keras's get_loss_function: a Loss (or a callable object) as it is; a name or function
    wrapped in a LossFunctionWrapper reducing by SUM_OVER_BATCH_SIZE."""
    if loss is None or isinstance(loss, losses_module.Loss):
        return loss
    if isinstance(loss, dict):
        loss = losses_module.get(loss)
    if callable(loss) and not hasattr(loss, "__name__"):
        return loss
    fn = losses_module.get(loss)
    return losses_module.LossFunctionWrapper(fn, name=fn.__name__,
                                             reduction=losses_module.Reduction.SUM_OVER_BATCH_SIZE)


def _per_output(value, names: list, what: str, default=None) -> list:
    """A compile argument (one value for all outputs, a list in output order, a dict by output
    name) as one entry per output."""
    if isinstance(value, dict):
        unknown = [k for k in value if k not in names]
        if unknown:
            raise ValueError(f"Unknown entries in {what} dictionary: {unknown}. Only expected following keys: "
                             f"{names}")
        return [value.get(name, default) for name in names]
    if isinstance(value, (list, tuple)):
        if len(value) != len(names):
            raise ValueError(f"When passing a list as {what}, it should have one entry per model outputs. The model "
                             f"has {len(names)} outputs, but you passed {what}={value}")
        return list(value)
    return [value] * len(names)


def _metrics_per_output(metrics, names: list) -> list:
    """metrics: a list for every output, a list of lists by position, or a dict by output name."""
    if not metrics:
        return [[] for _ in names]
    if isinstance(metrics, dict):
        return [nest.flatten(m) if m is not None else [] for m in _per_output(metrics, names, "metrics", [])]
    if isinstance(metrics, (list, tuple)) and metrics and all(isinstance(m, (list, tuple)) for m in metrics):
        if len(metrics) != len(names):
            raise ValueError(f"When passing a list of lists as `metrics`, it should have one entry per model output. "
                             f"The model has {len(names)} outputs, but you passed metrics={metrics}")
        return [list(m) for m in metrics]
    if not isinstance(metrics, (list, tuple)):
        raise TypeError(f"Type of `metrics` argument not understood. Expected a list or dictionary, found: {metrics}")
    return [list(metrics) for _ in names]


def _metric_name(metric, weighted: bool) -> str:
    """TF1 Keras's names: "acc" for accuracy, "ce" for crossentropy, else the function's or
    Metric's name; "weighted_" before a weighted metric's."""
    prefix = "weighted_" if weighted else ""
    if metric in ("accuracy", "acc"):
        return prefix + "acc"
    if metric in ("crossentropy", "ce"):
        return prefix + "ce"
    fn = metrics_module.get(metric)
    return prefix + (fn.name if hasattr(fn, "name") else fn.__name__)


def _metric_function(metric, output, loss_fn):
    """"accuracy"/"crossentropy" resolved by the output's last dimension and the loss, as Keras."""
    if metric not in ("accuracy", "acc", "crossentropy", "ce"):
        return metrics_module.get(metric)
    fn = getattr(loss_fn, "fn", None)
    binary = isinstance(loss_fn, losses_module.BinaryCrossentropy) or fn is losses_module.binary_crossentropy
    sparse = (isinstance(loss_fn, losses_module.SparseCategoricalCrossentropy)
              or fn is losses_module.sparse_categorical_crossentropy)
    last = output.shape.as_list()[-1] if output.shape.ndims else None
    if metric in ("accuracy", "acc"):
        if last == 1 or binary:
            return metrics_module.binary_accuracy
        return metrics_module.sparse_categorical_accuracy if sparse else metrics_module.categorical_accuracy
    if last == 1 or binary:
        return metrics_module.binary_crossentropy
    return metrics_module.sparse_categorical_crossentropy if sparse else metrics_module.categorical_crossentropy


def _with_mask(sample_weight, mask, dtype):
    """The sample weights times an output's mask (weights expanded to the mask's rank)."""
    if mask is None:
        return sample_weight
    mask = K.cast(mask, dtype)
    if sample_weight is None:
        return mask
    while sample_weight.shape.ndims is not None and sample_weight.shape.ndims < mask.shape.ndims:
        sample_weight = K.expand_dims(sample_weight, -1)
    return sample_weight * mask


class _Endpoint:
    """One output in training: its name, tensor, loss, weight, target and sample weights."""

    def __init__(self, name, output, loss_fn, loss_weight):
        self.name, self.output, self.loss_fn, self.loss_weight = name, output, loss_fn, loss_weight
        self.target = None
        self.feed_target = None          # the placeholder fed with y (None for target_tensors)
        self.sample_weight = None
        self.sample_weight_mode = None
        self.loss_metric = self.loss_metric_result = None   # several outputs: a Mean of this output's loss

    @property
    def skipped(self) -> bool:
        """An output without a loss takes no targets."""
        return self.loss_fn is None


@tf_export("keras.Model", "keras.models.Model")
class Model(Network):
    """tf.keras.Model(inputs, outputs, name=None) builds a functional model; a subclass without
    inputs/outputs defines `call(inputs, training=None, mask=None)` over layers it assigns as
    attributes in `__init__`. compile() then fit()/evaluate()/predict() train and run it."""

    _compile_was_called = False
    _distribution_strategy = None
    _is_compiled = False
    optimizer = None
    history = None
    stop_training = False

    # -- compile --------------------------------------------------------------------------------
    def compile(self, optimizer="rmsprop", loss=None, metrics=None, loss_weights=None, sample_weight_mode=None,
                weighted_metrics=None, target_tensors=None, distribute=None, **kwargs):
        """Configures training: `optimizer` (a name, a Keras optimizer or a tf.train.Optimizer),
        `loss` (a name, function or Loss; a list or dict for several outputs), `metrics` and
        `weighted_metrics` (a list, or a dict by output name), `loss_weights` (a list or dict of
        scalars), `sample_weight_mode` (None or "temporal", per output too), `target_tensors`
        (tensors used as targets instead of fed placeholders)."""
        unknown = sorted(set(kwargs) - _FUNCTION_KWARGS)
        if unknown:
            raise TypeError(f"Invalid keyword argument(s) in `compile`: {set(unknown)}")
        # the strategy: `distribute` (TF 1.15's deprecated argument), else the scope compile runs in
        strategy = distribute if distribute is not None else get_strategy() if in_cross_replica_context() else None
        if strategy is not None:
            for value, what in ((sample_weight_mode, "sample_weight_mode"), (weighted_metrics, "weighted_metrics")):
                if value:
                    raise NotImplementedError(f"{what} is not supported with tf.distribute.Strategy.")
            if target_tensors is not None:
                raise ValueError("target_tensors is not supported with tf.distribute.Strategy.")
        self._distribution_strategy = strategy
        self.optimizer = optimizers.get(optimizer)
        self.loss = loss or {}
        self._compile_args = {"metrics": metrics, "loss_weights": loss_weights,
                              "sample_weight_mode": sample_weight_mode, "weighted_metrics": weighted_metrics,
                              "target_tensors": target_tensors}
        self._function_kwargs = kwargs
        self._compile_was_called = True
        self.train_function = self.test_function = self.predict_function = None
        self._reset_metrics_op = None
        self._is_compiled = False
        if self.outputs:
            self._compile_graph()
        if strategy is not None and distribute is None:
            distributed.check_variables_in_scope(self, strategy)

    def _compile_graph(self) -> None:
        """Builds targets, sample weights, the total loss and the metrics for the outputs."""
        args = self._compile_args
        names = self.output_names
        with K.get_graph().as_default():
            loss_fns = [_loss_function(fn) for fn in _per_output(self.loss, names, "loss")]
            if isinstance(self.loss, dict) and self.loss:
                for name in names:
                    if name not in self.loss:
                        warning("Output %s missing from loss dictionary. We assume this was done on purpose. The fit "
                                "and evaluate APIs will not be expecting any data to be passed to %s.", name, name)
            weights = _per_output(args["loss_weights"] if args["loss_weights"] is not None else 1.0, names,
                                  "loss_weights", 1.0)
            self._endpoints = [_Endpoint(n, o, fn, w) for n, o, fn, w in zip(names, self.outputs, loss_fns, weights)]
            modes = _per_output(args["sample_weight_mode"], names, "sample_weight_mode")
            targets = args["target_tensors"]
            if targets is not None and not isinstance(targets, (list, dict)):
                targets = [targets]
            targets = _per_output(targets, names, "target_tensors") if targets is not None else [None] * len(names)
            for endpoint, mode, target in zip(self._endpoints, modes, targets):
                self._prepare_endpoint(endpoint, mode, target)
            self._prepare_total_loss()
            self._prepare_metrics(args["metrics"], args["weighted_metrics"])
        # what trains is what was trainable at compile (Keras: change `trainable`, then compile again)
        self._compiled_trainable_weights = self.trainable_weights
        self._is_compiled = True

    def _prepare_endpoint(self, endpoint, mode, target) -> None:
        if endpoint.skipped:
            return
        output = endpoint.output
        if target is not None:
            endpoint.target = target
        else:
            ndim = output.shape.ndims
            endpoint.target = endpoint.feed_target = K.placeholder(ndim=ndim, dtype=K.dtype(output),
                                                                   name=endpoint.name + "_target")
        if mode not in (None, "temporal", "samplewise"):
            raise ValueError(f'"sample_weight_mode should be None or "temporal". Found: {mode}')
        endpoint.sample_weight_mode = mode
        default, shape = ([[1.0]], [None, None]) if mode == "temporal" else ([1.0], [None])
        endpoint.sample_weight = placeholder_with_default(K.constant(default, dtype=K.floatx()), shape=shape,
                                                          name=endpoint.name + "_sample_weights")

    def _prepare_total_loss(self) -> None:
        total = None
        with K.name_scope("loss"):
            for endpoint in self._endpoints:
                if endpoint.skipped:
                    continue
                output_loss, _ = self._output_loss(endpoint, endpoint.target, endpoint.output, endpoint.sample_weight)
                if len(self.outputs) > 1:   # each output's loss, as a running mean over the batches
                    endpoint.loss_metric = metrics_module.Mean(endpoint.name + "_loss")
                    endpoint.loss_metric_result = endpoint.loss_metric(output_loss)
                weighted = endpoint.loss_weight * output_loss
                total = weighted if total is None else total + weighted
            if total is None:
                if not self.losses:
                    raise ValueError("The model cannot be compiled because it has no loss to optimize.")
                total = K.constant(0.0)
            extra = self.get_losses_for(None) + self.get_losses_for(self.inputs)
            if extra:
                total = total + add_n(extra)
        self.total_loss = total

    def _output_loss(self, endpoint, y_true, y_pred, sample_weight) -> tuple:
        """(endpoint's loss for y_pred against y_true, whether it is a mean over the batch: a
        Loss reducing by SUM_OVER_BATCH_SIZE, or a loss function, which Keras takes as one)."""
        with K.name_scope(endpoint.name + "_loss"):
            weights = _with_mask(sample_weight, K.keras_mask(y_pred), y_pred.dtype)
            if not hasattr(endpoint.loss_fn, "reduction"):
                return endpoint.loss_fn(y_true, y_pred, sample_weight=weights), True
            reduction = endpoint.loss_fn.reduction
            if reduction == losses_module.Reduction.AUTO:
                reduction = losses_module.Reduction.SUM_OVER_BATCH_SIZE
            per_sample = endpoint.loss_fn.call(y_true, y_pred)
            return (losses_module.compute_weighted_loss(per_sample, weights, reduction=reduction),
                    reduction == losses_module.Reduction.SUM_OVER_BATCH_SIZE)

    @staticmethod
    def _metric_weight(sample_weight, output):
        """A metric's sample weights: the given ones (weighted metrics) times the output's mask."""
        return _with_mask(sample_weight, K.keras_mask(output), output.dtype)

    def _prepare_metrics(self, metrics, weighted_metrics) -> None:
        names = self.output_names
        self._compile_metrics = []       # (name, Metric, result tensor) in metrics_names order
        self._metric_sources = []        # (endpoint, weighted) of each compiled metric
        taken = {"loss"} | ({e.name + "_loss" for e in self._endpoints} if len(self._endpoints) > 1 else set())
        for index, endpoint in enumerate(self._endpoints):
            if endpoint.skipped:
                continue
            for given, weighted in ((_metrics_per_output(metrics, names)[index], False),
                                    (_metrics_per_output(weighted_metrics, names)[index], True)):
                for metric in given:
                    name = metric.name if isinstance(metric, metrics_module.Metric) else _metric_name(metric, weighted)
                    if len(self.outputs) > 1:
                        name = f"{endpoint.name}_{name}"
                    base, j = name, 1
                    while name in taken:
                        name, j = f"{base}_{j}", j + 1
                    taken.add(name)
                    fn = _metric_function(metric, endpoint.output, endpoint.loss_fn)
                    with K.name_scope(name):
                        if isinstance(fn, metrics_module.Metric):
                            metric_obj = fn
                            metric_obj.name = name
                        else:
                            metric_obj = metrics_module.MeanMetricWrapper(fn, name=name)
                        sample_weight = self._metric_weight(endpoint.sample_weight if weighted else None,
                                                            endpoint.output)
                        result = metric_obj(endpoint.target, endpoint.output, sample_weight=sample_weight)
                    self._compile_metrics.append((name, metric_obj, result))
                    self._metric_sources.append((endpoint, weighted))
        for metric in self._all_metrics():
            for v in metric.variables:
                K.track_variable(v)

    def _all_metrics(self) -> list:
        """The output-loss means, then the compiled metrics (metrics_names order after "loss")."""
        return ([e.loss_metric for e in self._endpoints if e.loss_metric is not None]
                + [m for _, m, _ in self._compile_metrics])

    def _metric_results(self) -> list:
        return ([e.loss_metric_result for e in self._endpoints if e.loss_metric is not None]
                + [r for _, _, r in self._compile_metrics])

    @property
    def metrics(self) -> list:
        """The compiled Metric objects (not the per-output loss means)."""
        return [m for _, m, _ in getattr(self, "_compile_metrics", [])]

    @property
    def metrics_names(self) -> list:
        """"loss", each output's "<output>_loss" (several outputs), then the metrics' names: the
        labels of evaluate's values and of fit's logs."""
        names = ["loss"]
        if self._is_compiled:
            if len(self._endpoints) > 1:
                names += [e.name + "_loss" for e in self._endpoints if not e.skipped]
            names += [name for name, _, _ in self._compile_metrics]
        return names

    def reset_metrics(self) -> None:
        """Sets every metric's state (and the per-output loss means) back to zero."""
        if not self._is_compiled:
            return
        if self._reset_metrics_op is None:
            with K.get_graph().as_default():
                ops = [m.reset_states() for m in self._all_metrics()]
                self._reset_metrics_op = group(*ops) if ops else None
        if self._reset_metrics_op is not None:
            K.get_session().run(self._reset_metrics_op)

    # -- the functions --------------------------------------------------------------------------
    def _assert_compile_was_called(self) -> None:
        if not self._compile_was_called:
            raise RuntimeError("You must compile your model before training/testing. Use "
                               "`model.compile(optimizer, loss)`.")

    def _learning_phase_inputs(self) -> list:
        phase = K.learning_phase()
        return [] if isinstance(phase, int) else [phase]

    def _feeds(self) -> tuple:
        """(input placeholders, target placeholders, sample-weight placeholders) fed by the loops."""
        endpoints = [e for e in self._endpoints if not e.skipped]
        return (self._feed_inputs(), [e.feed_target for e in endpoints if e.feed_target is not None],
                [e.sample_weight for e in endpoints])

    def _feed_inputs(self) -> list:
        """The inputs fed with data: placeholders (an Input(tensor=...) feeds itself)."""
        return [x for x in self.inputs if K.is_placeholder(x)]

    def _make_train_function(self) -> None:
        self._assert_compile_was_called()
        if self.train_function is not None:
            return
        if self._distribution_strategy is not None:
            self.train_function = distributed.make_function(self, distributed.TRAIN)
            return
        inputs, targets, weights = self._feeds()
        with K.get_graph().as_default(), K.name_scope("training"):
            params = self._collected_trainable_weights()
            updates = self.optimizer.get_updates(loss=self.total_loss, params=params)
            updates += self.get_updates_for(None) + self.get_updates_for(self.inputs)
            for v in self._optimizer_variables():
                K.track_variable(v)
            self.train_function = K.function(inputs + targets + weights + self._learning_phase_inputs(),
                                             [self.total_loss] + self._metric_results(), updates=updates,
                                             name="train_function", **self._function_kwargs)

    def _optimizer_variables(self) -> list:
        """What the optimizer made (iterations, hyperparameters, slots): Keras's session
        initialises them, as it does the layers' weights."""
        hypers = [v for v in getattr(self.optimizer, "_hyper", {}).values()
                  if isinstance(v, (Variable, MirroredVariable))]
        found = [self.optimizer.iterations] + hypers + list(self.optimizer.weights)
        return [v for i, v in enumerate(found) if not any(v is u for u in found[:i])]

    def _collected_trainable_weights(self) -> list:
        weights = self._compiled_trainable_weights
        if not weights:
            raise ValueError("The model has no trainable weights: there is nothing for the optimizer to train.")
        return weights

    def _make_test_function(self) -> None:
        self._assert_compile_was_called()
        if self.test_function is None and self._distribution_strategy is not None:
            self.test_function = distributed.make_function(self, distributed.TEST)
        if self.test_function is None:
            inputs, targets, weights = self._feeds()
            self.test_function = K.function(inputs + targets + weights + self._learning_phase_inputs(),
                                            [self.total_loss] + self._metric_results(), updates=self.state_updates,
                                            name="test_function", **self._function_kwargs)

    def _make_predict_function(self) -> None:
        if getattr(self, "predict_function", None) is None and getattr(self, "_distribution_strategy", None):
            self.predict_function = distributed.make_function(self, distributed.PREDICT)
        if getattr(self, "predict_function", None) is None:
            self.predict_function = K.function(self._feed_inputs() + self._learning_phase_inputs(), list(self.outputs),
                                               updates=self.state_updates, name="predict_function",
                                               **getattr(self, "_function_kwargs", {}))

    # -- the user's API -------------------------------------------------------------------------
    def fit(self, x=None, y=None, batch_size=None, epochs=1, verbose=1, callbacks=None, validation_split=0.0,
            validation_data=None, shuffle=True, class_weight=None, sample_weight=None, initial_epoch=0,
            steps_per_epoch=None, validation_steps=None, validation_freq=1, max_queue_size=10, workers=1,
            use_multiprocessing=False, **kwargs):
        """Trains for `epochs` over numpy arrays (lists/dicts for several inputs/outputs), a
        tf.data Dataset, a keras.utils.Sequence or a generator; returns the History callback."""
        if kwargs:
            raise TypeError(f"Unrecognized keyword arguments: {kwargs}")
        self._assert_compile_was_called()
        return distributed.run_multi_worker(
            self, loops.fit, x=x, y=y, batch_size=batch_size, epochs=epochs, verbose=verbose, callbacks=callbacks,
            validation_split=validation_split, validation_data=validation_data, shuffle=shuffle,
            class_weight=class_weight, sample_weight=sample_weight, initial_epoch=initial_epoch,
            steps_per_epoch=steps_per_epoch, validation_steps=validation_steps, validation_freq=validation_freq,
            max_queue_size=max_queue_size, workers=workers, use_multiprocessing=use_multiprocessing)

    def evaluate(self, x=None, y=None, batch_size=None, verbose=1, sample_weight=None, steps=None, callbacks=None,
                 max_queue_size=10, workers=1, use_multiprocessing=False):
        """The loss and metrics over the data: a scalar when there are no metrics, else a list in
        `metrics_names` order."""
        self._assert_compile_was_called()
        return distributed.run_multi_worker(
            self, loops.evaluate, x=x, y=y, batch_size=batch_size, verbose=verbose, sample_weight=sample_weight,
            steps=steps, callbacks=callbacks, max_queue_size=max_queue_size, workers=workers,
            use_multiprocessing=use_multiprocessing)

    def predict(self, x, batch_size=None, verbose=0, steps=None, callbacks=None, max_queue_size=10, workers=1,
                use_multiprocessing=False):
        """The outputs for `x`, batch by batch, concatenated (a list for several outputs)."""
        return loops.predict(self, x, batch_size=batch_size, verbose=verbose, steps=steps, callbacks=callbacks,
                             max_queue_size=max_queue_size, workers=workers, use_multiprocessing=use_multiprocessing)

    def train_on_batch(self, x, y=None, sample_weight=None, class_weight=None, reset_metrics=True):
        """One gradient step on one batch; the loss (and metrics) of that batch, before the step."""
        self._assert_compile_was_called()
        ins = loops.standardize(self, x, y, sample_weight=sample_weight, class_weight=class_weight,
                                need_targets=True)
        self._make_train_function()
        outputs = self.train_function(ins + self._phase_values(1))
        if reset_metrics:
            self.reset_metrics()
        return outputs[0] if len(outputs) == 1 else outputs

    def test_on_batch(self, x, y=None, sample_weight=None, reset_metrics=True):
        """The loss (and metrics) of one batch, without training."""
        self._assert_compile_was_called()
        ins = loops.standardize(self, x, y, sample_weight=sample_weight, need_targets=True)
        self._make_test_function()
        outputs = self.test_function(ins + self._phase_values(0))
        if reset_metrics:
            self.reset_metrics()
        return outputs[0] if len(outputs) == 1 else outputs

    def predict_on_batch(self, x):
        """The outputs for one batch."""
        ins = loops.standardize(self, x)
        self._make_predict_function()
        outputs = self.predict_function(ins + self._phase_values(0))
        return outputs[0] if len(outputs) == 1 else outputs

    def _phase_values(self, value) -> list:
        return [bool(value)] if self._learning_phase_inputs() else []

    def fit_generator(self, generator, steps_per_epoch=None, epochs=1, verbose=1, callbacks=None,
                      validation_data=None, validation_steps=None, validation_freq=1, class_weight=None,
                      max_queue_size=10, workers=1, use_multiprocessing=False, shuffle=True, initial_epoch=0):
        """fit over a generator or keras.utils.Sequence yielding (x, y) or (x, y, sample_weight)."""
        return self.fit(generator, steps_per_epoch=steps_per_epoch, epochs=epochs, verbose=verbose,
                        callbacks=callbacks, validation_data=validation_data, validation_steps=validation_steps,
                        validation_freq=validation_freq, class_weight=class_weight, max_queue_size=max_queue_size,
                        workers=workers, use_multiprocessing=use_multiprocessing, shuffle=shuffle,
                        initial_epoch=initial_epoch)

    def evaluate_generator(self, generator, steps=None, callbacks=None, max_queue_size=10, workers=1,
                           use_multiprocessing=False, verbose=0):
        """evaluate over a generator or keras.utils.Sequence."""
        return self.evaluate(generator, steps=steps, callbacks=callbacks, max_queue_size=max_queue_size,
                             workers=workers, use_multiprocessing=use_multiprocessing, verbose=verbose)

    def predict_generator(self, generator, steps=None, callbacks=None, max_queue_size=10, workers=1,
                          use_multiprocessing=False, verbose=0):
        """predict over a generator (of x, or of (x, ...) tuples) or keras.utils.Sequence."""
        return self.predict(generator, steps=steps, callbacks=callbacks, max_queue_size=max_queue_size,
                            workers=workers, use_multiprocessing=use_multiprocessing, verbose=verbose)

    def _set_inputs_from_data(self, names: list, shapes: list, dtypes: list, as_dict: bool) -> None:
        """A model without inputs (subclassed, or Sequential without an input shape) builds on its
        first data (training_loops.set_inputs_from_data): placeholders `names` of `shapes` and
        `dtypes`, given to its call as a dict by name when the data is a dict, its call's outputs,
        then the compiled loss and metrics (its weights made in the scope of the strategy it was
        compiled under, if any)."""
        strategy = self._distribution_strategy
        with K.get_graph().as_default(), strategy.scope() if strategy is not None else contextlib.nullcontext():
            inputs = [K.placeholder(shape=shape, dtype=dtype, name=name)
                      for name, shape, dtype in zip(names, shapes, dtypes)]
            outputs = self(dict(zip(names, inputs)) if as_dict else inputs[0] if len(inputs) == 1 else inputs)
        self.inputs = inputs
        self.input_names = list(names)
        self.outputs = nest.flatten(outputs)
        self.output_names = [f"output_{i + 1}" for i in range(len(self.outputs))]
        self.built = True
        if self._compile_was_called:
            self._compile_graph()

    def get_weights(self) -> list:
        """The weights' values, read in the scope of the strategy the model was compiled under (TF
        1.15's: a session made for it is the strategy's, on a multi-worker strategy this task's server)."""
        strategy = self._distribution_strategy
        with strategy.scope() if strategy is not None else contextlib.nullcontext():
            return super().get_weights()

    def save(self, filepath, overwrite=True, include_optimizer=True, save_format=None):
        """keras.models.save_model(self, ...): architecture, weights and training state in HDF5."""
        saving.save_model(self, filepath, overwrite, include_optimizer, save_format)

    def save_weights(self, filepath, overwrite=True, save_format=None):
        """The weights to HDF5 (.h5/.keras/.hdf5 or save_format="h5") or a TF-format checkpoint."""
        saving.save_weights(self, filepath, overwrite, save_format)

    def load_weights(self, filepath, by_name=False, skip_mismatch=False):
        """The weights from save_weights' HDF5 or TF-format file (by_name: HDF5 only)."""
        saving.load_weights(self, filepath, by_name, skip_mismatch)
