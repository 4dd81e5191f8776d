"""tf.distributions namespace (TF 1.15; deprecated there in favour of TensorFlow Probability, still
used by TF1 programs): the Distribution base, twelve distributions and the KL registry."""
from tensorweave import _api

__getattr__, __dir__ = _api.lazy_attributes(__name__)
