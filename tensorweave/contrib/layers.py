"""tf.contrib.layers (also tf.contrib.slim's layers): the layer functions TF1 research code is
written in (conv2d, fully_connected, batch_norm, ... with slim's variable names "Conv/weights",
"fully_connected/biases", "BatchNorm/moving_mean"), repeat and stack, TF1's contrib initializers,
and the tf.layers functions under their contrib names. Each layer function is the tf.layers class
of its kind, its variables renamed by a custom getter and added to MODEL_VARIABLES, as in TF."""
from __future__ import annotations

import functools
import math

from tensorweave import _api
from tensorweave.contrib.framework import add_arg_scope, model_variable
from tensorweave.contrib.utils import collect_named_outputs, last_dimension, two_element_tuple
from tensorweave.framework import dtypes
from tensorweave.framework.api import GraphKeys, add_to_collection, control_dependencies, get_collection, \
    get_collection_ref, name_scope
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tf_export import tf_export
from tensorweave.layers.convolutional import Conv1D, Conv2D, Conv2DTranspose, Conv3D, SeparableConv2D
from tensorweave.layers.core import Dense, Dropout, flatten as layers_flatten
from tensorweave.layers.normalization import BatchNormalization
from tensorweave.ops.array.core import identity, reshape, shape as array_shape
from tensorweave.ops.array.gather import one_hot
from tensorweave.ops.math.cast import to_int64
from tensorweave.ops.math.reduction import reduce_sum
from tensorweave.ops.math.unary import sqrt, square
from tensorweave.ops.nn.activations import bias_add as nn_bias_add, relu as nn_relu, relu6 as nn_relu6, \
    softmax as nn_softmax
from tensorweave.ops.nn.conv import depthwise_conv2d
from tensorweave.ops.nn.impl import batch_normalization as nn_batch_normalization, moments
from tensorweave.ops.nn.pool import avg_pool, max_pool
from tensorweave.ops.random import random_uniform, truncated_normal
from tensorweave.ops.state.initializers import ones_initializer, zeros_initializer
from tensorweave.ops.state.variable_scope import variable_scope

__getattr__, __dir__ = _api.lazy_attributes(__name__)   # the names tf.contrib.layers gathers from elsewhere


@tf_export("contrib.layers.variance_scaling_initializer", "contrib.slim.variance_scaling_initializer")
def variance_scaling_initializer(factor=2.0, mode="FAN_IN", uniform=False, seed=None, dtype=dtypes.float32):
    """tf.contrib.layers.variance_scaling_initializer: uniform in +-sqrt(3 factor / n), or a normal
    truncated at 2 stddev with stddev sqrt(1.3 factor / n); n the fan_in, fan_out or their mean."""
    dtype = dtypes.as_dtype(dtype)
    if not dtype.is_floating:
        raise TypeError("Cannot create initializer for non-floating point type.")
    if mode not in ("FAN_IN", "FAN_OUT", "FAN_AVG"):
        raise TypeError(f"Unknown mode {mode} [FAN_IN, FAN_OUT, FAN_AVG]")

    def _initializer(shape, dtype=dtype, partition_info=None):
        dtype = dtypes.as_dtype(dtype)
        if not dtype.is_floating:
            raise TypeError("Cannot create initializer for non-floating point type.")
        full = list(partition_info.full_shape) if partition_info is not None else list(shape)
        if full:
            fan_in = float(full[-2]) if len(full) > 1 else float(full[-1])
            fan_out = float(full[-1])
        else:
            fan_in = fan_out = 1.0
        for dim in full[:-2]:
            fan_in *= dim
            fan_out *= dim
        n = {"FAN_IN": fan_in, "FAN_OUT": fan_out, "FAN_AVG": (fan_in + fan_out) / 2.0}[mode]
        if uniform:
            limit = math.sqrt(3.0 * factor / n)
            return random_uniform(shape, -limit, limit, dtype, seed=seed)
        return truncated_normal(shape, 0.0, math.sqrt(1.3 * factor / n), dtype, seed=seed)
    return _initializer


@tf_export("contrib.layers.xavier_initializer", "contrib.layers.xavier_initializer_conv2d",
           "contrib.slim.xavier_initializer", "contrib.slim.xavier_initializer_conv2d")
