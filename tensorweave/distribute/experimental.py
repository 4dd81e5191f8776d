"""tf.distribute.experimental (TF 1.15 names): CentralStorageStrategy, ParameterServerStrategy
and AllReduceCrossDeviceOps, defined beside the other strategies."""
from tensorweave import _api

__getattr__, __dir__ = _api.lazy_attributes(__name__)
