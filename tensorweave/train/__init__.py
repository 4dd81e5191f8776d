"""tf.train: optimizers, schedules, checkpoints, queue input, sessions and hooks, servers (train/*.py, distributed/)."""
from tensorweave import _api

__getattr__, __dir__ = _api.lazy_attributes(__name__)
