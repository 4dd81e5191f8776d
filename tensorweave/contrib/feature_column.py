"""tf.contrib.feature_column (TF1.15 names): the sequence columns of tensorweave/feature_column/
(also in tf.feature_column) and what reads them, sequence_input_layer and concatenate_context_input."""
from tensorweave import _api

__getattr__, __dir__ = _api.lazy_attributes(__name__)
