"""tf.contrib.slim.nets.vgg: VGG-A (11 layers), VGG-16 and VGG-19 as slim builds them, whose
variables (vgg_16/conv1/conv1_1/weights, vgg_16/fc6/weights [7, 7, 512, 4096], ...) are those of
the published slim checkpoints, so those restore into it; fc6 to fc8 are convolutions."""
from __future__ import annotations

from tensorweave.contrib.framework import arg_scope
from tensorweave.contrib.layers import conv2d, dropout, fully_connected, max_pool2d, repeat
from tensorweave.contrib.utils import convert_collection_to_dict
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.core import squeeze
from tensorweave.ops.nn.activations import relu
from tensorweave.ops.state.initializers import zeros_initializer
from tensorweave.ops.state.variable_scope import variable_scope
from tensorweave.regularizers import l2_regularizer


@tf_export("contrib.slim.nets.vgg.vgg_arg_scope")
def vgg_arg_scope(weight_decay=0.0005):
    """The arg scope of the VGG nets: relu, L2 weight decay, zero biases, 'SAME' convolutions."""
    with arg_scope([conv2d, fully_connected], activation_fn=relu, weights_regularizer=l2_regularizer(weight_decay),
                   biases_initializer=zeros_initializer()):
        with arg_scope([conv2d], padding="SAME") as arg_sc:
            return arg_sc


def _vgg(inputs, repeats, num_classes, is_training, dropout_keep_prob, spatial_squeeze, scope, default_name):
    with variable_scope(scope, default_name, [inputs]) as sc:
        end_points_collection = sc.original_name_scope + "_end_points"
        with arg_scope([conv2d, fully_connected, max_pool2d], outputs_collections=end_points_collection):
            net = inputs
            for block, (times, depth) in enumerate(zip(repeats, (64, 128, 256, 512, 512)), start=1):
                net = repeat(net, times, conv2d, depth, [3, 3], scope=f"conv{block}")
                net = max_pool2d(net, [2, 2], scope=f"pool{block}")
            net = conv2d(net, 4096, [7, 7], padding="VALID", scope="fc6")   # fully connected layers as convolutions
            net = dropout(net, dropout_keep_prob, is_training=is_training, scope="dropout6")
            net = conv2d(net, 4096, [1, 1], scope="fc7")
            net = dropout(net, dropout_keep_prob, is_training=is_training, scope="dropout7")
            net = conv2d(net, num_classes, [1, 1], activation_fn=None, normalizer_fn=None, scope="fc8")
            end_points = convert_collection_to_dict(end_points_collection)
            if spatial_squeeze:
                net = squeeze(net, [1, 2], name="fc8/squeezed")
                end_points[sc.name + "/fc8"] = net
            return net, end_points


@tf_export("contrib.slim.nets.vgg.vgg_a")
def vgg_a(inputs, num_classes=1000, is_training=True, dropout_keep_prob=0.5, spatial_squeeze=True, scope="vgg_a"):
    """VGG-A (11 layers) on 224x224 inputs: (logits, end_points {scope of each layer: output})."""
    return _vgg(inputs, (1, 1, 2, 2, 2), num_classes, is_training, dropout_keep_prob, spatial_squeeze, scope,
                "vgg_a")


@tf_export("contrib.slim.nets.vgg.vgg_16")
def vgg_16(inputs, num_classes=1000, is_training=True, dropout_keep_prob=0.5, spatial_squeeze=True,
           scope="vgg_16"):
    """VGG-16 on 224x224 inputs: (logits, end_points)."""
    return _vgg(inputs, (2, 2, 3, 3, 3), num_classes, is_training, dropout_keep_prob, spatial_squeeze, scope,
                "vgg_16")


@tf_export("contrib.slim.nets.vgg.vgg_19")
def vgg_19(inputs, num_classes=1000, is_training=True, dropout_keep_prob=0.5, spatial_squeeze=True,
           scope="vgg_19"):
    """VGG-19 on 224x224 inputs: (logits, end_points)."""
    return _vgg(inputs, (2, 2, 4, 4, 4), num_classes, is_training, dropout_keep_prob, spatial_squeeze, scope,
                "vgg_19")


vgg_a.default_image_size = vgg_16.default_image_size = vgg_19.default_image_size = 224
vgg_d, vgg_e = vgg_16, vgg_19
tf_export("contrib.slim.nets.vgg.vgg_d")(vgg_d)
tf_export("contrib.slim.nets.vgg.vgg_e")(vgg_e)
