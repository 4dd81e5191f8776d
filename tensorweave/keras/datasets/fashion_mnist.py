"""tf.keras.datasets.fashion_mnist: Zalando's Fashion-MNIST, from its four gzipped IDX files in
~/.keras/datasets/fashion-mnist."""
from __future__ import annotations

import gzip
import os

import numpy as np

from tensorweave.framework.tf_export import tf_export
from tensorweave.keras.datasets.cache_files import ORIGIN_FOLDER
from tensorweave.keras.utils.data_utils import get_file

FILES = ["train-labels-idx1-ubyte.gz", "train-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz",
         "t10k-images-idx3-ubyte.gz"]
ORIGIN = ORIGIN_FOLDER


def _read_idx(path: str, offset: int) -> np.ndarray:
    try:
        with gzip.open(path, "rb") as f:
            return np.frombuffer(f.read(), np.uint8, offset=offset)
    except (OSError, EOFError, ValueError) as e:
        raise ValueError(f"{path} is not a gzipped IDX file ({e}); delete it and fetch it again") from e


@tf_export("keras.datasets.fashion_mnist.load_data")
def load_data():
    """(x_train, y_train), (x_test, y_test): uint8 images (60000, 28, 28) and (10000, 28, 28), uint8
    labels 0-9."""
    paths = [get_file(f, origin=ORIGIN + f, cache_subdir=os.path.join("datasets", "fashion-mnist")) for f in FILES]
    out = []
    for labels_path, images_path in (paths[:2], paths[2:]):
        labels = _read_idx(labels_path, 8)
        images = _read_idx(images_path, 16)
        if images.size != len(labels) * 28 * 28:
            raise ValueError(f"{images_path} holds {images.size} pixels, not 28x28 for each of the {len(labels)} "
                             f"labels of {labels_path}")
        out.append((images.reshape(len(labels), 28, 28), labels))
    return tuple(out)
