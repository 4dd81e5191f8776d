"""tf.keras recurrent layers as TF 1.15 has them in graph mode (keras/layers/recurrent.py): RNN over
any Keras cell (a list of cells becomes StackedRNNCells), SimpleRNN/LSTM/GRU and their cells
(the v1 defaults: recurrent_activation='hard_sigmoid', LSTM implementation=1, GRU
reset_after=False), masks from Masking/Embedding(mask_zero), dropout masks fixed over the time
steps of a call, stateful layers with reset_states, initial states and constants; CuDNNLSTM and
CuDNNGRU (cuDNN's arithmetic and weight layout, on any device); K.rnn.

The time loop is tf.nn.dynamic_rnn's (a while_loop over TensorArrays; tf.nn.static_rnn when
unroll=True): the Keras step runs as a tf.nn cell whose state also carries the previous output,
which a masked step repeats (Keras's mask semantics, not dynamic_rnn's sequence_length zeros).
SimpleRNN, LSTM and GRU cells multiply the input by their kernel for all the time steps before
the loop (the same values: the dropout masks are fixed over the steps), the loop's step only by
the recurrent kernel.

An RNN builds its cell under its own name scope, so the weights are "lstm/kernel:0",
"lstm/recurrent_kernel:0", "lstm/bias:0" as TF 1.15 named them (cells of StackedRNNCells under
their names: "rnn/lstm_cell/kernel:0")."""
from __future__ import annotations

import inspect

import numpy as np

from tensorweave.framework import nest
from tensorweave.framework.shapes import TensorShape, as_shape
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tf_export import tf_export
from tensorweave.keras import activations, backend as K, initializers, regularizers
from tensorweave.keras.engine.base_layer import (Layer, deserialize as _deserialize_layer, take_weight_options,
                                                  weight_options_config)
from tensorweave.layers.base import InputSpec
from tensorweave.ops.array.concat import concat, split, stack, unstack
from tensorweave.ops.array.core import expand_dims, reshape, shape, transpose
from tensorweave.ops.array.fill import zeros_like
from tensorweave.ops.array.pad import broadcast_to, reverse
from tensorweave.ops.array.sort import where
from tensorweave.ops.control_flow.cond import cond
from tensorweave.ops.control_flow.tensor_array import TensorArray
from tensorweave.ops.control_flow.while_loop import while_loop
from tensorweave.ops.math.cast import cast
from tensorweave.ops.math.binary import add_n
from tensorweave.ops.math.reduction import count_nonzero
from tensorweave.ops.state.variable_ops import assign
from tensorweave.rnn.cells import RNNCell, zero_state_tensors
from tensorweave.rnn.loops import _transpose_batch_time, dynamic_rnn, static_rnn


def _is_multiple_state(state_size) -> bool:
    return hasattr(state_size, "__len__") and not isinstance(state_size, TensorShape)


def _zero_states(state_size, batch_size, dtype) -> list:
    """Zeros for each state of `state_size` (a Keras cell's), as the list Keras passes to a cell."""
    sizes = state_size if _is_multiple_state(state_size) else [state_size]
    return list(zero_state_tensors(tuple(sizes), batch_size, dtype))


def _step_rows(x):
    """A step's [batch, n] as it is; all the steps' [time, batch, n] as their [time * batch, n]
    rows (a cell's input products before the loop: _RecurrentCell._project_steps)."""
    return x if x.shape.ndims == 2 else reshape(x, [-1, x.shape[-1].value])


def _masked(mask_t, new, old):
    """`new` where the step's mask ([batch, 1] bool) holds, else `old`."""
    condition = mask_t
    for _ in range((new.shape.ndims or 2) - 2):
        condition = expand_dims(condition, -1)
    out = where(broadcast_to(condition, shape(new)), new, old)
    out.set_shape(new.shape)
    return out


class _StepCell:
    """A Keras step function as a tf.nn cell for dynamic_rnn/static_rnn. Inputs: x_t, or (x_t,
    mask_t); state: (previous output, the flattened cell states). A masked batch entry keeps its
    states and emits the previous output (zeros with zero_output_for_mask)."""

    def __init__(self, step, states_template, output_shape, masked: bool, zero_output_for_mask: bool):
        self._step = step
        self._template = states_template
        self._masked = masked
        self._zero_output_for_mask = zero_output_for_mask
        flat = nest.flatten(states_template)
        self.output_size = output_shape
        self.state_size = (output_shape, tuple(TensorShape(s.shape[1:]) for s in flat))

    def zero_state(self, batch_size, dtype):
        return zero_state_tensors(self.state_size, batch_size, dtype)

    def __call__(self, inputs, state):
        prev_output, flat_states = state
        x, mask_t = inputs if self._masked else (inputs, None)
        output, new_states = self._step(x, nest.pack_sequence_as(self._template, list(flat_states)))
        new_states = tuple(nest.flatten(new_states))
        if mask_t is not None:
            fill = zeros_like(output) if self._zero_output_for_mask else prev_output
            output = _masked(mask_t, output, fill)
            new_states = tuple(_masked(mask_t, n, s) for n, s in zip(new_states, flat_states))
        return output, (output, new_states)


@tf_export("keras.backend.rnn")
def rnn(step_function, inputs, initial_states, go_backwards=False, mask=None, constants=None, unroll=False,
        input_length=None, time_major=False, zero_output_for_mask=False):
    """K.rnn: runs `step_function(x_t, states + constants) -> (output_t, new_states)` over the
    time axis of `inputs` ([batch, time, ...], [time, batch, ...] when `time_major`) from
    `initial_states` (a list). A `mask` ([batch, time], bool) keeps a masked entry's states and
    repeats its previous output (zeros with zero_output_for_mask). Returns (last_output,
    outputs, new_states), outputs in the order the steps ran (time reversed with go_backwards).
    The loop is tf.nn.dynamic_rnn's while_loop (tf.nn.static_rnn's when unroll=True).
    input_length is accepted for TF's signature; the inputs' shape gives the steps."""
    return _rnn(step_function, inputs, initial_states, go_backwards, mask, constants, unroll, time_major,
                zero_output_for_mask)


