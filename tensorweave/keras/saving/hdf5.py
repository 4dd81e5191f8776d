"""Keras's HDF5 files (TF 1.15's keras/saving/hdf5_format.py), with h5py (the "keras" extra).

A whole model (Model.save, keras.models.save_model) is one file whose root attributes are
`keras_version`, `backend`, `model_config` (the architecture as JSON, {"class_name", "config"})
and, when the model is compiled, `training_config` (JSON: loss, metrics, weighted_metrics,
sample_weight_mode, loss_weights, optimizer_config); the group `model_weights` holds the weights
and `optimizer_weights` the optimizer's state. A weights group (`model_weights`, or the root of a
save_weights file) has the attributes `layer_names`, `backend` and `keras_version`, and one group
per layer whose attribute `weight_names` lists its weights ("dense/kernel:0"), each a dataset at
that path inside the layer's group ("dense/dense/kernel:0"). An attribute longer than HDF5's
object header allows is split into `name0`, `name1`, ... as Keras does.

Keras 2.15 files load too: its "Functional" class name is tf.keras.Model here, and its extra
`top_level_model_weights` group (not in layer_names) is ignored. Loading converts cuDNN recurrent
weights (CuDNNLSTM, CuDNNGRU) into the plain layers' layout (LSTM, GRU(reset_after=True)) and
back, and Keras 1 weights into Keras 2's, as Keras's load_weights does."""
from __future__ import annotations

import json
import logging
import os

import numpy as np

from tensorweave.framework.shapes import Dimension, TensorShape
from tensorweave.keras import backend as K
from tensorweave.keras import losses as losses_module
from tensorweave.keras import optimizers as optimizers_module
from tensorweave.keras.engine.base_layer import deserialize
from tensorweave.keras.engine.network import KERAS_VERSION

try:   # h5py is optional: pip install 'tensorweave[keras]'
    import h5py
except ImportError:  # pragma: no cover - exercised only without the extra
    h5py = None

HDF5_OBJECT_HEADER_LIMIT = 64512   # bytes an HDF5 attribute may hold in an object header
HDF5_SUFFIXES = (".h5", ".keras", ".hdf5")
_log = logging.getLogger("tensorweave.keras")


def require_h5py(what: str) -> None:
    """ImportError naming `what` when h5py (the optional "keras" extra) is not installed."""
    if h5py is None:
        raise ImportError(f"{what} requires h5py, which is not installed: pip install 'tensorweave[keras]' "
                          "(or pip install h5py).")


def is_hdf5_filepath(filepath) -> bool:
    return str(filepath).endswith(HDF5_SUFFIXES)


def get_json_type(obj):
    """What json.dumps writes for a Keras object in a saved config (Keras's get_json_type): an
    object with get_config as {"class_name", "config"}, numpy values as lists/scalars, a function
    or class as its name, a shape as its list."""
    if hasattr(obj, "get_config"):
        return {"class_name": type(obj).__name__, "config": obj.get_config()}
    if type(obj).__module__ == np.__name__:
        return obj.tolist() if isinstance(obj, np.ndarray) else obj.item()
    if callable(obj):
        return obj.__name__
    if isinstance(obj, Dimension):
        return obj.value
    if isinstance(obj, TensorShape):
        return obj.as_list()
    if hasattr(obj, "name") and hasattr(obj, "as_numpy_dtype"):
        return obj.name
    if obj is Ellipsis:
        return {"class_name": "__ellipsis__"}
    raise TypeError(f"Not JSON Serializable: {obj!r}")


def _text(value) -> str:
    return value.decode("utf8") if isinstance(value, bytes) else str(value)


def _keras_2_class_names(obj: dict) -> dict:
    """json object_hook: Keras 2.4+ writes a functional model's class as "Functional"."""
    if obj.get("class_name") == "Functional" and "config" in obj:
        obj["class_name"] = "Model"
    return obj


def loads_config(text):
    """A JSON config from a file attribute (bytes or str), Keras 2's class names mapped."""
    return json.loads(_text(text), object_hook=_keras_2_class_names)


