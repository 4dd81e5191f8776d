"""tf.keras.layers.ConvLSTM2D and tf.keras.experimental.PeepholeLSTMCell in graph mode: outputs,
states and gradients for fixed weights and inputs, and a few epochs of fit, against TF's
(fixtures/record_keras_conv_recurrent.py); channels_first, stateful layers, dropout, configs and
bad arguments."""
from __future__ import annotations

import json
import os
import re

import numpy as np
import pytest

import tensorweave as tf
from fixtures.keras_conv_recurrent_cases import (CASES, CONFIG_CASES, FIT_CASES, FIT_EPOCHS, INPUT_SHAPES, fit_data,
                                                 input_values, weight_values)
from fixtures.recorded import decode

keras = tf.keras
K = keras.backend


class Layers:
    """tf.keras.layers with tf.keras.experimental.PeepholeLSTMCell beside them (as the cases use them)."""

    def __getattr__(self, name):
        return keras.experimental.PeepholeLSTMCell if name == "PeepholeLSTMCell" else getattr(keras.layers, name)


L = Layers()

with open(os.path.join(os.path.dirname(__file__), "fixtures", "keras_conv_recurrent.json"), encoding="utf-8") as f:
    RECORDED = json.load(f)


@pytest.fixture(autouse=True)
def fresh_graph():
    K.clear_session()
    yield
    K.clear_session()


def tf115_name(name: str) -> str:
    """TF 2.15's copy builds an RNN's cell under the cell's name scope ("rnn/peephole_lstm_cell/kernel:0");
    TF 1.15 (and tensorweave) under the RNN's ("rnn/kernel:0")."""
    return name.replace("/peephole_lstm_cell/", "/")