def xavier_initializer(uniform=True, seed=None, dtype=dtypes.float32):
    """tf.contrib.layers.xavier_initializer: Glorot's initializer (variance 1 / fan_avg)."""
    return variance_scaling_initializer(factor=1.0, mode="FAN_AVG", uniform=uniform, seed=seed, dtype=dtype)


xavier_initializer_conv2d = xavier_initializer


# -- plumbing shared by the layer functions ---------------------------------------------------------
def _model_variable_getter(rename=None):
    """A custom getter that names a layer's variables as slim does ({"kernel": "weights"}) and
    puts them in MODEL_VARIABLES too."""
    def getter(getter, name, *args, **kwargs):
        head, _, short = name.rpartition("/")
        if rename and short in rename:
            name = f"{head}/{rename[short]}" if head else rename[short]
        kwargs["collections"] = list(kwargs.get("collections") or [GraphKeys.GLOBAL_VARIABLES]) + \
            [GraphKeys.MODEL_VARIABLES]
        return getter(name, *args, **kwargs)
    return getter


_WEIGHTS_AND_BIASES = {"kernel": "weights", "bias": "biases"}


def _add_to_collections(var, collections, key: str) -> None:
    """variables_collections: a list of collection names, or a dict {variable kind: list}."""
    if isinstance(collections, dict):
        collections = collections.get(key)
    for name in collections or ():
        if var not in get_collection(name):
            add_to_collection(name, var)


def _channels(data_format, allowed) -> str:
    """slim's NHWC-style data_format as the layers' 'channels_last' / 'channels_first'."""
    if data_format not in allowed:
        raise ValueError(f"Invalid data_format: {data_format!r}")
    return "channels_first" if data_format and data_format.startswith("NC") else "channels_last"


def _finish(outputs, alias, normalizer_fn, normalizer_params, activation_fn, outputs_collections):
    if normalizer_fn is not None:
        outputs = normalizer_fn(outputs, **(normalizer_params or {}))
    if activation_fn is not None:
        outputs = activation_fn(outputs)
    return collect_named_outputs(outputs_collections, alias, outputs)


def _apply_layer(layer_class, scope, default_name, inputs, reuse, rename, variables_collections, kinds,
                 finish, **layer_kwargs):
    """Builds layer_class in slim's variable scope (its variables renamed by `rename`, each added to
    the variables_collections of its kind: {layer attribute: kind}), applies it, and then, in the
    same scope (where TF puts a normalizer's variables: "Conv/BatchNorm/beta"), `finish` =
    (normalizer_fn, normalizer_params, activation_fn, outputs_collections)."""
    with variable_scope(scope, default_name, [inputs], reuse=reuse,
                        custom_getter=_model_variable_getter(rename)) as sc:
        inputs = convert_to_tensor(inputs)
        layer = layer_class(name=sc.name, dtype=inputs.dtype.base_dtype, _scope=sc, _reuse=reuse, **layer_kwargs)
        outputs = layer.apply(inputs)
        for attribute, kind in kinds.items():
            var = getattr(layer, attribute, None)
            if var is not None:
                _add_to_collections(var, variables_collections, kind)
        return _finish(outputs, sc.name, *finish)


# -- layers -----------------------------------------------------------------------------------------
@tf_export("contrib.layers.convolution", "contrib.slim.convolution")
@add_arg_scope
def convolution(inputs, num_outputs, kernel_size, stride=1, padding="SAME", data_format=None, rate=1,
                activation_fn=nn_relu, normalizer_fn=None, normalizer_params=None,
                weights_initializer=xavier_initializer(), weights_regularizer=None,
                biases_initializer=zeros_initializer(), biases_regularizer=None, reuse=None,
                variables_collections=None, outputs_collections=None, trainable=True, scope=None, conv_dims=None):
    """tf.contrib.layers.convolution: an N-D convolution (N from the rank of inputs, or conv_dims)
    with variables "<scope>/weights" and "<scope>/biases" (scope "Conv", "Conv_1", ...; no biases
    with a normalizer_fn), then normalizer_fn and activation_fn (relu)."""
    allowed = (None, "NWC", "NCW", "NHWC", "NCHW", "NDHWC", "NCDHW")
    channels = _channels(data_format, allowed)
    inputs = convert_to_tensor(inputs)
    rank = inputs.shape.ndims
    if conv_dims is not None and rank is not None and rank != conv_dims + 2:
        raise ValueError(f"Convolution expects input with rank {conv_dims + 2}, got {rank}")
    dims = conv_dims if conv_dims is not None else (rank - 2 if rank is not None else None)
    if dims not in (1, 2, 3):
        raise ValueError(f"Convolution not supported for input with rank {rank}")
    layer_class = {1: Conv1D, 2: Conv2D, 3: Conv3D}[dims]
    return _apply_layer(
        layer_class, scope, "Conv", inputs, reuse, _WEIGHTS_AND_BIASES, variables_collections,
        _WEIGHTS_AND_BIASES,
        (normalizer_fn, normalizer_params, activation_fn, outputs_collections),
        filters=num_outputs, kernel_size=kernel_size, strides=stride,
        padding=padding, data_format=channels, dilation_rate=rate, activation=None,
        use_bias=not normalizer_fn and biases_initializer is not None, kernel_initializer=weights_initializer,
        bias_initializer=biases_initializer, kernel_regularizer=weights_regularizer,
        bias_regularizer=biases_regularizer, trainable=trainable)


