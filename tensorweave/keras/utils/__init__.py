"""tf.keras.utils: Keras's utilities that need no model (to_categorical, Sequence, get_file, custom
objects and (de)serialization, Progbar)."""
from tensorweave import _api

__getattr__, __dir__ = _api.lazy_attributes(__name__)
