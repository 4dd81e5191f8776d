"""tf.spectral namespace: TF 1's older name for tf.signal's FFT ops and DCT."""
from tensorweave import _api

__getattr__, __dir__ = _api.lazy_attributes(__name__)
