"""A reduced Xception (Chollet, 2017) for 32x32 (here 24x24) inputs: entry, middle and exit flows
of depthwise-separable convolutions with batch normalisation and residual connections; the
middle flow's repeat count is a flag. Built from tf.nn and tf.layers so it runs on any TF1 API.
"""
from backend import tf


def _bn(x, is_training, name):
    return tf.layers.batch_normalization(x, training=is_training, name=name)


def _separable(x, filters: int, name: str, is_training, relu_first: bool = True):
    with tf.variable_scope(name):
        if relu_first:
            x = tf.nn.relu(x)
        channels = x.get_shape()[-1].value
        init = tf.variance_scaling_initializer(scale=2.0)
        depthwise = tf.get_variable("depthwise", [3, 3, channels, 1], initializer=init)
        pointwise = tf.get_variable("pointwise", [1, 1, channels, filters], initializer=init)
        x = tf.nn.separable_conv2d(x, depthwise, pointwise, [1, 1, 1, 1], "SAME")
        return _bn(x, is_training, "bn")


def _conv(x, filters: int, kernel: int, stride: int, name: str, is_training):
    with tf.variable_scope(name):
        channels = x.get_shape()[-1].value
        w = tf.get_variable("weights", [kernel, kernel, channels, filters],
                            initializer=tf.variance_scaling_initializer(scale=2.0))
        return _bn(tf.nn.conv2d(x, w, [1, stride, stride, 1], "SAME"), is_training, "bn")


def _downsampling_block(x, filters: int, name: str, is_training, relu_first: bool = True):
    """Two separable convs and a stride-2 max-pool, plus a strided 1x1 conv on the shortcut."""
    with tf.variable_scope(name):
        shortcut = _conv(x, filters, 1, 2, "shortcut", is_training)
        x = _separable(x, filters, "sep1", is_training, relu_first)
        x = _separable(x, filters, "sep2", is_training)
        x = tf.nn.max_pool(x, [1, 3, 3, 1], [1, 2, 2, 1], "SAME")
        return tf.add(x, shortcut)


def inference(images, num_classes: int, is_training=True, middle_repeats: int = 2):
    """Logits of the reduced Xception for a batch of images."""
    with tf.variable_scope("xception"):
        x = tf.nn.relu(_conv(images, 32, 3, 1, "entry_conv1", is_training))
        x = tf.nn.relu(_conv(x, 64, 3, 1, "entry_conv2", is_training))
        x = _downsampling_block(x, 128, "entry_block1", is_training, relu_first=False)
        x = _downsampling_block(x, 256, "entry_block2", is_training)
        for i in range(middle_repeats):
            with tf.variable_scope(f"middle_block{i + 1}"):
                residual = x
                for j in range(3):
                    x = _separable(x, 256, f"sep{j + 1}", is_training)
                x = tf.add(x, residual)
        x = _downsampling_block(x, 384, "exit_block", is_training)
        x = tf.nn.relu(_separable(x, 512, "exit_sep", is_training, relu_first=False))
        x = tf.reduce_mean(x, [1, 2], name="global_pool")
        with tf.variable_scope("logits"):
            w = tf.get_variable("weights", [512, num_classes],
                                initializer=tf.truncated_normal_initializer(stddev=1 / 512.0))
            b = tf.get_variable("biases", [num_classes], initializer=tf.zeros_initializer())
            return tf.nn.bias_add(tf.matmul(x, w), b)
