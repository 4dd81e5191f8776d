"""tf.nn.rnn_cell's cells: RNNCell (the base), BasicRNNCell, GRUCell, BasicLSTMCell, LSTMCell (with
peepholes, clipping and projection) and LSTMStateTuple.

A cell is a tf.layers.Layer: called as `output, new_state = cell(inputs, state)` it creates its
variables on the first call in its scope ("basic_lstm_cell/kernel" under whatever scope the
first call runs in, e.g. "rnn/basic_lstm_cell/kernel" inside dynamic_rnn) and reuses them after.
"""
from __future__ import annotations

import collections
import numbers

from tensorweave.framework import nest
from tensorweave.framework.api import name_scope
from tensorweave.framework.graph import Tensor
from tensorweave.framework.shapes import TensorShape, as_shape
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tensor_util import constant_value
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.concat import concat, split
from tensorweave.ops.array.core import shape
from tensorweave.ops.array.fill import zeros
from tensorweave.ops.array.slicing import slice as slice_
from tensorweave.ops.math.clip import clip_by_value
from tensorweave.ops.math.linalg import matmul
from tensorweave.ops.math.unary import sigmoid, tanh
from tensorweave.ops.nn.activations import bias_add
from tensorweave.ops.state.initializers import constant_initializer, zeros_initializer
from tensorweave.layers.base import InputSpec, Layer


@tf_export("contrib.rnn.LSTMStateTuple", "nn.rnn_cell.LSTMStateTuple")
class LSTMStateTuple(collections.namedtuple("LSTMStateTuple", ("c", "h"))):
    """tf.nn.rnn_cell.LSTMStateTuple(c, h): an LSTM's state, its memory `c` and output `h`."""

    __slots__ = ()

    @property
    def dtype(self):
        c, h = self
        if c.dtype != h.dtype:
            raise TypeError(f"Inconsistent internal state: {c.dtype} vs {h.dtype}")
        return c.dtype


def zero_state_tensors(state_size, batch_size, dtype):
    """Zeros shaped [batch_size] + s for each size s (an int or TensorShape) of a structure of
    state sizes; batch_size is an int or a scalar tensor."""
    static_batch = constant_value(batch_size) if isinstance(batch_size, Tensor) else batch_size

    def one(s):
        size = TensorShape([int(s)]) if isinstance(s, numbers.Integral) else as_shape(s)
        static = TensorShape([None if static_batch is None else int(static_batch)]).concatenate(size)
        z = zeros(static.as_list() if static.is_fully_defined() else [batch_size] + size.as_list(), dtype=dtype)
        z.set_shape(static)
        return z
    return nest.map_structure(one, state_size)


@tf_export("contrib.rnn.RNNCell", "nn.rnn_cell.RNNCell")
class RNNCell(Layer):
    """tf.nn.rnn_cell.RNNCell: the abstract cell. Subclasses give `state_size`, `output_size`
    and `call(inputs, state) -> (output, new_state)`; `cell(inputs, state, scope=None)` runs it
    in the cell's variable scope (`scope`, when given on the first call)."""

    def __init__(self, trainable=True, name=None, dtype=None, **kwargs):
        super().__init__(trainable=trainable, name=name, dtype=dtype, **kwargs)

    @property
    def state_size(self):
        """An int, a TensorShape, or a nested structure of them: the state per batch entry."""
        raise NotImplementedError("Abstract method")

    @property
    def output_size(self):
        """An int or TensorShape (or a structure): the output per batch entry."""
        raise NotImplementedError("Abstract method")

    def __call__(self, inputs, state, scope=None, *args, **kwargs):
        return super().__call__(inputs, state, *args, scope=scope, **kwargs)

    def zero_state(self, batch_size, dtype):
        """Zeros of `state_size` for `batch_size` entries (a tensor or int)."""
        with name_scope(f"{type(self).__name__}ZeroState", values=[batch_size]):
            return zero_state_tensors(self.state_size, batch_size, dtype)

    def get_initial_state(self, inputs=None, batch_size=None, dtype=None):
        """zero_state, with batch size and dtype taken from `inputs` when given."""
        if inputs is not None:
            inputs = convert_to_tensor(inputs)
            batch_size = inputs.shape[0].value if inputs.shape[0].value is not None else shape(inputs)[0]
            dtype = inputs.dtype
        if batch_size is None or dtype is None:
            raise ValueError("batch_size and dtype cannot be None while constructing initial state: "
                             f"batch_size={batch_size}, dtype={dtype}")
        return self.zero_state(batch_size, dtype)


