"""Weight regularizers as TF1 programs use them (tf.contrib.layers.l2_regularizer and friends,
tf.keras.regularizers.l1/l2), without tf.contrib."""
from __future__ import annotations

import numbers

from tensorweave.framework.api import GraphKeys, add_to_collection, get_collection, name_scope
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.core import constant
from tensorweave.ops.math.binary import add_n, multiply
from tensorweave.ops.math.reduction import reduce_sum
from tensorweave.ops.math.unary import abs, square
from tensorweave.ops.nn.losses import l2_loss


def _check_scale(scale) -> bool:
    if isinstance(scale, numbers.Integral) and not isinstance(scale, bool):
        raise ValueError(f"scale cannot be an integer: {scale}")
    if isinstance(scale, numbers.Real):
        if scale < 0.0:
            raise ValueError(f"Setting a scale less than 0 on a regularizer: {scale}")
        if scale == 0.0:
            return False
    return True


def _scaled_regularizer(scale, scope, default_name: str, penalty):
    """fn(weights) = scale * penalty(weights) in name scope `scope` (default `default_name`); a
    zero scale gives fn returning None."""
    if not _check_scale(scale):
        return lambda _: None

    def regularizer(weights, name=None):
        with name_scope(scope, default_name, [weights]) as name:
            s = convert_to_tensor(scale, dtype=weights.dtype.base_dtype, name="scale")
            return multiply(s, penalty(weights), name=name)
    return regularizer


@tf_export("contrib.layers.l1_regularizer", "contrib.slim.l1_regularizer", "regularizers.l1_regularizer")
def l1_regularizer(scale, scope=None):
    """Returns fn(weights) = scale * sum(|weights|), named "l1_regularizer"."""
    return _scaled_regularizer(scale, scope, "l1_regularizer", lambda w: reduce_sum(abs(w)))


@tf_export("contrib.layers.l2_regularizer", "contrib.slim.l2_regularizer", "regularizers.l2_regularizer")
def l2_regularizer(scale, scope=None):
    """Returns fn(weights) = scale * tf.nn.l2_loss(weights) (= scale * sum(w^2) / 2)."""
    return _scaled_regularizer(scale, scope, "l2_regularizer", l2_loss)


@tf_export("contrib.layers.l1_l2_regularizer", "contrib.slim.l1_l2_regularizer", "regularizers.l1_l2_regularizer")
def l1_l2_regularizer(scale_l1=1.0, scale_l2=1.0, scope=None):
    """Returns fn(weights) = l1(weights) + l2(weights)."""
    return sum_regularizer([l1_regularizer(scale_l1), l2_regularizer(scale_l2)], scope=scope)


@tf_export("contrib.layers.sum_regularizer", "contrib.slim.sum_regularizer", "regularizers.sum_regularizer")
def sum_regularizer(regularizer_list, scope=None):
    """Returns fn(weights) summing the non-None results of each regularizer."""
    def total(weights):
        with name_scope(scope, "sum_regularizer", [weights]) as name:
            parts = [p for p in (r(weights) for r in regularizer_list) if p is not None]
            return add_n(parts, name=name) if parts else None
    return total


@tf_export("contrib.layers.apply_regularization", "contrib.slim.apply_regularization",
           "regularizers.apply_regularization")
def apply_regularization(regularizer, weights_list=None):
    """Sums regularizer(w) over weights_list (default: the WEIGHTS collection) and adds the
    total to REGULARIZATION_LOSSES."""
    if not weights_list:
        weights_list = get_collection(GraphKeys.WEIGHTS)
    if not weights_list:
        raise ValueError("No weights to regularize.")
    with name_scope("get_regularization_penalty", values=weights_list) as scope:
        penalties = [p for p in (regularizer(w) for w in weights_list) if p is not None]
        total = add_n(penalties, name=scope) if penalties else constant(0.0)
        add_to_collection(GraphKeys.REGULARIZATION_LOSSES, total)
        return total


@tf_export("regularizers.keras_l1")
def keras_l1(l=0.01):  # noqa: E741 (Keras' argument name)
    """tf.keras.regularizers.l1: l * sum(|x|)."""
    return lambda x: multiply(constant(l, x.dtype.base_dtype), reduce_sum(abs(x)))


@tf_export("regularizers.keras_l2")
def keras_l2(l=0.01):  # noqa: E741
    """tf.keras.regularizers.l2: l * sum(x^2) (no 1/2, unlike l2_regularizer)."""
    return lambda x: multiply(constant(l, x.dtype.base_dtype), reduce_sum(square(x)))