@tf_export("contrib.layers.conv2d", "contrib.layers.convolution2d", "contrib.slim.conv2d",
           "contrib.slim.convolution2d")
@add_arg_scope
def convolution2d(inputs, num_outputs, kernel_size, stride=1, padding="SAME", data_format=None, rate=1,
                  activation_fn=nn_relu, normalizer_fn=None, normalizer_params=None,
                  weights_initializer=xavier_initializer(), weights_regularizer=None,
                  biases_initializer=zeros_initializer(), biases_regularizer=None, reuse=None,
                  variables_collections=None, outputs_collections=None, trainable=True, scope=None):
    """tf.contrib.layers.conv2d (slim.conv2d): `convolution` of a 4-D input; weights
    [kernel_h, kernel_w, in_channels, num_outputs], padding 'SAME' by default."""
    return convolution(inputs, num_outputs, kernel_size, stride, padding, data_format, rate, activation_fn,
                       normalizer_fn, normalizer_params, weights_initializer, weights_regularizer,
                       biases_initializer, biases_regularizer, reuse, variables_collections, outputs_collections,
                       trainable, scope, conv_dims=2)


conv2d = convolution2d


@tf_export("contrib.layers.conv1d", "contrib.layers.convolution1d", "contrib.slim.conv1d",
           "contrib.slim.convolution1d")
@add_arg_scope
def convolution1d(inputs, num_outputs, kernel_size, stride=1, padding="SAME", data_format=None, rate=1,
                  activation_fn=nn_relu, normalizer_fn=None, normalizer_params=None,
                  weights_initializer=xavier_initializer(), weights_regularizer=None,
                  biases_initializer=zeros_initializer(), biases_regularizer=None, reuse=None,
                  variables_collections=None, outputs_collections=None, trainable=True, scope=None):
    """tf.contrib.layers.conv1d: `convolution` of a 3-D input [batch, width, channels]."""
    return convolution(inputs, num_outputs, kernel_size, stride, padding, data_format, rate, activation_fn,
                       normalizer_fn, normalizer_params, weights_initializer, weights_regularizer,
                       biases_initializer, biases_regularizer, reuse, variables_collections, outputs_collections,
                       trainable, scope, conv_dims=1)


@tf_export("contrib.layers.conv3d", "contrib.layers.convolution3d", "contrib.slim.conv3d",
           "contrib.slim.convolution3d")
@add_arg_scope
def convolution3d(inputs, num_outputs, kernel_size, stride=1, padding="SAME", data_format=None, rate=1,
                  activation_fn=nn_relu, normalizer_fn=None, normalizer_params=None,
                  weights_initializer=xavier_initializer(), weights_regularizer=None,
                  biases_initializer=zeros_initializer(), biases_regularizer=None, reuse=None,
                  variables_collections=None, outputs_collections=None, trainable=True, scope=None):
    """tf.contrib.layers.conv3d: `convolution` of a 5-D input [batch, depth, height, width, channels]."""
    return convolution(inputs, num_outputs, kernel_size, stride, padding, data_format, rate, activation_fn,
                       normalizer_fn, normalizer_params, weights_initializer, weights_regularizer,
                       biases_initializer, biases_regularizer, reuse, variables_collections, outputs_collections,
                       trainable, scope, conv_dims=3)


@tf_export("contrib.layers.conv2d_transpose", "contrib.layers.convolution2d_transpose",
           "contrib.slim.conv2d_transpose", "contrib.slim.convolution2d_transpose")
