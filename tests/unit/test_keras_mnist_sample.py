"""Google's MNIST sample model (tensorflow/models official/mnist, tf.keras in a TF1 graph):
Sequential of Reshape, Conv2D, a MaxPooling2D used twice, Flatten, Dense, Dropout, Dense, called
as model(image, training=True) and trained by AdamOptimizer.minimize; its losses over a few steps
from fixed weights equal TF 2.15's (fixtures/record_keras_layers.py; TF's dropout masks are
replayed by feeding the dropout's uniform draw)."""
from __future__ import annotations

import numpy as np

import tensorweave as tf
from fixtures import keras_layer_cases as cases
from keras_layer_recordings import ARRAYS, META


def test_mnist_sample_model_trains_as_tf():
    model = cases.mnist_model(tf)
    images = tf.placeholder(tf.float32, [None, 784])
    labels = tf.placeholder(tf.int32, [None])
    logits = model(images, training=True)
    assert logits.shape.as_list() == [None, 10]
    loss = tf.losses.sparse_softmax_cross_entropy(labels=labels, logits=logits)
    train_op = tf.train.AdamOptimizer(1e-4).minimize(loss)
    assert [[w.name, w.shape.as_list()] for w in model.weights] == META["mnist"]["variables"]
    uniform = [op.outputs[0] for op in tf.get_default_graph().get_operations()
               if op.type == "RandomUniform" and "dropout" in op.name and "cond" not in op.name]
    assert len(uniform) == 1
    sess = tf.keras.backend.get_session()
    sess.run(tf.global_variables_initializer())
    model.set_weights([cases.mnist_weight(w.shape) for w in model.get_weights()])
    x, t = cases.mnist_batch()
    masks = np.unpackbits(ARRAYS["mnist/masks"])[:int(np.prod(META["mnist"]["mask_shape"]))]
    masks = masks.reshape(META["mnist"]["mask_shape"]).astype(bool)
    losses = []
    for mask in masks:
        draw = np.where(mask, 0.9, 0.1).astype(np.float32)   # kept where TF's draw was >= rate (0.4)
        value, _ = sess.run([loss, train_op], {images: x, labels: t, uniform[0]: draw})
        losses.append(value)
    np.testing.assert_allclose(losses, ARRAYS["mnist/losses"], rtol=1e-5)
    assert losses[-1] < losses[0]
