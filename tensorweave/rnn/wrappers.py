"""tf.nn.rnn_cell's compositions: MultiRNNCell (stacked cells, each in scope "cell_<i>") and the
wrappers DropoutWrapper, ResidualWrapper and DeviceWrapper. A wrapper runs its cell in the
caller's scope, so wrapping a cell does not change its variables' names."""
from __future__ import annotations

import hashlib
import numbers

from tensorweave.framework import nest
from tensorweave.framework.api import name_scope
from tensorweave.framework.graph import get_default_graph
from tensorweave.framework.shapes import TensorShape, as_shape
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tensor_util import constant_value
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.concat import concat
from tensorweave.ops.array.slicing import slice as slice_
from tensorweave.ops.math.binary import add, truediv
from tensorweave.ops.math.unary import floor
from tensorweave.ops.nn.impl import dropout
from tensorweave.ops.random import random_uniform
from tensorweave.ops.state.variable_scope import variable_scope
from tensorweave.rnn.cells import LSTMStateTuple, RNNCell


def _flat_size(size) -> int:
    return int(size) if isinstance(size, numbers.Integral) else int(as_shape(size).num_elements())


@tf_export("contrib.rnn.MultiRNNCell", "nn.rnn_cell.MultiRNNCell")
class MultiRNNCell(RNNCell):
    """tf.nn.rnn_cell.MultiRNNCell(cells, state_is_tuple=True): the cells stacked, each one's
    output the next one's input; the state is the tuple of their states (or one concatenated
    tensor when not state_is_tuple). Cell i's variables live under "cell_<i>"."""

    def __init__(self, cells, state_is_tuple=True):
        super().__init__()
        if not cells:
            raise ValueError("Must specify at least one cell for MultiRNNCell.")
        if not nest.is_sequence(cells):
            raise TypeError(f"cells must be a list or tuple, but saw: {cells}.")
        self._cells = list(cells)
        self._state_is_tuple = state_is_tuple
        if not state_is_tuple and any(nest.is_sequence(c.state_size) for c in self._cells):
            raise ValueError("Some cells return tuples of states, but the flag state_is_tuple is not set. "
                             f"State sizes are: {[c.state_size for c in self._cells]}")

    @property
    def state_size(self):
        if self._state_is_tuple:
            return tuple(c.state_size for c in self._cells)
        return sum(_flat_size(c.state_size) for c in self._cells)

    @property
    def output_size(self):
        return self._cells[-1].output_size

    def zero_state(self, batch_size, dtype):
        with name_scope(f"{type(self).__name__}ZeroState", values=[batch_size]):
            if self._state_is_tuple:
                return tuple(c.zero_state(batch_size, dtype) for c in self._cells)
            return super().zero_state(batch_size, dtype)

    @property
    def variables(self) -> list:
        seen, out = set(), []
        for v in [v for c in self._cells for v in c.variables] + list(self._variables):
            if id(v) not in seen:
                seen.add(id(v))
                out.append(v)
        return out

    weights = variables

    def call(self, inputs, state):
        out = inputs
        new_states = []
        offset = 0
        for i, cell in enumerate(self._cells):
            with variable_scope(f"cell_{i}"):
                if self._state_is_tuple:
                    if not nest.is_sequence(state):
                        raise ValueError(f"Expected state to be a tuple of length {len(self.state_size)}, but "
                                         f"received: {state}")
                    cur = state[i]
                else:
                    size = _flat_size(cell.state_size)
                    cur = slice_(state, [0, offset], [-1, size])
                    offset += size
                out, new = cell(out, cur)
                new_states.append(new)
        return out, (tuple(new_states) if self._state_is_tuple else concat(new_states, 1))


