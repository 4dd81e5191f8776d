"""tf.nn.rnn_cell: the RNN cells and wrappers."""
from tensorweave import _api

__getattr__, __dir__ = _api.lazy_attributes(__name__)
