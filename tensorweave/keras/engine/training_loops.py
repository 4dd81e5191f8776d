"""The loops of Model.fit / evaluate / predict (TF 1.15's training_arrays and training_generator):
numpy arrays batch by batch (shuffled per epoch, or by batch), and step by step over a tf.data
Dataset (its elements fetched in the Keras session), a keras.utils.Sequence or a Python generator
(through keras.utils' enqueuers). Every batch is standardized to the arrays the model's
functions feed: inputs, targets, sample weights (class weights folded in), as Keras checks them.

The epoch's loss is the mean of the batch losses weighted by batch size (per step for steps);
metrics are stateful, so their value after the last batch is the epoch's."""
from __future__ import annotations

import numpy as np

from tensorweave.framework.errors import OutOfRangeError
from tensorweave.ops.data.dataset import Dataset
from tensorweave.ops.data.experimental import INFINITE_CARDINALITY as INFINITE, cardinality
from tensorweave.ops.data.iterator import Iterator
from tensorweave.keras import backend as K, callbacks as cbks
from tensorweave.keras.utils.data_utils import GeneratorEnqueuer, OrderedEnqueuer, Sequence

TRAIN, TEST, PREDICT = "train", "test", "predict"


def _placeholder_dtype(dtype) -> str:
    """The dtype of the placeholder for data of `dtype` (numpy's or a dataset's): floats as floatx,
    strings as string, integers and bools as they are."""
    if isinstance(dtype, np.dtype):
        if dtype.kind in "USO":
            return "string"
        if dtype.kind in "iub":
            return dtype.name
        return K.floatx()
    return K.floatx() if dtype.is_floating else dtype.name


def _by_input_name(x) -> tuple:
    """(names, values, whether a dict) of the inputs data `x` gives a model not yet built, as
    Keras's ModelInputs names them: a dict's keys in sorted order, else "input_1", "input_2", ..."""
    if isinstance(x, dict):
        names = sorted(x)
        return names, [x[name] for name in names], True
    values = list(x) if isinstance(x, (list, tuple)) else [x]
    return [f"input_{i + 1}" for i in range(len(values))], values, False


def set_inputs_from_data(model, x, dataset=None) -> None:
    """Builds a model without inputs (Sequential without an input shape, subclassed) on
    placeholders for `x` (numpy data) or for the `x` part of `dataset`'s elements: the batch
    dimension unknown, a 1-D array as a column (None, 1), as Keras's deferred build."""
    if dataset is not None:
        shapes, types = dataset.output_shapes, dataset.output_types
        if isinstance(types, tuple):   # elements (x, y) or (x, y, sample_weight)
            shapes, types = shapes[0], types[0]
        names, shapes, as_dict = _by_input_name(shapes)
        dtypes = _by_input_name(types)[1]
        shapes = [s.as_list() if s.ndims is not None else [None] for s in shapes]
    else:
        names, values, as_dict = _by_input_name(x)
        values = [np.asarray(v) for v in values]
        shapes, dtypes = [v.shape for v in values], [v.dtype for v in values]
    shapes = [(None,) + tuple(s[1:]) if len(s) > 1 else (None, 1) for s in shapes]
    model._set_inputs_from_data(names, shapes, [_placeholder_dtype(d) for d in dtypes], as_dict)


# -- standardizing user data ----------------------------------------------------------------------
def _as_list(data, names: list, what: str) -> list:
    """x or y (an array, a list in order, a dict by name) as one array per name."""
    if data is None:
        return [None] * len(names)
    if isinstance(data, dict):
        missing = [n for n in names if n not in data]
        if missing:
            raise ValueError(f'No data provided for "{missing[0]}". Need data for each key in: {names}')
        return [np.asarray(data[n]) for n in names]
    if isinstance(data, (list, tuple)):
        if len(data) != len(names):
            raise ValueError(f"Error when checking model {what}: the list of Numpy arrays that you are passing to "
                             f"your model is not the size the model expected. Expected to see {len(names)} "
                             f"array(s), but instead got the following list of {len(data)} arrays: "
                             f"{[np.asarray(d).shape for d in data]}")
        return [np.asarray(d) for d in data]
    if len(names) != 1:
        raise ValueError(f"Error when checking model {what}: you are passing a single Numpy array to a model that "
                         f"expects {len(names)} arrays: {names}")
    return [np.asarray(data)]


