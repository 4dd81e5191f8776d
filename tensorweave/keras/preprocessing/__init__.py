"""tf.keras.preprocessing: Keras's numpy-side data preparation (sequence, text, image)."""
from tensorweave import _api

__getattr__, __dir__ = _api.lazy_attributes(__name__)
