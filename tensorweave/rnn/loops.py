"""Running a cell over a sequence: tf.nn.dynamic_rnn (a while_loop over TensorArrays),
tf.nn.static_rnn (unrolled), their bidirectional forms and tf.nn.raw_rnn.

With `sequence_length`, a batch entry's outputs past its length are zeros and its state stops
changing there (TF's per-entry select), so the final state is the state at each entry's end.
"""
from __future__ import annotations

from tensorweave.framework import dtypes, nest
from tensorweave.framework.api import name_scope
from tensorweave.framework.graph import Tensor, get_default_graph
from tensorweave.framework.shapes import TensorShape, as_shape, unknown_shape
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.concat import concat, stack, unstack
from tensorweave.ops.array.core import identity, shape, transpose
from tensorweave.ops.array.pad import reverse, reverse_sequence
from tensorweave.ops.array.sort import where
from tensorweave.ops.control_flow.tensor_array import TensorArray
from tensorweave.ops.control_flow.while_loop import while_loop
from tensorweave.ops.debugging.asserts import assert_equal
from tensorweave.ops.math.binary import greater_equal, logical_not, logical_or, maximum, minimum
from tensorweave.ops.math.cast import cast
from tensorweave.ops.math.reduction import reduce_all, reduce_max
from tensorweave.ops.math.sequences import range as range_
from tensorweave.ops.state.variable_scope import variable_scope
from tensorweave.rnn.cells import zero_state_tensors


def _check_cell(name: str, cell) -> None:
    for attr in ("output_size", "state_size", "zero_state"):
        if not hasattr(cell, attr):
            raise TypeError(f"The argument {name!r} ({cell}) is not an RNNCell: '{attr}' property is missing.")
    if not callable(cell):
        raise TypeError(f"The argument {name!r} ({cell}) is not an RNNCell: it is not callable.")


def _size_shape(size) -> TensorShape:
    return TensorShape([int(size)]) if isinstance(size, int) else as_shape(size)


def _transpose_batch_time(x: Tensor) -> Tensor:
    """[batch, time, ...] <-> [time, batch, ...]."""
    x = convert_to_tensor(x)
    rank = x.shape.ndims
    if rank is not None and rank < 2:
        raise ValueError(f"Expected input tensor {x} to have rank at least 2, but saw shape: {x.shape}")
    if rank is None:
        perm = concat([[1, 0], range_(2, shape(shape(x))[0])], 0)
        return transpose(x, perm)
    return transpose(x, [1, 0] + list(range(2, rank)))


def _batch_size(flat_inputs: list, batch_axis: int):
    """The batch size, static when any input knows it, else from the first input's shape."""
    for x in flat_inputs:
        if x.shape.ndims is not None and x.shape.ndims > batch_axis and x.shape[batch_axis].value is not None:
            return x.shape[batch_axis].value
    return shape(flat_inputs[0])[batch_axis]


def _sequence_length(sequence_length):
    if sequence_length is None:
        return None
    sequence_length = cast(sequence_length, dtypes.int32)
    if sequence_length.shape.ndims not in (None, 1):
        raise ValueError("Argument sequence_length must be a vector of length batch_size. Received "
                         f"sequence_length={sequence_length} of shape: {sequence_length.shape}")
    return identity(sequence_length, name="sequence_length")


def _initial_state(cell, initial_state, batch_size, dtype):
    if initial_state is not None:
        return initial_state
    if not dtype:
        raise ValueError("If no initial_state is provided, argument `dtype` must be specified")
    return cell.zero_state(batch_size, dtype)


def _state_dtype(dtype, state):
    if dtype is not None:
        return dtypes.as_dtype(dtype)
    flat = nest.flatten(state)
    if not flat:
        raise ValueError("Unable to infer dtype from an empty state.")
    return convert_to_tensor(flat[0]).dtype


def _select_finished(finished: Tensor, if_done, if_running):
    """Per batch entry: `if_done` where finished, else `if_running` (structures of tensors)."""
    def one(done, running):
        running = convert_to_tensor(running)
        out = where(finished, convert_to_tensor(done), running)
        out.set_shape(running.shape)
        return out
    return nest.map_structure(one, if_done, if_running)