class _Wrapper(RNNCell):
    """A cell around `cell`: same sizes and zero state; called in the caller's variable scope."""

    def __init__(self, cell):
        super().__init__()
        if not hasattr(cell, "state_size") or not callable(cell):
            raise TypeError(f"The parameter cell is not a RNNCell: {cell!r}")
        self.cell = cell

    @property
    def state_size(self):
        return self.cell.state_size

    @property
    def output_size(self):
        return self.cell.output_size

    @property
    def variables(self) -> list:
        return self.cell.variables

    weights = variables

    @property
    def trainable_variables(self) -> list:
        return self.cell.trainable_variables

    trainable_weights = trainable_variables

    def zero_state(self, batch_size, dtype):
        with name_scope(f"{type(self).__name__}ZeroState", values=[batch_size]):
            return self.cell.zero_state(batch_size, dtype)

    def __call__(self, inputs, state, scope=None):
        return self._wrapped_call(inputs, state, scope)

    def _wrapped_call(self, inputs, state, scope):
        return self.cell(inputs, state, scope=scope)


def _default_state_filter(substate):
    """Dropout applies to every state tensor except an LSTM's memory c."""
    if isinstance(substate, LSTMStateTuple):
        return LSTMStateTuple(c=False, h=True)
    return True


def _dropout_flags(visitor, state) -> list:
    """One bool per flattened state tensor: whether `visitor` lets dropout touch it (it answers
    True/False for a whole substructure, or a structure of bools one level down)."""
    verdict = visitor(state)
    if verdict is False:
        return [False] * len(nest.flatten(state))
    if verdict is True:
        if not nest.is_sequence(state):
            return [True]
        return [f for child in (state.values() if isinstance(state, dict) else state)
                for f in _dropout_flags(visitor, child)]
    children = list(state.values()) if isinstance(state, dict) else list(state)
    marks = list(verdict.values()) if isinstance(verdict, dict) else list(verdict)
    if len(children) != len(marks):
        raise ValueError(f"dropout_state_filter_visitor returned {verdict!r} for a state of {len(children)} parts")
    flags = []
    for child, mark in zip(children, marks):
        flags += _dropout_flags(visitor, child) if mark else [False] * len(nest.flatten(child))
    return flags


