"""tf.keras.datasets.boston_housing: the Boston housing prices regression data, from Keras's
boston_housing.npz."""
from __future__ import annotations

import numpy as np

from tensorweave.framework.tf_export import tf_export
from tensorweave.keras.datasets.cache_files import ORIGIN_FOLDER, load_npz, shuffled
from tensorweave.keras.utils.data_utils import get_file

ORIGIN = ORIGIN_FOLDER + "boston_housing.npz"
FILE_HASH = "f553886a1f8d56431e820c5b82552d9d95cfcb96d1e678153f8839538947dff5"


@tf_export("keras.datasets.boston_housing.load_data")
def load_data(path="boston_housing.npz", test_split=0.2, seed=113):
    """(x_train, y_train), (x_test, y_test): the 506 samples (13 float64 features, price) shuffled
    with `seed`, the last `test_split` of them the test set."""
    if not 0 <= test_split < 1:
        raise ValueError(f"test_split must be in [0, 1), got {test_split}")
    path = get_file(path, origin=ORIGIN, file_hash=FILE_HASH)
    x, y = shuffled(np.random.RandomState(seed), *load_npz(path, ["x", "y"]))
    split = int(len(x) * (1 - test_split))
    return (x[:split], y[:split]), (x[split:], y[split:])
