"""tf.keras.layers: the Keras layers (core.py here; convolutional, pooling, recurrent, ... from
their modules), the Layer base class, Input/InputLayer, serialize/deserialize."""
from tensorweave import _api

__getattr__, __dir__ = _api.lazy_attributes(__name__)