def _step(cell, inputs, state, time, sequence_length, zero_output):
    """One cell call; entries whose sequence ended emit zeros and keep their state."""
    output, new_state = cell(inputs, state)
    if sequence_length is None:
        return output, new_state
    finished = greater_equal(time, sequence_length)
    nest.assert_same_structure(zero_output, output)
    return (_select_finished(finished, zero_output, output), _select_finished(finished, state, new_state))


# -- dynamic_rnn ----------------------------------------------------------------------------------
@tf_export("nn.dynamic_rnn")
def dynamic_rnn(cell, inputs, sequence_length=None, initial_state=None, dtype=None, parallel_iterations=None,
                swap_memory=False, time_major=False, scope=None):
    """tf.nn.dynamic_rnn(cell, inputs, sequence_length=None, initial_state=None, dtype=None,
    parallel_iterations=None, swap_memory=False, time_major=False, scope=None): runs `cell` over
    the time dimension of `inputs` ([batch, time, ...], or [time, batch, ...] when time_major;
    possibly a nested structure) in a while_loop. Returns (outputs, final_state): outputs
    [batch, time, output_size] (time-major when time_major), zero past each entry's
    `sequence_length`; final_state the state at each entry's last step. Variables live under
    `scope` (default "rnn")."""
    _check_cell("cell", cell)
    with variable_scope(scope or "rnn"):
        flat = [convert_to_tensor(x) for x in nest.flatten(inputs)]
        if not flat:
            raise ValueError("inputs must not be empty")
        if not time_major:
            flat = [_transpose_batch_time(x) for x in flat]
        parallel_iterations = parallel_iterations or 32
        sequence_length = _sequence_length(sequence_length)
        batch_size = _batch_size(flat, 1)
        state = _initial_state(cell, initial_state, batch_size, dtype)
        if sequence_length is not None:
            check = assert_equal(shape(sequence_length), stack([batch_size]) if isinstance(batch_size, Tensor)
                                 else [batch_size], message="Expected shape for sequence_length is batch_size")
            with get_default_graph().control_dependencies([check]):
                sequence_length = identity(sequence_length, name="CheckSeqLen")
        packed = nest.pack_sequence_as(inputs, flat)
        outputs, final_state = _dynamic_loop(cell, packed, state, parallel_iterations, sequence_length, dtype,
                                             batch_size)
        if not time_major:
            outputs = nest.map_structure(_transpose_batch_time, outputs)
        return outputs, final_state


def _dynamic_loop(cell, inputs, state, parallel_iterations: int, sequence_length, dtype, batch_size):
    flat = nest.flatten(inputs)
    shapes = [x.shape.with_rank_at_least(3) for x in flat]
    const_time, const_batch = shapes[0].as_list()[:2]
    for x, s in zip(flat, shapes):
        if not s[2:].is_fully_defined():
            raise ValueError(f"Input size (depth of inputs) must be accessible via shape inference, but saw value "
                             f"None for input={x}.")
        if s[0].value != const_time:
            raise ValueError(f"Time steps is not the same for all the elements in the input in a batch. Received "
                             f"time steps={s[0].value} for input={x}.")
        if s[1].value != const_batch:
            raise ValueError(f"Batch_size is not the same for all the elements in the input. Received batch "
                             f"size={s[1].value} for input={x}.")
    time_steps = shape(flat[0])[0]
    out_dtype = _state_dtype(dtype, state)
    zero_output = zero_state_tensors(cell.output_size, batch_size, out_dtype)
    with name_scope("dynamic_rnn") as base:
        pass
    input_tas = [TensorArray(x.dtype, size=time_steps, element_shape=x.shape[1:],
                             tensor_array_name=f"{base}input_{i}").unstack(x) for i, x in enumerate(flat)]
    output_tas = [TensorArray(out_dtype, size=time_steps, tensor_array_name=f"{base}output_{i}",
                              element_shape=TensorShape([const_batch]).concatenate(_size_shape(size)))
                  for i, size in enumerate(nest.flatten(cell.output_size))]

    def body(time, tas, state):
        step_inputs = []
        for ta, s in zip(input_tas, shapes):
            x = ta.read(time)
            x.set_shape(s[1:])
            step_inputs.append(x)
        output, new_state = _step(cell, nest.pack_sequence_as(inputs, step_inputs), state, time,
                                  sequence_length, zero_output)
        tas = [ta.write(time, o) for ta, o in zip(tas, nest.flatten(output))]
        return time + 1, tas, new_state

    if sequence_length is not None:
        # the loop stops after the longest sequence (at least one step, so outputs get their shape)
        bound = minimum(time_steps, maximum(1, reduce_max(sequence_length)))
    else:
        bound = time_steps
    time = convert_to_tensor(0, dtype=dtypes.int32, name="time")
    _, final_tas, final_state = while_loop(lambda t, *_: t < bound, body, (time, output_tas, state),
                                           parallel_iterations=parallel_iterations, maximum_iterations=time_steps)
    outputs = []
    for ta, size in zip(final_tas, nest.flatten(cell.output_size)):
        out = ta.stack()
        out.set_shape(TensorShape([const_time, const_batch]).concatenate(_size_shape(size)))
        outputs.append(out)
    return nest.pack_sequence_as(cell.output_size, outputs), final_state


