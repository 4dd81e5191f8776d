"""tf.python_io: TFRecord files from Python (ops/io/tfrecord.py)."""
from tensorweave import _api

__getattr__, __dir__ = _api.lazy_attributes(__name__)
