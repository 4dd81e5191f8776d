"""tf.keras.utils: Keras's helpers (serialization of Keras objects, custom object scopes, ...)."""
from tensorweave import _api

__getattr__, __dir__ = _api.lazy_attributes(__name__)