def _rnn(step_function, inputs, initial_states, go_backwards, mask, constants, unroll, time_major,
         zero_output_for_mask, project_steps=None):
    """K.rnn's loop; `project_steps` (time-major inputs -> the steps' inputs), when given, maps all
    the time steps' inputs at once before the loop (a cell's input products: _project_steps)."""
    constants = list(constants or [])

    def step(x, states):
        return step_function(x, list(states) + constants)

    inputs = convert_to_tensor(inputs)
    x = inputs if time_major else _transpose_batch_time(inputs)
    if mask is not None:
        mask = cast(mask, "bool")
        if mask.shape.ndims == 2:
            mask = expand_dims(mask, -1)
        mask = mask if time_major else _transpose_batch_time(mask)
    if go_backwards:
        x = reverse(x, [0])
        mask = reverse(mask, [0]) if mask is not None else None
    if project_steps is not None:
        x = project_steps(x)
    initial_states = list(initial_states)
    # The first step outside the loop (as K.rnn): it gives the output's shape, and the cells'
    # dropout masks it makes there are the ones every step of the loop uses.
    output_zero, _ = step(x[0], initial_states)
    cell = _StepCell(step, initial_states, TensorShape(output_zero.shape[1:]), mask is not None,
                     zero_output_for_mask)
    state = (zeros_like(output_zero), tuple(nest.flatten(initial_states)))
    if unroll:
        steps = unstack(x, axis=0) if mask is None else list(zip(unstack(x, axis=0), unstack(mask, axis=0)))
        outputs, (last_output, flat_states) = static_rnn(cell, steps, initial_state=state)
        outputs = stack(outputs, axis=0)
    elif TensorShape(x.shape[2:]).is_fully_defined():
        step_inputs = x if mask is None else (x, mask)
        outputs, (last_output, flat_states) = dynamic_rnn(cell, step_inputs, initial_state=state, time_major=True)
    else:   # dynamic_rnn needs the step's shape (a ConvLSTM2D over frames of any size has none)
        outputs, (last_output, flat_states) = _while_rnn(cell, x, mask, state)
    if not time_major:
        outputs = _transpose_batch_time(outputs)
    return last_output, outputs, nest.pack_sequence_as(initial_states, list(flat_states))


def _while_rnn(cell, x, mask, state):
    """`cell` (a _StepCell) over time-major `x` (and `mask`) in a while_loop over TensorArrays, as
    TF's K.rnn runs: for steps whose shape is not fully known. Returns (outputs, final state)."""
    steps = shape(x)[0]
    inputs_ta = TensorArray(x.dtype, size=steps, element_shape=x.shape[1:]).unstack(x)
    masks_ta = None if mask is None else TensorArray(mask.dtype, size=steps, element_shape=mask.shape[1:]).unstack(mask)
    outputs_ta = TensorArray(state[0].dtype, size=steps, element_shape=state[0].shape)

    def body(t, outputs_ta, state):
        step_input = inputs_ta.read(t)
        step_input.set_shape(x.shape[1:])
        if masks_ta is not None:
            step_mask = masks_ta.read(t)
            step_mask.set_shape(mask.shape[1:])
            step_input = (step_input, step_mask)
        output, new_state = cell(step_input, state)
        return t + 1, outputs_ta.write(t, output), new_state

    time = convert_to_tensor(0, dtype="int32")
    _, outputs_ta, state = while_loop(lambda t, *_: t < steps, body, (time, outputs_ta, state),
                                      maximum_iterations=steps)
    outputs = outputs_ta.stack()
    outputs.set_shape(TensorShape(x.shape[:1]).concatenate(state[0].shape))
    return outputs, state


def _standardize_args(inputs, initial_state, constants, num_constants):
    """Splits [inputs, *initial_state, *constants] (a list of inputs) as TF 1.15's RNN does."""
    if isinstance(inputs, list):
        if num_constants:
            constants = inputs[-num_constants:]
            inputs = inputs[:-num_constants]
        if len(inputs) > 1:
            initial_state = inputs[1:]
            inputs = inputs[:1]
        inputs = inputs[0] if len(inputs) == 1 else inputs

    def to_list_or_none(x):
        if x is None or isinstance(x, list):
            return x
        return list(x) if isinstance(x, tuple) else [x]
    return inputs, to_list_or_none(initial_state), to_list_or_none(constants)


# -- cells ----------------------------------------------------------------------------------------
class DropoutRNNCellMixin:
    """The dropout masks of a cell's inputs and recurrent state: made once per RNN call (in the
    training phase; ones otherwise) and used at every time step."""

    def reset_dropout_mask(self) -> None:
        self._dropout_mask = None

    def reset_recurrent_dropout_mask(self) -> None:
        self._recurrent_dropout_mask = None

    def _cached_mask(self, attr, like, rate, training, count):
        if rate <= 0 or rate >= 1:
            return None
        if getattr(self, attr, None) is None:
            ones = K.ones_like(like)
            masks = [K.in_train_phase(lambda: K.dropout(ones, rate), ones, training=training) for _ in range(count)]
            setattr(self, attr, masks if count > 1 else masks[0])
        return getattr(self, attr)

    def get_dropout_mask_for_cell(self, inputs, training, count=1):
        return self._cached_mask("_dropout_mask", inputs, self.dropout, training, count)

    def get_recurrent_dropout_mask_for_cell(self, inputs, training, count=1):
        return self._cached_mask("_recurrent_dropout_mask", inputs, self.recurrent_dropout, training, count)


@tf_export("keras.layers.AbstractRNNCell")
class AbstractRNNCell(Layer):
    """The base of a Keras RNN cell: a subclass gives `state_size` and `output_size` and
    `call(inputs, states) -> (output, new_states)`; its initial state is zeros of state_size."""

    def get_initial_state(self, inputs=None, batch_size=None, dtype=None):
        if inputs is not None:
            batch_size, dtype = shape(inputs)[0], inputs.dtype
        return _zero_states(self.state_size, batch_size, dtype)


