"""tf.estimator.inputs.pandas_input_fn: TF 1.15's batches of a DataFrame's columns (and a target
Series or DataFrame), checked against numpy_input_fn over the same arrays (whose batches are
checked against TensorFlow's in test_estimator.py), and an Estimator trained on it against
TensorFlow's recorded losses of the same data through numpy_input_fn."""
from __future__ import annotations

import sys

import numpy as np
import pytest

import tensorweave as tf
import estimator_cases as cases
from test_estimator import NUMPY_RECORDED, _read_batches, close

pd = pytest.importorskip("pandas")

X = pd.DataFrame({"b": np.arange(7, dtype=np.float32) / 2, "a": np.arange(7, dtype=np.int64)},
                 index=np.arange(100, 107))
Y = pd.Series(np.arange(7, dtype=np.float64) * 10, index=X.index)
COLUMNS = {"b": X["b"].to_numpy(), "a": X["a"].to_numpy()}


@pytest.mark.parametrize("batch_size,num_epochs,shuffle_limit", [(3, 2, None), (4, 1, None), (3, None, 5)])
def test_batches_are_numpy_input_fns_of_the_same_columns(batch_size, num_epochs, shuffle_limit):
    got = _read_batches(tf.estimator.inputs.pandas_input_fn(X, Y, batch_size=batch_size, num_epochs=num_epochs,
                                                            shuffle=False), limit=shuffle_limit)
    want = _read_batches(tf.estimator.inputs.numpy_input_fn(COLUMNS, Y.to_numpy(), batch_size=batch_size,
                                                            num_epochs=num_epochs, shuffle=False), limit=shuffle_limit)
    assert got == want and len(got) > 1
    if num_epochs is None:
        assert all(len(labels) == batch_size for _, labels in got)


def test_dataframe_target_and_no_target():
    y = pd.DataFrame({"t1": Y.to_numpy(), "b": Y.to_numpy() + 1}, index=X.index)   # ("b" also names a feature)
    got = _read_batches(tf.estimator.inputs.pandas_input_fn(X, y, batch_size=4, shuffle=False))
    want = _read_batches(tf.estimator.inputs.numpy_input_fn(
        COLUMNS, {"t1": y["t1"].to_numpy(), "b2": y["b"].to_numpy()}, batch_size=4, shuffle=False))
    assert [[f, {"t1": t["t1"], "b": t["b2"]}] for f, t in want] == got
    features = _read_batches(tf.estimator.inputs.pandas_input_fn(X, batch_size=5, shuffle=False))
    assert features == _read_batches(tf.estimator.inputs.numpy_input_fn(COLUMNS, batch_size=5, shuffle=False))
    with tf.Graph().as_default():
        features, labels = tf.estimator.inputs.pandas_input_fn(X, Y, shuffle=False, target_column="label")()
        assert list(features) == ["b", "a"]   # the frame's column order
        assert (features["b"].dtype, features["a"].dtype, labels.dtype) == (tf.float32, tf.int64, tf.float64)


def test_string_columns_and_a_frame_without_columns():
    x = pd.DataFrame({"s": list("abcde")})
    with tf.Graph().as_default():
        features = tf.estimator.inputs.pandas_input_fn(x, batch_size=2, shuffle=False)()
        with tf.train.MonitoredSession() as session:
            got = []
            while not session.should_stop():
                got.append(session.run(features)["s"].tolist())
    assert got == [[b"a", b"b"], [b"c", b"d"], [b"e"]]
    with tf.Graph().as_default():
        assert tf.estimator.inputs.pandas_input_fn(pd.DataFrame(index=range(3)), shuffle=False)() == {}


def test_shuffle_keeps_rows_together_within_each_epoch():
    epochs = _read_batches(tf.estimator.inputs.pandas_input_fn(X, Y, batch_size=7, num_epochs=3, shuffle=True,
                                                               queue_capacity=None))
    assert len(epochs) == 3
    for features, labels in epochs:
        assert sorted(features["a"]) == list(range(7))
        np.testing.assert_array_equal(labels, np.array(features["a"]) * 10.0)
        np.testing.assert_array_equal(features["b"], np.array(features["a"]) / 2)


def test_errors():
    fn = tf.estimator.inputs.pandas_input_fn
    with pytest.raises(ValueError, match="shuffle must be provided and explicitly set as boolean"):
        fn(X, Y)
    with pytest.raises(ValueError, match="Index for x and y are mismatched"):
        fn(X, Y.reset_index(drop=True), shuffle=False)
    with pytest.raises(ValueError, match="Cannot use name a for target column"):
        fn(X, Y, shuffle=False, target_column="a")
    with pytest.raises(TypeError, match="target_column must be a string type"):
        fn(X, Y, shuffle=False, target_column=1)
    with pytest.raises(TypeError, match="x must be a pandas DataFrame; got dict"):
        fn(COLUMNS, shuffle=False)
    with pytest.raises(TypeError, match="y must be a pandas Series or DataFrame; got ndarray"):
        fn(X, Y.to_numpy(), shuffle=False)


def test_error_without_pandas(monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)   # (as if not installed: no module, none to find)
    with pytest.raises(TypeError, match=r"without pandas installed \(pip install 'tensorweave\[pandas\]'\)"):
        tf.estimator.inputs.pandas_input_fn(X, shuffle=False)


def test_estimator_trained_on_pandas_input_fn_matches_tensorflow(tmp_path):
    losses = []
    linear = cases.linear_model_fn(tf, losses)

    def model_fn(features, labels, mode, params):   # the columns back into the recorded model's [n, 2] input
        return linear(tf.stack([features["x0"], features["x1"]], 1), tf.reshape(labels, [-1, 1]), mode, params)

    est = tf.estimator.Estimator(model_fn, model_dir=str(tmp_path), params={"learning_rate": 0.1})
    x = pd.DataFrame({"x0": cases.X[:, 0], "x1": cases.X[:, 1]})
    est.train(tf.estimator.inputs.pandas_input_fn(x, pd.Series(cases.Y[:, 0]), batch_size=5, num_epochs=None,
                                                  shuffle=False), steps=6)
    close(losses, NUMPY_RECORDED["estimator_losses"])
