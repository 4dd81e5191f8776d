"""tf.contrib.rnn: TF1's contrib aliases of the core RNN cells, wrappers and static loops."""
from tensorweave import _api

__getattr__, __dir__ = _api.lazy_attributes(__name__)