class _RecurrentCell(DropoutRNNCellMixin, AbstractRNNCell):
    """What SimpleRNNCell, LSTMCell and GRUCell share: units, activations, the kernel /
    recurrent_kernel / bias initializers, regularizers and constraints, dropout rates."""

    _gates = 1
    # the methods of the step that reads the input products _project_steps computed before the loop
    # (a subclass that overrides one of them computes its own)
    _projected_step = ("call", "_input_products")
    _steps_projected = False   # (True while an RNN's loop runs the step over _project_steps's products)

    def __init__(self, units, activation="tanh", recurrent_activation=None, use_bias=True,
                 kernel_initializer="glorot_uniform", recurrent_initializer="orthogonal", bias_initializer="zeros",
                 kernel_regularizer=None, recurrent_regularizer=None, bias_regularizer=None, kernel_constraint=None,
                 recurrent_constraint=None, bias_constraint=None, dropout=0.0, recurrent_dropout=0.0, **kwargs):
        super().__init__(**kwargs)
        self.units = int(units)
        self.activation = activations.get(activation)
        if recurrent_activation is not None:
            self.recurrent_activation = activations.get(recurrent_activation)
        self.use_bias = use_bias
        take_weight_options(self, "kernel", kernel_initializer, kernel_regularizer, kernel_constraint)
        take_weight_options(self, "recurrent", recurrent_initializer, recurrent_regularizer, recurrent_constraint)
        take_weight_options(self, "bias", bias_initializer, bias_regularizer, bias_constraint)
        self.dropout = min(1.0, max(0.0, float(dropout)))
        self.recurrent_dropout = min(1.0, max(0.0, float(recurrent_dropout)))
        self.reset_dropout_mask()
        self.reset_recurrent_dropout_mask()

    def _weight(self, name, shape, part, initializer=None):
        return self.add_weight(name=name, shape=shape, initializer=initializer or getattr(self, f"{part}_initializer"),
                               regularizer=getattr(self, f"{part}_regularizer"),
                               constraint=getattr(self, f"{part}_constraint"))

    def build(self, input_shape) -> None:
        input_dim = TensorShape(input_shape)[-1].value
        self.kernel = self._weight("kernel", (input_dim, self.units * self._gates), "kernel")
        self.recurrent_kernel = self._weight("recurrent_kernel", (self.units, self.units * self._gates), "recurrent")
        self.bias = self._weight("bias", self._bias_shape(), "bias", self._bias_initializer()) \
            if self.use_bias else None
        self.built = True

    def _bias_shape(self):
        return (self.units * self._gates,)

    def _matmul_kernels(self) -> tuple:
        """(kernel, recurrent_kernel) as the step multiplies by them: x @ kernel, h @ recurrent_kernel."""
        return self.kernel, self.recurrent_kernel

    def _bias_initializer(self):
        return None

    def _project_steps(self, steps, training):
        """All the time steps' input products at once, before the RNN's loop: time-major `steps`
        [time, batch, input_dim] -> [time, batch, width] (the gates' products side by side), which
        the loop's step completes with the recurrent products. The input's dropout masks are the
        same at every step, so each row is the product the step would compute (the same bits
        where the product's kernel sums a row alike for any number of rows, as oneDNN's sgemm does
        for the IMDB LSTM's shapes: tests/unit/test_keras_recurrent.py; else to rounding): one
        product of time * batch rows a gate (large enough for oneDNN's OpenMP team) instead of one
        a step, and in the gradient the kernel's is one product over all the steps, not a sum of
        one a step (the same sums in another order).
        `steps` themselves where this cell's step (a subclass's own) does not take them.

        A cell's `_input_products(inputs, dp_mask)` is the input's part of its step (x @ kernel,
        the bias, each gate's dropout mask) for a step's [batch, input_dim] or, as their time *
        batch rows, for all the steps' [time, batch, input_dim]."""
        home = next((c for c in type(self).__mro__ if "_input_products" in c.__dict__), None)
        if home is None or steps.shape.ndims != 3 or steps.shape[-1].value is None or any(
                getattr(type(self), name) is not getattr(home, name) for name in home._projected_step):
            return steps
        dp_mask = self.get_dropout_mask_for_cell(steps[0], training, count=self._gates)
        products = self._input_products(steps, dp_mask)
        products = concat(products, 1) if isinstance(products, list) else products
        width = products.shape[-1].value
        projected = reshape(products, concat([shape(steps)[:2], [width]], 0))
        projected.set_shape(TensorShape(steps.shape[:2]).concatenate([width]))
        self._steps_projected = True
        return projected

    @property
    def output_size(self):
        return self.units

    def _config_items(self) -> dict:
        config = {"units": self.units, "activation": activations.serialize(self.activation)}
        if hasattr(self, "recurrent_activation"):
            config["recurrent_activation"] = activations.serialize(self.recurrent_activation)
        config["use_bias"] = self.use_bias
        config.update(weight_options_config(self, "kernel", "recurrent", "bias"))
        config.update(dropout=self.dropout, recurrent_dropout=self.recurrent_dropout)
        return config

    def get_config(self) -> dict:
        return {**super().get_config(), **self._config_items()}


@tf_export("keras.layers.SimpleRNNCell")
class SimpleRNNCell(_RecurrentCell):
    """SimpleRNNCell(units, activation='tanh', use_bias=True, kernel_initializer='glorot_uniform',
    recurrent_initializer='orthogonal', bias_initializer='zeros', ..., dropout=0.,
    recurrent_dropout=0.): output = activation(x @ kernel + bias + h @ recurrent_kernel)."""

    def __init__(self, units, activation="tanh", use_bias=True, **kwargs):
        super().__init__(units, activation=activation, use_bias=use_bias, **kwargs)
        self.state_size = self.units

    def call(self, inputs, states, training=None):
        prev_output = states[0]
        # an RNN that computed every step's input products before its loop passes them (_project_steps)
        dp_mask = None if self._steps_projected else self.get_dropout_mask_for_cell(inputs, training)
        rec_dp_mask = self.get_recurrent_dropout_mask_for_cell(prev_output, training)
        h = inputs if self._steps_projected else self._input_products(inputs, dp_mask)
        if rec_dp_mask is not None:
            prev_output = prev_output * rec_dp_mask
        output = h + K.dot(prev_output, self.recurrent_kernel)
        if self.activation is not None:
            output = self.activation(output)
        return output, [output]

    def _input_products(self, inputs, dp_mask):
        h = K.dot(_step_rows(inputs * dp_mask if dp_mask is not None else inputs), self.kernel)
        return K.bias_add(h, self.bias) if self.bias is not None else h


@tf_export("keras.layers.LSTMCell")
class LSTMCell(_RecurrentCell):
    """LSTMCell(units, activation='tanh', recurrent_activation='hard_sigmoid', use_bias=True, ...,
    unit_forget_bias=True, dropout=0., recurrent_dropout=0., implementation=1): the LSTM step,
    gates in the order i, f, c, o along the kernels' last axis; states [h, c].
    unit_forget_bias starts the forget gate's bias at 1. implementation=1 multiplies per gate
    (each gate its own dropout mask), 2 in one matmul."""

    _gates = 4
    _projected_step = ("call", "_input_products", "_gate_inputs")

    def __init__(self, units, activation="tanh", recurrent_activation="hard_sigmoid", use_bias=True,
                 unit_forget_bias=True, implementation=1, **kwargs):
        super().__init__(units, activation=activation, recurrent_activation=recurrent_activation,
                         use_bias=use_bias, **kwargs)
        self.unit_forget_bias = unit_forget_bias
        self.implementation = implementation
        self.state_size = [self.units, self.units]

    def _bias_initializer(self):
        if not self.unit_forget_bias:
            return None
        base = self.bias_initializer

        def bias_initializer(shape, dtype=None, partition_info=None):
            return concat([base((self.units,), dtype=dtype), initializers.Ones()((self.units,), dtype=dtype),
                           base((self.units * 2,), dtype=dtype)], 0)
        return bias_initializer

    def _gate_bias(self):
        return self.bias

    def call(self, inputs, states, training=None):
        h_tm1, c_tm1 = states[0], states[1]
        # an RNN that computed every step's input products before its loop passes them (_project_steps)
        dp_mask = None if self._steps_projected else self.get_dropout_mask_for_cell(inputs, training, count=4)
        rec_dp_mask = self.get_recurrent_dropout_mask_for_cell(h_tm1, training, count=4)
        c, o = self._carry_and_output(self._gate_inputs(inputs, h_tm1, dp_mask, rec_dp_mask), c_tm1)
        h = o * self.activation(c)
        return h, [h, c]

    def _input_products(self, inputs, dp_mask):
        """[x_g @ kernel_g + bias_g for the gates i, f, c, o] (implementation 1, x_g the input
        dropped by gate g's mask), or x @ kernel (2: the step adds the bias after the recurrent
        product)."""
        count = 4 if self.implementation == 1 else 1
        xs = [_step_rows(inputs * m) for m in dp_mask[:count]] if dp_mask is not None else \
            [_step_rows(inputs)] * count
        if self.implementation != 1:
            return K.dot(xs[0], self._matmul_kernels()[0])
        x = [K.dot(xi, k) for xi, k in zip(xs, split(self.kernel, 4, axis=1))]
        if self.use_bias:
            x = [K.bias_add(xi, b) for xi, b in zip(x, split(self._gate_bias(), 4, axis=0))]
        return x

    def _gate_inputs(self, inputs, h_tm1, dp_mask, rec_dp_mask) -> list:
        """The four gates' pre-activations [i, f, c, o] from the step's input (or its input
        products, when the RNN computed them before its loop: _project_steps) and previous output."""
        x = inputs if self._steps_projected else self._input_products(inputs, dp_mask)
        if self.implementation == 1:
            x = split(x, 4, axis=1) if self._steps_projected else x
            hs = [h_tm1 * m for m in rec_dp_mask] if rec_dp_mask is not None else [h_tm1] * 4
            # one Split (its gradient one Concat) where TF slices four times (four StridedSliceGrads
            # of the whole kernel and their AddN per step): the same columns, the same sums
            recurrent_kernels = split(self.recurrent_kernel, 4, axis=1)
            return [xi + K.dot(hi, k) for xi, hi, k in zip(x, hs, recurrent_kernels)]
        if rec_dp_mask is not None:
            h_tm1 = h_tm1 * rec_dp_mask[0]
        zz = x + K.dot(h_tm1, self._matmul_kernels()[1])
        if self.use_bias:
            zz = K.bias_add(zz, self._gate_bias())
        return split(zz, 4, axis=1)

    def _carry_and_output(self, z, c_tm1):
        """The new carry state and the output gate from the gates' pre-activations."""
        rec_act = self.recurrent_activation
        i, f, o = rec_act(z[0]), rec_act(z[1]), rec_act(z[3])
        return f * c_tm1 + i * self.activation(z[2]), o

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(unit_forget_bias=self.unit_forget_bias, implementation=self.implementation)
        return config


