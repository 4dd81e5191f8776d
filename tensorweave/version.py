"""tf.version namespace: the TF version constants (framework/versions.py)."""
from tensorweave import _api

__getattr__, __dir__ = _api.lazy_attributes(__name__)
