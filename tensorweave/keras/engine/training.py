"""tf.keras.Model: a Network (engine/network.py) that trains. The training loop (compile, fit,
evaluate, predict and the *_on_batch methods) is added here by the Keras training work; until then
a Model is the functional or subclassed graph of layers."""
from __future__ import annotations

from tensorweave.framework.tf_export import tf_export
from tensorweave.keras.engine.network import Network


@tf_export("keras.Model", "keras.models.Model")
class Model(Network):
    """tf.keras.Model(inputs, outputs, name=None) builds a functional model; a subclass without
    inputs/outputs defines `call(inputs, training=None, mask=None)` over layers it assigns as
    attributes in `__init__`."""
