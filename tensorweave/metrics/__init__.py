"""tf.metrics: TF1's streaming metrics. Each returns (value, update_op); their state is local
variables (LOCAL_VARIABLES and METRIC_VARIABLES), reset by tf.local_variables_initializer().
base.py holds what they share; means.py, confusion.py, classes.py and ranking.py the metrics."""
from tensorweave import _api

__getattr__, __dir__ = _api.lazy_attributes(__name__)
