"""tf.contrib.slim.nets.alexnet: AlexNet v2 ("One weird trick", single tower) as slim builds it,
with the variable names of the published checkpoints (alexnet_v2/conv1/weights [11, 11, 3, 64],
..., alexnet_v2/fc8/biases); fc6 to fc8 are convolutions."""
from __future__ import annotations

from tensorweave.contrib.framework import arg_scope
from tensorweave.contrib.layers import conv2d, dropout, fully_connected, max_pool2d
from tensorweave.contrib.utils import convert_collection_to_dict
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.core import squeeze
from tensorweave.ops.nn.activations import relu
from tensorweave.ops.state.initializers import Constant, TruncatedNormal, zeros_initializer
from tensorweave.ops.state.variable_scope import variable_scope
from tensorweave.regularizers import l2_regularizer


@tf_export("contrib.slim.nets.alexnet.alexnet_v2_arg_scope")
def alexnet_v2_arg_scope(weight_decay=0.0005):
    """relu, biases 0.1 and L2 weight decay for the layers; 'SAME' convolutions, 'VALID' pooling."""
    with arg_scope([conv2d, fully_connected], activation_fn=relu, biases_initializer=Constant(0.1),
                   weights_regularizer=l2_regularizer(weight_decay)):
        with arg_scope([conv2d], padding="SAME"):
            with arg_scope([max_pool2d], padding="VALID") as arg_sc:
                return arg_sc


@tf_export("contrib.slim.nets.alexnet.alexnet_v2")
def alexnet_v2(inputs, num_classes=1000, is_training=True, dropout_keep_prob=0.5, spatial_squeeze=True,
               scope="alexnet_v2"):
    """AlexNet v2 on 224x224 inputs: (logits, end_points)."""
    with variable_scope(scope, "alexnet_v2", [inputs]) as sc:
        end_points_collection = sc.original_name_scope + "_end_points"
        with arg_scope([conv2d, fully_connected, max_pool2d], outputs_collections=[end_points_collection]):
            net = conv2d(inputs, 64, [11, 11], 4, padding="VALID", scope="conv1")
            net = max_pool2d(net, [3, 3], 2, scope="pool1")
            net = conv2d(net, 192, [5, 5], scope="conv2")
            net = max_pool2d(net, [3, 3], 2, scope="pool2")
            net = conv2d(net, 384, [3, 3], scope="conv3")
            net = conv2d(net, 384, [3, 3], scope="conv4")
            net = conv2d(net, 256, [3, 3], scope="conv5")
            net = max_pool2d(net, [3, 3], 2, scope="pool5")
            with arg_scope([conv2d], weights_initializer=TruncatedNormal(0.0, 0.005), biases_initializer=Constant(0.1)):
                net = conv2d(net, 4096, [5, 5], padding="VALID", scope="fc6")
                net = dropout(net, dropout_keep_prob, is_training=is_training, scope="dropout6")
                net = conv2d(net, 4096, [1, 1], scope="fc7")
                net = dropout(net, dropout_keep_prob, is_training=is_training, scope="dropout7")
                net = conv2d(net, num_classes, [1, 1], activation_fn=None, normalizer_fn=None,
                             biases_initializer=zeros_initializer(), scope="fc8")
            end_points = convert_collection_to_dict(end_points_collection)
            if spatial_squeeze:
                net = squeeze(net, [1, 2], name="fc8/squeezed")
                end_points[sc.name + "/fc8"] = net
            return net, end_points


alexnet_v2.default_image_size = 224