@add_arg_scope
def convolution2d_transpose(inputs, num_outputs, kernel_size, stride=1, padding="SAME", data_format="NHWC",
                            activation_fn=nn_relu, normalizer_fn=None, normalizer_params=None,
                            weights_initializer=xavier_initializer(), weights_regularizer=None,
                            biases_initializer=zeros_initializer(), biases_regularizer=None, reuse=None,
                            variables_collections=None, outputs_collections=None, trainable=True, scope=None):
    """tf.contrib.layers.conv2d_transpose: the transposed convolution, weights
    [kernel_h, kernel_w, num_outputs, in_channels] (scope "Conv2d_transpose")."""
    channels = _channels(data_format, ("NCHW", "NHWC"))
    return _apply_layer(
        Conv2DTranspose, scope, "Conv2d_transpose", inputs, reuse, _WEIGHTS_AND_BIASES, variables_collections,
        _WEIGHTS_AND_BIASES,
        (normalizer_fn, normalizer_params, activation_fn, outputs_collections),
        filters=num_outputs, kernel_size=kernel_size, strides=stride,
        padding=padding, data_format=channels, activation=None,
        use_bias=not normalizer_fn and biases_initializer is not None, kernel_initializer=weights_initializer,
        bias_initializer=biases_initializer, kernel_regularizer=weights_regularizer,
        bias_regularizer=biases_regularizer, trainable=trainable)


@tf_export("contrib.layers.separable_conv2d", "contrib.layers.separable_convolution2d",
           "contrib.slim.separable_conv2d", "contrib.slim.separable_convolution2d")
@add_arg_scope
def separable_convolution2d(inputs, num_outputs, kernel_size, depth_multiplier=1, stride=1, padding="SAME",
                            data_format="NHWC", rate=1, activation_fn=nn_relu, normalizer_fn=None,
                            normalizer_params=None, weights_initializer=xavier_initializer(),
                            pointwise_initializer=None, weights_regularizer=None,
                            biases_initializer=zeros_initializer(), biases_regularizer=None, reuse=None,
                            variables_collections=None, outputs_collections=None, trainable=True, scope=None):
    """tf.contrib.layers.separable_conv2d: a depthwise convolution ("depthwise_weights"
    [kh, kw, in_channels, depth_multiplier]) then, unless num_outputs is None, a pointwise one
    ("pointwise_weights" [1, 1, in_channels * depth_multiplier, num_outputs]); scope
    "SeparableConv2d"."""
    channels = _channels(data_format, ("NCHW", "NHWC"))
    use_bias = not normalizer_fn and biases_initializer is not None
    if num_outputs is not None:
        return _apply_layer(
            SeparableConv2D, scope, "SeparableConv2d", inputs, reuse,
            {"bias": "biases", "depthwise_kernel": "depthwise_weights", "pointwise_kernel": "pointwise_weights"},
            variables_collections, {"depthwise_kernel": "weights", "pointwise_kernel": "weights",
                                    "bias": "biases"},
            (normalizer_fn, normalizer_params, activation_fn, outputs_collections),
            filters=num_outputs, kernel_size=kernel_size, strides=stride, padding=padding, data_format=channels,
            dilation_rate=rate, depth_multiplier=depth_multiplier, activation=None, use_bias=use_bias,
            depthwise_initializer=weights_initializer, pointwise_initializer=pointwise_initializer or
            weights_initializer, bias_initializer=biases_initializer, depthwise_regularizer=weights_regularizer,
            pointwise_regularizer=weights_regularizer, bias_regularizer=biases_regularizer, trainable=trainable)
    with variable_scope(scope, "SeparableConv2d", [inputs], reuse=reuse) as sc:
        inputs = convert_to_tensor(inputs)
        fmt = "NCHW" if channels == "channels_first" else "NHWC"
        in_channels = inputs.shape[1 if fmt == "NCHW" else -1].value
        dtype = inputs.dtype.base_dtype
        sh, sw = two_element_tuple(stride)
        weights = model_variable("depthwise_weights", list(two_element_tuple(kernel_size)) +
                                 [in_channels, depth_multiplier], dtype=dtype, initializer=weights_initializer,
                                 regularizer=weights_regularizer, trainable=trainable)
        _add_to_collections(weights, variables_collections, "weights")
        strides = [1, 1, sh, sw] if fmt == "NCHW" else [1, sh, sw, 1]
        outputs = depthwise_conv2d(inputs, weights, strides, padding, rate=two_element_tuple(rate), data_format=fmt)
        if use_bias:
            biases = model_variable("biases", [in_channels * depth_multiplier], dtype=dtype,
                                    initializer=biases_initializer, regularizer=biases_regularizer,
                                    trainable=trainable)
            _add_to_collections(biases, variables_collections, "biases")
            outputs = nn_bias_add(outputs, biases, data_format=fmt)
        return _finish(outputs, sc.name, normalizer_fn, normalizer_params, activation_fn, outputs_collections)


