"""tf.estimator.experimental: the early-stopping hooks (estimator/early_stopping.py)."""
from tensorweave import _api

__getattr__, __dir__ = _api.lazy_attributes(__name__)
