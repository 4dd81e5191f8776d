"""tf.keras recurrent layers and wrappers in graph mode: outputs, final states and gradients for
fixed weights and inputs against TF 2.15's v1 layers (fixtures/record_keras_recurrent.py), masks
from Masking, Bidirectional merge modes, TimeDistributed, time_major, stateful layers and
reset_states, dropout in training, constants, configs and their round trips, bad input."""
from __future__ import annotations

import json
import os
import re

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.keras.layers.recurrent import _RecurrentCell
from tensorweave.ops import registry
from fixtures.keras_recurrent_cases import (CASES, CONFIG_CASES, INPUT_SHAPES, input_values, summary_model,
                                            weight_values)
from fixtures.recorded import assert_same, decode

keras = tf.keras
K = tf.keras.backend
L = tf.keras.layers

with open(os.path.join(os.path.dirname(__file__), "fixtures", "keras_recurrent.json"), encoding="utf-8") as f:
    RECORDED = json.load(f)

X = input_values()


def tf115_name(name: str) -> str:
    """TF 2.15 builds an RNN's cell under the cell's own name scope ("lstm/lstm_cell/kernel:0");
    TF 1.15, whose names HDF5 files carry, under the RNN's ("lstm/kernel:0")."""
    return re.sub(r"/(lstm_cell|gru_cell|simple_rnn_cell|stacked_rnn_cells)/", "/", name, count=1)


def set_case_weights(layers) -> list:
    weights = [w for layer in layers for w in layer.weights]
    K.batch_set_value(list(zip(weights, weight_values([w.shape.as_list() for w in weights]))))
    return weights


def keras_inputs() -> dict:
    return {k: keras.Input(s, name=k) for k, s in INPUT_SHAPES.items()}


def feed(inputs) -> dict:
    return {inputs[k]: v for k, v in X.items()}


@pytest.mark.parametrize("name", sorted(CASES))
def test_outputs_states_and_gradients_match_tf(name):
    recorded = RECORDED[name]
    inputs = keras_inputs()
    layers, outputs = CASES[name](L, inputs)
    weights = set_case_weights(layers)
    assert [[w.name, w.shape.as_list()] for w in weights] == \
        [[tf115_name(n), s] for n, s in recorded["variables"]]
    assert [y.shape.as_list() for y in outputs] == recorded["shapes"]
    loss = tf.add_n([0.5 * tf.reduce_sum(tf.square(y)) for y in outputs])
    grads = tf.gradients(loss, [inputs[k] for k in recorded["grad_inputs"]] + weights)
    values, grad_values = K.get_session().run([outputs, grads], feed(inputs))
    assert_same(values, recorded["outputs"])
    for got, want in zip(grad_values, recorded["grads"]):
        np.testing.assert_allclose(got, decode(want), rtol=1e-4, atol=1e-5)


def test_masked_steps_keep_state_and_repeat_the_previous_output():
    # masked_lstm's recorded values, read as the rule they follow
    seq, h, c = (decode(v) for v in RECORDED["masked_lstm"]["outputs"])
    np.testing.assert_array_equal(seq[0, 2], seq[0, 1])      # entry 0's step 2 is masked
    np.testing.assert_array_equal(seq[1, 3], seq[1, 2])      # entry 1 is padded after step 2
    np.testing.assert_array_equal(seq[1, 4], seq[1, 2])
    np.testing.assert_array_equal(h[1], seq[1, 2])
    # Bidirectional's return_sequences outputs are zeros at masked steps (zero_output_for_mask)
    both = decode(RECORDED["bidirectional_masked"]["outputs"][0])
    np.testing.assert_array_equal(both[1, 3:], np.zeros((2, 6), np.float32))


def _without_names(config):
    """A config without layer names (they depend on creation order) or initializers' dtype (Keras
    2.15 adds it to their configs; it does not change what they make)."""
    if isinstance(config, dict):
        if "class_name" in config and config.get("config", {}).get("dtype") == "float32" and \
                "units" not in config["config"]:
            config = {**config, "config": {k: v for k, v in config["config"].items() if k != "dtype"}}
        return {k: _without_names(v) for k, v in config.items() if k != "name"}
    if isinstance(config, (list, tuple)):
        return [_without_names(v) for v in config]
    return config