# -- attributes split over the object header limit ---------------------------------------------------
def save_attributes_to_hdf5_group(group, name: str, data: list) -> None:
    """group.attrs[name] = data (a list of bytes); split into name0, name1, ... when the whole does
    not fit in an HDF5 object header."""
    bad = [x for x in data if len(x) > HDF5_OBJECT_HEADER_LIMIT]
    if bad:
        raise RuntimeError(f"The following attributes cannot be saved to HDF5 file because they are larger than "
                           f"{HDF5_OBJECT_HEADER_LIMIT} bytes: {bad}")
    array = np.asarray(data)
    chunks = 1
    chunked = np.array_split(array, chunks)
    while any(x.nbytes > HDF5_OBJECT_HEADER_LIMIT for x in chunked):
        chunks += 1
        chunked = np.array_split(array, chunks)
    if chunks > 1:
        for i, chunk in enumerate(chunked):
            group.attrs[f"{name}{i}"] = chunk
    else:
        group.attrs[name] = data


def load_attributes_from_hdf5_group(group, name: str) -> list:
    """The list of strings group.attrs[name] (or its chunks name0, name1, ...) holds."""
    if name in group.attrs:
        return [_text(x) for x in group.attrs[name]]
    data, i = [], 0
    while f"{name}{i}" in group.attrs:
        data.extend(_text(x) for x in group.attrs[f"{name}{i}"])
        i += 1
    return data


# -- weights -------------------------------------------------------------------------------------------
def layer_weights(layer) -> list:
    """A layer's weights in saved-file order: trainable then non-trainable (Keras's _legacy_weights)."""
    return list(layer.trainable_weights) + list(layer.non_trainable_weights)


def _write_datasets(group, names: list, values: list) -> None:
    for name, value in zip(names, values):
        dataset = group.create_dataset(name, value.shape, dtype=value.dtype)
        if value.shape:
            dataset[:] = value
        else:
            dataset[()] = value


def save_weights_to_hdf5_group(group, layers) -> None:
    """Writes `layers`' weights into `group` in Keras's layout (layer_names, one group per layer)."""
    save_attributes_to_hdf5_group(group, "layer_names", [layer.name.encode("utf8") for layer in layers])
    group.attrs["backend"] = b"tensorflow"
    group.attrs["keras_version"] = KERAS_VERSION.encode("utf8")
    for layer in layers:
        layer_group = group.create_group(layer.name)
        weights = layer_weights(layer)
        names = [w.name.encode("utf8") for w in weights]
        save_attributes_to_hdf5_group(layer_group, "weight_names", names)
        _write_datasets(layer_group, names, K.batch_get_value(weights))


def _saved_layers(group) -> list:
    """[(layer name, [weight values])] of a weights group, in its layer_names order."""
    if "layer_names" not in group.attrs and "layer_names0" not in group.attrs:
        raise ValueError(f"{_where(group)} holds no Keras weights (no `layer_names` attribute).")
    saved = []
    for name in load_attributes_from_hdf5_group(group, "layer_names"):
        if name not in group:
            raise ValueError(f"{_where(group)} lists layer {name!r} in layer_names but has no group for it.")
        layer_group = group[name]
        values = []
        for weight_name in load_attributes_from_hdf5_group(layer_group, "weight_names"):
            if weight_name not in layer_group:
                raise ValueError(f"{_where(group)}: layer {name!r} lists weight {weight_name!r} but has no dataset "
                                 "for it.")
            values.append(np.asarray(layer_group[weight_name]))
        saved.append((name, values))
    return saved


def _where(group) -> str:
    return f"HDF5 file {group.file.filename!r} (group {group.name!r})"


def _check_shapes(k: int, layer, symbolic, values, skip_mismatch: bool) -> list:
    """[(variable, value)] of a layer whose values all fit; ValueError naming the layer, weight and
    shapes when one does not (a warning and [] with skip_mismatch)."""
    for weight, value in zip(symbolic, values):
        if K.int_shape(weight) != value.shape:
            message = (f'Layer #{k} (named "{layer.name}"), weight {weight.name} has shape {K.int_shape(weight)}, but '
                       f"the saved weight has shape {value.shape}.")
            if skip_mismatch:
                _log.warning("Skipping loading of weights for layer %s due to mismatch in shape: %s", layer.name,
                             message)
                return []
            raise ValueError(message)
    return list(zip(symbolic, values))


