"""Saving and loading Keras models and weights (TF 1.15's keras/saving/save.py and
Network.save_weights/load_weights): keras.models.save_model / load_model write and read the HDF5
format (saving/hdf5.py); weights are HDF5 when the path ends in .h5/.keras/.hdf5 (or
save_format="h5"), else TensorFlow's object-based checkpoint format.

A TensorFlow-format weights file is the checkpoint Keras writes: each layer with weights is the
dependency "layer_with_weights-<i>" of its model (every layer is also "layer-<i>"), each weight the
dependency of its layer by its own name, so a Dense's kernel is saved under
"layer_with_weights-0/kernel/.ATTRIBUTES/VARIABLE_VALUE", with the TrackableObjectGraph beside it;
TensorFlow's Keras loads it (the files are TensorFlow's own format with
TENSORWEAVE_CHECKPOINT_FORMAT=tensorflow). The optimizer's state is not part of these files here
(TF adds it when the model is compiled). Loading also takes a name-based TF1 checkpoint (keys are
the variables' names, "dense/kernel")."""
from __future__ import annotations

import os

from tensorweave.framework.tf_export import tf_export
from tensorweave.keras import backend as K
from tensorweave.keras.saving import hdf5
from tensorweave.ops.checkpoint.reader import NewCheckpointReader
from tensorweave.train.checkpoint import Checkpoint, _ObjectGraph
from tensorweave.train.checkpoint_management import update_checkpoint_state_internal


@tf_export("keras.models.save_model")
def save_model(model, filepath, overwrite=True, include_optimizer=True, save_format=None, signatures=None):
    """Saves `model` (architecture, weights, training configuration, optimizer state) to the HDF5
    file `filepath` (TF 1.15's default format); `overwrite=False` leaves an existing file alone."""
    if save_format not in (None, "h5", "hdf5", "keras"):
        raise ValueError(f"save_model: save_format {save_format!r} is not supported here; Keras models are saved in "
                         "HDF5 (save_format='h5'). Use tf.saved_model / tf.keras.estimator for a SavedModel.")
    hdf5.save_model_to_hdf5(model, filepath, overwrite, include_optimizer)


@tf_export("keras.models.load_model")
def load_model(filepath, custom_objects=None, compile=True):
    """The model an HDF5 file from save_model holds (custom layers, losses, ... by name in
    `custom_objects`); compiled as saved when `compile` and the file was saved compiled."""
    hdf5.require_h5py("load_model")
    if isinstance(filepath, hdf5.h5py.File) or hdf5.h5py.is_hdf5(os.fspath(filepath)):
        return hdf5.load_model_from_hdf5(filepath, custom_objects, compile)
    if not os.path.exists(filepath):
        raise OSError(f"Unable to load model: no file or directory {os.fspath(filepath)!r}")
    raise OSError(f"Unable to load model from {os.fspath(filepath)!r}: it is not an HDF5 file (corrupt, truncated, "
                  "or a SavedModel, which is loaded with tf.saved_model.loader.load).")


def _save_format(filepath, save_format) -> str:
    is_h5 = hdf5.is_hdf5_filepath(filepath)
    if save_format is None:
        return "h5" if is_h5 else "tf"
    user_format = str(save_format).lower().strip()
    if user_format in ("tensorflow", "tf"):
        if is_h5:
            raise ValueError(f'save_weights got save_format="tf"/"tensorflow", but the filepath ("{filepath}") looks '
                             'like an HDF5 file. Omit the ".h5"/".keras" when saving in TensorFlow format.')
        return "tf"
    if user_format in ("hdf5", "h5", "keras"):
        return "h5"
    raise ValueError(f'Unknown format "{save_format}". Was expecting one of {{"tf", "h5"}}.')


def _checkpoint_of(layer, made: dict):
    """The tree of Checkpoints standing for `layer` as Keras tracks it (memoized by layer, so a
    layer reached twice is one object and is saved once, under its first path)."""
    if id(layer) in made:
        return made[id(layer)]
    node = made[id(layer)] = Checkpoint()
    sublayers = layer._sublayers() if hasattr(layer, "_is_graph_network") else []
    if sublayers:
        with_weights = 0
        for index, sublayer in enumerate(sublayers):
            child = _checkpoint_of(sublayer, made)
            if sublayer.weights:
                setattr(node, f"layer_with_weights-{with_weights}", child)
                with_weights += 1
            setattr(node, f"layer-{index}", child)
    else:
        for weight in layer.weights:
            setattr(node, weight.op.name.rsplit("/", 1)[-1], weight)
    epoch = layer.__dict__.get("_ckpt_saved_epoch")   # fit's multi-worker backup (multi_worker_training_state.py)
    if epoch is not None:
        node._dependencies["_ckpt_saved_epoch"] = epoch
    return node


def save_weights(model, filepath, overwrite=True, save_format=None) -> None:
    """Model.save_weights: HDF5 (layer by layer) or a TensorFlow-format checkpoint at prefix
    `filepath`, recorded in its directory's `checkpoint` file."""
    save_format = _save_format(filepath, save_format)
    filepath = os.fspath(filepath)
    if not overwrite and os.path.isfile(filepath if save_format == "h5" else filepath + ".index"):
        return
    if save_format == "h5":
        with hdf5.open_hdf5(filepath, "w") as f:
            hdf5.save_weights_to_hdf5_group(f, model.layers)
        return
    _checkpoint_of(model, {}).write(filepath, session=K.get_session())
    update_checkpoint_state_internal(os.path.dirname(filepath) or ".", filepath, [filepath], save_relative_paths=True)


def load_weights(model, filepath, by_name=False, skip_mismatch=False) -> None:
    """Model.load_weights: from an HDF5 file (by topological order, or by layer name with
    `by_name`, skipping layers whose weights do not fit with `skip_mismatch`) or a TensorFlow-format
    checkpoint (by object path, or by variable name for a TF1 name-based checkpoint)."""
    filepath = os.fspath(filepath)
    if hdf5.is_hdf5_filepath(filepath) or (hdf5.h5py is not None and os.path.isfile(filepath)
                                           and hdf5.h5py.is_hdf5(filepath)):
        with hdf5.open_hdf5(filepath, "r") as f:
            group = f["model_weights"] if "layer_names" not in f.attrs and "model_weights" in f else f
            if by_name:
                hdf5.load_weights_from_hdf5_group_by_name(group, model.layers, skip_mismatch=skip_mismatch)
            else:
                hdf5.load_weights_from_hdf5_group(group, model.layers)
        return
    if by_name:
        raise NotImplementedError("Weights may only be loaded based on topology into Models when loading TensorFlow-"
                                  "formatted weights (got by_name=True to load_weights).")
    reader = NewCheckpointReader(filepath)
    tuples = []
    for key, variable in _ObjectGraph(_checkpoint_of(model, {})).keys.items():
        name = variable.op.name
        if reader.has_tensor(key):
            value = reader.get_tensor(key)
        elif reader.has_tensor(name):
            value = reader.get_tensor(name)
        else:
            raise ValueError(f"Checkpoint {filepath!r} has no value for weight {variable.name} of model {model.name} "
                             f"(looked for {key!r} and {name!r}).")
        if K.int_shape(variable) != value.shape:
            raise ValueError(f"Checkpoint {filepath!r}: weight {variable.name} has shape {K.int_shape(variable)}, but "
                             f"the saved value of {key!r} has shape {value.shape}.")
        tuples.append((variable, value))
    K.batch_set_value(tuples)
