"""tf.contrib.rnn: TF1's contrib aliases of the core RNN cells, wrappers and static loops."""
from tensorweave.rnn.cells import BasicLSTMCell, BasicRNNCell, GRUCell, LSTMCell, LSTMStateTuple, RNNCell  # noqa: F401
from tensorweave.rnn.loops import static_bidirectional_rnn, static_rnn  # noqa: F401
from tensorweave.rnn.wrappers import DeviceWrapper, DropoutWrapper, MultiRNNCell, ResidualWrapper  # noqa: F401
