"""tf.quantization namespace: the fake-quantization ops of quantization-aware training."""
from tensorweave import _api

__getattr__, __dir__ = _api.lazy_attributes(__name__)