@pytest.mark.parametrize("name", sorted(CONFIG_CASES))
def test_get_config_matches_tf_and_round_trips(name):
    layer = CONFIG_CASES[name](L)
    config = json.loads(json.dumps(layer.get_config()))
    assert _without_names(config) == _without_names(RECORDED["configs"][name])
    again = type(layer).from_config(config)
    assert _without_names(again.get_config()) == _without_names(config)
    clone = L.deserialize(L.serialize(layer))
    assert type(clone) is type(layer)
    assert _without_names(clone.get_config()) == _without_names(config)


def test_defaults_are_tf_115s_v1_layers():
    lstm, gru = L.LSTM(2), L.GRU(2)
    assert lstm.recurrent_activation is keras.activations.hard_sigmoid
    assert lstm.implementation == 1 and lstm.unit_forget_bias is True
    assert gru.recurrent_activation is keras.activations.hard_sigmoid
    assert gru.reset_after is False and gru.implementation == 1
    assert L.LSTM(2, implementation=0).implementation == 1


def test_unit_forget_bias_starts_the_forget_gate_at_one():
    x = keras.Input((5, 3))
    on, off = L.LSTM(2), L.LSTM(2, unit_forget_bias=False, bias_initializer="ones")
    on(x), off(x)
    np.testing.assert_array_equal(K.get_value(on.cell.bias), [0, 0, 1, 1, 0, 0, 0, 0])
    np.testing.assert_array_equal(K.get_value(off.cell.bias), np.ones(8))
    assert [w.name for w in on.weights] == ["lstm/kernel:0", "lstm/recurrent_kernel:0", "lstm/bias:0"]


def test_rank_2_input_raises_naming_layer_and_shape():
    with pytest.raises(ValueError, match=re.escape("Input 0 of layer lstm is incompatible with the layer: expected "
                                                   "ndim=3, found ndim=2. Full shape received: [None, 4]")):
        L.LSTM(2)(keras.Input((4,)))
    with pytest.raises(ValueError, match=re.escape("Input 0 of layer rnn is incompatible with the layer: expected "
                                                   "ndim>=3 (batch, time, ...), found ndim=2. Full shape received: "
                                                   "[None, 4]")):
        L.RNN(L.SimpleRNNCell(2))(keras.Input((4,)))


def test_unroll_needs_a_known_time_dimension():
    with pytest.raises(ValueError, match="Cannot unroll a RNN if the time dimension is undefined"):
        L.SimpleRNN(2, unroll=True)(keras.Input((None, 3)))


def test_time_major_runs_over_the_first_axis():
    x = tf.placeholder(tf.float32, [5, None, 3])
    layer = L.LSTM(4, time_major=True, return_sequences=True, return_state=True)
    seq, h, c = layer(x)
    set_case_weights([layer])
    assert seq.shape.as_list() == [5, None, 4]
    got = K.get_session().run([seq, h, c], {x: X["x"].transpose(1, 0, 2)})
    want = [decode(v) for v in RECORDED["lstm"]["outputs"]]
    np.testing.assert_allclose(got[0], want[0].transpose(1, 0, 2), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[2], want[2], rtol=1e-5, atol=1e-6)


def test_initial_state_as_plain_tensors():
    x, h0, c0 = (tf.placeholder(tf.float32, [None] + list(INPUT_SHAPES[k])) for k in ("x", "h0", "c0"))
    layer = L.LSTM(4, return_state=True)
    outputs = layer(x, initial_state=[h0, c0])
    set_case_weights([layer])
    got = K.get_session().run(outputs, {x: X["x"], h0: X["h0"], c0: X["c0"]})
    assert_same(got, RECORDED["lstm_initial_state"]["outputs"])


