"""tf.contrib.estimator: the heads of the head-taking Estimators (estimator/canned/head.py)."""
from tensorweave import _api

__getattr__, __dir__ = _api.lazy_attributes(__name__)