def _check_shapes(arrays: list, names: list, shapes: list, what: str) -> list:
    """Arrays of the ranks and known dimensions the model expects (a 1-D array of a 2-D one
    gets its trailing axis, as Keras adds it)."""
    out = []
    for array, name, shape in zip(arrays, names, shapes):
        if shape is None:
            out.append(array)
            continue
        if array.ndim == 1 and len(shape) == 2:
            array = array.reshape(-1, 1)
        if array.ndim != len(shape):
            raise ValueError(f"Error when checking {what}: expected {name} to have {len(shape)} dimensions, but got "
                             f"array with shape {array.shape}")
        for dim, want in zip(array.shape[1:], shape[1:]):
            if want is not None and dim != want:
                raise ValueError(f"Error when checking {what}: expected {name} to have shape {tuple(shape[1:])} but "
                                 f"got array with shape {array.shape[1:]}")
        out.append(array)
    return out


def standardize_weights(y, sample_weight=None, class_weight=None, sample_weight_mode=None):
    """Keras's one weight per sample (or per timestep, "temporal"): sample_weight times the
    class_weight of each sample's class (the argmax of a one-hot y), ones when neither is given."""
    if sample_weight is not None:
        sample_weight = np.asarray(sample_weight)
        want = 2 if sample_weight_mode == "temporal" else 1
        if sample_weight.ndim != want:
            raise ValueError(f"Found a sample_weight array with shape {sample_weight.shape}. In order to use "
                             "timestep-wise sample weights, you should specify sample_weight_mode=\"temporal\" in "
                             "compile(); a sample-wise sample_weight array is 1D."
                             if want == 1 else f"Found a sample_weight array with shape {sample_weight.shape}. In "
                             "order to use timestep-wise sample weighting, you should pass a 2D sample_weight array.")
        if y.shape[:sample_weight.ndim] != sample_weight.shape:
            raise ValueError(f"Found a sample_weight array with shape {sample_weight.shape} for an input with shape "
                             f"{y.shape}. sample_weight cannot be broadcast.")
    class_sample_weight = None
    if isinstance(class_weight, dict):
        if y.ndim > 2:
            raise ValueError("`class_weight` not supported for 3+ dimensional targets.")
        classes = y
        if y.ndim == 2:
            classes = np.argmax(y, axis=1) if y.shape[1] > 1 else y.reshape(y.shape[0])
        class_sample_weight = np.asarray([class_weight[c] for c in classes if c in class_weight])
        if len(class_sample_weight) != len(classes):
            raise ValueError(f"`class_weight` must contain all classes in the data. The classes "
                             f"{set(classes.tolist()) - set(class_weight)} exist in the data but not in "
                             "`class_weight`.")
    if class_sample_weight is not None and sample_weight is not None:
        return class_sample_weight * sample_weight
    if sample_weight is not None:
        return sample_weight
    if class_sample_weight is not None:
        return class_sample_weight
    return np.ones(y.shape[:2] if sample_weight_mode == "temporal" else y.shape[:1], dtype=K.floatx())


def _check_lengths(x: list, y: list, w: list) -> None:
    set_x = {a.shape[0] for a in x}
    set_y = {a.shape[0] for a in y}
    if len(set_x) > 1:
        raise ValueError(f"All input arrays (x) should have the same number of samples. Got array shapes: "
                         f"{[a.shape for a in x]}")
    if len(set_y) > 1:
        raise ValueError(f"All target arrays (y) should have the same number of samples. Got array shapes: "
                         f"{[a.shape for a in y]}")
    if set_x and set_y and set_x != set_y:
        raise ValueError(f"Input arrays should have the same number of samples as target arrays. Found "
                         f"{set_x.pop()} input samples and {set_y.pop()} target samples.")
    set_w = {a.shape[0] for a in w}
    if set_y and set_w and set_w != set_y:
        raise ValueError(f"Sample_weight arrays should have the same number of samples as target arrays. Got "
                         f"{set_y.pop()} input samples and {set_w.pop()} target samples.")


