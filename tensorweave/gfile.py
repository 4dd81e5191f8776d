"""tf.gfile: TF1's file functions on local paths (ops/io/gfile.py)."""
from tensorweave import _api

__getattr__, __dir__ = _api.lazy_attributes(__name__)
