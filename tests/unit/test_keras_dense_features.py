"""tf.keras.layers.DenseFeatures: input_layer as a Keras layer owning its columns' variables. The
variable names and the column order are TF 2.15's (tf.compat.v1.keras.layers.DenseFeatures, graph
mode), as tests/unit/fixtures/record_tf_dense_features.py prints them; the values are numpy's."""
from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tf

fc = tf.feature_column
EMBEDDING = np.arange(9.0).reshape(3, 3) / 10


def columns():
    price = fc.numeric_column("price", shape=(2,))
    color = fc.categorical_column_with_vocabulary_list("color", ["red", "green", "blue"])
    embedded = fc.embedding_column(color, 3, initializer=tf.constant_initializer(EMBEDDING))
    return [price, embedded, fc.indicator_column(color)]


def test_dense_features_equals_input_layer_and_owns_its_variables_once():
    with tf.Graph().as_default():
        layer = tf.keras.layers.DenseFeatures(columns())
        features = {"price": tf.constant([[1.0, 2.0], [3.0, 4.0]]), "color": tf.constant([["red"], ["blue"]])}
        out, again = layer(features), layer(features)
        reference = fc.input_layer(features, columns())
        assert out.shape.as_list() == [2, 8]
        assert [v.name for v in layer.weights] == ["dense_features/color_embedding/embedding_weights:0"]
        assert len(tf.trainable_variables()) == 2   # the layer's one, and input_layer's own
        with tf.Session() as sess:
            sess.run([tf.global_variables_initializer(), tf.tables_initializer()])
            got, got_again, want = sess.run([out, again, reference])
    one_hot = np.eye(3)[[0, 2]]
    # columns in name order: color_embedding, color_indicator, price
    expected = np.concatenate([one_hot @ EMBEDDING, one_hot, [[1.0, 2.0], [3.0, 4.0]]], axis=1)
    np.testing.assert_allclose(got, expected, rtol=1e-6)
    np.testing.assert_array_equal(got, got_again)
    np.testing.assert_array_equal(got, want)


def test_dense_features_in_a_model_fn_trains_its_embedding():
    """As in an Estimator's model_fn: the layer called on the features dict, a loss minimized."""
    with tf.Graph().as_default():
        color = fc.categorical_column_with_identity("color", 4)
        layer = tf.keras.layers.DenseFeatures([fc.embedding_column(color, 2)])
        features = {"color": tf.constant([[0], [1], [2], [3]], tf.int64)}
        prediction = tf.layers.dense(layer(features), 1)
        loss = tf.losses.mean_squared_error(tf.constant([[0.0], [1.0], [2.0], [3.0]]), prediction)
        train = tf.train.GradientDescentOptimizer(0.3).minimize(loss)
        embedding = layer.weights[0]
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            first, before = sess.run([loss, embedding])
            for _ in range(60):
                sess.run(train)
            last, after = sess.run([loss, embedding])
    assert last < first / 10 and not np.allclose(before, after)


def test_dense_features_refuses_a_categorical_column_and_a_tensor_for_features():
    color = fc.categorical_column_with_vocabulary_list("color", ["red"])
    with pytest.raises(ValueError, match="embedding_column or indicator_column"):
        tf.keras.layers.DenseFeatures([color])
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="expected a dictionary"):
            tf.keras.layers.DenseFeatures([fc.numeric_column("price")])(tf.constant([[1.0]]))