@tf_export("keras.experimental.PeepholeLSTMCell")
class PeepholeLSTMCell(LSTMCell):
    """tf.keras.experimental.PeepholeLSTMCell(units, ...): LSTMCell's arguments, and peephole
    connections (Gers & Schmidhuber, 2000): the input and forget gates also see the previous carry
    state, the output gate the new one, each through a weight vector of `units` ("input_gate_peephole_
    weights", "forget_gate_peephole_weights", "output_gate_peephole_weights", made by
    kernel_initializer after kernel, recurrent_kernel and bias)."""

    _peepholes = ("input_gate_peephole_weights", "forget_gate_peephole_weights", "output_gate_peephole_weights")

    def build(self, input_shape) -> None:
        super().build(input_shape)
        for name in self._peepholes:
            setattr(self, name, self.add_weight(name=name, shape=(self.units,), initializer=self.kernel_initializer))

    def _carry_and_output(self, z, c_tm1):
        rec_act = self.recurrent_activation
        i = rec_act(z[0] + self.input_gate_peephole_weights * c_tm1)
        f = rec_act(z[1] + self.forget_gate_peephole_weights * c_tm1)
        c = f * c_tm1 + i * self.activation(z[2])
        return c, rec_act(z[3] + self.output_gate_peephole_weights * c)


@tf_export("keras.layers.GRUCell")
class GRUCell(_RecurrentCell):
    """GRUCell(units, activation='tanh', recurrent_activation='hard_sigmoid', use_bias=True, ...,
    dropout=0., recurrent_dropout=0., implementation=1, reset_after=False): the GRU step, gates
    z, r, h along the kernels' last axis. reset_after=False applies the reset gate to the state
    before the recurrent matmul; True after it (the cuDNN form, with a bias of shape
    (2, 3 * units): input and recurrent biases)."""

    _gates = 3

    def __init__(self, units, activation="tanh", recurrent_activation="hard_sigmoid", use_bias=True, implementation=1,
                 reset_after=False, **kwargs):
        super().__init__(units, activation=activation, recurrent_activation=recurrent_activation,
                         use_bias=use_bias, **kwargs)
        self.implementation = implementation
        self.reset_after = reset_after
        self.state_size = self.units

    def _bias_shape(self):
        return (2, 3 * self.units) if self.reset_after else (3 * self.units,)

    def _bias_pair(self):
        return self.bias

    def call(self, inputs, states, training=None):
        h_tm1 = states[0]
        # an RNN that computed every step's input products before its loop passes them (_project_steps)
        dp_mask = None if self._steps_projected else self.get_dropout_mask_for_cell(inputs, training, count=3)
        rec_dp_mask = self.get_recurrent_dropout_mask_for_cell(h_tm1, training, count=3)
        u = self.units
        recurrent_bias = unstack(self._bias_pair())[1] if self.use_bias and self.reset_after else None
        x = inputs if self._steps_projected else self._input_products(inputs, dp_mask)
        if self.implementation == 1:
            x = split(x, 3, axis=1) if self._steps_projected else x
            hs = [h_tm1 * m for m in rec_dp_mask] if rec_dp_mask is not None else [h_tm1] * 3
            # the recurrent kernel split once per step (one Concat in its gradient), as LSTMCell does
            recurrent_kernels = split(self.recurrent_kernel, 3, axis=1)
            rec = [K.dot(hs[g], recurrent_kernels[g]) for g in range(2)]
            recurrent_biases = split(recurrent_bias, 3, axis=0) if recurrent_bias is not None else None
            if recurrent_biases is not None:
                rec = [K.bias_add(r, b) for r, b in zip(rec, recurrent_biases)]
            z = self.recurrent_activation(x[0] + rec[0])
            r = self.recurrent_activation(x[1] + rec[1])
            if self.reset_after:
                recurrent_h = K.dot(hs[2], recurrent_kernels[2])
                if recurrent_biases is not None:
                    recurrent_h = K.bias_add(recurrent_h, recurrent_biases[2])
                recurrent_h = r * recurrent_h
            else:
                recurrent_h = K.dot(r * hs[2], recurrent_kernels[2])
            hh = self.activation(x[2] + recurrent_h)
        else:
            matrix_x = x
            recurrent_kernel = self._matmul_kernels()[1]
            if rec_dp_mask is not None:
                h_tm1 = h_tm1 * rec_dp_mask[0]   # TF 1.15 mixes the dropped state into h below too
            if self.reset_after:
                matrix_inner = K.dot(h_tm1, recurrent_kernel)
                if self.use_bias:
                    matrix_inner = K.bias_add(matrix_inner, recurrent_bias)
            else:
                matrix_inner = K.dot(h_tm1, recurrent_kernel[:, :2 * u])
            z = self.recurrent_activation(matrix_x[:, :u] + matrix_inner[:, :u])
            r = self.recurrent_activation(matrix_x[:, u:2 * u] + matrix_inner[:, u:2 * u])
            if self.reset_after:
                recurrent_h = r * matrix_inner[:, 2 * u:]
            else:
                recurrent_h = K.dot(r * h_tm1, recurrent_kernel[:, 2 * u:])
            hh = self.activation(matrix_x[:, 2 * u:] + recurrent_h)
        h = z * h_tm1 + (1 - z) * hh
        return h, [h]

    def _input_products(self, inputs, dp_mask):
        """[x_g @ kernel_g + input_bias_g for the gates z, r, h] (implementation 1, x_g the input
        dropped by gate g's mask), or x @ kernel + input_bias (2)."""
        input_bias = None
        if self.use_bias:
            input_bias = unstack(self._bias_pair())[0] if self.reset_after else self.bias
        if self.implementation != 1:
            matrix_x = K.dot(_step_rows(inputs * dp_mask[0] if dp_mask is not None else inputs),
                             self._matmul_kernels()[0])
            return K.bias_add(matrix_x, input_bias) if input_bias is not None else matrix_x
        xs = [_step_rows(inputs * m) for m in dp_mask] if dp_mask is not None else [_step_rows(inputs)] * 3
        x = [K.dot(xi, k) for xi, k in zip(xs, split(self.kernel, 3, axis=1))]
        if input_bias is not None:
            x = [K.bias_add(xi, b) for xi, b in zip(x, split(input_bias, 3, axis=0))]
        return x

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(implementation=self.implementation, reset_after=self.reset_after)
        return config