def standardize(model, x, y=None, sample_weight=None, class_weight=None, need_targets=None) -> list:
    """The arrays the model's functions feed for (x, y, sample_weight): inputs, then (when y is
    given or the model is compiled and targets are needed) targets and sample weights."""
    if not model.inputs:
        set_inputs_from_data(model, x)
    fed = [(name, t) for name, t in zip(model.input_names, model.inputs) if K.is_placeholder(t)]
    names = [name for name, _ in fed]
    shapes = [t.shape.as_list() if t.shape.ndims is not None else None for _, t in fed]
    xs = _as_list(x, names, "input") if fed else []
    for name, array, (_, t) in zip(names, xs, fed):
        if array is None or (array.dtype == object and t.dtype.name != "string"):
            raise ValueError(f"Please provide data for the model's input {name!r} (x is {x!r}).")
    xs = _check_shapes(xs, names, shapes, "input")
    xs = [np.asarray(a, dtype=t.dtype.as_numpy_dtype) for a, (_, t) in zip(xs, fed)]
    if need_targets is None:
        need_targets = y is not None
    if not need_targets:
        _check_lengths(xs, [], [])
        return xs
    endpoints = [e for e in model._endpoints if not e.skipped]
    fed = [e for e in endpoints if e.feed_target is not None]
    if y is None and fed:
        raise ValueError("You passed no targets (`y`) for a compiled model: fit and evaluate need them.")
    names = [e.name for e in fed]
    if not fed:
        ys = []
    elif isinstance(y, dict) or len(fed) == len(model._endpoints):
        ys = _as_list(y, names, "target")
    else:   # a list for every output, the ones without a loss included
        ys = [a for a, e in zip(_as_list(y, [e.name for e in model._endpoints], "target"), model._endpoints)
              if e in fed]
    ys = _check_shapes(ys, names, [e.feed_target.shape.as_list() for e in fed], "target")
    for array, e in zip(ys, fed):
        _check_loss_and_target(array, e)
    if isinstance(sample_weight, dict):   # outputs left out are not weighted
        weights = [sample_weight.get(e.name) for e in endpoints]
    elif isinstance(sample_weight, (list, tuple)):
        if len(sample_weight) != len(endpoints):
            raise ValueError(f"When passing a list as sample_weight, it should have one entry per model output "
                             f"with a loss ({len(endpoints)}); got {len(sample_weight)}.")
        weights = list(sample_weight)
    else:
        weights = [sample_weight] * len(endpoints)
    per_output = isinstance(class_weight, dict) and any(e.name in class_weight for e in endpoints)
    y_of = dict(zip(names, ys))
    ws = []
    for e, w in zip(endpoints, weights):
        cw = class_weight.get(e.name) if per_output else class_weight
        if e.name in y_of:
            ws.append(standardize_weights(y_of[e.name], w, cw, e.sample_weight_mode).astype(K.floatx()))
        else:   # targets given as tensors in compile: only given weights are fed
            ws.append(None if w is None else np.asarray(w, dtype=K.floatx()))
    ys = [np.asarray(a, dtype=e.feed_target.dtype.as_numpy_dtype) for a, e in zip(ys, fed)]
    _check_lengths(xs, ys, [w for w in ws if w is not None])
    return xs + ys + ws


