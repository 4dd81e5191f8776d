"""tf.random.experimental namespace (TF 1.15): the stateful Generator API (code in
ops/state/stateful_random.py) and the stateless seed helpers."""
from tensorweave import _api

__getattr__, __dir__ = _api.lazy_attributes(__name__)
