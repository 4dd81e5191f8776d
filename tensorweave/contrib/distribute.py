"""tf.contrib.distribute (TF 1.15 names): the strategies of tensorweave/distribute/ under their
contrib aliases (Google's samples use tf.contrib.distribute.OneDeviceStrategy)."""
from tensorweave import _api

__getattr__, __dir__ = _api.lazy_attributes(__name__)