def _check_loss_and_target(y, endpoint) -> None:
    """Keras's check that a crossentropy's targets have the output's last dimension."""
    fn = getattr(endpoint.loss_fn, "fn", endpoint.loss_fn)
    name = getattr(fn, "__name__", type(fn).__name__)
    last = endpoint.output.shape.as_list()[-1] if endpoint.output.shape.ndims else None
    if name in ("categorical_crossentropy", "binary_crossentropy", "CategoricalCrossentropy",
                "BinaryCrossentropy") and last is not None and y.shape[-1] != last:
        raise ValueError(f"A target array with shape {y.shape} was passed for an output of shape "
                         f"{tuple(endpoint.output.shape.as_list())} while using as loss `{name}`. This loss expects "
                         "targets to have the same shape as the output.")


def _num_samples(ins: list) -> int:
    return int(ins[0].shape[0]) if ins else 0


# -- batch sources --------------------------------------------------------------------------------
def _is_generator_like(data) -> bool:
    return hasattr(data, "__next__") or isinstance(data, Sequence)


def _unpack(data, mode):
    """(x, y, sample_weight) of one element of a dataset or generator."""
    if isinstance(data, tuple) and len(data) in (1, 2, 3):
        x, y, w = (list(data) + [None, None])[:3]
        return x, y, w
    if mode == PREDICT:
        return data, None, None
    raise ValueError(f"Output of generator should be a tuple `(x, y, sample_weight)` or `(x, y)`. Found: {data}")


class _StepSource:
    """Elements of a Dataset (fetched in the Keras session), a Sequence or a generator, `steps`
    per epoch (a Dataset without steps: until its end, restarted each epoch)."""

    def __init__(self, data, steps, shuffle=False, workers=1, max_queue_size=10, use_multiprocessing=False,
                 what="steps_per_epoch"):
        self.data, self.steps, self.enqueuer = data, steps, None
        self.dataset = isinstance(data, (Dataset, Iterator))
        self.restart = False   # a Dataset without steps restarts each epoch
        if isinstance(data, Dataset):
            with K.get_graph().as_default():
                if steps is None:
                    iterator = data.make_initializable_iterator()
                    self.initializer, self.restart = iterator.initializer, True
                    self.steps = self._known_size(data, what)
                else:
                    iterator, self.initializer = data.make_one_shot_iterator(), None
                self.next_element = iterator.get_next()
        elif isinstance(data, Iterator):
            self.initializer = None
            with K.get_graph().as_default():
                self.next_element = data.get_next()
        else:
            if steps is None:
                if not isinstance(data, Sequence):
                    raise ValueError(f"`{what}=None` is only valid for a generator based on the "
                                     f"`keras.utils.Sequence` class. Please specify `{what}` or use the "
                                     "`keras.utils.Sequence` class.")
                self.steps = len(data)
            if workers > 0:
                self.enqueuer = (OrderedEnqueuer(data, use_multiprocessing=use_multiprocessing, shuffle=shuffle)
                                 if isinstance(data, Sequence) else
                                 GeneratorEnqueuer(data, use_multiprocessing=use_multiprocessing))
                self.enqueuer.start(workers=workers, max_queue_size=max_queue_size)
                self.output = self.enqueuer.get()
            elif isinstance(data, Sequence):
                self.output = self._sequence_forever(data, shuffle)
            else:
                self.output = data

    @staticmethod
    def _known_size(dataset, what):
        """The dataset's cardinality when tf.data knows it (None when it does not); an infinite
        dataset needs `steps`."""
        size = int(K.get_session().run(cardinality(dataset)))
        if size == INFINITE:
            raise ValueError(f"When passing an infinitely repeating dataset, you must specify the `{what}` argument.")
        return size if size >= 0 else None

    @staticmethod
    def _sequence_forever(sequence, shuffle):
        while True:
            order = np.random.permutation(len(sequence)) if shuffle else range(len(sequence))
            for i in order:
                yield sequence[int(i)]
            sequence.on_epoch_end()

    def epoch(self):
        """This epoch's elements."""
        if self.dataset:
            session = K.get_session()
            if self.initializer is not None:
                session.run(self.initializer)
            step = 0
            while self.steps is None or step < self.steps:
                try:
                    yield session.run(self.next_element)
                except OutOfRangeError:
                    if not self.restart:
                        raise ValueError(f"Your dataset ran out of data after {step} steps; make sure it can give "
                                         f"at least `steps` ({self.steps}) batches (use `repeat()`).") from None
                    return
                step += 1
            return
        for _ in range(self.steps):
            try:
                yield next(self.output)
            except StopIteration:
                return

    def close(self) -> None:
        if self.enqueuer is not None:
            self.enqueuer.stop()


