"""tf.keras.datasets.mnist: MNIST's handwritten digits, from Keras's mnist.npz."""
from __future__ import annotations

from tensorweave.framework.tf_export import tf_export
from tensorweave.keras.datasets.cache_files import ORIGIN_FOLDER, load_npz
from tensorweave.keras.utils.data_utils import get_file

ORIGIN = ORIGIN_FOLDER + "mnist.npz"
FILE_HASH = "731c5ac602752760c8e48fbffcf8c3b850d9dc2a2aedcf2cc48468fc17b673d1"


@tf_export("keras.datasets.mnist.load_data")
def load_data(path="mnist.npz"):
    """(x_train, y_train), (x_test, y_test): uint8 images (60000, 28, 28) and (10000, 28, 28), uint8
    labels 0-9. `path` is the file name in ~/.keras/datasets."""
    path = get_file(path, origin=ORIGIN, file_hash=FILE_HASH)
    x_train, y_train, x_test, y_test = load_npz(path, ["x_train", "y_train", "x_test", "y_test"])
    return (x_train, y_train), (x_test, y_test)
