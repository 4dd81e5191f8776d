"""tf.keras.layers.ConvLSTM2D as TF 1.15 has it (keras/layers/convolutional_recurrent.py): an LSTM
whose input and recurrent transformations are 2-D convolutions, over [batch, time, rows, cols,
channels] inputs (channels_first: [batch, time, channels, rows, cols]).

It is an RNN (keras/layers/recurrent.py: the same K.rnn loop, masks, stateful states, initial
states and dropout masks fixed over a call's steps) over a ConvLSTM2DCell, an LSTMCell whose
gates' pre-activations are convolutions: the input's with the layer's strides, padding and
dilation, the previous output's with stride 1 and 'same' padding. The states are [h, c] of the
output's spatial shape; the weights "conv_lst_m2d/kernel:0" (kernel_size + (channels,
4 * filters)), "recurrent_kernel:0" (kernel_size + (filters, 4 * filters)) and "bias:0"."""
from __future__ import annotations

import numpy as np

from tensorweave.framework.shapes import TensorShape
from tensorweave.framework.tf_export import tf_export
from tensorweave.keras import backend as K, regularizers
from tensorweave.keras.layers.convolutional import conv_output_length, normalize_data_format, normalize_padding
from tensorweave.keras.layers.recurrent import RNN, LSTMCell
from tensorweave.layers.base import InputSpec, normalize_tuple
from tensorweave.ops.array.concat import split
from tensorweave.ops.array.fill import zeros


class ConvLSTM2DCell(LSTMCell):
    """The step of ConvLSTM2D: LSTMCell's gates (i, f, c, o along the kernels' last axis, each gate
    its own dropout mask) with convolutions in place of the matmuls. `filters` is the cell's
    units."""

    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid", data_format=None, dilation_rate=(1, 1),
                 activation="tanh", recurrent_activation="hard_sigmoid", **kwargs):
        super().__init__(filters, activation=activation, recurrent_activation=recurrent_activation, **kwargs)
        self.kernel_size = normalize_tuple(kernel_size, 2, "kernel_size")
        self.strides = normalize_tuple(strides, 2, "strides")
        self.padding = normalize_padding(padding)
        self.data_format = normalize_data_format(data_format)
        self.dilation_rate = normalize_tuple(dilation_rate, 2, "dilation_rate")
        self.state_size = (self.units, self.units)

    @property
    def filters(self) -> int:
        return self.units

    def build(self, input_shape) -> None:
        input_dim = TensorShape(input_shape)[1 if self.data_format == "channels_first" else -1].value
        if input_dim is None:
            raise ValueError("The channel dimension of the inputs should be defined. Found `None`.")
        self.kernel_shape = self.kernel_size + (input_dim, self.units * 4)
        self.kernel = self._weight("kernel", self.kernel_shape, "kernel")
        self.recurrent_kernel = self._weight("recurrent_kernel", self.kernel_size + (self.units, self.units * 4),
                                             "recurrent")
        self.bias = self._weight("bias", (self.units * 4,), "bias", self._bias_initializer()) if self.use_bias else None
        self.built = True

    def input_conv(self, x, w, b=None, padding="valid"):
        out = K.conv2d(x, w, strides=self.strides, padding=padding, data_format=self.data_format,
                       dilation_rate=self.dilation_rate)
        return out if b is None else K.bias_add(out, b, data_format=self.data_format)

    def recurrent_conv(self, x, w):
        return K.conv2d(x, w, strides=(1, 1), padding="same", data_format=self.data_format)

    def _gate_inputs(self, inputs, h_tm1, dp_mask, rec_dp_mask) -> list:
        xs = [inputs * m for m in dp_mask] if dp_mask is not None else [inputs] * 4
        hs = [h_tm1 * m for m in rec_dp_mask] if rec_dp_mask is not None else [h_tm1] * 4
        kernels, recurrent_kernels = split(self.kernel, 4, axis=3), split(self.recurrent_kernel, 4, axis=3)
        biases = split(self.bias, 4, axis=0) if self.use_bias else [None] * 4
        return [self.input_conv(x, k, b, padding=self.padding) + self.recurrent_conv(h, r)
                for x, h, k, r, b in zip(xs, hs, kernels, recurrent_kernels, biases)]

    def get_config(self) -> dict:
        config = super().get_config()
        del config["implementation"]
        config = {"filters": config.pop("units"), "kernel_size": self.kernel_size, "strides": self.strides,
                  "padding": self.padding, "data_format": self.data_format, "dilation_rate": self.dilation_rate,
                  **config}
        return config