# -- the loop -------------------------------------------------------------------------------------
def _phase(model, mode) -> list:
    return model._phase_values(1 if mode == TRAIN else 0)


def _function(model, mode):
    if mode == TRAIN:
        model._make_train_function()
        return model.train_function
    if mode == TEST:
        model._make_test_function()
        return model.test_function
    model._make_predict_function()
    return model.predict_function


def _batches(model, mode, ins, batch_size, shuffle, source, class_weight, steps):
    """(batch arrays, batch size) of one epoch (numpy data with `steps`: the whole arrays each
    step, as Keras feeds them)."""
    if ins is not None and steps:
        for _ in range(steps):
            yield ins, _num_samples(ins)
        return
    if source is not None:
        for element in source.epoch():
            x, y, w = _unpack(element, mode)
            batch = standardize(model, x, y, w, class_weight, need_targets=mode != PREDICT)
            yield batch, _num_samples(batch)
        return
    n = _num_samples(ins)
    index = np.arange(n)
    if shuffle == "batch":
        count = n // batch_size
        head = index[:count * batch_size].reshape(count, batch_size)
        np.random.shuffle(head)
        index = np.append(head.flatten(), index[count * batch_size:])
    elif shuffle:
        np.random.shuffle(index)
    for start in range(0, n, batch_size):
        ids = index[start:start + batch_size]
        yield [a[ids] for a in ins], len(ids)


def _should_validate(validation_freq, epoch) -> bool:
    """validation_freq: every so many epochs (an int) or the 1-based epochs to validate after."""
    if isinstance(validation_freq, int):
        if validation_freq < 1:
            raise ValueError("`validation_freq` can not be less than 1.")
        return (epoch + 1) % validation_freq == 0
    return epoch + 1 in validation_freq


def _make_logs(model, logs: dict, outputs: list, mode, prefix="") -> dict:
    if mode in (TRAIN, TEST):
        for label, output in zip(model.metrics_names, outputs):
            logs[prefix + label] = output
    else:
        logs["outputs"] = outputs
    return logs