@tf_export("contrib.rnn.DropoutWrapper", "nn.rnn_cell.DropoutWrapper")
class DropoutWrapper(_Wrapper):
    """tf.nn.rnn_cell.DropoutWrapper(cell, input_keep_prob=1.0, output_keep_prob=1.0,
    state_keep_prob=1.0, variational_recurrent=False, input_size=None, dtype=None, seed=None,
    dropout_state_filter_visitor=None): dropout on the cell's inputs, outputs and (all but an
    LSTM's c) state. With variational_recurrent one mask per wrapper is drawn for the whole run
    (Gal & Ghahramani), which needs `dtype` (and `input_size` for input dropout)."""

    def __init__(self, cell, input_keep_prob=1.0, output_keep_prob=1.0, state_keep_prob=1.0,
                 variational_recurrent=False, input_size=None, dtype=None, seed=None,
                 dropout_state_filter_visitor=None):
        super().__init__(cell)
        if dropout_state_filter_visitor is not None and not callable(dropout_state_filter_visitor):
            raise TypeError("dropout_state_filter_visitor must be callable")
        self._filter = dropout_state_filter_visitor or _default_state_filter
        self._seed = seed
        self._variational = variational_recurrent
        with name_scope("DropoutWrapperInit"):
            for attr, prob in (("input", input_keep_prob), ("state", state_keep_prob), ("output", output_keep_prob)):
                value = convert_to_tensor(prob)
                const = constant_value(value)
                if const is not None:
                    if const < 0 or const > 1:
                        raise ValueError(f"Parameter {attr}_keep_prob must be between 0 and 1: {float(const)}")
                    setattr(self, f"_{attr}_keep_prob", float(const))
                else:
                    setattr(self, f"_{attr}_keep_prob", value)
        self._noise = {}
        if variational_recurrent:
            if dtype is None:
                raise ValueError("When variational_recurrent=True, dtype must be provided")
            if not isinstance(self._input_keep_prob, float) or self._input_keep_prob < 1.0:
                if input_size is None:
                    raise ValueError("When variational_recurrent=True and input_keep_prob < 1.0 or is unknown, "
                                     "input_size must be provided")
                self._noise["input"] = self._batch_noise(input_size, "input", dtype)
            self._noise["state"] = self._batch_noise(cell.state_size, "state", dtype)
            self._noise["output"] = self._batch_noise(cell.output_size, "output", dtype)

    def _gen_seed(self, salt_prefix: str, index: int):
        if self._seed is None:
            return None
        digest = hashlib.md5((str(self._seed) + f"{salt_prefix}_{index}").encode("utf-8")).hexdigest()
        return int(digest[:8], 16) & 0x7FFFFFFF

    def _batch_noise(self, sizes, salt: str, dtype) -> list:
        """One uniform [1, *size] noise tensor per flattened size (shared by the whole batch)."""
        out = []
        for i, s in enumerate(nest.flatten(sizes)):
            size = TensorShape([int(s)]) if isinstance(s, numbers.Integral) else as_shape(s)
            out.append(random_uniform([1] + size.as_list(), seed=self._gen_seed(salt, i), dtype=dtype))
        return out

    def _dropout(self, values, salt: str, keep_prob, flags=None):
        flat = nest.flatten(values)
        flags = flags or [True] * len(flat)
        dropped = []
        for i, (v, on) in enumerate(zip(flat, flags)):
            if not on:
                dropped.append(v)
            elif self._variational:
                binary = floor(add(keep_prob, self._noise[salt][i]))
                d = truediv(v, keep_prob) * binary
                d.set_shape(v.shape)
                dropped.append(d)
            else:
                dropped.append(dropout(v, keep_prob=keep_prob, seed=self._gen_seed(salt, i)))
        return nest.pack_sequence_as(values, dropped)

    @staticmethod
    def _active(p) -> bool:
        return not isinstance(p, float) or p < 1

    def _wrapped_call(self, inputs, state, scope):
        if self._active(self._input_keep_prob):
            inputs = self._dropout(inputs, "input", self._input_keep_prob)
        output, new_state = self.cell(inputs, state, scope=scope)
        if self._active(self._state_keep_prob):
            new_state = self._dropout(new_state, "state", self._state_keep_prob,
                                      _dropout_flags(self._filter, new_state))
        if self._active(self._output_keep_prob):
            output = self._dropout(output, "output", self._output_keep_prob)
        return output, new_state


@tf_export("contrib.rnn.ResidualWrapper", "nn.rnn_cell.ResidualWrapper")
class ResidualWrapper(_Wrapper):
    """tf.nn.rnn_cell.ResidualWrapper(cell, residual_fn=None): the output is
    residual_fn(inputs, cell_output), by default their sum (same structure and shapes)."""

    def __init__(self, cell, residual_fn=None):
        super().__init__(cell)
        self._residual_fn = residual_fn

    def _wrapped_call(self, inputs, state, scope):
        output, new_state = self.cell(inputs, state, scope=scope)

        def default(inp, out):
            nest.assert_same_structure(inp, out)

            def one(i, o):
                i, o = convert_to_tensor(i), convert_to_tensor(o)
                i.shape.assert_is_compatible_with(o.shape)
                return i + o
            return nest.map_structure(one, inp, out)
        return (self._residual_fn or default)(inputs, output), new_state


@tf_export("contrib.rnn.DeviceWrapper", "nn.rnn_cell.DeviceWrapper")
class DeviceWrapper(_Wrapper):
    """tf.nn.rnn_cell.DeviceWrapper(cell, device): runs the cell (and its zero state) on `device`."""

    def __init__(self, cell, device):
        super().__init__(cell)
        self._device = device

    def zero_state(self, batch_size, dtype):
        with name_scope(f"{type(self).__name__}ZeroState", values=[batch_size]), \
                get_default_graph().device(self._device):
            return self.cell.zero_state(batch_size, dtype)

    def _wrapped_call(self, inputs, state, scope):
        with get_default_graph().device(self._device):
            return self.cell(inputs, state, scope=scope)
