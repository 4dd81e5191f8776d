"""tf.layers: TF1's layer classes and functions, with TF's variable names ("dense/kernel",
"conv2d_1/bias"); batch normalization's moving-average updates go to UPDATE_OPS."""
from tensorweave import _api

__getattr__, __dir__ = _api.lazy_attributes(__name__)
