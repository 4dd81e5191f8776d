"""tf.contrib.layers: regularizers, TF1's contrib initializers and fully_connected, and the
tf.layers functions under their contrib names."""
from __future__ import annotations

import math

from tensorweave import _api
from tensorweave.framework import dtypes
from tensorweave.framework.api import GraphKeys, add_to_collection, get_collection
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.math.linalg import matmul, tensordot
from tensorweave.ops.nn.activations import bias_add, relu
from tensorweave.ops.random import random_uniform, truncated_normal
from tensorweave.ops.state.initializers import zeros_initializer
from tensorweave.ops.state.variable_scope import get_variable, variable_scope

__getattr__, __dir__ = _api.lazy_attributes(__name__)   # the names tf.contrib.layers gathers from elsewhere


@tf_export("contrib.layers.variance_scaling_initializer")
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


@tf_export("contrib.layers.xavier_initializer", "contrib.layers.xavier_initializer_conv2d")
def xavier_initializer(uniform=True, seed=None, dtype=dtypes.float32):
    """tf.contrib.layers.xavier_initializer: Glorot's initializer (variance 1 / fan_avg)."""
    return variance_scaling_initializer(factor=1.0, mode="FAN_AVG", uniform=uniform, seed=seed, dtype=dtype)


xavier_initializer_conv2d = xavier_initializer


def _add_to_collections(var, collections, key: str) -> None:
    if isinstance(collections, dict):
        collections = collections.get(key)
    for name in collections or ():
        if var not in get_collection(name):
            add_to_collection(name, var)


@tf_export("contrib.layers.fully_connected")
def fully_connected(inputs, num_outputs, activation_fn="relu", normalizer_fn=None, normalizer_params=None,
                    weights_initializer=None, weights_regularizer=None, biases_initializer="zeros",
                    biases_regularizer=None, reuse=None, variables_collections=None, outputs_collections=None,
                    trainable=True, scope=None):
    """tf.contrib.layers.fully_connected: activation_fn(inputs @ weights + biases) with variables
    "<scope>/weights" and "<scope>/biases" (scope "fully_connected", "fully_connected_1", ...), also
    in MODEL_VARIABLES; activation_fn defaults to relu, weights to xavier_initializer(); with a
    normalizer_fn there are no biases."""
    if activation_fn == "relu":
        activation_fn = relu
    if biases_initializer == "zeros":
        biases_initializer = zeros_initializer()
    if not isinstance(num_outputs, int):
        raise ValueError(f"num_outputs type should be one of (int,), got {type(num_outputs)}.")
    with variable_scope(scope, "fully_connected", [inputs], reuse=reuse):
        inputs = convert_to_tensor(inputs)
        dtype = inputs.dtype.base_dtype
        last = inputs.shape[-1].value if inputs.shape.ndims else None
        if last is None:
            raise ValueError("The last dimension of the inputs to `Dense` should be defined. Found `None`.")
        collections = [GraphKeys.GLOBAL_VARIABLES, GraphKeys.MODEL_VARIABLES]
        weights = get_variable("weights", [last, num_outputs], dtype=dtype,
                               initializer=weights_initializer or xavier_initializer(dtype=dtype),
                               regularizer=weights_regularizer, trainable=trainable, collections=collections)
        _add_to_collections(weights, variables_collections, "weights")
        rank = inputs.shape.ndims
        outputs = (tensordot(inputs, weights, [[rank - 1], [0]]) if rank and rank > 2
                   else matmul(inputs, weights))
        if normalizer_fn is not None:
            outputs = normalizer_fn(outputs, **(normalizer_params or {}))
        elif biases_initializer is not None:
            biases = get_variable("biases", [num_outputs], dtype=dtype, initializer=biases_initializer,
                                  regularizer=biases_regularizer, trainable=trainable, collections=collections)
            _add_to_collections(biases, variables_collections, "biases")
            outputs = bias_add(outputs, biases)
        if activation_fn is not None:
            outputs = activation_fn(outputs)
        if outputs_collections:
            for name in outputs_collections:
                add_to_collection(name, outputs)
        return outputs
