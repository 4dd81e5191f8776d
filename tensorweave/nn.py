"""tf.nn: the neural-network namespace (ops from ops/nn/ plus the math and array ops TF1 also
exports under tf.nn)."""
from tensorweave import _api

__getattr__, __dir__ = _api.lazy_attributes(__name__)
