"""tf.feature_column namespace (TF1.15 names): the columns (columns.py) and what reads them,
input_layer, linear_model and make_parse_example_spec (layers.py)."""
from tensorweave import _api

__getattr__, __dir__ = _api.lazy_attributes(__name__)