# -- static_rnn -----------------------------------------------------------------------------------
@tf_export("contrib.rnn.static_rnn", "nn.static_rnn")
def static_rnn(cell, inputs, initial_state=None, dtype=None, sequence_length=None, scope=None):
    """tf.nn.static_rnn(cell, inputs, initial_state=None, dtype=None, sequence_length=None,
    scope=None): the cell unrolled over `inputs`, a list of [batch, input_size] tensors (or
    structures). Returns (outputs, state): the list of outputs (zeros past each entry's
    sequence_length) and the final state."""
    _check_cell("cell", cell)
    if not nest.is_sequence(inputs):
        raise TypeError("inputs must be a sequence")
    if not inputs:
        raise ValueError("inputs must not be empty")
    with variable_scope(scope or "rnn") as varscope:
        first = [convert_to_tensor(x) for x in nest.flatten(inputs[0])]
        for x in first:
            if x.shape.ndims is not None and x.shape.ndims < 2:
                raise ValueError(f"Input must have rank at least 2, got {x.shape} for {x}")
            if x.shape.ndims is not None and x.shape[1:].ndims and not x.shape[1:].is_fully_defined():
                raise ValueError(f"Input size (dimension 1 of inputs) must be accessible via shape inference, but "
                                 f"saw value None for {x}.")
        batch_size = _batch_size(first, 0)
        state = _initial_state(cell, initial_state, batch_size, dtype)
        sequence_length = _sequence_length(sequence_length)
        zero_output = None
        if sequence_length is not None:
            zero_output = zero_state_tensors(cell.output_size, batch_size, _state_dtype(dtype, state))
        outputs = []
        for t, step_input in enumerate(inputs):
            if t > 0:
                varscope.reuse_variables()
            output, state = _step(cell, step_input, state, t, sequence_length, zero_output)
            outputs.append(output)
        return outputs, state


def _reverse_seq(input_seq: list, lengths) -> list:
    """The list of time steps reversed (each entry's first `lengths` steps, when given)."""
    if lengths is None:
        return list(reversed(input_seq))
    flat_steps = [nest.flatten(x) for x in input_seq]
    results = [[] for _ in input_seq]
    for sequence in zip(*flat_steps):
        merged = unknown_shape()
        for x in sequence:
            merged = merged.merge_with(convert_to_tensor(x).shape)
        reversed_steps = unstack(reverse_sequence(stack(list(sequence)), lengths, 0, 1))
        for r, out in zip(reversed_steps, results):
            r.set_shape(merged)
            out.append(r)
    return [nest.pack_sequence_as(x, r) for x, r in zip(input_seq, results)]


