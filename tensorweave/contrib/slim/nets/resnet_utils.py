"""tf.contrib.slim.nets.resnet_utils: what the ResNets share: Block (a block's scope, unit
function and the arguments of each unit), 'SAME' strided convolution aligned as TF's ResNets
(conv2d_same), subsample, stack_blocks_dense (units in "block1/unit_1" scopes, with atrous
convolution past output_stride) and resnet_arg_scope."""
from __future__ import annotations

import collections

from tensorweave.contrib.framework import add_arg_scope, arg_scope
from tensorweave.contrib.layers import batch_norm, conv2d, max_pool2d, variance_scaling_initializer
from tensorweave.contrib.utils import collect_named_outputs
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.pad import pad
from tensorweave.ops.nn.activations import relu
from tensorweave.ops.state.variable_scope import variable_scope
from tensorweave.regularizers import l2_regularizer


@tf_export("contrib.slim.nets.resnet_utils.Block")
class Block(collections.namedtuple("Block", ["scope", "unit_fn", "args"])):
    """A ResNet block: its scope ("block1"), unit_fn(net, depth, depth_bottleneck, stride, rate)
    and one dict of arguments per unit."""


@tf_export("contrib.slim.nets.resnet_utils.subsample")
def subsample(inputs, factor, scope=None):
    """inputs itself (factor 1), or every factor-th row and column of it."""
    return inputs if factor == 1 else max_pool2d(inputs, [1, 1], stride=factor, scope=scope)


@tf_export("contrib.slim.nets.resnet_utils.conv2d_same")
def conv2d_same(inputs, num_outputs, kernel_size, stride, rate=1, scope=None):
    """A strided 'SAME' convolution whose outputs are those of the stride-1 convolution at every
    stride-th position (explicit padding, then 'VALID'), also for even input sizes."""
    if stride == 1:
        return conv2d(inputs, num_outputs, kernel_size, stride=1, rate=rate, padding="SAME", scope=scope)
    effective = kernel_size + (kernel_size - 1) * (rate - 1)
    begin = (effective - 1) // 2
    end = effective - 1 - begin
    inputs = pad(inputs, [[0, 0], [begin, end], [begin, end], [0, 0]])
    return conv2d(inputs, num_outputs, kernel_size, stride=stride, rate=rate, padding="VALID", scope=scope)


@tf_export("contrib.slim.nets.resnet_utils.stack_blocks_dense")
@add_arg_scope
def stack_blocks_dense(net, blocks, output_stride=None, outputs_collections=None):
    """The blocks' units applied in turn, in scopes "<block>/unit_<i>"; once the stride so far
    reaches output_stride (None: never), later units run with stride 1 and atrous rates."""
    current_stride, rate = 1, 1
    for block in blocks:
        with variable_scope(block.scope, "block", [net]) as sc:
            for i, unit in enumerate(block.args):
                if output_stride is not None and current_stride > output_stride:
                    raise ValueError("The target output_stride cannot be reached.")
                with variable_scope(f"unit_{i + 1}", values=[net]):
                    if output_stride is not None and current_stride == output_stride:
                        net = block.unit_fn(net, rate=rate, **dict(unit, stride=1))
                        rate *= unit.get("stride", 1)
                    else:
                        net = block.unit_fn(net, rate=1, **unit)
                        current_stride *= unit.get("stride", 1)
            net = collect_named_outputs(outputs_collections, sc.name, net)
    if output_stride is not None and current_stride != output_stride:
        raise ValueError("The target output_stride cannot be reached.")
    return net


@tf_export("contrib.slim.nets.resnet_utils.resnet_arg_scope")
def resnet_arg_scope(is_training=True, weight_decay=0.0001, batch_norm_decay=0.997, batch_norm_epsilon=1e-5,
                     batch_norm_scale=True):
    """The ResNets' arg scope: He-initialized, L2-decayed convolutions followed by batch_norm
    (scaled, decay 0.997, epsilon 1e-5) and relu; 'SAME' max pooling. is_training is batch_norm's
    default here, which a net's own is_training (when not None) overrides for every batch_norm."""
    batch_norm_params = {"decay": batch_norm_decay, "epsilon": batch_norm_epsilon, "scale": batch_norm_scale}
    with arg_scope([conv2d], weights_regularizer=l2_regularizer(weight_decay),
                   weights_initializer=variance_scaling_initializer(), activation_fn=relu, normalizer_fn=batch_norm,
                   normalizer_params=batch_norm_params):
        # is_training only as an arg_scope default, not in normalizer_params, where it would win over the net's
        with arg_scope([batch_norm], is_training=is_training, **batch_norm_params):
            with arg_scope([max_pool2d], padding="SAME") as arg_sc:
                return arg_sc


def resnet_of_depth(network, block, units, default_scope: str, version: str):
    """ResNet `version` ("v1", "v2") of one depth as slim's nets define it: `network(inputs, blocks,
    ...)` over four blocks made by `block`, of `units` units each (block i: base depth 64 * 2**(i-1),
    stride 2 but for the last); a function (inputs, num_classes, is_training, global_pool,
    output_stride, reuse, scope) -> (net, end_points)."""
    def build(inputs, num_classes=None, is_training=None, global_pool=True, output_stride=None, reuse=None,
              scope=default_scope):
        blocks = [block(f"block{i}", base_depth=64 * 2 ** (i - 1), num_units=n, stride=2 if i < 4 else 1)
                  for i, n in enumerate(units, start=1)]
        return network(inputs, blocks, num_classes, is_training, global_pool, output_stride,
                       include_root_block=True, reuse=reuse, scope=scope)
    build.__name__ = default_scope
    build.__doc__ = f"ResNet {version} with {sum(units) * 3 + 2} layers (units per block {units}): (net, end_points)."
    build.default_image_size = 224
    return build
