"""tf.keras.utils.to_categorical and normalize: numpy helpers for labels and features."""
from __future__ import annotations

import numpy as np

from tensorweave.framework.tf_export import tf_export


@tf_export("keras.utils.to_categorical")
def to_categorical(y, num_classes=None, dtype="float32"):
    """Class vector `y` (integers 0..num_classes-1) as a one-hot matrix of `dtype`; a trailing axis
    of size 1 is dropped first, so labels of shape (n, 1) give (n, num_classes)."""
    y = np.array(y, dtype="int")
    input_shape = y.shape
    if input_shape and input_shape[-1] == 1 and len(input_shape) > 1:
        input_shape = tuple(input_shape[:-1])
    y = y.ravel()
    if not num_classes:
        num_classes = np.max(y) + 1
    if y.size and (y.min() < 0 or y.max() >= num_classes):
        raise ValueError(f"to_categorical: labels must lie in [0, {num_classes}); got min {y.min()}, max {y.max()}")
    categorical = np.zeros((y.shape[0], num_classes), dtype=dtype)
    categorical[np.arange(y.shape[0]), y] = 1
    return np.reshape(categorical, input_shape + (num_classes,))


@tf_export("keras.utils.normalize")
def normalize(x, axis=-1, order=2):
    """`x` divided by its L`order` norm along `axis` (a zero norm divides by 1)."""
    norm = np.atleast_1d(np.linalg.norm(x, order, axis))
    norm[norm == 0] = 1
    return x / np.expand_dims(norm, axis)
