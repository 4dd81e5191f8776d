"""tf.contrib.slim.nets.resnet_v2: ResNet v2 (pre-activation; 50, 101, 152, 200 layers) as slim
builds it, with the variable names of the published checkpoints
(resnet_v2_50/block1/unit_1/bottleneck_v2/preact/gamma, ..., resnet_v2_50/postnorm/beta)."""
from __future__ import annotations

from tensorweave.contrib.framework import add_arg_scope, arg_scope
from tensorweave.contrib.layers import batch_norm, conv2d, max_pool2d, softmax
from tensorweave.contrib.slim.nets.resnet_utils import Block, conv2d_same, resnet_arg_scope, resnet_of_depth, \
    stack_blocks_dense, subsample
from tensorweave.contrib.utils import collect_named_outputs, convert_collection_to_dict, last_dimension
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.math.reduction import reduce_mean
from tensorweave.ops.nn.activations import relu
from tensorweave.ops.state.variable_scope import variable_scope

tf_export("contrib.slim.nets.resnet_v2.resnet_arg_scope")(resnet_arg_scope)


@tf_export("contrib.slim.nets.resnet_v2.bottleneck")
@add_arg_scope
def bottleneck(inputs, depth, depth_bottleneck, stride, rate=1, outputs_collections=None, scope=None):
    """shortcut + conv3(conv2(conv1(preact))), preact = relu(batch_norm(inputs)); the shortcut a
    strided 1x1 convolution of preact when the depth changes; conv3 and the shortcut have no
    batch_norm nor activation."""
    with variable_scope(scope, "bottleneck_v2", [inputs]) as sc:
        depth_in = last_dimension(inputs.shape, min_rank=4)
        preact = batch_norm(inputs, activation_fn=relu, scope="preact")
        if depth == depth_in:
            shortcut = subsample(inputs, stride, "shortcut")
        else:
            shortcut = conv2d(preact, depth, [1, 1], stride=stride, normalizer_fn=None, activation_fn=None,
                              scope="shortcut")
        residual = conv2d(preact, depth_bottleneck, [1, 1], stride=1, scope="conv1")
        residual = conv2d_same(residual, depth_bottleneck, 3, stride, rate=rate, scope="conv2")
        residual = conv2d(residual, depth, [1, 1], stride=1, normalizer_fn=None, activation_fn=None, scope="conv3")
        return collect_named_outputs(outputs_collections, sc.name, shortcut + residual)


@tf_export("contrib.slim.nets.resnet_v2.resnet_v2")
def resnet_v2(inputs, blocks, num_classes=None, is_training=None, global_pool=True, output_stride=None,
              include_root_block=True, reuse=None, scope=None):
    """A ResNet v2 of `blocks`: (net, end_points). The root is a plain 7x7/2 convolution and a
    3x3/2 max pool; then the blocks, "postnorm" (batch_norm and relu), global average pooling
    ("pool5"); with num_classes, 1x1 "logits" and end_points["predictions"]. is_training None
    keeps batch_norm's from the arg scope."""
    with variable_scope(scope, "resnet_v2", [inputs], reuse=reuse) as sc:
        end_points_collection = sc.original_name_scope + "_end_points"
        with arg_scope([conv2d, bottleneck, stack_blocks_dense], outputs_collections=end_points_collection):
            with arg_scope([batch_norm], **({} if is_training is None else {"is_training": is_training})):
                net = inputs
                if include_root_block:
                    if output_stride is not None:
                        if output_stride % 4 != 0:
                            raise ValueError("The output_stride needs to be a multiple of 4.")
                        output_stride //= 4
                    with arg_scope([conv2d], activation_fn=None, normalizer_fn=None):   # the first unit's preact
                        net = conv2d_same(net, 64, 7, stride=2, scope="conv1")
                    net = max_pool2d(net, [3, 3], stride=2, scope="pool1")
                net = stack_blocks_dense(net, blocks, output_stride)
                net = batch_norm(net, activation_fn=relu, scope="postnorm")
                if global_pool:
                    net = reduce_mean(net, [1, 2], name="pool5", keepdims=True)
                if num_classes is not None:
                    net = conv2d(net, num_classes, [1, 1], activation_fn=None, normalizer_fn=None, scope="logits")
                end_points = convert_collection_to_dict(end_points_collection)
                if num_classes is not None:
                    end_points["predictions"] = softmax(net, scope="predictions")
                return net, end_points


resnet_v2.default_image_size = 224


@tf_export("contrib.slim.nets.resnet_v2.resnet_v2_block")
def resnet_v2_block(scope, base_depth, num_units, stride):
    """A block of num_units pre-activation bottlenecks (depth 4 base_depth), the last with `stride`."""
    unit = {"depth": base_depth * 4, "depth_bottleneck": base_depth}
    return Block(scope, bottleneck, [dict(unit, stride=1)] * (num_units - 1) + [dict(unit, stride=stride)])


resnet_v2_50 = resnet_of_depth(resnet_v2, resnet_v2_block, (3, 4, 6, 3), "resnet_v2_50", "v2")
resnet_v2_101 = resnet_of_depth(resnet_v2, resnet_v2_block, (3, 4, 23, 3), "resnet_v2_101", "v2")
resnet_v2_152 = resnet_of_depth(resnet_v2, resnet_v2_block, (3, 8, 36, 3), "resnet_v2_152", "v2")
resnet_v2_200 = resnet_of_depth(resnet_v2, resnet_v2_block, (3, 24, 36, 3), "resnet_v2_200", "v2")
tf_export("contrib.slim.nets.resnet_v2.resnet_v2_50")(resnet_v2_50)
tf_export("contrib.slim.nets.resnet_v2.resnet_v2_101")(resnet_v2_101)
tf_export("contrib.slim.nets.resnet_v2.resnet_v2_152")(resnet_v2_152)
tf_export("contrib.slim.nets.resnet_v2.resnet_v2_200")(resnet_v2_200)