def test_stateful_layer_continues_from_the_last_call_until_reset():
    x = keras.Input(batch_shape=(2, None, 3))
    layer = L.LSTM(4, stateful=True, return_sequences=True)
    y = layer(x)
    set_case_weights([layer])
    sess = K.get_session()
    assert len(layer.states) == 2 and layer.states[0].shape.as_list() == [2, 4]
    assert layer.get_updates_for(x) and not layer.weights[3:]
    first = sess.run([y] + layer.updates, {x: X["x"][:, :2]})[0]
    second = sess.run([y] + layer.updates, {x: X["x"][:, 2:]})[0]
    want = decode(RECORDED["lstm"]["outputs"][0])
    np.testing.assert_allclose(np.concatenate([first, second], 1), want, rtol=1e-5, atol=1e-6)
    layer.reset_states()
    np.testing.assert_array_equal(K.get_value(layer.states[0]), np.zeros((2, 4)))
    again = sess.run([y] + layer.updates, {x: X["x"][:, :2]})[0]
    np.testing.assert_allclose(again, first, rtol=1e-6)
    layer.reset_states([np.ones((2, 4)), np.zeros((2, 4))])
    np.testing.assert_array_equal(K.get_value(layer.states[0]), np.ones((2, 4)))
    with pytest.raises(ValueError, match="State 0 is incompatible with layer lstm"):
        layer.reset_states([np.ones((3, 4)), np.zeros((2, 4))])
    with pytest.raises(AttributeError, match="Layer must be stateful"):
        L.LSTM(2).reset_states()


def test_a_model_s_reset_states_zeroes_its_stateful_layers():
    model = keras.Sequential([L.GRU(4, stateful=True, batch_input_shape=(2, 3, 3), return_sequences=True),
                              L.LSTM(2, stateful=True), L.Dense(1)])
    data = X["x"][:, :3]
    first = model.predict(data, batch_size=2)
    assert not np.allclose(model.predict(data, batch_size=2), first)   # the states carried over
    model.reset_states()
    for layer in model.layers[:2]:
        for state in layer.states:
            np.testing.assert_array_equal(K.get_value(state), np.zeros(state.shape.as_list()))
    np.testing.assert_allclose(model.predict(data, batch_size=2), first, rtol=1e-6)


def test_stateful_layer_needs_a_batch_size():
    with pytest.raises(ValueError, match="needs to know its batch size"):
        L.GRU(2, stateful=True)(keras.Input((5, 3)))


def test_dropout_masks_are_fixed_over_the_time_steps_of_a_call_in_training():
    x = keras.Input((6, 8))
    layer = L.SimpleRNN(16, dropout=0.5, activation=None, use_bias=False, recurrent_initializer="zeros",
                        kernel_initializer="ones", return_sequences=True)
    y = layer(x)
    values = np.tile(np.arange(1.0, 9.0, dtype=np.float32), (3, 6, 1))
    sess = K.get_session()
    test_phase = sess.run(y, {x: values, K.learning_phase(): 0})
    np.testing.assert_allclose(test_phase, np.full((3, 6, 16), 36.0))
    train_phase = sess.run(y, {x: values, K.learning_phase(): 1})
    # every step sees the same dropped inputs (each kept one scaled by 2), so each entry's steps agree
    np.testing.assert_allclose(train_phase, np.repeat(train_phase[:, :1], 6, axis=1))
    assert not np.allclose(train_phase, test_phase)
    np.testing.assert_allclose(np.fmod(train_phase, 2.0), 0.0)


def test_recurrent_dropout_trains_and_is_off_at_inference():
    x = keras.Input((5, 3))
    plain, dropped = L.GRU(4, return_sequences=True), L.GRU(4, recurrent_dropout=0.6, dropout=0.3,
                                                             implementation=2, return_sequences=True)
    y_plain, y_dropped = plain(x), dropped(x)
    set_case_weights([plain])
    set_case_weights([dropped])
    sess = K.get_session()
    a, b = sess.run([y_plain, y_dropped], {x: X["x"], K.learning_phase(): 0})
    np.testing.assert_allclose(a, b, rtol=1e-6)
    c = sess.run(y_dropped, {x: X["x"], K.learning_phase(): 1})
    assert not np.allclose(a, c)
    grads = tf.gradients(tf.reduce_sum(y_dropped), dropped.trainable_weights)
    assert all(np.isfinite(g).all() for g in sess.run(grads, {x: X["x"], K.learning_phase(): 1}))