@tf_export("keras.layers.StackedRNNCells")
class StackedRNNCells(Layer):
    """StackedRNNCells(cells): cells run one after the other at each step, each cell's output the
    next one's input; the state is the tuple of the cells' states, the output the last cell's."""

    def __init__(self, cells, **kwargs):
        for cell in cells:
            if not hasattr(cell, "call"):
                raise ValueError(f"All cells must have a `call` method. received cells: {cells}")
            if not hasattr(cell, "state_size"):
                raise ValueError(f"All cells must have a `state_size` attribute. received cells: {cells}")
        self.cells = cells
        self.reverse_state_order = kwargs.pop("reverse_state_order", False)
        super().__init__(**kwargs)

    @property
    def state_size(self):
        return tuple(c.state_size for c in (self.cells[::-1] if self.reverse_state_order else self.cells))

    @property
    def output_size(self):
        last = self.cells[-1]
        if getattr(last, "output_size", None) is not None:
            return last.output_size
        return last.state_size[0] if _is_multiple_state(last.state_size) else last.state_size

    def get_initial_state(self, inputs=None, batch_size=None, dtype=None):
        states = []
        for cell in self.cells[::-1] if self.reverse_state_order else self.cells:
            make = getattr(cell, "get_initial_state", None)
            states.append(make(inputs, batch_size, dtype) if make else _zero_states(cell.state_size, batch_size,
                                                                                    dtype))
        return tuple(states)

    def call(self, inputs, states, constants=None, training=None, **kwargs):
        state_size = self.state_size[::-1] if self.reverse_state_order else self.state_size
        nested_states = nest.pack_sequence_as(state_size, nest.flatten(states))
        new_nested_states = []
        for cell, cell_states in zip(self.cells, nested_states):
            cell_states = list(cell_states) if nest.is_sequence(cell_states) else [cell_states]
            cell_kwargs = {}
            if constants is not None and _accepts(cell, "constants"):
                cell_kwargs["constants"] = constants
            if _accepts(cell, "training"):
                cell_kwargs["training"] = training
            inputs, cell_states = cell.call(inputs, cell_states, **cell_kwargs)
            new_nested_states.append(cell_states)
        return inputs, nest.pack_sequence_as(state_size, nest.flatten(new_nested_states))

    def build(self, input_shape) -> None:
        input_shape = TensorShape(input_shape[0] if isinstance(input_shape, list) else input_shape)
        for cell in self.cells:
            if isinstance(cell, Layer) and not cell.built:
                with K.name_scope(cell.name):
                    cell.build(input_shape)
                    cell.built = True
            output_dim = cell.output_size if getattr(cell, "output_size", None) is not None else (
                cell.state_size[0] if _is_multiple_state(cell.state_size) else cell.state_size)
            input_shape = TensorShape([input_shape[0]]).concatenate(as_shape(output_dim))
        self.built = True

    def get_config(self) -> dict:
        cells = [{"class_name": type(c).__name__, "config": c.get_config()} for c in self.cells]
        return {**super().get_config(), "cells": cells}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        config = dict(config)
        cells = [_deserialize_layer(c, custom_objects) for c in config.pop("cells")]
        return cls(cells, **config)


