"""tf.contrib.signal: TF 1's first home of stft, frames, windows and mel filterbanks (now tf.signal)."""
from tensorweave import _api

__getattr__, __dir__ = _api.lazy_attributes(__name__)