class ConvRNN2D(RNN):
    """The RNN of convolutional cells (a cell with filters, kernel_size, strides, padding,
    data_format, dilation_rate and input_conv): 5-D inputs, states of the output's spatial shape
    (zeros made by the cell's input convolution of zeros, so their shape follows the input's).
    No unrolling or stacked cells (TypeError, as TF 1.15)."""

    def __init__(self, cell, return_sequences=False, return_state=False, go_backwards=False, stateful=False,
                 unroll=False, **kwargs):
        if unroll:
            raise TypeError("Unrolling isn't possible with convolutional RNNs.")
        if isinstance(cell, (list, tuple)):
            raise TypeError("It is not possible at the moment to stack convolutional cells.")
        super().__init__(cell, return_sequences=return_sequences, return_state=return_state,
                         go_backwards=go_backwards, stateful=stateful, unroll=unroll, **kwargs)
        self.input_spec = [InputSpec(ndim=5)]

    def _state_shape(self, input_shape) -> list:
        """[batch, rows, cols, filters] (channels_first: [batch, filters, rows, cols]) of the states
        for a [batch, time, ...] input shape."""
        cell = self.cell
        dims = TensorShape(input_shape).as_list()
        spatial = dims[3:5] if cell.data_format == "channels_first" else dims[2:4]
        spatial = [conv_output_length(n, k, cell.padding, s, d)
                   for n, k, s, d in zip(spatial, cell.kernel_size, cell.strides, cell.dilation_rate)]
        if cell.data_format == "channels_first":
            return [dims[0], cell.filters] + spatial
        return [dims[0]] + spatial + [cell.filters]

    def compute_output_shape(self, input_shape):
        if isinstance(input_shape, list) and input_shape and not isinstance(input_shape[0], (int, type(None))):
            input_shape = input_shape[0]
        state_shape = self._state_shape(input_shape)
        time_step = TensorShape(input_shape)[1].value
        output_shape = TensorShape(state_shape[:1] + [time_step] + state_shape[1:] if self.return_sequences
                                   else state_shape)
        if self.return_state:
            return [output_shape] + [TensorShape(state_shape) for _ in range(2)]
        return output_shape

    def build(self, input_shape) -> None:
        if isinstance(input_shape, list):
            input_shape = input_shape[0]
        dims = TensorShape(input_shape).as_list()   # 5-D: the input spec checked it
        self.input_spec[0] = InputSpec(shape=tuple([dims[0] if self.stateful else None, None] + dims[2:]))
        if not self.cell.built:
            self.cell.build(TensorShape([dims[0]] + dims[2:]))
            self.cell.built = True
        channel_axis = 1 if self.cell.data_format == "channels_first" else 3
        state_size = list(self.cell.state_size)
        if self.state_spec is not None:
            if [spec.shape[channel_axis] for spec in self.state_spec] != state_size:
                raise ValueError(f"An initial_state was passed that is not compatible with `cell.state_size`. Received "
                                 f"`state_spec`={[spec.shape for spec in self.state_spec]}; However `cell.state_size` "
                                 f"is {self.cell.state_size}")
        else:
            self.state_spec = [InputSpec(shape=(None, dim, None, None) if channel_axis == 1 else
                                         (None, None, None, dim)) for dim in state_size]
        if self.stateful:
            self.reset_states()
        self.built = True

    def get_initial_state(self, inputs):
        # zeros of the output's shape: the input convolution of zeros of one step's shape
        step_zeros = K.sum(K.zeros_like(inputs), axis=1)
        shape = list(self.cell.kernel_shape)
        shape[-1] = self.cell.filters
        state = self.cell.input_conv(step_zeros, zeros(tuple(shape), dtype=step_zeros.dtype),
                                     padding=self.cell.padding)
        return [state for _ in self.cell.state_size]

    def reset_states(self, states=None) -> None:
        """Zeroes the stored states of a stateful layer, or sets them to `states` (numpy arrays)."""
        if not self.stateful:
            raise AttributeError("Layer must be stateful.")
        state_shape = self._state_shape(self.input_spec[0].shape)
        if None in state_shape:
            raise ValueError("If a RNN is stateful, it needs to know its batch size. Specify the batch size of your "
                             "input tensors: \n- If using a Sequential model, specify the batch size by passing a "
                             "`batch_input_shape` argument to your first layer.\n- If using the functional API, "
                             "specify the time dimension by passing a `batch_shape` argument to your Input layer.\n"
                             "The same thing goes for the number of rows and columns.")
        if self._states is None:
            self._states = [K.zeros(state_shape) for _ in self.cell.state_size]
        elif states is None:
            K.batch_set_value([(v, np.zeros(state_shape)) for v in self._states])
        else:
            values = [np.asarray(v) for v in (states if isinstance(states, (list, tuple)) else [states])]
            if len(values) != len(self._states):
                raise ValueError(f"Layer {self.name} expects {len(self._states)} states, but it received "
                                 f"{len(values)} state values. Input received: {states}")
            for i, value in enumerate(values):
                if list(value.shape) != state_shape:
                    raise ValueError(f"State {i} is incompatible with layer {self.name}: expected shape="
                                     f"{tuple(state_shape)}, found shape={value.shape}")
            K.batch_set_value(list(zip(self._states, values)))