@tf_export("contrib.layers.fully_connected", "contrib.slim.fully_connected")
@add_arg_scope
def fully_connected(inputs, num_outputs, activation_fn=nn_relu, normalizer_fn=None, normalizer_params=None,
                    weights_initializer=xavier_initializer(), weights_regularizer=None,
                    biases_initializer=zeros_initializer(), biases_regularizer=None, reuse=None,
                    variables_collections=None, outputs_collections=None, trainable=True, scope=None):
    """tf.contrib.layers.fully_connected: activation_fn(inputs @ weights + biases) with variables
    "<scope>/weights" and "<scope>/biases" (scope "fully_connected", "fully_connected_1", ...), also
    in MODEL_VARIABLES; with a normalizer_fn there are no biases."""
    if not isinstance(num_outputs, int):
        raise ValueError(f"num_outputs type should be one of (int,), got {type(num_outputs)}.")
    return _apply_layer(
        Dense, scope, "fully_connected", inputs, reuse, _WEIGHTS_AND_BIASES, variables_collections,
        _WEIGHTS_AND_BIASES,
        (normalizer_fn, normalizer_params, activation_fn, outputs_collections), units=num_outputs, activation=None,
        use_bias=not normalizer_fn and biases_initializer is not None, kernel_initializer=weights_initializer,
        bias_initializer=biases_initializer, kernel_regularizer=weights_regularizer,
        bias_regularizer=biases_regularizer, trainable=trainable)


@tf_export("contrib.layers.batch_norm", "contrib.slim.batch_norm")
@add_arg_scope
def batch_norm(inputs, decay=0.999, center=True, scale=False, epsilon=0.001, activation_fn=None,
               param_initializers=None, param_regularizers=None, updates_collections=GraphKeys.UPDATE_OPS,
               is_training=True, reuse=None, variables_collections=None, outputs_collections=None, trainable=True,
               batch_weights=None, fused=None, data_format="NHWC", zero_debias_moving_mean=False, scope=None,
               renorm=False, renorm_clipping=None, renorm_decay=0.99, adjustment=None):
    """tf.contrib.layers.batch_norm (slim.batch_norm): normalizes with the batch's statistics when
    is_training (a bool or a boolean tensor), else with "<scope>/moving_mean" and
    "<scope>/moving_variance" (scope "BatchNorm"; "beta" with center, "gamma" only with scale).
    The moving averages (decay 0.999) are updated by ops added to updates_collections (run them
    with the train op: slim.learning.create_train_op does) or, with updates_collections=None, in
    place before the output is returned. 2-D and 4-D inputs use the fused kernel (fused=None), so
    the moving variance takes the Bessel-corrected batch variance, as TF's."""
    if batch_weights is not None or renorm or adjustment is not None or zero_debias_moving_mean:
        raise ValueError("batch_norm: batch_weights, renorm, adjustment and zero_debias_moving_mean are not "
                         "supported")
    if data_format not in ("NCHW", "NHWC"):
        raise ValueError("data_format has to be either NCHW or NHWC.")
    inputs = convert_to_tensor(inputs)
    rank = inputs.shape.ndims
    if rank is None:
        raise ValueError(f"Inputs {inputs.name} has undefined rank.")
    fused = True if fused is None else fused
    first = data_format == "NCHW"
    original = inputs
    if fused and rank == 2:   # TF normalizes a 2-D batch with the fused kernel, as a [N, 1, 1, C] image
        channels = inputs.shape[-1].value
        inputs = reshape(inputs, [-1, channels, 1, 1] if first else [-1, 1, 1, channels])
    params = param_initializers or {}
    regularizers = param_regularizers or {}
    with variable_scope(scope, "BatchNorm", [inputs], reuse=reuse, custom_getter=_model_variable_getter()) as sc:
        layer = BatchNormalization(
            axis=1 if first else -1, momentum=decay, epsilon=epsilon, center=center, scale=scale,
            beta_initializer=params.get("beta"), gamma_initializer=params.get("gamma"),
            moving_mean_initializer=params.get("moving_mean"),
            moving_variance_initializer=params.get("moving_variance"), beta_regularizer=regularizers.get("beta"),
            gamma_regularizer=regularizers.get("gamma"), trainable=trainable, name=sc.name, _scope=sc,
            _reuse=reuse, fused=fused and inputs.shape.ndims == 4)
        outputs = layer.apply(inputs, training=is_training)
        for kind in ("moving_mean", "moving_variance", "beta", "gamma"):
            if getattr(layer, kind) is not None:
                _add_to_collections(getattr(layer, kind), variables_collections, kind)
        if layer.updates and updates_collections is not GraphKeys.UPDATE_OPS:
            ref = get_collection_ref(GraphKeys.UPDATE_OPS)
            ref[:] = [op for op in ref if all(op is not u for u in layer.updates)]
            if updates_collections is None:   # the updates run before the output is read
                with control_dependencies(layer.updates):
                    outputs = identity(outputs)
            else:
                for name in updates_collections if isinstance(updates_collections, (list, tuple)) \
                        else [updates_collections]:
                    for update in layer.updates:
                        add_to_collection(name, update)
        if outputs.shape.ndims != rank:
            outputs = reshape(outputs, array_shape(original))
            outputs.set_shape(original.shape)
        if activation_fn is not None:
            outputs = activation_fn(outputs)
        return collect_named_outputs(outputs_collections, sc.name, outputs)