# -- the RNN layer --------------------------------------------------------------------------------
@tf_export("keras.layers.RNN")
class RNN(Layer):
    """RNN(cell, return_sequences=False, return_state=False, go_backwards=False, stateful=False,
    unroll=False, time_major=False): runs `cell` (a Keras cell, or a list of them stacked) over
    the time axis of its [batch, time, ...] input. Returns the last output ([batch, units]), or
    every step's (return_sequences), followed by the final states (return_state). Called with
    `initial_state=` and `constants=` (passed to the cell at every step); a mask (from Masking or
    Embedding(mask_zero=True)) makes a masked step keep the states and repeat the previous
    output. A stateful layer (fixed batch size) starts each call from the last call's final
    states (reset_states() zeroes them)."""

    def __init__(self, cell, return_sequences=False, return_state=False, go_backwards=False, stateful=False,
                 unroll=False, time_major=False, **kwargs):
        if isinstance(cell, (list, tuple)):
            cell = StackedRNNCells(cell)
        if not hasattr(cell, "call"):
            raise ValueError(f"`cell` should have a `call` method. The RNN was passed: {cell}")
        if not hasattr(cell, "state_size"):
            raise ValueError("The RNN cell should have an attribute `state_size` (tuple of integers, one integer "
                             "per RNN state).")
        self.zero_output_for_mask = kwargs.pop("zero_output_for_mask", False)
        if "input_shape" not in kwargs and ("input_dim" in kwargs or "input_length" in kwargs):
            kwargs["input_shape"] = (kwargs.pop("input_length", None), kwargs.pop("input_dim", None))
        super().__init__(**kwargs)
        self.cell = cell
        self.return_sequences = return_sequences
        self.return_state = return_state
        self.go_backwards = go_backwards
        self.stateful = stateful
        self.unroll = unroll
        self.time_major = time_major
        self.supports_masking = True
        self.input_spec = None
        self.state_spec = None
        self._states = None
        self.constants_spec = None
        self._num_constants = 0

    @property
    def states(self):
        if self._states is None:
            return [None] * len(self._state_sizes())
        return self._states

    @states.setter
    def states(self, states):
        self._states = states

    def _state_sizes(self) -> list:
        return list(self.cell.state_size) if _is_multiple_state(self.cell.state_size) else [self.cell.state_size]

    def compute_output_shape(self, input_shape):
        if isinstance(input_shape, list) and input_shape and not isinstance(input_shape[0], (int, type(None))):
            input_shape = input_shape[0]
        input_shape = TensorShape(input_shape)
        batch, time_step = input_shape[0].value, input_shape[1].value
        if self.time_major:
            batch, time_step = time_step, batch
        output_dim = as_shape(getattr(self.cell, "output_size", None) or self._state_sizes()[0]).as_list()
        if self.return_sequences:
            lead = [time_step, batch] if self.time_major else [batch, time_step]
            output_shape = TensorShape(lead + output_dim)
        else:
            output_shape = TensorShape([batch] + output_dim)
        if self.return_state:
            return [output_shape] + [TensorShape([batch] + as_shape(s).as_list())
                                     for s in nest.flatten(self._state_sizes())]
        return output_shape

    def compute_mask(self, inputs, mask):
        mask = nest.flatten(mask)[0] if mask is not None else None
        output_mask = mask if self.return_sequences else None
        if self.return_state:
            return [output_mask] + [None for _ in nest.flatten(self.states)]
        return output_mask

    def build(self, input_shape) -> None:
        # with initial states and constants as Keras inputs, input_shape lists their shapes too
        constants_shape = None
        if isinstance(input_shape, list):
            if self._num_constants:
                constants_shape = list(input_shape[-self._num_constants:])
            input_shape = input_shape[0]
        input_shape = TensorShape(input_shape)
        if input_shape.ndims is not None and input_shape.ndims < 3:
            raise ValueError(f"Input 0 of layer {self.name} is incompatible with the layer: expected ndim>=3 (batch, "
                             f"time, ...), found ndim={input_shape.ndims}. Full shape received: "
                             f"{input_shape.as_list()}")
        spec_shape = input_shape.as_list()
        batch_index, time_index = (1, 0) if self.time_major else (0, 1)
        if not self.stateful:
            spec_shape[batch_index] = None
        spec_shape[time_index] = None
        spec = InputSpec(shape=tuple(spec_shape))
        if self.input_spec is not None and isinstance(self.input_spec, list):
            self.input_spec[0] = spec
        else:
            self.input_spec = [spec]
        step_input_shape = input_shape[1:] if self.time_major else \
            TensorShape([input_shape[0]]).concatenate(input_shape[2:])
        if isinstance(self.cell, Layer) and not self.cell.built:
            # under the RNN's name scope: "lstm/kernel:0" (TF 1.15); a cell taking constants gets their
            # shapes after the step input's, as TF 1.15 builds it
            with_constants = constants_shape and _accepts(self.cell, "constants")
            self.cell.build([step_input_shape] + constants_shape if with_constants else step_input_shape)
            self.cell.built = True
        if self.state_spec is not None:
            self._validate_state_spec(self._state_sizes(), self.state_spec)
        else:
            self.state_spec = [InputSpec(shape=tuple([None] + as_shape(s).as_list()))
                               for s in nest.flatten(self._state_sizes())]
        if self.stateful:
            self.reset_states()
        self.built = True

    @staticmethod
    def _validate_state_spec(cell_state_sizes, init_state_specs) -> None:
        sizes, specs = nest.flatten(cell_state_sizes), nest.flatten(init_state_specs)
        error = ValueError(f"An `initial_state` was passed that is not compatible with `cell.state_size`. Received "
                           f"`state_spec`={init_state_specs}; however `cell.state_size` is {cell_state_sizes}")
        if len(sizes) != len(specs):
            raise error
        for spec, size in zip(specs, sizes):
            if spec is not None and spec.shape is not None and \
                    not TensorShape(spec.shape[1:]).is_compatible_with(as_shape(size)):
                raise error

    def get_initial_state(self, inputs):
        """Zeros for each state, batch size from `inputs` (the cell's get_initial_state if it has one)."""
        first = nest.flatten(inputs)[0]
        batch_size = shape(first)[1 if self.time_major else 0]
        make = getattr(self.cell, "get_initial_state", None)
        if make is not None:
            state = make(inputs=None, batch_size=batch_size, dtype=first.dtype)
        else:
            state = _zero_states(self.cell.state_size, batch_size, first.dtype)
        return list(state) if nest.is_sequence(state) else [state]

    def __call__(self, inputs, initial_state=None, constants=None, **kwargs):
        inputs, initial_state, constants = _standardize_args(inputs, initial_state, constants, self._num_constants)
        if initial_state is None and constants is None:
            return super().__call__(inputs, **kwargs)
        additional_inputs, additional_specs = [], []
        if initial_state is not None:
            additional_inputs += initial_state
            self.state_spec = [InputSpec(shape=K.int_shape(s)) for s in initial_state]
            additional_specs += self.state_spec
        if constants is not None:
            additional_inputs += constants
            self.constants_spec = [InputSpec(shape=K.int_shape(c)) for c in constants]
            self._num_constants = len(constants)
            additional_specs += self.constants_spec
        keras_flags = {K.is_keras_tensor(t) for t in nest.flatten(additional_inputs)}
        if len(keras_flags) > 1:
            raise ValueError("The initial state or constants of an RNN layer cannot be specified with a mix of Keras "
                             'tensors and non-Keras tensors (a "Keras tensor" is a tensor that was returned by a Keras '
                             "layer, or by `Input`)")
        if keras_flags == {True}:
            full_input_spec = (self.input_spec if self.built else [None]) + additional_specs
            self.input_spec = full_input_spec
            try:
                return super().__call__([inputs] + additional_inputs, **kwargs)
            finally:
                self.input_spec = self.input_spec[:-len(additional_specs)]
        if initial_state is not None:
            kwargs["initial_state"] = initial_state
        if constants is not None:
            kwargs["constants"] = constants
        return super().__call__(inputs, **kwargs)

    def _process_inputs(self, inputs, initial_state, constants):
        if isinstance(inputs, list):
            if self._num_constants:
                initial_state = inputs[1:-self._num_constants]
                constants = inputs[-self._num_constants:]
            else:
                initial_state = inputs[1:]
            initial_state = initial_state or None
            inputs = inputs[0]
        if self.stateful:
            stored = [v.read_value() for v in self.states]
            if initial_state is not None:
                # the stored states unless they are all zeros (after reset_states), as TF 1.15
                non_zero = add_n([count_nonzero(s) for s in stored])
                initial_state = cond(non_zero > 0, lambda: stored, lambda: list(initial_state), strict=True)
            else:
                initial_state = stored
        elif initial_state is None:
            initial_state = self.get_initial_state(inputs)
        if len(initial_state) != len(self.states):
            raise ValueError(f"Layer has {len(self.states)} states but was passed {len(initial_state)} initial "
                             "states.")
        return inputs, initial_state, constants

    def call(self, inputs, mask=None, training=None, initial_state=None, constants=None):
        inputs, initial_state, constants = self._process_inputs(inputs, initial_state, constants)
        for cell in [self.cell] + list(getattr(self.cell, "cells", [])):
            if isinstance(cell, DropoutRNNCellMixin):
                cell.reset_dropout_mask()
                cell.reset_recurrent_dropout_mask()
        if mask is not None:
            mask = nest.flatten(mask)[0]
        input_shape = K.int_shape(nest.flatten(inputs)[0])
        timesteps = input_shape[0] if self.time_major else input_shape[1]
        if self.unroll and timesteps is None:
            raise ValueError("Cannot unroll a RNN if the time dimension is undefined. \n- If using a Sequential "
                             "model, specify the time dimension by passing an `input_shape` or `batch_input_shape` "
                             "argument to your first layer. If your first layer is an Embedding, you can also use "
                             "the `input_length` argument.\n- If using the functional API, specify the time "
                             "dimension by passing a `shape` or `batch_shape` argument to your Input layer.")
        kwargs = {}
        if _accepts(self.cell, "training"):
            kwargs["training"] = training
        if constants:
            if not _accepts(self.cell, "constants"):
                raise ValueError("RNN cell does not support constants")
            kwargs["constants"] = constants
        cell_call = self.cell.__call__ if callable(self.cell) else self.cell.call
        # a cell that computes all the steps' input products before the loop (_RecurrentCell._project_steps)
        project = getattr(self.cell, "_project_steps", None) if not constants else None
        # a tf.nn.rnn_cell cell takes its one state as a tensor, not a list
        single_tf_state = isinstance(self.cell, RNNCell) and len(self._state_sizes()) == 1

        def step(x, states):
            output, new_states = cell_call(x, states[0] if single_tf_state else states, **kwargs)
            return output, new_states if nest.is_sequence(new_states) else [new_states]

        try:
            last_output, outputs, states = _rnn(step, inputs, initial_state, self.go_backwards, mask, None,
                                                self.unroll, self.time_major, self.zero_output_for_mask,
                                                project and (lambda steps: project(steps, training)))
        finally:
            if project is not None:
                self.cell._steps_projected = False
        if self.stateful:
            self.add_update([assign(v, s) for v, s in zip(nest.flatten(self.states), nest.flatten(states))])
        output = outputs if self.return_sequences else last_output
        if self.return_state:
            return [output] + list(states)
        return output

    def reset_states(self, states=None) -> None:
        """Zeroes the stored states of a stateful layer, or sets them to `states` (numpy arrays)."""
        if not self.stateful:
            raise AttributeError("Layer must be stateful.")
        spec_shape = None
        if self.input_spec is not None:
            spec_shape = nest.flatten(self.input_spec[0])[0].shape
        batch_size = None if spec_shape is None else spec_shape[1 if self.time_major else 0]
        if not batch_size:
            raise ValueError("If a RNN is stateful, it needs to know its batch size. Specify the batch size of your "
                             "input tensors: \n- If using a Sequential model, specify the batch size by passing a "
                             "`batch_input_shape` argument to your first layer.\n- If using the functional API, "
                             "specify the batch size by passing a `batch_shape` argument to your Input layer.")
        sizes = [[batch_size] + as_shape(s).as_list() for s in nest.flatten(self._state_sizes())]
        if self._states is None:
            self._states = [K.zeros(s) for s in sizes]
        elif states is None:
            K.batch_set_value([(v, np.zeros(s)) for v, s in zip(self._states, sizes)])
        else:
            values = [np.asarray(v) for v in nest.flatten(states)]
            if len(values) != len(self._states):
                raise ValueError(f"Layer {self.name} expects {len(self._states)} states, but it received "
                                 f"{len(values)} state values. Input received: {states}")
            for i, (value, size) in enumerate(zip(values, sizes)):
                if list(value.shape) != size:
                    raise ValueError(f"State {i} is incompatible with layer {self.name}: expected shape="
                                     f"{tuple(size)}, found shape={value.shape}")
            K.batch_set_value(list(zip(self._states, values)))

    def get_config(self) -> dict:
        config = {"return_sequences": self.return_sequences, "return_state": self.return_state,
                  "go_backwards": self.go_backwards, "stateful": self.stateful, "unroll": self.unroll,
                  "time_major": self.time_major}
        if self._num_constants:
            config["num_constants"] = self._num_constants
        if self.zero_output_for_mask:
            config["zero_output_for_mask"] = self.zero_output_for_mask
        config["cell"] = {"class_name": type(self.cell).__name__, "config": self.cell.get_config()}
        return {**super().get_config(), **config}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        config = dict(config)
        cell = _deserialize_layer(config.pop("cell"), custom_objects)
        num_constants = config.pop("num_constants", 0)
        layer = cls(cell, **config)
        layer._num_constants = num_constants
        return layer