class AddConstantCell(L.AbstractRNNCell):
    """A cell whose state accumulates inputs plus a constant given to the RNN call."""

    def __init__(self, units, **kwargs):
        super().__init__(**kwargs)
        self.units = units

    def build(self, input_shape):
        self.built_for = input_shape

    @property
    def state_size(self):
        return self.units

    @property
    def output_size(self):
        return self.units

    def call(self, inputs, states, constants):
        output = states[0] + inputs + constants[0]
        return output, [output]

    def get_config(self):
        return {**super().get_config(), "units": self.units}


def shape_list(shape):
    return tf.TensorShape(shape).as_list()


def test_constants_reach_the_cell_at_every_step():
    x, const = keras.Input((4, 2)), keras.Input((2,))
    cell = AddConstantCell(2)
    y = L.RNN(cell, return_sequences=True)(x, constants=const)
    assert [shape_list(s) for s in cell.built_for] == [[None, 2], [None, 2]]   # step input, constant
    xs = np.arange(16, dtype=np.float32).reshape(2, 4, 2)
    cs = np.array([[10.0, 20.0], [0.5, 0.25]], np.float32)
    got = K.get_session().run(y, {x: xs, const: cs})
    np.testing.assert_allclose(got, np.cumsum(xs + cs[:, None, :], axis=1))
    zeros = AddConstantCell(3).get_initial_state(batch_size=4, dtype=tf.float32)
    assert len(zeros) == 1 and zeros[0].shape.as_list() == [4, 3]
    with pytest.raises(ValueError, match="does not support constants"):
        L.SimpleRNN(2)(x, constants=const)
    both = L.Bidirectional(L.RNN(AddConstantCell(2), return_sequences=True), merge_mode=None)(x, constants=const)
    assert all(K.is_keras_tensor(t) for t in both)
    forward, backward = K.get_session().run(both, {x: xs, const: cs})
    np.testing.assert_allclose(forward, np.cumsum(xs + cs[:, None, :], axis=1))
    np.testing.assert_allclose(backward, np.cumsum((xs + cs[:, None, :])[:, ::-1], axis=1)[:, ::-1])


def test_functional_and_sequential_models_round_trip_their_config():
    model = keras.Sequential([L.Masking(0.0, input_shape=(5, 3)), L.Bidirectional(L.LSTM(3, return_sequences=True)),
                              L.TimeDistributed(L.Dense(2)), L.GRU(2)])
    assert model.output.shape.as_list() == [None, 2]
    set_case_weights([model])
    clone = keras.Sequential.from_config(model.get_config())
    clone.set_weights(model.get_weights())
    sess = K.get_session()
    a = sess.run(model.output, {model.input: X["xpad"]})
    b = sess.run(clone.output, {clone.input: X["xpad"]})
    np.testing.assert_allclose(a, b, rtol=1e-6)
    h0 = keras.Input((3,))
    x = keras.Input((5, 3))
    seq, state = L.SimpleRNN(3, return_sequences=True, return_state=True)(x, initial_state=h0)
    functional = keras.Model([x, h0], [seq, state])
    assert [t.shape.as_list() for t in functional.outputs] == [[None, 5, 3], [None, 3]]
    again = keras.Model.from_config(functional.get_config())
    assert [t.shape.as_list() for t in again.outputs] == [[None, 5, 3], [None, 3]]


