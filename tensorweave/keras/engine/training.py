"""tf.keras.Model: a Network (engine/network.py) that trains. The training loop (compile, fit,
evaluate, predict and the *_on_batch methods) is added here by the Keras training work; until then
a Model is the functional or subclassed graph of layers."""
from __future__ import annotations

from tensorweave.framework.tf_export import tf_export
from tensorweave.keras.engine.network import Network
from tensorweave.keras.saving import save as saving


@tf_export("keras.Model", "keras.models.Model")
class Model(Network):
    """tf.keras.Model(inputs, outputs, name=None) builds a functional model; a subclass without
    inputs/outputs defines `call(inputs, training=None, mask=None)` over layers it assigns as
    attributes in `__init__`."""

    def save(self, filepath, overwrite=True, include_optimizer=True, save_format=None):
        """keras.models.save_model(self, ...): architecture, weights and training state in HDF5."""
        saving.save_model(self, filepath, overwrite, include_optimizer, save_format)

    def save_weights(self, filepath, overwrite=True, save_format=None):
        """The weights to HDF5 (.h5/.keras/.hdf5 or save_format="h5") or a TF-format checkpoint."""
        saving.save_weights(self, filepath, overwrite, save_format)

    def load_weights(self, filepath, by_name=False, skip_mismatch=False):
        """The weights from save_weights' HDF5 or TF-format file (by_name: HDF5 only)."""
        saving.load_weights(self, filepath, by_name, skip_mismatch)