def _accepts(cell, argument: str) -> bool:
    parameters = inspect.signature(cell.call).parameters
    return argument in parameters or any(p.kind is p.VAR_KEYWORD for p in parameters.values())


class _CellLayer(RNN):
    """SimpleRNN, LSTM and GRU: an RNN over their own cell, configured by the cell's arguments
    (exposed as the layer's attributes) and serialised flat (no "cell" entry)."""

    _cell_class = None
    _cell_args = ()

    def __init__(self, units, return_sequences=False, return_state=False, go_backwards=False, stateful=False,
                 unroll=False, activity_regularizer=None, **kwargs):
        if kwargs.get("implementation") == 0:
            kwargs["implementation"] = 1   # TF 1.15: implementation=0 is deprecated, now 1
        cell_kwargs = {k: kwargs.pop(k) for k in list(kwargs) if k in self._cell_args}
        cell = self._cell_class(units, dtype=kwargs.get("dtype"), **cell_kwargs)
        super().__init__(cell, return_sequences=return_sequences, return_state=return_state,
                         go_backwards=go_backwards, stateful=stateful, unroll=unroll, **kwargs)
        self.activity_regularizer = regularizers.get(activity_regularizer)
        self.input_spec = [InputSpec(ndim=3)]

    def __getattr__(self, name):
        # units, activation, dropout, ...: the cell's (only for names the cell configures)
        if name in type(self)._cell_args or name == "units":
            return getattr(self.__dict__["cell"], name)
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def call(self, inputs, mask=None, training=None, initial_state=None, constants=None):
        return super().call(inputs, mask=mask, training=training, initial_state=initial_state)

    def get_config(self) -> dict:
        config = super().get_config()
        del config["cell"]
        cell_config = {k: v for k, v in self.cell.get_config().items() if k not in ("name", "trainable", "dtype")}
        config.update(cell_config)
        config["activity_regularizer"] = regularizers.serialize(self.activity_regularizer)
        return config

    @classmethod
    def from_config(cls, config, custom_objects=None):
        config = dict(config)
        if config.get("implementation") == 0:
            config["implementation"] = 1
        return cls(**config)


_COMMON_CELL_ARGS = ("activation", "use_bias", "kernel_initializer", "recurrent_initializer", "bias_initializer",
                     "kernel_regularizer", "recurrent_regularizer", "bias_regularizer", "kernel_constraint",
                     "recurrent_constraint", "bias_constraint", "dropout", "recurrent_dropout")


@tf_export("keras.layers.SimpleRNN")
class SimpleRNN(_CellLayer):
    """SimpleRNN(units, activation='tanh', use_bias=True, ..., dropout=0., recurrent_dropout=0.,
    return_sequences=False, return_state=False, go_backwards=False, stateful=False, unroll=False):
    a fully connected RNN whose output is fed back (RNN over a SimpleRNNCell)."""

    _cell_class = SimpleRNNCell
    _cell_args = _COMMON_CELL_ARGS


@tf_export("keras.layers.LSTM")
class LSTM(_CellLayer):
    """LSTM(units, activation='tanh', recurrent_activation='hard_sigmoid', use_bias=True,
    kernel_initializer='glorot_uniform', recurrent_initializer='orthogonal',
    bias_initializer='zeros', unit_forget_bias=True, ..., dropout=0., recurrent_dropout=0.,
    implementation=1, return_sequences=False, return_state=False, go_backwards=False,
    stateful=False, unroll=False): TF 1.15's (v1) LSTM layer; weights kernel (input_dim,
    4 * units), recurrent_kernel (units, 4 * units), bias (4 * units,); states [h, c]."""

    _cell_class = LSTMCell
    _cell_args = _COMMON_CELL_ARGS + ("recurrent_activation", "unit_forget_bias", "implementation")


