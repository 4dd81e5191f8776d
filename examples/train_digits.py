"""Trains a small CNN on scikit-learn's 8x8 handwritten digits (no download needed).

    pip install -e ".[examples]" && python examples/train_digits.py [--epochs 40]

Reaches >= 97% test accuracy in well under two minutes on two cores, printing loss and
accuracy as it goes. Only the TF1 API is used: `import tensorweave as tf`.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import tensorweave as tf


def load_data(seed: int = 0):
    from sklearn.datasets import load_digits
    digits = load_digits()
    images = (digits.images / 16.0).astype(np.float32)[..., None]  # [N, 8, 8, 1] in [0, 1]
    labels = digits.target.astype(np.int64)
    order = np.random.RandomState(seed).permutation(len(labels))
    split = int(0.8 * len(labels))
    train, test = order[:split], order[split:]
    return (images[train], labels[train]), (images[test], labels[test])


def build_model(learning_rate: float):
    x = tf.placeholder(tf.float32, [None, 8, 8, 1], name="images")
    y = tf.placeholder(tf.int64, [None], name="labels")
    training = tf.placeholder_with_default(False, [], name="training")
    h = tf.layers.conv2d(x, 32, 3, padding="same", activation=tf.nn.relu)
    h = tf.layers.max_pooling2d(h, 2, 2)
    h = tf.layers.conv2d(h, 64, 3, padding="same", activation=tf.nn.relu)
    h = tf.layers.max_pooling2d(h, 2, 2)
    h = tf.layers.flatten(h)
    h = tf.layers.dense(h, 128, activation=tf.nn.relu)
    h = tf.layers.dropout(h, rate=0.25, training=training)
    logits = tf.layers.dense(h, 10)
    loss = tf.losses.sparse_softmax_cross_entropy(labels=y, logits=logits)
    global_step = tf.train.get_or_create_global_step()
    train_op = tf.train.AdamOptimizer(learning_rate).minimize(loss, global_step=global_step)
    correct = tf.equal(tf.argmax(logits, axis=1), y)
    accuracy = tf.reduce_mean(tf.cast(correct, tf.float32))
    return x, y, training, loss, train_op, accuracy, global_step


def train(epochs: int = 40, batch_size: int = 32, learning_rate: float = 2e-3, seed: int = 0,
          verbose: bool = True) -> float:
    """Trains and returns the final test accuracy."""
    (x_train, y_train), (x_test, y_test) = load_data(seed)
    with tf.Graph().as_default():
        tf.set_random_seed(seed)
        x, y, training, loss, train_op, accuracy, global_step = build_model(learning_rate)
        rng = np.random.RandomState(seed)
        start = time.time()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for epoch in range(epochs):
                order = rng.permutation(len(y_train))
                losses = []
                for i in range(0, len(order), batch_size):
                    idx = order[i:i + batch_size]
                    _, step_loss = sess.run([train_op, loss], {x: x_train[idx], y: y_train[idx], training: True})
                    losses.append(step_loss)
                test_acc = sess.run(accuracy, {x: x_test, y: y_test})
                if verbose:
                    print(f"epoch {epoch + 1:3d}  step {sess.run(global_step):5d}  loss {np.mean(losses):.4f}  "
                          f"test accuracy {test_acc:.4f}  ({time.time() - start:.1f}s)", flush=True)
    return float(test_acc)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--epochs", type=int, default=40)
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--learning_rate", type=float, default=2e-3)
    args = parser.parse_args()
    acc = train(args.epochs, args.batch_size, args.learning_rate)
    print(f"final test accuracy {acc:.4f}")


if __name__ == "__main__":
    main()