def _pool(pool_fn, default_name, inputs, kernel_size, stride, padding, data_format, outputs_collections, scope):
    if data_format not in ("NCHW", "NHWC"):
        raise ValueError("data_format has to be either NCHW or NHWC.")
    with name_scope(scope, default_name, [inputs]) as sc:
        kh, kw = two_element_tuple(kernel_size)
        sh, sw = two_element_tuple(stride)
        first = data_format == "NCHW"
        outputs = pool_fn(convert_to_tensor(inputs), [1, 1, kh, kw] if first else [1, kh, kw, 1],
                          [1, 1, sh, sw] if first else [1, sh, sw, 1], padding.upper(), data_format=data_format)
        return collect_named_outputs(outputs_collections, sc, outputs)


@tf_export("contrib.layers.max_pool2d", "contrib.slim.max_pool2d")
@add_arg_scope
def max_pool2d(inputs, kernel_size, stride=2, padding="VALID", data_format="NHWC", outputs_collections=None,
               scope=None):
    """tf.contrib.layers.max_pool2d: the maximum over each kernel_size window, stride 2 and padding
    'VALID' by default (name scope "MaxPool2D")."""
    return _pool(max_pool, "MaxPool2D", inputs, kernel_size, stride, padding, data_format, outputs_collections,
                 scope)


@tf_export("contrib.layers.avg_pool2d", "contrib.slim.avg_pool2d")
@add_arg_scope
def avg_pool2d(inputs, kernel_size, stride=2, padding="VALID", data_format="NHWC", outputs_collections=None,
               scope=None):
    """tf.contrib.layers.avg_pool2d: the mean over each kernel_size window, stride 2 and padding
    'VALID' by default (name scope "AvgPool2D")."""
    return _pool(avg_pool, "AvgPool2D", inputs, kernel_size, stride, padding, data_format, outputs_collections,
                 scope)


@tf_export("contrib.layers.dropout", "contrib.slim.dropout")
@add_arg_scope
def dropout(inputs, keep_prob=0.5, noise_shape=None, is_training=True, outputs_collections=None, scope=None,
            seed=None):
    """tf.contrib.layers.dropout: keeps each element with probability keep_prob (scaled by
    1 / keep_prob) when is_training (a bool or a boolean tensor), else the identity."""
    with variable_scope(scope, "Dropout", [inputs]) as sc:
        layer = Dropout(rate=1 - keep_prob, noise_shape=noise_shape, seed=seed, name=sc.name, _scope=sc)
        outputs = layer.apply(convert_to_tensor(inputs), training=is_training)
        return collect_named_outputs(outputs_collections, sc.name, outputs)


