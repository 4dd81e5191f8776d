"""tf.initializers namespace (TF1.15): initializer classes by their short names, and the
variable-initializing ops."""
from tensorweave import _api

__getattr__, __dir__ = _api.lazy_attributes(__name__)
