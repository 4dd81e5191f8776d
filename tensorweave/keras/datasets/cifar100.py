"""tf.keras.datasets.cifar100: CIFAR-100's small images, from the python batches of
cifar-100-python.tar.gz (extracted to ~/.keras/datasets/cifar-100-python)."""
from __future__ import annotations

import os

import numpy as np

from tensorweave.framework.tf_export import tf_export
from tensorweave.keras.datasets.cache_files import load_cifar_batch
from tensorweave.keras.datasets.cifar10 import channels_last
from tensorweave.keras.utils.data_utils import get_file

ORIGIN = "https://www.cs.toronto.edu/~kriz/cifar-100-python.tar.gz"
FILE_HASH = "85cd44d02ba6437773c5bbd22e183051d648de2e7d6b014e1ef29b855ba677a7"


@tf_export("keras.datasets.cifar100.load_data")
def load_data(label_mode="fine"):
    """(x_train, y_train), (x_test, y_test): uint8 images (50000, 32, 32, 3) and (10000, 32, 32, 3),
    int64 labels (n, 1): the 100 "fine" classes or the 20 "coarse" superclasses."""
    if label_mode not in ("fine", "coarse"):
        raise ValueError(f'`label_mode` must be one of "fine", "coarse". Received: label_mode={label_mode}.')
    path = get_file("cifar-100-python", origin=ORIGIN, untar=True, file_hash=FILE_HASH)
    x_train, y_train = load_cifar_batch(os.path.join(path, "train"), label_key=label_mode + "_labels")
    x_test, y_test = load_cifar_batch(os.path.join(path, "test"), label_key=label_mode + "_labels")
    return channels_last(x_train, np.asarray(y_train), x_test, np.asarray(y_test))