@tf_export("contrib.layers.flatten", "contrib.slim.flatten")
@add_arg_scope
def flatten(inputs, outputs_collections=None, scope=None):
    """tf.contrib.layers.flatten: inputs reshaped to [batch, k] (name scope "Flatten")."""
    with name_scope(scope, "Flatten", [inputs]) as sc:
        return collect_named_outputs(outputs_collections, sc, layers_flatten(convert_to_tensor(inputs)))


@tf_export("contrib.layers.one_hot_encoding", "contrib.slim.one_hot_encoding")
@add_arg_scope
def one_hot_encoding(labels, num_classes, on_value=1.0, off_value=0.0, outputs_collections=None, scope=None):
    """tf.contrib.layers.one_hot_encoding: float32 one-hot rows of num_classes for labels."""
    with name_scope(scope, "OneHotEncoding", [labels, num_classes]) as sc:
        labels = convert_to_tensor(labels)
        if labels.dtype == dtypes.int32:
            labels = to_int64(labels)
        return collect_named_outputs(outputs_collections, sc,
                                     one_hot(labels, num_classes, on_value=on_value, off_value=off_value))


def _layer_name(layer, fallback: str) -> str:
    if hasattr(layer, "__name__"):
        return layer.__name__
    return getattr(getattr(layer, "func", None), "__name__", fallback)   # a functools.partial


@tf_export("contrib.layers.repeat", "contrib.slim.repeat")
def repeat(inputs, repetitions, layer, *args, **kwargs):
    """tf.contrib.layers.repeat(inputs, repetitions, layer, *args, scope=None, **kwargs): layer
    applied repetitions times, the i-th in scope "<scope>/<scope>_<i>" (scope: the layer
    function's name by default, e.g. conv1/conv1_1/weights)."""
    scope = kwargs.pop("scope", None)
    with variable_scope(scope, "Repeat", [inputs]):
        outputs = convert_to_tensor(inputs)
        scope = scope or _layer_name(layer, "repeat")
        for i in range(repetitions):
            kwargs["scope"] = f"{scope}_{i + 1}"
            outputs = layer(outputs, *args, **kwargs)
        return outputs


@tf_export("contrib.layers.stack", "contrib.slim.stack")
def stack(inputs, layer, stack_args, **kwargs):
    """tf.contrib.layers.stack(inputs, layer, stack_args, scope=None, **kwargs): layer applied
    once per entry of stack_args (its positional arguments), the i-th in scope
    "<scope>/<scope>_<i>" (e.g. fc/fc_1, fc/fc_2)."""
    scope = kwargs.pop("scope", None)
    if not isinstance(stack_args, (list, tuple)):
        raise ValueError("stack_args need to be a list or tuple")
    with variable_scope(scope, "Stack", [inputs]):
        outputs = convert_to_tensor(inputs)
        scope = scope or _layer_name(layer, "stack")
        for i, layer_args in enumerate(stack_args):
            kwargs["scope"] = f"{scope}_{i + 1}"
            if not isinstance(layer_args, (list, tuple)):
                layer_args = [layer_args]
            outputs = layer(outputs, *layer_args, **kwargs)
        return outputs


@tf_export("contrib.layers.bias_add", "contrib.slim.bias_add")
@add_arg_scope
def bias_add(inputs, activation_fn=None, initializer=zeros_initializer(), regularizer=None, reuse=None,
             variables_collections=None, outputs_collections=None, trainable=True, data_format="NHWC", scope=None):
    """tf.contrib.layers.bias_add: inputs plus a model variable "<scope>/biases" (scope "BiasAdd")
    over the channel axis, then activation_fn."""
    if data_format not in ("NCHW", "NHWC"):
        raise ValueError("data_format has to be either NCHW or NHWC.")
    with variable_scope(scope, "BiasAdd", [inputs], reuse=reuse) as sc:
        inputs = convert_to_tensor(inputs)
        rank = inputs.shape.ndims
        if rank is None:
            raise ValueError("Dims of shape must be known but is None")
        if rank == 1:
            raise ValueError("Rank of shape must be at least 2 not: 1")
        axis = 1 if data_format == "NCHW" and rank > 2 else -1
        channels = inputs.shape[axis].value
        if channels is None:
            raise ValueError("`C` dimension must be known but is None")
        biases = model_variable("biases", [channels], dtype=inputs.dtype.base_dtype, initializer=initializer,
                                regularizer=regularizer, trainable=trainable)
        _add_to_collections(biases, variables_collections, "biases")
        outputs = nn_bias_add(inputs, biases, data_format=data_format if rank > 2 else None)
        return _finish(outputs, sc.name, None, None, activation_fn, outputs_collections)


