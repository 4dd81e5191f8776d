"""tf.contrib.slim: TF-Slim, the layer library most TF1 research models are written in: the
contrib layers and initializers and regularizers, arg_scope and the variable helpers of
tf.contrib.framework, `losses` and `metrics` (tf.contrib's), `learning` (train) and `evaluation`."""
from tensorweave import _api

__getattr__, __dir__ = _api.lazy_attributes(__name__)
