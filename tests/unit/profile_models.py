"""The graphs test_profiler.py profiles and fixtures/record_tf_profiles.py profiled with
TensorFlow, defined once: each builds into the default graph from `tf` (tensorweave, or
TensorFlow's tf.compat.v1), with fully known shapes."""
from __future__ import annotations


def mlp(tf) -> None:
    """Two dense layers (MatMul + BiasAdd), softmax and a squared-error mean."""
    h = tf.placeholder(tf.float32, [8, 20], name="x")
    for i, n in enumerate([16, 10]):
        with tf.variable_scope(f"layer{i}"):
            w = tf.get_variable("kernel", [h.shape[1], n], initializer=tf.zeros_initializer())
            b = tf.get_variable("bias", [n], initializer=tf.zeros_initializer())
            h = tf.nn.bias_add(tf.matmul(h, w), b)
            if i == 0:
                h = tf.nn.relu(h)
    tf.nn.softmax(h, name="probs")
    tf.reduce_mean(tf.square(h - 1.0), name="loss")


def cnn(tf) -> None:
    """A strided SAME Conv2D + BiasAdd, max and average pooling, a dense layer, softmax, a sum;
    a non-trainable variable and a placeholder of unknown batch (its ops count no flops)."""
    x = tf.placeholder(tf.float32, [4, 12, 12, 3], name="images")
    with tf.variable_scope("conv"):
        k = tf.get_variable("kernel", [3, 3, 3, 8], initializer=tf.zeros_initializer())
        b = tf.get_variable("bias", [8], initializer=tf.zeros_initializer())
        h = tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(x, k, [1, 2, 2, 1], "SAME"), b))
    h = tf.nn.max_pool(h, [1, 2, 2, 1], [1, 2, 2, 1], "VALID")
    h = tf.nn.avg_pool(h, [1, 1, 1, 1], [1, 1, 1, 1], "VALID")
    with tf.variable_scope("dense"):
        w = tf.get_variable("kernel", [72, 5], initializer=tf.zeros_initializer())
        logits = tf.matmul(tf.reshape(h, [4, 72]), w)
    tf.get_variable("steps", [2], trainable=False, initializer=tf.zeros_initializer())
    tf.reduce_sum(tf.nn.softmax(logits), name="total")
    unknown = tf.placeholder(tf.float32, [None, 5], name="unknown_batch")
    tf.matmul(unknown, tf.transpose(w), name="unknown_matmul")


def batch_norm(tf) -> None:
    """A dense layer, batch normalization spelled out op by op (no FusedBatchNorm op) in a
    'BatchNorm' scope, and a squared mean: the advisor's BatchNorm check."""
    x = tf.placeholder_with_default(tf.ones([6, 4]), [6, 4], name="x")
    with tf.variable_scope("dense"):
        w = tf.get_variable("kernel", [4, 3], initializer=tf.ones_initializer())
        h = tf.matmul(x, w, name="matmul")
    with tf.variable_scope("BatchNorm"):
        gamma = tf.get_variable("gamma", [3], initializer=tf.ones_initializer())
        mean = tf.reduce_mean(h, 0, name="mean")
        centered = tf.subtract(h, mean, name="centered")
        variance = tf.reduce_mean(tf.square(centered, name="squared"), 0, name="variance")
        scale = tf.multiply(tf.rsqrt(variance, name="rsqrt"), gamma, name="scale")
        h = tf.multiply(centered, scale, name="normalized")
    tf.reduce_mean(tf.square(h, name="square"), name="loss")