@pytest.mark.parametrize("name", sorted(CASES))
def test_outputs_states_and_gradients_match_tf(name):
    recorded = RECORDED[name]
    inputs = {k: keras.Input(s, name=k) for k, s in INPUT_SHAPES.items()}
    layer, outputs = CASES[name](L, inputs)
    weights = layer.weights
    assert [[w.name, w.shape.as_list()] for w in weights] == [[tf115_name(n), s] for n, s in recorded["variables"]]
    K.batch_set_value(list(zip(weights, weight_values([w.shape.as_list() for w in weights]))))
    assert [y.shape.as_list() for y in outputs] == recorded["shapes"]
    loss = tf.add_n([0.5 * tf.reduce_sum(tf.square(y)) for y in outputs])
    grads = tf.gradients(loss, [inputs[k] for k in recorded["grad_inputs"]] + weights)
    values, grad_values = K.get_session().run([outputs, grads], {inputs[k]: v for k, v in input_values().items()})
    for got, want in zip(values, recorded["outputs"]):
        np.testing.assert_allclose(got, decode(want), rtol=1e-5, atol=1e-6)
    for got, want in zip(grad_values, recorded["grads"]):
        np.testing.assert_allclose(got, decode(want), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", sorted(FIT_CASES))
def test_fit_from_fixed_weights_matches_tf(name):
    recorded = RECORDED["fit"][name]
    model = keras.Sequential(FIT_CASES[name](L))
    model.compile(keras.optimizers.SGD(0.1), "mse")
    model.set_weights(weight_values([w.shape.as_list() for w in model.weights]))
    x, y = fit_data(name)
    history = model.fit(x, y, batch_size=2, epochs=FIT_EPOCHS, shuffle=False, verbose=0)
    np.testing.assert_allclose(history.history["loss"], recorded["loss"], rtol=1e-4)
    for got, want in zip(model.get_weights(), recorded["weights"]):
        np.testing.assert_allclose(got, decode(want), rtol=1e-4, atol=1e-5)


def _without_names(config):
    """A config without layer names or the initializers' dtype (Keras 2.15 adds it)."""
    if isinstance(config, dict):
        if "class_name" in config:
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
    assert _without_names(json.loads(json.dumps(again.get_config()))) == _without_names(config)
    # by class name, as model_from_json and load_model find them (a cell inside its RNN)
    clone = keras.layers.deserialize(json.loads(json.dumps(keras.layers.serialize(keras.layers.RNN(layer) if
                                                                                  name == "PeepholeLSTMCell" else
                                                                                  layer))))
    clone = clone.cell if name == "PeepholeLSTMCell" else clone
    assert type(clone) is type(layer)
    assert _without_names(json.loads(json.dumps(clone.get_config()))) == _without_names(config)


def test_conv_lstm_defaults_and_attributes_are_tf_115s():
    layer = keras.layers.ConvLSTM2D(4, 3)
    assert layer.recurrent_activation is keras.activations.hard_sigmoid
    assert (layer.filters, layer.kernel_size, layer.strides, layer.padding, layer.data_format,
            layer.dilation_rate) == (4, (3, 3), (1, 1), "valid", "channels_last", (1, 1))
    assert keras.experimental.PeepholeLSTMCell(2).recurrent_activation is keras.activations.hard_sigmoid
    layer(keras.Input((2, 5, 5, 2)))
    np.testing.assert_array_equal(K.get_value(layer.cell.bias), [0] * 4 + [1] * 4 + [0] * 8)   # unit_forget_bias


def test_channels_first_matches_channels_last():
    v = input_values()["v"]
    last = keras.layers.ConvLSTM2D(3, (3, 2), padding="same", return_sequences=True, return_state=True)
    first = keras.layers.ConvLSTM2D(3, (3, 2), padding="same", return_sequences=True, return_state=True,
                                    data_format="channels_first")
    x_last, x_first = keras.Input((3, 5, 5, 2)), keras.Input((3, 2, 5, 5))
    out_last, out_first = last(x_last), first(x_first)
    assert [o.shape.as_list() for o in out_first] == [[None, 3, 3, 5, 5], [None, 3, 5, 5], [None, 3, 5, 5]]
    first.set_weights(last.get_weights())
    got_last, got_first = K.get_session().run([out_last, out_first],
                                              {x_last: v, x_first: np.transpose(v, (0, 1, 4, 2, 3))})
    np.testing.assert_allclose(np.transpose(got_first[0], (0, 1, 3, 4, 2)), got_last[0], rtol=1e-5, atol=1e-6)
    for a, b in zip(got_first[1:], got_last[1:]):
        np.testing.assert_allclose(np.transpose(a, (0, 2, 3, 1)), b, rtol=1e-5, atol=1e-6)


def test_stateful_conv_lstm_continues_until_reset():
    v = input_values()["v"]
    layer = keras.layers.ConvLSTM2D(2, 3, padding="same", stateful=True)
    model = keras.Sequential([keras.layers.InputLayer(batch_input_shape=(2, 3, 5, 5, 2)), layer])
    twice = keras.layers.ConvLSTM2D(2, 3, padding="same")
    long_model = keras.Sequential([keras.layers.InputLayer(input_shape=(6, 5, 5, 2)), twice])
    twice.set_weights(layer.get_weights())
    first = model.predict(v)
    second = model.predict(v)
    np.testing.assert_allclose(second, long_model.predict(np.concatenate([v, v], axis=1)), rtol=1e-5, atol=1e-6)
    assert [s.shape.as_list() for s in layer.states] == [[2, 5, 5, 2], [2, 5, 5, 2]]
    layer.reset_states()
    np.testing.assert_allclose(model.predict(v), first, rtol=1e-6)
    with pytest.raises(ValueError, match=re.escape("State 0 is incompatible with layer conv_lst_m2d: expected "
                                                   "shape=(2, 5, 5, 2), found shape=(2, 5, 5, 3)")):
        layer.reset_states([np.zeros((2, 5, 5, 3)), np.zeros((2, 5, 5, 2))])
    unknown = keras.layers.ConvLSTM2D(2, 3, stateful=True)
    with pytest.raises(ValueError, match="(?s)needs to know its batch size.*number of rows and columns"):
        unknown(keras.Input((3, 5, 5, 2)))


def test_dropout_in_training_only():
    v = input_values()["v"]
    plain = keras.layers.ConvLSTM2D(2, 3, padding="same", return_sequences=True)
    dropped = keras.layers.ConvLSTM2D(2, 3, padding="same", return_sequences=True, dropout=0.5,
                                      recurrent_dropout=0.5)
    x = keras.Input((3, 5, 5, 2))
    out_plain, out_dropped = plain(x), dropped(x)
    dropped.set_weights(plain.get_weights())
    sess = K.get_session()
    a, b = sess.run([out_plain, out_dropped], {x: v, K.learning_phase(): 0})
    np.testing.assert_allclose(a, b, rtol=1e-6)
    a, b = sess.run([out_plain, out_dropped], {x: v, K.learning_phase(): 1})
    assert not np.allclose(a, b)
    # each of the four gates has its own input mask, drawn once for all the steps of a call
    assert len(dropped.cell._dropout_mask) == 4 and len(dropped.cell._recurrent_dropout_mask) == 4


def test_peephole_cell_trains_inside_an_lstm_like_rnn_and_stacks():
    x = input_values()["x"]
    cells = [keras.experimental.PeepholeLSTMCell(3), keras.experimental.PeepholeLSTMCell(2)]
    layer = keras.layers.RNN(cells)
    out = layer(keras.Input((4, 3)))
    assert out.shape.as_list() == [None, 2]
    assert [w.name for w in layer.weights][:6] == ["rnn/peephole_lstm_cell/" + n + ":0" for n in (
        "kernel", "recurrent_kernel", "bias", "input_gate_peephole_weights", "forget_gate_peephole_weights",
        "output_gate_peephole_weights")]
    # with zero peephole weights the cell is an LSTMCell
    lstm = keras.layers.RNN(keras.layers.LSTMCell(3))
    peep = keras.layers.RNN(keras.experimental.PeepholeLSTMCell(3))
    inp = keras.Input((4, 3))
    a, b = lstm(inp), peep(inp)
    peep.set_weights(lstm.get_weights() + [np.zeros(3, np.float32)] * 3)
    got_a, got_b = K.get_session().run([a, b], {inp: x})
    np.testing.assert_allclose(got_a, got_b, rtol=1e-6)


def test_bad_arguments_raise_as_tf():
    with pytest.raises(TypeError, match="Unrolling isn't possible with convolutional RNNs."):
        keras.layers.ConvLSTM2D(2, 3, unroll=True)
    with pytest.raises(ValueError, match=re.escape("The `kernel_size` argument must be a tuple of 2 integers. "
                                                   "Received: (3, 3, 3)")):
        keras.layers.ConvLSTM2D(2, (3, 3, 3))
    with pytest.raises(ValueError, match="The `padding` argument must be one of 'valid', 'same'. Received: causal"):
        keras.layers.ConvLSTM2D(2, 3, padding="causal")
    with pytest.raises(ValueError, match="The `data_format` argument must be one of"):
        keras.layers.ConvLSTM2D(2, 3, data_format="NHWC")
    with pytest.raises(ValueError, match=re.escape("Input 0 of layer conv_lst_m2d is incompatible with the layer: "
                                                   "expected ndim=5, found ndim=4")):
        keras.layers.ConvLSTM2D(2, 3)(keras.Input((3, 5, 2)))
    with pytest.raises(ValueError, match="The channel dimension of the inputs should be defined. Found `None`."):
        keras.layers.ConvLSTM2D(2, 3)(keras.Input((3, 5, 5, None)))
    with pytest.raises(ValueError, match="An initial_state was passed that is not compatible with `cell.state_size`"):
        keras.layers.ConvLSTM2D(2, 3, padding="same")(keras.Input((3, 5, 5, 2)),
                                                      initial_state=[keras.Input((5, 5, 3)), keras.Input((5, 5, 3))])


def test_frames_of_any_size_give_the_values_of_known_sizes():
    # (tf.nn.dynamic_rnn needs the step's shape; K.rnn then loops on its own, as TF's does)
    v = input_values()["v"]
    layer = keras.layers.ConvLSTM2D(3, 3, padding="same", return_sequences=True, return_state=True)
    x_any, x_known = keras.Input((None, None, None, 2)), keras.Input((3, 5, 5, 2))
    out_any, out_known = layer(x_any), layer(x_known)
    assert [o.shape.as_list() for o in out_any] == [[None, None, None, None, 3]] + [[None, None, None, 3]] * 2
    mask = tf.placeholder(tf.bool, [None, 3])
    masked_any, masked_known = layer(x_any, mask=mask)[0], layer(x_known, mask=mask)[0]
    grads_any = tf.gradients(tf.reduce_sum(out_any[0]), [x_any] + layer.weights)
    grads_known = tf.gradients(tf.reduce_sum(out_known[0]), [x_known] + layer.weights)
    got_any, got_known = K.get_session().run([out_any + [masked_any] + grads_any,
                                              out_known + [masked_known] + grads_known],
                                             {x_any: v, x_known: v, mask: [[True, False, True], [True, True, False]]})
    for a, b in zip(got_any, got_known):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
    masked = got_any[3]
    np.testing.assert_array_equal(masked[0, 1], masked[0, 0])   # a masked step repeats the previous output
    np.testing.assert_array_equal(masked[1, 2], masked[1, 1])