def test_compute_output_shape():
    assert L.LSTM(4, return_sequences=True).compute_output_shape((None, 7, 3)).as_list() == [None, 7, 4]
    assert [s.as_list() for s in L.LSTM(4, return_state=True).compute_output_shape((2, 7, 3))] == \
        [[2, 4], [2, 4], [2, 4]]
    bidi = L.Bidirectional(L.GRU(4, return_sequences=True, return_state=True))
    assert [s.as_list() for s in bidi.compute_output_shape((None, 7, 3))] == \
        [[None, 7, 8], [None, 4], [None, 4]]
    td = L.TimeDistributed(L.Dense(5))
    td.build((None, 7, 3))
    assert td.compute_output_shape((None, 7, 3)).as_list() == [None, 7, 5]


def test_wrapper_arguments_are_checked():
    with pytest.raises(ValueError, match="Invalid merge mode"):
        L.Bidirectional(L.LSTM(2), merge_mode="max")
    with pytest.raises(ValueError, match="with a `Layer` instance"):
        L.Bidirectional("lstm")
    with pytest.raises(ValueError, match="should have different `go_backwards`"):
        L.Bidirectional(L.LSTM(2), backward_layer=L.LSTM(2))
    with pytest.raises(ValueError, match="at least 3 dimensions"):
        L.TimeDistributed(L.Dense(2))(keras.Input((4,)))


def test_bidirectional_with_explicit_backward_layer_and_initial_weights():
    x = keras.Input((5, 3))
    forward, backward = L.SimpleRNN(2), L.SimpleRNN(2, go_backwards=True, activation="relu")
    ones = [np.ones((3, 2)), np.ones((2, 2)), np.zeros(2)]
    bidi = L.Bidirectional(forward, backward_layer=backward, weights=ones + ones, merge_mode="ave")
    y = bidi(x)
    assert [w.name for w in bidi.weights][:1] == ["bidirectional/forward_simple_rnn/kernel:0"]
    config = bidi.get_config()
    assert config["backward_layer"]["config"]["activation"] == "relu"
    rebuilt = L.Bidirectional.from_config(config)
    assert rebuilt.backward_layer.go_backwards and rebuilt.backward_layer.activation is keras.activations.relu
    got = K.get_session().run(y, {x: np.full((1, 5, 3), -0.1, np.float32)})
    h = np.zeros(2)
    for _ in range(5):
        h = np.tanh(np.full(2, -0.3) + h.sum())
    np.testing.assert_allclose(got[0], (h + 0.0) / 2, rtol=1e-5)   # relu of negatives: the backward half is 0


def test_rnn_over_a_tf_nn_cell_matches_dynamic_rnn():
    x = tf.placeholder(tf.float32, [None, 5, 3])
    cell = tf.nn.rnn_cell.GRUCell(4)
    seq, state = L.RNN(cell, return_sequences=True, return_state=True)(x)
    want_seq, want_state = tf.nn.dynamic_rnn(cell, x, dtype=tf.float32)
    sess = K.get_session()
    sess.run(tf.global_variables_initializer())   # the cell's variables are tf.get_variable's, not Keras's
    got = sess.run([seq, state, want_seq, want_state], {x: X["x"]})
    np.testing.assert_allclose(got[0], got[2], rtol=1e-6)
    np.testing.assert_allclose(got[1], got[3], rtol=1e-6)


def test_an_lstm_learns_with_a_tf_optimizer():
    x = keras.Input((5, 3))
    layer = L.LSTM(4)
    y = layer(x)
    set_case_weights([layer])
    loss = tf.reduce_mean(tf.square(y - 0.5))
    train = tf.train.GradientDescentOptimizer(0.5).minimize(loss, var_list=layer.trainable_weights)
    sess = K.get_session()
    sess.run(tf.variables_initializer(tf.global_variables()[3:]))
    before = sess.run(loss, {x: X["x"]})
    for _ in range(20):
        sess.run(train, {x: X["x"]})
    assert sess.run(loss, {x: X["x"]}) < 0.5 * before


