"""tf.manip namespace (TF1.15): array manipulation names also found at the top level."""
from tensorweave import _api

__getattr__, __dir__ = _api.lazy_attributes(__name__)