@tf_export("contrib.layers.layer_norm", "contrib.slim.layer_norm")
@add_arg_scope
def layer_norm(inputs, center=True, scale=True, activation_fn=None, reuse=None, variables_collections=None,
               outputs_collections=None, trainable=True, begin_norm_axis=1, begin_params_axis=-1, scope=None):
    """tf.contrib.layers.layer_norm: each example normalized over axes begin_norm_axis.. (mean 0,
    variance 1, epsilon 1e-12), then scaled by "<scope>/gamma" and shifted by "<scope>/beta" of
    shape inputs.shape[begin_params_axis:] (scope "LayerNorm")."""
    with variable_scope(scope, "LayerNorm", [inputs], reuse=reuse) as sc:
        inputs = convert_to_tensor(inputs)
        shape = inputs.shape
        rank = shape.ndims
        if rank is None:
            raise ValueError(f"Inputs {inputs.name} has undefined rank.")
        begin_norm_axis = begin_norm_axis % rank if begin_norm_axis < 0 else begin_norm_axis
        begin_params_axis = begin_params_axis % rank if begin_params_axis < 0 else begin_params_axis
        if begin_params_axis >= rank or begin_norm_axis >= rank:
            raise ValueError(f"begin_params_axis ({begin_params_axis}) and begin_norm_axis ({begin_norm_axis}) "
                             f"must be < rank(inputs) ({rank})")
        params_shape = shape[begin_params_axis:]
        if not params_shape.is_fully_defined():
            raise ValueError(f"Inputs {inputs.name}: shape(inputs)[{begin_params_axis}:] is not fully defined: "
                             f"{params_shape}")
        dtype = inputs.dtype.base_dtype
        params = {}
        for name, wanted, init in (("beta", center, zeros_initializer()), ("gamma", scale, ones_initializer())):
            if wanted:
                params[name] = model_variable(name, params_shape.as_list(), dtype=dtype, initializer=init,
                                              trainable=trainable)
                _add_to_collections(params[name], variables_collections, name)
        mean, variance = moments(inputs, list(range(begin_norm_axis, rank)), keep_dims=True)
        outputs = nn_batch_normalization(inputs, mean, variance, offset=params.get("beta"),
                                         scale=params.get("gamma"), variance_epsilon=1e-12)
        outputs.set_shape(shape)
        return _finish(outputs, sc.name, None, None, activation_fn, outputs_collections)


@tf_export("contrib.layers.softmax", "contrib.slim.softmax")
@add_arg_scope
def softmax(logits, scope=None):
    """tf.contrib.layers.softmax: softmax over the last axis of logits of any rank >= 2."""
    with variable_scope(scope, "softmax", [logits]):
        logits = convert_to_tensor(logits)
        num_logits = last_dimension(logits.shape, min_rank=2)
        predictions = reshape(nn_softmax(reshape(logits, [-1, num_logits])), array_shape(logits))
        predictions.set_shape(logits.shape)
        return predictions


@tf_export("contrib.layers.unit_norm", "contrib.slim.unit_norm")
@add_arg_scope
def unit_norm(inputs, dim, epsilon=1e-7, scope=None):
    """tf.contrib.layers.unit_norm: inputs / sqrt(epsilon + sum(inputs^2 over dim))."""
    with variable_scope(scope, "UnitNorm", [inputs]):
        inputs = convert_to_tensor(inputs)
        rank = inputs.shape.ndims
        if rank is None:
            raise ValueError("The input rank must be known.")
        if dim < 0 or dim >= rank:
            raise ValueError("dim must be positive but smaller than the input rank.")
        return inputs / sqrt(epsilon + reduce_sum(square(inputs), dim, keepdims=True))


# fully_connected with a fixed activation, as TF names them
relu = functools.partial(fully_connected, activation_fn=nn_relu)
relu6 = functools.partial(fully_connected, activation_fn=nn_relu6)
linear = functools.partial(fully_connected, activation_fn=None)
tf_export("contrib.layers.relu", "contrib.slim.relu")(relu)
tf_export("contrib.layers.relu6", "contrib.slim.relu6")(relu6)
tf_export("contrib.layers.linear", "contrib.slim.linear")(linear)