def test_bidirectional_initial_states_split_between_the_directions():
    inputs = keras_inputs()
    h0, c0 = inputs["h0"], inputs["c0"]
    bidi = L.Bidirectional(L.LSTM(4, return_state=True), merge_mode=None)
    outputs = bidi(inputs["x"], initial_state=[h0, c0, c0, h0])
    assert len(outputs) == 6 and K.is_keras_tensor(outputs[0])
    set_case_weights([bidi])   # the forward layer's weights first: those of the lstm_initial_state case
    y_fw, _, h_fw, c_fw, _, _ = K.get_session().run(outputs, feed(inputs))
    assert_same([y_fw, h_fw, c_fw], RECORDED["lstm_initial_state"]["outputs"])


def test_time_distributed_over_an_unknown_number_of_steps():
    x = keras.Input((None, 3))
    layer = L.TimeDistributed(L.Dense(2, activation="tanh"))
    y = layer(x)
    assert y.shape.as_list() == [None, None, 2]
    set_case_weights([layer])
    got = K.get_session().run(y, {x: X["x"]})
    assert_same([got], RECORDED["time_distributed"]["outputs"])


def test_summary_of_recurrent_layers_and_wrappers_matches_tf():
    lines = []
    summary_model(L, keras.Sequential).summary(print_fn=lines.append)
    assert "\n".join(lines) == RECORDED["summary"]


def test_backend_rnn_with_mask_constants_and_go_backwards():
    x = tf.placeholder(tf.float32, [2, 4, 3])
    mask = tf.placeholder(tf.bool, [2, 4])

    def step(x_t, states):   # states: [running sum, the constant]
        total = states[0] + x_t * states[1]
        return total * 10.0, [total]

    xs = np.arange(24, dtype=np.float32).reshape(2, 4, 3)
    ms = np.array([[True, False, True, True], [True, True, False, False]])
    for go_backwards in (False, True):
        for unroll in (False, True):
            last, outputs, states = K.rnn(step, x, [tf.zeros([2, 3])], go_backwards=go_backwards, mask=mask,
                                          constants=[tf.constant(2.0)], unroll=unroll)
            got_last, got_outputs, got_state = K.get_session().run([last, outputs, states[0]], {x: xs, mask: ms})
            order = range(3, -1, -1) if go_backwards else range(4)
            total, out, want = np.zeros((2, 3)), np.zeros((2, 3)), []
            for t in order:
                m = ms[:, t:t + 1]
                total = np.where(m, total + 2.0 * xs[:, t], total)
                out = np.where(m, total * 10.0, out)
                want.append(out)
            np.testing.assert_allclose(got_outputs, np.stack(want, 1))
            np.testing.assert_allclose(got_last, want[-1])
            np.testing.assert_allclose(got_state, total)


def test_embedding_mask_zero_masks_the_padded_steps():
    pytest.importorskip("tensorweave.keras.layers.embeddings")   # keras/layers/embeddings.py (issue 23's layers)
    ids = keras.Input((5,), dtype="int32")
    embedded = L.Embedding(10, 3, mask_zero=True)(ids)
    lstm = L.LSTM(2, return_sequences=True, return_state=True)
    seq, h, _ = lstm(embedded)
    short = tf.placeholder(tf.float32, [None, 2, 3])
    _, h_short, _ = lstm(short)
    values = np.array([[1, 2, 0, 0, 0], [3, 4, 5, 6, 7]])
    sess = K.get_session()
    got_seq, got_h, vectors = sess.run([seq, h, embedded], {ids: values})
    np.testing.assert_array_equal(got_seq[0, 2:], np.repeat(got_seq[0, 1:2], 3, axis=0))
    np.testing.assert_allclose(got_h[0], sess.run(h_short, {short: vectors[:1, :2]})[0], rtol=1e-6)


