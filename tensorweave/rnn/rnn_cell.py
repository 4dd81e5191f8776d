"""tf.nn.rnn_cell: the RNN cells and wrappers."""
from tensorweave.rnn.cells import BasicLSTMCell, BasicRNNCell, GRUCell, LSTMCell, LSTMStateTuple, RNNCell  # noqa: F401
from tensorweave.rnn.wrappers import DeviceWrapper, DropoutWrapper, MultiRNNCell, ResidualWrapper  # noqa: F401
