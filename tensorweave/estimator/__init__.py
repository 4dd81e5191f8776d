"""tf.estimator: Estimator, RunConfig, EstimatorSpec, train_and_evaluate (estimator/*.py)."""
from tensorweave import _api

__getattr__, __dir__ = _api.lazy_attributes(__name__)