def test_cudnn_layers_compute_tf_lstm_and_gru_with_cudnn_biases():
    # CuDNNLSTM == LSTM(recurrent_activation='sigmoid') with bias = input bias + recurrent bias;
    # CuDNNGRU == GRU(reset_after=True, recurrent_activation='sigmoid') with its (2, 3u) bias flat;
    # the kernels in cuDNN's layout, as Keras's load_weights converts them (each gate's input kernel
    # reinterpreted between row- and column-major order, each recurrent kernel transposed)
    x = keras.Input((5, 3))
    lstm = L.CuDNNLSTM(4, return_sequences=True, return_state=True)
    gru = L.CuDNNGRU(4, return_sequences=True)
    lstm_out, gru_out = lstm(x), gru(x)
    assert [[w.name, w.shape.as_list()] for w in lstm.weights + gru.weights] == [
        ["cu_dnnlstm/kernel:0", [3, 16]], ["cu_dnnlstm/recurrent_kernel:0", [4, 16]], ["cu_dnnlstm/bias:0", [32]],
        ["cu_dnngru/kernel:0", [3, 12]], ["cu_dnngru/recurrent_kernel:0", [4, 12]], ["cu_dnngru/bias:0", [24]]]
    def cudnn_layout(kernel, recurrent, gates):
        return [np.hstack([k.T.reshape(k.shape) for k in np.hsplit(kernel, gates)]),
                np.hstack([k.T for k in np.hsplit(recurrent, gates)])]

    kernel, recurrent, bias = weight_values([[3, 16], [4, 16], [16]])
    half = np.float32(0.5) * bias
    lstm.set_weights(cudnn_layout(kernel, recurrent, 4) + [np.concatenate([half, bias - half])])
    kernel, recurrent, bias = weight_values([[3, 12], [4, 12], [2, 12]])
    gru.set_weights(cudnn_layout(kernel, recurrent, 3) + [bias.reshape(-1)])
    got = K.get_session().run(lstm_out + [gru_out], {x: X["x"]})
    for g, w in zip(got[:3], RECORDED["lstm_sigmoid"]["outputs"]):
        np.testing.assert_allclose(g, decode(w), rtol=1e-5, atol=1e-6)
    assert_same(got[3:], RECORDED["gru_reset_after"]["outputs"])
    with pytest.raises(ValueError, match="Masking is not supported for CuDNN RNNs"):
        L.CuDNNGRU(2)(L.Masking(0.0)(x))


def test_cudnn_lstm_unit_forget_bias_is_in_the_recurrent_half():
    layer = L.CuDNNLSTM(2)
    layer(keras.Input((5, 3)))
    np.testing.assert_array_equal(K.get_value(layer.cell.bias), [0] * 10 + [1, 1] + [0] * 4)


def test_regularizers_frozen_layers_and_input_dim_arguments():
    model = keras.Sequential([L.LSTM(2, input_dim=3, input_length=5, kernel_regularizer=keras.regularizers.l2(0.1),
                                     activity_regularizer="l1", return_sequences=True),
                              L.SimpleRNN(2, trainable=False)])
    assert model.input.shape.as_list() == [None, 5, 3]
    lstm, frozen = model.layers
    assert len(lstm.losses) == 2 and len(model.losses) == 2
    kernel = K.get_value(lstm.cell.kernel)
    weight_loss = [loss for loss in lstm.losses if "Regularizer" in loss.name and "kernel" in loss.name]
    np.testing.assert_allclose(K.get_session().run(weight_loss[0]), 0.1 * np.sum(kernel ** 2), rtol=1e-5)
    assert frozen.trainable_weights == [] and len(frozen.non_trainable_weights) == 3
    assert len(model.trainable_weights) == 3


def _rows_summed_alike(rng, units: int) -> bool:
    """Whether this machine's MatMul gives each row of a [6 * 32, 128] input the same bits as the
    six products of 32 rows do, for a gate's width and four gates' (oneDNN's sgemm does on the
    AVX-512 machines the bits were first checked on; on others its blocking may differ)."""
    x = rng.randn(6 * 32, 128).astype(np.float32)
    with tf.Graph().as_default(), tf.Session() as sess:
        for width in (units, 4 * units):
            w = tf.constant(rng.randn(128, width).astype(np.float32))
            whole, parts = sess.run([tf.matmul(tf.constant(x), w),
                                     [tf.matmul(tf.constant(x[i:i + 32]), w) for i in range(0, 6 * 32, 32)]])
            if not np.array_equal(whole, np.concatenate(parts)):
                return False
    return True