@tf_export("contrib.rnn.static_state_saving_rnn", "nn.static_state_saving_rnn")
def static_state_saving_rnn(cell, inputs, state_saver, state_name, sequence_length=None, scope=None):
    """tf.nn.static_state_saving_rnn(cell, inputs, state_saver, state_name, sequence_length=None,
    scope=None): static_rnn whose initial state is state_saver.state(state_name) and whose final
    state is handed to state_saver.save_state(state_name, state) before the last output and the
    state are returned (a tuple state_name names each part of a tuple state). `state_saver` is
    any object with those two methods (TF1's SequenceQueueingStateSaver is one)."""
    state_size = cell.state_size
    state_is_tuple = nest.is_sequence(state_size)
    names_are_tuple = nest.is_sequence(state_name)
    if state_is_tuple != names_are_tuple:
        raise ValueError(f"static_state_saving_rnn: state_name should be the same type as cell.state_size.  "
                         f"state_name: {state_name!s}, cell.state_size: {state_size!s}")
    if state_is_tuple:
        nest.assert_same_structure(state_name, state_size, check_types=False)
        names = nest.flatten(state_name)
        initial_state = nest.pack_sequence_as(state_size, [state_saver.state(n) for n in names])
    else:
        names = [state_name]
        initial_state = state_saver.state(state_name)
    outputs, state = static_rnn(cell, inputs, initial_state=initial_state, sequence_length=sequence_length,
                                scope=scope)
    saves = [state_saver.save_state(n, s) for n, s in zip(names, nest.flatten(state))]
    with get_default_graph().control_dependencies(saves):   # reading the results saves the state first
        last = outputs[-1]
        outputs[-1] = nest.pack_sequence_as(last, [identity(o) for o in nest.flatten(last)])
        state = nest.pack_sequence_as(state, [identity(s) for s in nest.flatten(state)])
    return outputs, state


@tf_export("contrib.rnn.static_bidirectional_rnn", "nn.static_bidirectional_rnn")
def static_bidirectional_rnn(cell_fw, cell_bw, inputs, initial_state_fw=None, initial_state_bw=None, dtype=None,
                             sequence_length=None, scope=None):
    """tf.nn.static_bidirectional_rnn(cell_fw, cell_bw, inputs, initial_state_fw=None,
    initial_state_bw=None, dtype=None, sequence_length=None, scope=None): a forward static_rnn
    and a backward one over the (length-aware) reversed inputs, in scopes
    "bidirectional_rnn/fw" and ".../bw". Returns (outputs, state_fw, state_bw), each output the
    forward and backward outputs concatenated on their last axis."""
    _check_cell("cell_fw", cell_fw)
    _check_cell("cell_bw", cell_bw)
    if not nest.is_sequence(inputs):
        raise TypeError("inputs must be a sequence")
    if not inputs:
        raise ValueError("inputs must not be empty")
    with variable_scope(scope or "bidirectional_rnn"):
        with variable_scope("fw") as fw_scope:
            out_fw, state_fw = static_rnn(cell_fw, inputs, initial_state_fw, dtype, sequence_length, scope=fw_scope)
        with variable_scope("bw") as bw_scope:
            reversed_inputs = _reverse_seq(inputs, sequence_length)
            tmp, state_bw = static_rnn(cell_bw, reversed_inputs, initial_state_bw, dtype, sequence_length,
                                       scope=bw_scope)
    out_bw = _reverse_seq(tmp, sequence_length)
    outputs = [nest.pack_sequence_as(fw, [concat([a, b], 1) for a, b in zip(nest.flatten(fw), nest.flatten(bw))])
               for fw, bw in zip(out_fw, out_bw)]
    return outputs, state_fw, state_bw


@tf_export("nn.bidirectional_dynamic_rnn")
def bidirectional_dynamic_rnn(cell_fw, cell_bw, inputs, sequence_length=None, initial_state_fw=None,
                              initial_state_bw=None, dtype=None, parallel_iterations=None, swap_memory=False,
                              time_major=False, scope=None):
    """tf.nn.bidirectional_dynamic_rnn(cell_fw, cell_bw, inputs, sequence_length=None,
    initial_state_fw=None, initial_state_bw=None, dtype=None, parallel_iterations=None,
    swap_memory=False, time_major=False, scope=None): dynamic_rnn forwards (scope
    "bidirectional_rnn/fw") and over the reversed inputs (".../bw", each entry reversed within
    its sequence_length). Returns ((output_fw, output_bw), (state_fw, state_bw)), output_bw
    re-reversed into input order."""
    _check_cell("cell_fw", cell_fw)
    _check_cell("cell_bw", cell_bw)
    with variable_scope(scope or "bidirectional_rnn"):
        with variable_scope("fw") as fw_scope:
            out_fw, state_fw = dynamic_rnn(cell_fw, inputs, sequence_length, initial_state_fw, dtype,
                                           parallel_iterations, swap_memory, time_major, scope=fw_scope)
        time_axis, batch_axis = (0, 1) if time_major else (1, 0)

        def rev(x):
            if sequence_length is not None:
                return reverse_sequence(x, sequence_length, seq_axis=time_axis, batch_axis=batch_axis)
            return reverse(x, [time_axis])

        with variable_scope("bw") as bw_scope:
            inputs_reversed = nest.map_structure(rev, inputs)
            tmp, state_bw = dynamic_rnn(cell_bw, inputs_reversed, sequence_length, initial_state_bw, dtype,
                                        parallel_iterations, swap_memory, time_major, scope=bw_scope)
    out_bw = nest.map_structure(rev, tmp)
    return (out_fw, out_bw), (state_fw, state_bw)


