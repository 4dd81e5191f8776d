"""tf.keras (Keras 2 in graph mode, as TF 1.15 has it): Input, Model, Sequential and the backend,
layers, models, activations, initializers, constraints and regularizers namespaces."""
from tensorweave import _api

__getattr__, __dir__ = _api.lazy_attributes(__name__)