# -- converting saved weights to the layer loading them -------------------------------------------
def preprocess_weights_for_loading(layer, weights, original_keras_version=None, original_backend=None) -> list:
    """The saved `weights` of a layer as `layer` takes them (Keras 2's preprocess_weights_for_loading):
    Keras 1 weights (a file without keras_version, or "1") in Keras 2's layout; a convolution kernel
    saved in Theano's order (out, in, rows, cols) transposed; cuDNN and plain recurrent weights
    converted into each other (_convert_rnn_weights); also inside Bidirectional, TimeDistributed
    and nested models. (Keras 2 converts a Keras 1 TimeDistributed's inner weights twice; once here.)"""
    kind = type(layer).__name__
    if kind == "Bidirectional":
        half = len(weights) // 2
        weights = (preprocess_weights_for_loading(layer.forward_layer, weights[:half], original_keras_version,
                                                  original_backend) +
                   preprocess_weights_for_loading(layer.backward_layer, weights[half:], original_keras_version,
                                                  original_backend))
    elif kind == "TimeDistributed":
        weights = preprocess_weights_for_loading(layer.layer, weights, original_keras_version, original_backend)
    elif kind in ("Model", "Sequential", "Functional"):
        weights = _convert_nested_model(layer, weights, original_keras_version, original_backend)
    if original_keras_version == "1":
        weights = _convert_keras_1_weights(layer, list(weights))
    if kind in ("Conv1D", "Conv2D", "Conv3D", "Conv2DTranspose", "ConvLSTM2D") and weights and \
            K.int_shape(layer.weights[0]) != weights[0].shape and weights[0].ndim == 4:
        weights = list(weights)   # a Theano-ordered kernel (out, in, rows, cols)
        weights[0] = np.transpose(weights[0], (3, 2, 0, 1))
        if kind == "ConvLSTM2D":
            weights[1] = np.transpose(weights[1], (3, 2, 0, 1))
    return _convert_rnn_weights(layer, weights)


def _gates_of_keras_1(weights: list, order: list) -> list:
    """Keras 1's per-gate (kernel, recurrent kernel, bias) triples joined in `order` of the gates."""
    return [np.concatenate([weights[3 * gate + part] for gate in order], axis=-1) for part in range(3)]


def _convert_keras_1_weights(layer, weights: list) -> list:
    """Keras 1's weights of a layer in Keras 2's layout (Keras 2's conversions): convolution kernels
    of channels_first layers (and Conv1D's 4-D kernels) reordered, GRU's 9 and LSTM's and
    ConvLSTM2D's 12 per-gate weights joined (Keras 1's LSTM gates i, c, f, o as Keras 2's i, f, c, o)."""
    kind = type(layer).__name__
    channels_first = getattr(layer, "data_format", None) == "channels_first"
    if kind == "Conv1D":
        shape = weights[0].shape
        if shape[:2] != (layer.kernel_size[0], 1) or shape[3] != layer.filters:
            weights[0] = np.transpose(weights[0], (2, 3, 1, 0))   # (filters, input_dim, length, 1)
        weights[0] = weights[0][:, 0, :, :]
    elif kind == "Conv2D" and channels_first:
        weights[0] = np.transpose(weights[0], (2, 3, 1, 0))
    elif kind == "Conv2DTranspose":
        weights[0] = np.transpose(weights[0], (2, 3, 0, 1) if channels_first else (0, 1, 3, 2))
    elif kind == "Conv3D" and channels_first:
        weights[0] = np.transpose(weights[0], (2, 3, 4, 1, 0))
    elif kind == "GRU" and len(weights) == 9:
        weights = _gates_of_keras_1(weights, [0, 1, 2])
    elif kind in ("LSTM", "ConvLSTM2D") and len(weights) == 12:
        weights = _gates_of_keras_1(weights, [0, 2, 1, 3])
        if kind == "ConvLSTM2D" and channels_first:
            weights[:2] = [np.transpose(w, (2, 3, 1, 0)) for w in weights[:2]]
    return weights


