"""tf.keras.datasets.cifar10: CIFAR-10's small images, from the python batches of
cifar-10-python.tar.gz (extracted to ~/.keras/datasets/cifar-10-batches-py)."""
from __future__ import annotations

import os

import numpy as np

from tensorweave.framework.tf_export import tf_export
from tensorweave.keras.datasets.cache_files import load_cifar_batch
from tensorweave.keras.utils.data_utils import get_file

ORIGIN = "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz"
FILE_HASH = "6d958be074577803d12ecdefd02955f39262c83c16fe9348329d7fe0b5c001ce"


def channels_last(x_train, y_train, x_test, y_test):
    """Keras's layout of the CIFAR arrays: labels (n, 1), images (n, 32, 32, 3) (the default
    image_data_format, channels_last)."""
    return ((x_train.transpose(0, 2, 3, 1), np.reshape(y_train, (len(y_train), 1))),
            (x_test.transpose(0, 2, 3, 1), np.reshape(y_test, (len(y_test), 1))))


@tf_export("keras.datasets.cifar10.load_data")
def load_data():
    """(x_train, y_train), (x_test, y_test): uint8 images (50000, 32, 32, 3) and (10000, 32, 32, 3),
    uint8 labels (n, 1) 0-9."""
    path = get_file("cifar-10-batches-py", origin=ORIGIN, untar=True, file_hash=FILE_HASH)
    batches = [load_cifar_batch(os.path.join(path, f"data_batch_{i}")) for i in range(1, 6)]
    x_train = np.concatenate([np.asarray(x, dtype="uint8") for x, _ in batches])
    y_train = np.concatenate([np.asarray(y, dtype="uint8") for _, y in batches])
    x_test, y_test = load_cifar_batch(os.path.join(path, "test_batch"))
    return channels_last(x_train, y_train, np.asarray(x_test, dtype="uint8"), np.asarray(y_test, dtype="uint8"))
