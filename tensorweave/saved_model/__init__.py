"""tf.saved_model: TF1's SavedModel API (builder, loader, signatures, constants), writing and reading
TensorFlow's own on-disk layout (saved_model/*.py)."""
from tensorweave import _api

__getattr__, __dir__ = _api.lazy_attributes(__name__)