def _convert_nested_model(model, weights, original_keras_version, original_backend) -> list:
    """A nested model's saved weights (its trainable, then its non-trainable ones), each sublayer's
    converted for it."""
    trainable, non_trainable = weights[:len(model.trainable_weights)], weights[len(model.trainable_weights):]
    new_trainable, new_non_trainable = [], []
    for sublayer in model.layers:
        n_trainable, n_non_trainable = len(sublayer.trainable_weights), len(sublayer.non_trainable_weights)
        if not n_trainable + n_non_trainable:
            continue
        converted = preprocess_weights_for_loading(sublayer, trainable[:n_trainable] + non_trainable[:n_non_trainable],
                                                   original_keras_version, original_backend)
        new_trainable += converted[:n_trainable]
        new_non_trainable += converted[n_trainable:]
        trainable, non_trainable = trainable[n_trainable:], non_trainable[n_non_trainable:]
    return new_trainable + trainable + new_non_trainable + non_trainable


def _convert_rnn_weights(layer, weights) -> list:
    """Keras's conversion of recurrent weights between the native and the cuDNN layouts, in both
    directions: LSTM <-> CuDNNLSTM and GRU(reset_after=True) <-> CuDNNGRU. The source is told by
    the bias's shape; each gate's input kernel is transposed between C and Fortran order, each
    recurrent kernel transposed; LSTM biases are summed (cuDNN's input + recurrent) or split in
    halves, GRU biases reshaped. Weights without a bias are left as they are; GRU(reset_after=
    False) weights are not compatible with cuDNN's (ValueError)."""
    target = type(layer).__name__
    if len(weights) != 3 or target not in ("LSTM", "CuDNNLSTM", "GRU", "CuDNNGRU"):
        return weights
    gates = 4 if target.endswith("LSTM") else 3
    units = weights[1].shape[0]
    bias_shape = weights[2].shape

    def convert_kernels(from_cudnn: bool) -> list:
        order = "F" if from_cudnn else "C"
        kernels = np.hstack([k.T.reshape(k.shape, order=order) for k in np.hsplit(weights[0], gates)])
        recurrent_kernels = np.hstack([k.T for k in np.hsplit(weights[1], gates)])
        return [kernels, recurrent_kernels]

    if gates == 4:
        sources = {(2 * units * gates,): "CuDNNLSTM", (units * gates,): "LSTM"}
        if bias_shape not in sources:
            raise ValueError(f"Invalid bias shape: {bias_shape}")
        source = sources[bias_shape]
        if source == target:
            return weights
        if source == "CuDNNLSTM":   # cuDNN's input and recurrent biases act as their sum
            return convert_kernels(True) + [np.sum(np.split(weights[2], 2, axis=0), axis=0)]
        return convert_kernels(False) + [np.tile(0.5 * weights[2], 2)]
    sources = {(2 * units * gates,): "CuDNNGRU", (2, units * gates): "GRU(reset_after=True)",
               (units * gates,): "GRU(reset_after=False)"}
    if bias_shape not in sources:
        raise ValueError(f"Invalid bias shape: {bias_shape}")
    source = sources[bias_shape]
    if target == "GRU":
        target = f"GRU(reset_after={bool(layer.reset_after)})"
    if source == target:
        return weights
    if "GRU(reset_after=False)" in (source, target):
        raise ValueError(f"{source} is not compatible with {target}")
    from_cudnn = source == "CuDNNGRU"
    return convert_kernels(from_cudnn) + [np.asarray(weights[2]).reshape((2, -1) if from_cudnn else -1)]


def _file_versions(group) -> tuple:
    """(keras_version, backend) a weights group was saved with ("1" for a file without a version)."""
    attrs = group.attrs
    return (_text(attrs["keras_version"]) if "keras_version" in attrs else "1",
            _text(attrs["backend"]) if "backend" in attrs else None)


def load_weights_from_hdf5_group(group, layers) -> None:
    """Loads the weights of `group` into `layers` by topological order: the i-th layer with
    weights gets the i-th saved layer with weights."""
    layers = [layer for layer in layers if layer_weights(layer)]
    saved = [(name, values) for name, values in _saved_layers(group) if values]
    if len(saved) != len(layers):
        raise ValueError(f"You are trying to load a weight file containing {len(saved)} layers into a model with "
                         f"{len(layers)} layers.")
    versions = _file_versions(group)
    tuples = []
    for k, (layer, (name, values)) in enumerate(zip(layers, saved)):
        symbolic = layer_weights(layer)
        values = preprocess_weights_for_loading(layer, values, *versions)
        if len(values) != len(symbolic):
            raise ValueError(f'Layer #{k} (named "{layer.name}" in the current model) was found to correspond to '
                             f"layer {name} in the save file. However the new layer {layer.name} expects "
                             f"{len(symbolic)} weights, but the saved weights have {len(values)} elements.")
        tuples += _check_shapes(k, layer, symbolic, values, skip_mismatch=False)
    K.batch_set_value(tuples)