class _LayerRNNCell(RNNCell):
    """A cell of `num_units` units (its state and output size unless a subclass says otherwise)
    whose variables come from `build(inputs_shape)` (rank-2 inputs of known depth)."""

    def __init__(self, num_units, activation, trainable=True, name=None, dtype=None, _reuse=None, **kwargs):
        super().__init__(trainable=trainable, name=name, dtype=dtype, _reuse=_reuse, **kwargs)
        self.input_spec = InputSpec(ndim=2)
        self._num_units = int(num_units)
        self._activation = activation or tanh

    state_size = property(lambda self: self._num_units)
    output_size = property(lambda self: self._num_units)

    @staticmethod
    def _input_depth(inputs_shape) -> int:
        depth = TensorShape(inputs_shape)[-1].value
        if depth is None:
            raise ValueError(f"Expected inputs.shape[-1] to be known, saw shape: {TensorShape(inputs_shape)}")
        return depth


@tf_export("contrib.rnn.BasicRNNCell", "nn.rnn_cell.BasicRNNCell")
class BasicRNNCell(_LayerRNNCell):
    """tf.nn.rnn_cell.BasicRNNCell(num_units, activation=None, reuse=None, name=None, dtype=None):
    output = new_state = activation([inputs, state] @ kernel + bias), activation tanh by default."""

    def __init__(self, num_units, activation=None, reuse=None, name=None, dtype=None, **kwargs):
        super().__init__(num_units, activation, name=name, dtype=dtype, _reuse=reuse, **kwargs)

    def build(self, inputs_shape) -> None:
        depth = self._input_depth(inputs_shape)
        self._kernel = self.add_weight("kernel", [depth + self._num_units, self._num_units])
        self._bias = self.add_weight("bias", [self._num_units], initializer=zeros_initializer(dtype=self.dtype))

    def call(self, inputs, state):
        output = self._activation(bias_add(matmul(concat([inputs, state], 1), self._kernel), self._bias))
        return output, output


@tf_export("contrib.rnn.GRUCell", "nn.rnn_cell.GRUCell")
class GRUCell(_LayerRNNCell):
    """tf.nn.rnn_cell.GRUCell(num_units, activation=None, reuse=None, kernel_initializer=None,
    bias_initializer=None, name=None, dtype=None): Cho et al.'s gated recurrent unit; variables
    gates/kernel, gates/bias (initialized to 1), candidate/kernel, candidate/bias."""

    def __init__(self, num_units, activation=None, reuse=None, kernel_initializer=None, bias_initializer=None,
                 name=None, dtype=None, **kwargs):
        super().__init__(num_units, activation, name=name, dtype=dtype, _reuse=reuse, **kwargs)
        self._kernel_initializer = kernel_initializer
        self._bias_initializer = bias_initializer

    def build(self, inputs_shape) -> None:
        depth = self._input_depth(inputs_shape)
        n = self._num_units
        self._gate_kernel = self.add_weight("gates/kernel", [depth + n, 2 * n], initializer=self._kernel_initializer)
        self._gate_bias = self.add_weight(
            "gates/bias", [2 * n], initializer=self._bias_initializer if self._bias_initializer is not None
            else constant_initializer(1.0, dtype=self.dtype))
        self._candidate_kernel = self.add_weight("candidate/kernel", [depth + n, n],
                                                 initializer=self._kernel_initializer)
        self._candidate_bias = self.add_weight(
            "candidate/bias", [n], initializer=self._bias_initializer if self._bias_initializer is not None
            else zeros_initializer(dtype=self.dtype))

    def call(self, inputs, state):
        gates = sigmoid(bias_add(matmul(concat([inputs, state], 1), self._gate_kernel), self._gate_bias))
        r, u = split(gates, 2, axis=1)
        candidate = bias_add(matmul(concat([inputs, r * state], 1), self._candidate_kernel), self._candidate_bias)
        c = self._activation(candidate)
        new_h = u * state + (1 - u) * c
        return new_h, new_h


@tf_export("contrib.rnn.BasicLSTMCell", "nn.rnn_cell.BasicLSTMCell")
class BasicLSTMCell(_LayerRNNCell):
    """tf.nn.rnn_cell.BasicLSTMCell(num_units, forget_bias=1.0, state_is_tuple=True,
    activation=None, reuse=None, name=None, dtype=None): the LSTM of Zaremba et al. without
    peepholes or projection; gates i, j, f, o from [inputs, h] @ kernel + bias, forget_bias added
    to f. The state is LSTMStateTuple(c, h) (or [c, h] concatenated when not state_is_tuple)."""

    def __init__(self, num_units, forget_bias=1.0, state_is_tuple=True, activation=None, reuse=None, name=None,
                 dtype=None, **kwargs):
        super().__init__(num_units, activation, name=name, dtype=dtype, _reuse=reuse, **kwargs)
        self._forget_bias = forget_bias
        self._state_is_tuple = state_is_tuple

    @property
    def state_size(self):
        n = self._num_units
        return LSTMStateTuple(n, n) if self._state_is_tuple else 2 * n

    def build(self, inputs_shape) -> None:
        depth = self._input_depth(inputs_shape)
        self._kernel = self.add_weight("kernel", [depth + self._num_units, 4 * self._num_units])
        self._bias = self.add_weight("bias", [4 * self._num_units], initializer=zeros_initializer(dtype=self.dtype))

    def call(self, inputs, state):
        if self._state_is_tuple:
            c, h = state
        else:
            c, h = split(state, 2, axis=1)
        gates = bias_add(matmul(concat([inputs, h], 1), self._kernel), self._bias)
        i, j, f, o = split(gates, 4, axis=1)
        forget_bias = convert_to_tensor(self._forget_bias, dtype=f.dtype)
        new_c = c * sigmoid(f + forget_bias) + sigmoid(i) * self._activation(j)
        new_h = self._activation(new_c) * sigmoid(o)
        new_state = LSTMStateTuple(new_c, new_h) if self._state_is_tuple else concat([new_c, new_h], 1)
        return new_h, new_state