def model_iteration(model, mode, ins=None, source=None, steps=None, batch_size=32, epochs=1, verbose=1, callbacks=None,
                    shuffle=False, class_weight=None, initial_epoch=0, val=None, validation_freq=1,
                    in_fit=False):
    """Runs `epochs` of the train/test/predict function over arrays `ins` or a step `source`;
    fit's History, evaluate's results or predict's outputs."""
    f = _function(model, mode) if model.inputs else None   # a model built by its first batch: made then
    use_steps = source is not None or bool(steps)
    generator = source is not None and not source.dataset
    num = (steps or source.steps) if use_steps else _num_samples(ins)
    if not in_fit:
        callbacks = cbks.configure_callbacks(callbacks, model, do_validation=val is not None, batch_size=batch_size,
                                             epochs=epochs, steps_per_epoch=num if use_steps else None,
                                             samples=None if use_steps else num, verbose=verbose,
                                             count_mode="steps" if use_steps else "samples", mode=mode)
    progbar = None
    if mode != TRAIN and verbose == 1 and not in_fit:
        progbar = cbks.ProgbarLogger("steps" if use_steps else "samples",
                                     stateful_metrics=model.metrics_names[1:] if mode == TEST else None)
        progbar.set_params({**callbacks.params, "verbose": verbose, "epochs": 1})
        progbar.on_epoch_begin(0)
    if mode == TRAIN and verbose and not generator and num:   # as Keras's arrays-and-datasets loop
        unit = "steps" if use_steps else "samples"
        val_count = None if val is None else val.get("samples") or getattr(val.get("source"), "steps", None)
        print(f"Train on {num} {unit}" + (f", validate on {val_count} {unit}" if val_count else ""))
    callbacks._call_begin_hook(mode)
    state = model.__dict__.get("_training_state")   # a multi-worker fit resuming from ModelCheckpoint's backup
    if state is not None:
        initial_epoch = state.maybe_load_initial_epoch_from_ckpt(initial_epoch, mode)
    results = None
    for epoch in range(initial_epoch, epochs):
        if callbacks.model.stop_training:
            break
        epoch_logs = {}
        if mode != PREDICT:
            model.reset_metrics()
        if mode == TRAIN:
            callbacks.on_epoch_begin(epoch, epoch_logs)
        loss_sum, seen, outputs, done = 0.0, 0, [], 0
        batch_outs = None
        for batch_index, (batch, size) in enumerate(_batches(model, mode, ins, batch_size, shuffle, source,
                                                             class_weight, steps)):
            # Keras's batch size in the logs: 1 per step of a dataset or of numpy data with steps
            batch_logs = {"batch": batch_index, "size": 1 if use_steps and not generator else size}
            callbacks._call_batch_hook(mode, "begin", batch_index, batch_logs)
            if f is None:
                f = _function(model, mode)
            batch_outs = f(batch + _phase(model, mode))
            done += 1
            if mode == PREDICT:
                outputs.append(batch_outs)
            else:
                loss_sum += batch_outs[0] * (1 if use_steps else size)
                seen += size
            batch_logs = _make_logs(model, batch_logs, batch_outs, mode)
            callbacks._call_batch_hook(mode, "end", batch_index, batch_logs)
            if progbar is not None:
                progbar.on_batch_end(batch_index, batch_logs)
            if callbacks.model.stop_training:
                break
        if done == 0:
            raise ValueError("Empty training data." if mode == TRAIN else "Empty input data: no batch was given.")
        if mode == PREDICT:
            results = [np.concatenate([o[i] for o in outputs]) for i in range(len(outputs[0]))]
        else:
            results = [loss_sum / (done if use_steps else (num or seen))] + list(batch_outs[1:])
            epoch_logs = _make_logs(model, epoch_logs, results, mode)
        if mode == TRAIN and val is not None and _should_validate(validation_freq, epoch) \
                and not callbacks.model.stop_training:
            val_results = model_iteration(model, TEST, ins=val.get("ins"), source=val.get("source"),
                                          batch_size=batch_size, verbose=0, callbacks=callbacks, in_fit=True)
            epoch_logs = _make_logs(model, epoch_logs, val_results if isinstance(val_results, list) else [val_results],
                                    TEST, prefix="val_")
        if mode == TRAIN:
            callbacks.on_epoch_end(epoch, epoch_logs)
    if progbar is not None:
        progbar.on_epoch_end(0, epoch_logs)
    callbacks._call_end_hook(mode)
    if mode == TRAIN:
        return model.history
    return results[0] if len(results) == 1 else results


def _source_or_arrays(model, x, y, sample_weight, class_weight, steps, shuffle, workers, max_queue_size,
                      use_multiprocessing, mode, what):
    """(arrays, None) for numpy data, (None, step source) for a Dataset, Sequence or generator."""
    if isinstance(x, (Dataset, Iterator)) or _is_generator_like(x):
        if y is not None:
            raise ValueError("`y` argument is not supported when using dataset as input." if not _is_generator_like(x)
                             else "`y` argument is not supported when data is a generator or Sequence instance. "
                                  "Instead pass targets as the second element of the generator.")
        if sample_weight is not None:
            raise ValueError("`sample_weight` argument is not supported when input `x` is a dataset or a generator. "
                             "Instead pass sample weights as the third element of the generator.")
        if not model.inputs and isinstance(x, (Dataset, Iterator)):   # built on the elements' structure, as Keras
            set_inputs_from_data(model, None, dataset=x)
        return None, _StepSource(x, steps, shuffle=shuffle, workers=workers, max_queue_size=max_queue_size,
                                 use_multiprocessing=use_multiprocessing, what=what)
    if x is None:
        raise ValueError("Please provide data as input (`x`), as numpy arrays, a dataset or a generator.")
    ins = standardize(model, x, y, sample_weight, class_weight, need_targets=mode != PREDICT)
    return ins, None