@tf_export("keras.layers.GRU")
class GRU(_CellLayer):
    """GRU(units, activation='tanh', recurrent_activation='hard_sigmoid', use_bias=True, ...,
    dropout=0., recurrent_dropout=0., implementation=1, return_sequences=False,
    return_state=False, go_backwards=False, stateful=False, unroll=False, reset_after=False):
    TF 1.15's (v1) GRU layer; with reset_after=True (the CuDNN-compatible form) the bias is
    (2, 3 * units)."""

    _cell_class = GRUCell
    _cell_args = _COMMON_CELL_ARGS + ("recurrent_activation", "implementation", "reset_after")



# -- the CuDNN layers -----------------------------------------------------------------------------
def _cudnn_matmul_kernels(cell) -> tuple:
    """What cuDNN's weights multiply as: cuDNN reads each gate's block of the kernel (input_dim, units)
    in row-major order as its [units, input_dim] matrix W (gate = W x), and each recurrent block
    as [units, units]; so x @ kernel is, per gate, x @ the block reshaped to (units, input_dim) and
    transposed, and h @ recurrent_kernel is h @ the recurrent block transposed. (Keras's
    load_weights converts plain LSTM/GRU weights into this layout: saving/hdf5.py.)"""
    gates = cell._gates
    kernel = concat([transpose(reshape(k, (cell.units, -1))) for k in split(cell.kernel, gates, axis=1)], 1)
    recurrent_kernel = concat([transpose(k) for k in split(cell.recurrent_kernel, gates, axis=1)], 1)
    return kernel, recurrent_kernel


class _CuDNNLSTMCell(LSTMCell):
    """CuDNNLSTM's step: sigmoid gates, and cuDNN's two biases (input and recurrent, 8 * units),
    which act as their sum. unit_forget_bias sets the recurrent forget-gate bias to 1."""

    def __init__(self, units, **kwargs):
        super().__init__(units, recurrent_activation="sigmoid", implementation=2, **kwargs)

    def _bias_shape(self):
        return (self.units * 8,)

    def _bias_initializer(self):
        if not self.unit_forget_bias:
            return None
        base = self.bias_initializer

        def bias_initializer(shape, dtype=None, partition_info=None):
            return concat([base((self.units * 5,), dtype=dtype), initializers.Ones()((self.units,), dtype=dtype),
                           base((self.units * 2,), dtype=dtype)], 0)
        return bias_initializer

    def _gate_bias(self):
        return self.bias[:4 * self.units] + self.bias[4 * self.units:]

    _matmul_kernels = _cudnn_matmul_kernels


class _CuDNNGRUCell(GRUCell):
    """CuDNNGRU's step: sigmoid gates, the reset gate applied after the recurrent matmul, and
    cuDNN's input and recurrent biases in one (6 * units,) vector."""

    def __init__(self, units, **kwargs):
        super().__init__(units, recurrent_activation="sigmoid", implementation=2, reset_after=True, **kwargs)

    def _bias_shape(self):
        return (self.units * 6,)

    def _bias_pair(self):
        return K.reshape(self.bias, (2, 3 * self.units))

    _matmul_kernels = _cudnn_matmul_kernels


class _CuDNNRNN(RNN):
    """CuDNNLSTM and CuDNNGRU: TF 1.15 runs them only on a GPU through cuDNN; here the same
    arithmetic runs on any device (the weights as cuDNN lays them out, so GPU-trained models
    load). No masking, dropout or unrolling, as cuDNN."""

    _cell_class = None
    _config_keys = ("units", "kernel_initializer", "recurrent_initializer", "bias_initializer", "kernel_regularizer",
                    "recurrent_regularizer", "bias_regularizer", "kernel_constraint", "recurrent_constraint",
                    "bias_constraint")

    def __init__(self, units, kernel_initializer="glorot_uniform", recurrent_initializer="orthogonal",
                 bias_initializer="zeros", kernel_regularizer=None, recurrent_regularizer=None, bias_regularizer=None,
                 activity_regularizer=None, kernel_constraint=None, recurrent_constraint=None, bias_constraint=None,
                 return_sequences=False, return_state=False, go_backwards=False, stateful=False, time_major=False,
                 **kwargs):
        cell_kwargs = {k: kwargs.pop(k) for k in ("unit_forget_bias",) if k in kwargs}
        cell = self._cell_class(units, kernel_initializer=kernel_initializer,
                                recurrent_initializer=recurrent_initializer, bias_initializer=bias_initializer,
                                kernel_regularizer=kernel_regularizer, recurrent_regularizer=recurrent_regularizer,
                                bias_regularizer=bias_regularizer, kernel_constraint=kernel_constraint,
                                recurrent_constraint=recurrent_constraint, bias_constraint=bias_constraint,
                                dtype=kwargs.get("dtype"), **cell_kwargs)
        super().__init__(cell, return_sequences=return_sequences, return_state=return_state,
                         go_backwards=go_backwards, stateful=stateful, time_major=time_major, **kwargs)
        self.activity_regularizer = regularizers.get(activity_regularizer)
        self.supports_masking = False
        self.input_spec = [InputSpec(ndim=3)]

    def __getattr__(self, name):
        if name in type(self)._config_keys:
            return getattr(self.__dict__["cell"], name)
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def call(self, inputs, mask=None, training=None, initial_state=None):
        if isinstance(mask, list):
            mask = mask[0]
        if mask is not None:
            raise ValueError("Masking is not supported for CuDNN RNNs.")
        return super().call(inputs, training=training, initial_state=initial_state)

    def get_config(self) -> dict:
        config = Layer.get_config(self)
        config.update(return_sequences=self.return_sequences, return_state=self.return_state,
                      go_backwards=self.go_backwards, stateful=self.stateful, time_major=self.time_major)
        cell_config = self.cell.get_config()
        config.update({k: cell_config[k] for k in self._config_keys})
        config["activity_regularizer"] = regularizers.serialize(self.activity_regularizer)
        return config

    @classmethod
    def from_config(cls, config, custom_objects=None):
        return cls(**config)


@tf_export("keras.layers.CuDNNLSTM")
class CuDNNLSTM(_CuDNNRNN):
    """CuDNNLSTM(units, kernel_initializer='glorot_uniform', unit_forget_bias=True,
    recurrent_initializer='orthogonal', bias_initializer='zeros', ..., return_sequences=False,
    return_state=False, go_backwards=False, stateful=False): the cuDNN LSTM (sigmoid gates;
    weights kernel (input_dim, 4 * units), recurrent_kernel, bias (8 * units,): the input then
    the recurrent biases)."""

    _cell_class = _CuDNNLSTMCell
    _config_keys = _CuDNNRNN._config_keys + ("unit_forget_bias",)


@tf_export("keras.layers.CuDNNGRU")
class CuDNNGRU(_CuDNNRNN):
    """CuDNNGRU(units, kernel_initializer='glorot_uniform', recurrent_initializer='orthogonal',
    bias_initializer='zeros', ..., return_sequences=False, return_state=False,
    go_backwards=False, stateful=False): the cuDNN GRU (sigmoid gates, reset gate after the
    recurrent matmul; bias (6 * units,): the input then the recurrent biases)."""

    _cell_class = _CuDNNGRUCell