@tf_export("contrib.rnn.LSTMCell", "nn.rnn_cell.LSTMCell")
class LSTMCell(_LayerRNNCell):
    """tf.nn.rnn_cell.LSTMCell(num_units, use_peepholes=False, cell_clip=None, initializer=None,
    num_proj=None, proj_clip=None, num_unit_shards=None, num_proj_shards=None, forget_bias=1.0,
    state_is_tuple=True, activation=None, reuse=None, name=None, dtype=None): the LSTM with
    optional diagonal peephole connections (w_f_diag, w_i_diag, w_o_diag), a clipped cell state
    and an output projection ("projection/kernel" [num_units, num_proj], optionally clipped).
    The shard counts are accepted for compatibility; variables are not sharded."""

    def __init__(self, num_units, use_peepholes=False, cell_clip=None, initializer=None, num_proj=None,
                 proj_clip=None, num_unit_shards=None, num_proj_shards=None, forget_bias=1.0, state_is_tuple=True,
                 activation=None, reuse=None, name=None, dtype=None, **kwargs):
        super().__init__(num_units, activation, name=name, dtype=dtype, _reuse=reuse, **kwargs)
        self._use_peepholes = use_peepholes
        self._cell_clip = cell_clip
        self._initializer = initializer
        self._num_proj = num_proj
        self._proj_clip = proj_clip
        self._forget_bias = forget_bias
        self._state_is_tuple = state_is_tuple
        self._activation = activation or tanh

    @property
    def state_size(self):
        n, p = self._num_units, self._num_proj or self._num_units
        return LSTMStateTuple(n, p) if self._state_is_tuple else n + p

    @property
    def output_size(self):
        return self._num_proj or self._num_units

    def build(self, inputs_shape) -> None:
        depth = self._input_depth(inputs_shape)
        n, h_depth = self._num_units, self._num_proj or self._num_units
        self._kernel = self.add_weight("kernel", [depth + h_depth, 4 * n], initializer=self._initializer)
        self._bias = self.add_weight("bias", [4 * n], initializer=zeros_initializer(dtype=self.dtype))
        if self._use_peepholes:
            self._w_f_diag = self.add_weight("w_f_diag", [n], initializer=self._initializer)
            self._w_i_diag = self.add_weight("w_i_diag", [n], initializer=self._initializer)
            self._w_o_diag = self.add_weight("w_o_diag", [n], initializer=self._initializer)
        if self._num_proj is not None:
            self._proj_kernel = self.add_weight("projection/kernel", [n, self._num_proj],
                                                initializer=self._initializer)

    def call(self, inputs, state):
        n, p = self._num_units, self._num_proj or self._num_units
        if self._state_is_tuple:
            c_prev, m_prev = state
        else:
            c_prev = slice_(state, [0, 0], [-1, n])
            m_prev = slice_(state, [0, n], [-1, p])
        gates = bias_add(matmul(concat([inputs, m_prev], 1), self._kernel), self._bias)
        i, j, f, o = split(gates, 4, axis=1)
        act = self._activation
        if self._use_peepholes:
            c = (sigmoid(f + self._forget_bias + self._w_f_diag * c_prev) * c_prev
                 + sigmoid(i + self._w_i_diag * c_prev) * act(j))
        else:
            c = sigmoid(f + self._forget_bias) * c_prev + sigmoid(i) * act(j)
        if self._cell_clip is not None:
            c = clip_by_value(c, -self._cell_clip, self._cell_clip)
        m = sigmoid(o + self._w_o_diag * c) * act(c) if self._use_peepholes else sigmoid(o) * act(c)
        if self._num_proj is not None:
            m = matmul(m, self._proj_kernel)
            if self._proj_clip is not None:
                m = clip_by_value(m, -self._proj_clip, self._proj_clip)
        new_state = LSTMStateTuple(c, m) if self._state_is_tuple else concat([c, m], 1)
        return m, new_state
