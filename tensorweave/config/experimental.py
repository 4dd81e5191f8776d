"""tf.config.experimental: TF 1.15's earlier spelling of the device functions, and memory growth."""
from tensorweave import _api

__getattr__, __dir__ = _api.lazy_attributes(__name__)
