"""tf.keras.utils: to_categorical, Sequence, get_file, custom objects and (de)serialization,
Progbar, and the model helpers of layer_utils."""
from tensorweave import _api

__getattr__, __dir__ = _api.lazy_attributes(__name__)
