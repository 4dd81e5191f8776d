"""tf.audio namespace: WAV files as float32 samples and back."""
from tensorweave import _api

__getattr__, __dir__ = _api.lazy_attributes(__name__)