@pytest.mark.parametrize("make,masked,recurrent_products,input_products", [
    (lambda: L.LSTM(128, dropout=0.2, recurrent_dropout=0.2, return_sequences=True), True, 4, 4),
    (lambda: L.LSTM(128, dropout=0.2, recurrent_dropout=0.2, implementation=2, go_backwards=True,
                    return_sequences=True), False, 1, 1),
    (lambda: L.GRU(128, dropout=0.2, recurrent_dropout=0.2, return_sequences=True), True, 3, 3),
    (lambda: L.GRU(128, dropout=0.2, recurrent_dropout=0.2, implementation=2, reset_after=True, go_backwards=True,
                   return_sequences=True), False, 1, 1),
    (lambda: L.SimpleRNN(128, dropout=0.2, recurrent_dropout=0.2, return_sequences=True), True, 1, 1),
], ids=["lstm", "lstm_2_backwards", "gru", "gru_2_reset_after_backwards", "simple_rnn"])
def test_a_recurrent_layer_s_input_products_of_all_steps_before_its_loop_are_the_step_s(
        monkeypatch, make, masked, recurrent_products, input_products):
    """LSTM, GRU and SimpleRNN multiply their input by the kernel for all the time steps before
    their loop (a product of time * batch rows a gate) and the loop's step only by the recurrent
    kernel: the outputs are the bits of products made in each step (the IMDB benchmark's shapes:
    batch 32, 128 units) and the gradients theirs but for the order of the kernel's sums over the
    steps."""
    rng = np.random.RandomState(3)
    x = rng.randn(32, 6, 128).astype(np.float32)
    x[:5, 4:] = 0.0   # (masked steps, where a Masking layer says so)
    drops = [(rng.rand(32, 128) > 0.2).astype(np.float32) / np.float32(0.8) for _ in range(8)]
    products = []
    factory = registry.kernel_for("MatMul")

    def counted(node, ctx):
        run = factory(node, ctx)
        if "/while/" not in node.name or "while_grad" in node.name:
            return run

        def counting(*args):
            products.append(node.name)
            return run(*args)
        return counting
    monkeypatch.setitem(registry.KERNELS, ("MatMul", "CPU"), counted)
    results, loop_products = [], []
    for projected in (True, False):
        if not projected:
            monkeypatch.setattr(_RecurrentCell, "_project_steps", lambda self, steps, training: steps)
        with tf.Graph().as_default():
            fixed = iter(drops)   # the same dropout masks in both graphs (their op seeds differ)
            monkeypatch.setattr(K, "dropout", lambda ones, rate: ones * next(fixed))
            inputs = tf.constant(x)
            layer = make()
            y = layer(L.Masking(0.0)(inputs) if masked else inputs, training=True)
            grads = tf.gradients(tf.reduce_sum(y * y), [inputs] + layer.trainable_weights)
            set_case_weights([layer])
            del products[:]
            results.append(K.get_session().run([y, grads]))
            loop_products.append(len(products))
    (y_projected, g_projected), (y_stepwise, g_stepwise) = results
    if _rows_summed_alike(rng, layer.units):
        np.testing.assert_array_equal(y_projected, y_stepwise)
        for got, want in zip(g_projected, g_stepwise):   # (sums of 192 rows in two orders: to 1e-5)
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    else:   # (this CPU's sgemm sums a row of 192 otherwise than one of 32: equal to rounding, as the docstring says,
        # and the gradients, through the steps, to 1e-5 of their largest element)
        np.testing.assert_allclose(y_projected, y_stepwise, rtol=1e-5, atol=1e-5)
        for got, want in zip(g_projected, g_stepwise):
            assert np.abs(got - want).max() <= 1e-5 * np.abs(want).max()
    assert loop_products == [6 * recurrent_products, 6 * (recurrent_products + input_products)]   # (6 steps)