def load_weights_from_hdf5_group_by_name(group, layers, skip_mismatch: bool = False) -> None:
    """Loads each saved layer's weights into the layers of `layers` with the same name (others are
    left as they are); with skip_mismatch a layer whose weights do not fit is skipped with a
    warning instead of a ValueError."""
    by_name = {}
    for layer in layers:
        by_name.setdefault(layer.name, []).append(layer)
    versions = _file_versions(group)
    tuples = []
    for k, (name, saved_values) in enumerate(_saved_layers(group)):
        for layer in by_name.get(name, []):
            symbolic = layer_weights(layer)
            values = preprocess_weights_for_loading(layer, saved_values, *versions)
            if len(values) != len(symbolic):
                if skip_mismatch:
                    _log.warning("Skipping loading of weights for layer %s due to mismatch in number of weights (%d "
                                 "vs %d).", layer.name, len(symbolic), len(values))
                    continue
                raise ValueError(f'Layer #{k} (named "{layer.name}") expects {len(symbolic)} weight(s), but the saved '
                                 f"weights have {len(values)} element(s).")
            tuples += _check_shapes(k, layer, symbolic, values, skip_mismatch)
    K.batch_set_value(tuples)


def open_hdf5(filepath, mode: str):
    """h5py.File(filepath, mode); a file that is not HDF5 (corrupt, truncated) is an OSError naming it."""
    require_h5py("Loading and saving Keras models and weights in HDF5")
    try:
        return h5py.File(os.fspath(filepath), mode)
    except OSError as e:
        if mode == "r" and not os.path.exists(filepath):
            raise OSError(f"Unable to open file {filepath!r}: no such file") from e
        raise OSError(f"Unable to open {filepath!r} as an HDF5 file (is it corrupt or truncated?): {e}") from e


# -- whole models ------------------------------------------------------------------------------------
def compile_arguments(model) -> dict:
    """What compile() was given (loss, metrics, weighted_metrics, loss_weights,
    sample_weight_mode): from the `_compile_args` dict tensorweave's compile keeps, else from the
    attributes TF 1.15's compile sets (loss, _compile_metrics, _compile_weighted_metrics,
    loss_weights, sample_weight_mode)."""
    args = getattr(model, "_compile_args", None)
    if isinstance(args, dict):
        return {"loss": getattr(model, "loss", None), **{k: args.get(k) for k in (
            "metrics", "weighted_metrics", "loss_weights", "sample_weight_mode")}}
    return {"loss": getattr(model, "loss", None), "metrics": getattr(model, "_compile_metrics", None),
            "weighted_metrics": getattr(model, "_compile_weighted_metrics", None),
            "sample_weight_mode": getattr(model, "sample_weight_mode", None),
            "loss_weights": getattr(model, "loss_weights", None)}


def training_config(model):
    """The training_config of a compiled model, None otherwise."""
    optimizer = getattr(model, "optimizer", None)
    if optimizer is None:
        return None
    config = compile_arguments(model)
    if isinstance(optimizer, optimizers_module.TFOptimizer):
        _log.warning("TensorFlow optimizers do not make it possible to access optimizer attributes or optimizer state "
                     "after instantiation. As a result, we cannot save the optimizer as part of the model save file. "
                     "You will have to compile your model again after loading it. Prefer using a Keras optimizer "
                     "instead (see keras.io/optimizers).")
    else:
        config["optimizer_config"] = {"class_name": type(optimizer).__name__, "config": optimizer.get_config()}
    return config