# -- raw_rnn --------------------------------------------------------------------------------------
@tf_export("nn.raw_rnn")
def raw_rnn(cell, loop_fn, parallel_iterations=None, swap_memory=False, scope=None):
    """tf.nn.raw_rnn(cell, loop_fn, parallel_iterations=None, swap_memory=False, scope=None): a
    while loop the caller drives. loop_fn(time, cell_output, cell_state, loop_state) returns
    (finished, next_input, next_cell_state, emit_output, next_loop_state); at time 0 cell_output
    is None, the returned state is the initial one and emit_output (or cell.output_size when
    None) describes one entry's emitted output. Entries that finished emit zeros and keep their
    state. Returns (emit_ta, final_state, final_loop_state), emit_ta TensorArrays of the emitted
    [batch, ...] outputs per step."""
    _check_cell("cell", cell)
    if not callable(loop_fn):
        raise TypeError("loop_fn must be a callable")
    with variable_scope(scope or "rnn"):
        time = convert_to_tensor(0, dtype=dtypes.int32)
        finished, next_input, state, emit_structure, loop_state = loop_fn(time, None, None, None)
        flat_input = [convert_to_tensor(x) for x in nest.flatten(next_input)]
        batch_size = _batch_size(flat_input, 0)
        if emit_structure is not None:
            flat_emit = [convert_to_tensor(e) for e in nest.flatten(emit_structure)]
            sizes, emit_dtypes = [e.shape for e in flat_emit], [e.dtype for e in flat_emit]
        else:
            sizes = [_size_shape(s) for s in nest.flatten(cell.output_size)]
            emit_dtypes = [convert_to_tensor(nest.flatten(state)[0]).dtype] * len(sizes)
        static_batch = TensorShape([batch_size if isinstance(batch_size, int) else None])
        zero_emit = [zero_state_tensors(size, batch_size, dt) for size, dt in zip(sizes, emit_dtypes)]
        emit_tas = [TensorArray(dt, size=0, dynamic_size=True, element_shape=static_batch.concatenate(size))
                    for size, dt in zip(sizes, emit_dtypes)]
        no_loop_state = loop_state is None
        loop_state = convert_to_tensor(0) if no_loop_state else loop_state

        def body(time, finished, step_input, state, tas, loop_state):
            output, cell_state = cell(step_input, state)
            nest.assert_same_structure(state, cell_state)
            next_finished, next_input, next_state, emit, next_loop_state = loop_fn(
                time + 1, output, cell_state, None if no_loop_state else loop_state)
            nest.assert_same_structure(state, next_state)
            emit = output if emit is None else emit
            emitted = [where(finished, z, convert_to_tensor(e)) for z, e in zip(zero_emit, nest.flatten(emit))]
            tas = [ta.write(time, e) for ta, e in zip(tas, emitted)]
            next_state = _select_finished(finished, state, next_state)
            next_loop_state = loop_state if no_loop_state or next_loop_state is None else next_loop_state
            return time + 1, logical_or(finished, next_finished), next_input, next_state, tas, next_loop_state

        res = while_loop(lambda t, done, *_: logical_not(reduce_all(done)), body,
                         [time, convert_to_tensor(finished), next_input, state, emit_tas, loop_state],
                         parallel_iterations=parallel_iterations or 32, return_same_structure=True)
        _, _, _, final_state, final_tas, final_loop_state = res
        template = emit_structure if emit_structure is not None else cell.output_size
        return (nest.pack_sequence_as(template, final_tas), final_state,
                None if no_loop_state else final_loop_state)
