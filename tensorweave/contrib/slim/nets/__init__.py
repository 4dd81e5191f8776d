"""tf.contrib.slim.nets: the networks TF 1 shipped with slim, built from slim's layers with the
variable names of the published checkpoints (vgg_16/conv1/conv1_1/weights, ...)."""
from tensorweave import _api

__getattr__, __dir__ = _api.lazy_attributes(__name__)