def save_model_to_hdf5(model, filepath, overwrite: bool = True, include_optimizer: bool = True) -> None:
    """Writes the architecture, weights, training configuration and optimizer state of `model` to
    the HDF5 file `filepath` (a path, or an open h5py.File)."""
    require_h5py("Saving a Keras model in HDF5")
    if not isinstance(filepath, h5py.File):
        if not overwrite and os.path.isfile(filepath):
            return
        with open_hdf5(filepath, "w") as f:
            save_model_to_hdf5(model, f, include_optimizer=include_optimizer)
        return
    f = filepath
    f.attrs["keras_version"] = KERAS_VERSION.encode("utf8")
    f.attrs["backend"] = b"tensorflow"
    f.attrs["model_config"] = json.dumps({"class_name": type(model).__name__, "config": model.get_config()},
                                         default=get_json_type).encode("utf8")
    save_weights_to_hdf5_group(f.create_group("model_weights"), model.layers)
    train_config = training_config(model) if include_optimizer else None
    if train_config is not None:
        f.attrs["training_config"] = json.dumps(train_config, default=get_json_type).encode("utf8")
        optimizer_weights = getattr(model.optimizer, "weights", None)
        if "optimizer_config" in train_config and optimizer_weights:
            group = f.create_group("optimizer_weights")
            names = [w.name.encode("utf8") for w in optimizer_weights]
            save_attributes_to_hdf5_group(group, "weight_names", names)
            _write_datasets(group, names, K.batch_get_value(optimizer_weights))
    f.flush()


def compile_args_from_training_config(config, custom_objects=None) -> dict:
    """model.compile's arguments from a saved training_config."""
    custom_objects = custom_objects or {}
    optimizer_config = dict(config["optimizer_config"])
    optimizer_config["config"] = {k: v for k, v in optimizer_config["config"].items() if k != "is_legacy_optimizer"}
    optimizer = optimizers_module.deserialize(optimizer_config, custom_objects=custom_objects)

    def resolve(obj):
        if isinstance(obj, dict) and "class_name" in obj:
            return losses_module.deserialize(obj, custom_objects=custom_objects)
        if isinstance(obj, dict):
            return {k: resolve(v) for k, v in obj.items()}
        if isinstance(obj, list):
            return [resolve(v) for v in obj]
        return custom_objects.get(obj, obj) if isinstance(obj, str) else obj

    return {"optimizer": optimizer, "loss": resolve(config["loss"]), "metrics": resolve(config.get("metrics")),
            "weighted_metrics": resolve(config.get("weighted_metrics")),
            "loss_weights": config.get("loss_weights"), "sample_weight_mode": config.get("sample_weight_mode")}


def load_model_from_hdf5(filepath, custom_objects=None, compile=True):
    """The model the HDF5 file `filepath` holds, with its weights; compiled with the saved
    training configuration and optimizer state when `compile` and the file has them."""
    require_h5py("Loading a Keras model from HDF5")
    if not isinstance(filepath, h5py.File):
        with open_hdf5(filepath, "r") as f:
            return load_model_from_hdf5(f, custom_objects, compile)
    f = filepath
    if "model_config" not in f.attrs:
        raise ValueError(f"No model found in config file {f.filename!r} (it has no `model_config` attribute; a "
                         "save_weights file is loaded with model.load_weights).")
    if "model_weights" not in f:
        raise ValueError(f"HDF5 file {f.filename!r} has a model_config but no `model_weights` group.")
    model = deserialize(loads_config(f.attrs["model_config"]), custom_objects=custom_objects)
    load_weights_from_hdf5_group(f["model_weights"], model.layers)
    if not compile:
        return model
    if "training_config" not in f.attrs:
        _log.warning("No training configuration found in save file: the model was *not* compiled. Compile it "
                     "manually.")
        return model
    if not hasattr(model, "compile"):
        _log.warning("The saved model has a training configuration but tf.keras.Model.compile is not available: the "
                     "model was *not* compiled.")
        return model
    config = loads_config(f.attrs["training_config"])
    if "optimizer_config" not in config:
        _log.warning("The saved training configuration has no optimizer (a TensorFlow optimizer is not saved): the "
                     "model was *not* compiled. Compile it manually.")
        return model
    model.compile(**compile_args_from_training_config(config, custom_objects))
    if "optimizer_weights" in f:
        make_train_function = getattr(model, "_make_train_function", None)
        if make_train_function is not None:
            make_train_function()   # creates the optimizer's weights
        group = f["optimizer_weights"]
        values = [np.asarray(group[name]) for name in load_attributes_from_hdf5_group(group, "weight_names")]
        try:
            with K.get_session().as_default():
                model.optimizer.set_weights(values)
        except ValueError as e:
            _log.warning("Error in loading the saved optimizer state (%s). As a result, your model is starting with a "
                         "freshly initialized optimizer.", e)
    return model