_CELL_CONFIG = ("filters", "kernel_size", "strides", "padding", "data_format", "dilation_rate", "activation",
                "recurrent_activation", "use_bias", "kernel_initializer", "recurrent_initializer", "bias_initializer",
                "unit_forget_bias", "kernel_regularizer", "recurrent_regularizer", "bias_regularizer",
                "kernel_constraint", "recurrent_constraint", "bias_constraint", "dropout", "recurrent_dropout")


@tf_export("keras.layers.ConvLSTM2D")
class ConvLSTM2D(ConvRNN2D):
    """ConvLSTM2D(filters, kernel_size, strides=(1, 1), padding='valid', data_format=None,
    dilation_rate=(1, 1), activation='tanh', recurrent_activation='hard_sigmoid', use_bias=True,
    kernel_initializer='glorot_uniform', recurrent_initializer='orthogonal',
    bias_initializer='zeros', unit_forget_bias=True, kernel_regularizer=None,
    recurrent_regularizer=None, bias_regularizer=None, activity_regularizer=None,
    kernel_constraint=None, recurrent_constraint=None, bias_constraint=None,
    return_sequences=False, return_state=False, go_backwards=False, stateful=False, dropout=0.,
    recurrent_dropout=0.): the convolutional LSTM over a [batch, time, rows, cols, channels]
    input (data_format 'channels_first': [batch, time, channels, rows, cols]). Returns the last
    output [batch, new_rows, new_cols, filters], or every step's (return_sequences), then the
    final states [h, c] (return_state). dropout and recurrent_dropout drop entries of the input
    and of the previous output (masks fixed over a call's steps, in the training phase only)."""

    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid", data_format=None, dilation_rate=(1, 1),
                 activation="tanh", recurrent_activation="hard_sigmoid", use_bias=True,
                 kernel_initializer="glorot_uniform", recurrent_initializer="orthogonal", bias_initializer="zeros",
                 unit_forget_bias=True, kernel_regularizer=None, recurrent_regularizer=None, bias_regularizer=None,
                 activity_regularizer=None, kernel_constraint=None, recurrent_constraint=None, bias_constraint=None,
                 return_sequences=False, return_state=False, go_backwards=False, stateful=False, dropout=0.0,
                 recurrent_dropout=0.0, **kwargs):
        cell = ConvLSTM2DCell(filters, kernel_size, strides=strides, padding=padding, data_format=data_format,
                              dilation_rate=dilation_rate, activation=activation,
                              recurrent_activation=recurrent_activation, use_bias=use_bias,
                              kernel_initializer=kernel_initializer, recurrent_initializer=recurrent_initializer,
                              bias_initializer=bias_initializer, unit_forget_bias=unit_forget_bias,
                              kernel_regularizer=kernel_regularizer, recurrent_regularizer=recurrent_regularizer,
                              bias_regularizer=bias_regularizer, kernel_constraint=kernel_constraint,
                              recurrent_constraint=recurrent_constraint, bias_constraint=bias_constraint,
                              dropout=dropout, recurrent_dropout=recurrent_dropout, dtype=kwargs.get("dtype"))
        super().__init__(cell, return_sequences=return_sequences, return_state=return_state,
                         go_backwards=go_backwards, stateful=stateful, **kwargs)
        self.activity_regularizer = regularizers.get(activity_regularizer)

    def __getattr__(self, name):
        # filters, kernel_size, activation, dropout, ...: the cell's
        if name in _CELL_CONFIG:
            return getattr(self.__dict__["cell"], name)
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def call(self, inputs, mask=None, training=None, initial_state=None):
        return super().call(inputs, mask=mask, training=training, initial_state=initial_state)

    def get_config(self) -> dict:
        config = super().get_config()
        del config["cell"]
        cell_config = self.cell.get_config()
        config.update({k: cell_config[k] for k in _CELL_CONFIG})
        config["activity_regularizer"] = regularizers.serialize(self.activity_regularizer)
        return config

    @classmethod
    def from_config(cls, config, custom_objects=None):
        return cls(**config)