def fit(model, x, y, batch_size, epochs, verbose, callbacks, validation_split, validation_data, shuffle,
        class_weight, sample_weight, initial_epoch, steps_per_epoch, validation_steps, validation_freq,
        max_queue_size, workers, use_multiprocessing):
    """Model.fit over arrays or a step source, with validation data or split."""
    ins, source = _source_or_arrays(model, x, y, sample_weight, class_weight, steps_per_epoch, shuffle, workers,
                                    max_queue_size, use_multiprocessing, TRAIN, "steps_per_epoch")
    val = None
    try:
        if validation_data is not None:
            if isinstance(validation_data, (Dataset, Iterator)) or _is_generator_like(validation_data):
                val = {"source": _StepSource(validation_data, validation_steps, workers=workers,
                                             max_queue_size=max_queue_size, use_multiprocessing=use_multiprocessing,
                                             what="validation_steps")}
            else:
                if not isinstance(validation_data, (tuple, list)) or len(validation_data) not in (2, 3):
                    raise ValueError("When passing validation_data, it must contain 2 (x_val, y_val) or 3 (x_val, "
                                     "y_val, val_sample_weights) items, however it contains "
                                     f"{len(validation_data)} items")
                val_x, val_y, val_w = (list(validation_data) + [None])[:3]
                val_ins = standardize(model, val_x, val_y, val_w, need_targets=True)
                val = {"ins": val_ins, "samples": _num_samples(val_ins)}
        elif validation_split and 0.0 < validation_split < 1.0:
            if source is not None:
                raise ValueError("`validation_split` argument is not supported when input `x` is a dataset or a "
                                 "generator. Please use `validation_data` instead.")
            split_at = int(_num_samples(ins) * (1.0 - validation_split))
            ins, val_ins = [a[:split_at] for a in ins], [a[split_at:] for a in ins]
            val = {"ins": val_ins, "samples": _num_samples(val_ins)}
        elif validation_steps:
            raise ValueError("`validation_steps` should not be specified if `validation_data` is None.")
        return model_iteration(model, TRAIN, ins=ins, source=source, steps=steps_per_epoch,
                               batch_size=batch_size or 32, epochs=epochs,
                               verbose=verbose, callbacks=callbacks, shuffle=shuffle, class_weight=class_weight,
                               initial_epoch=initial_epoch, val=val, validation_freq=validation_freq)
    finally:
        for s in (source, (val or {}).get("source")):
            if s is not None:
                s.close()


def evaluate(model, x, y, batch_size, verbose, sample_weight, steps, callbacks, max_queue_size, workers,
             use_multiprocessing):
    return _one_pass(model, TEST, x, y, sample_weight, batch_size, verbose, steps, callbacks, max_queue_size, workers,
                     use_multiprocessing)


def predict(model, x, batch_size, verbose, steps, callbacks, max_queue_size, workers, use_multiprocessing):
    return _one_pass(model, PREDICT, x, None, None, batch_size, verbose, steps, callbacks, max_queue_size, workers,
                     use_multiprocessing)


def _one_pass(model, mode, x, y, sample_weight, batch_size, verbose, steps, callbacks, max_queue_size, workers,
              use_multiprocessing):
    """evaluate's (`mode` TEST) or predict's (PREDICT) one pass over the data."""
    ins, source = _source_or_arrays(model, x, y, sample_weight, None, steps, False, workers, max_queue_size,
                                    use_multiprocessing, mode, "steps")
    try:
        return model_iteration(model, mode, ins=ins, source=source, steps=steps if ins is not None else None,
                               batch_size=batch_size or 32, verbose=verbose, callbacks=callbacks)
    finally:
        if source is not None:
            source.close()
