"""CIFAR-10 inputs, as seed 003 and the TensorFlow tutorial read them: binary files through a
filename queue and FixedLengthRecordReader, distorted (random crop, flip, brightness, contrast,
standardisation) and batched with shuffle_batch.

Data: CIFAR-10's binary batches (data_batch_1.bin ... data_batch_5.bin, test_batch.bin) in
--data_dir are used as they are; `--download` fetches them (seed 003's address); with neither,
an embedded stand-in is written once into --data_dir in exactly CIFAR-10's format (1 label byte +
3072 pixel bytes per record, colour planes R, G, B): scikit-learn's bundled 8x8 digits, upscaled,
in random colours and positions, with a train/test split by digit image. The same reader path
reads both.
"""
import os
import sys
import tarfile
import urllib.request

import numpy as np

from backend import tf

IMAGE_SIZE = 24        # the tutorial crops 32x32 images to 24x24
NUM_CLASSES = 10
HEIGHT = WIDTH = 32
DEPTH = 3
RECORD_BYTES = 1 + HEIGHT * WIDTH * DEPTH
TRAIN_FILES = [f"data_batch_{i}.bin" for i in range(1, 6)]
TEST_FILE = "test_batch.bin"
DATA_URL = "https://www.cs.toronto.edu/~kriz/cifar-10-binary.tar.gz"
EMBEDDED_MARKER = "EMBEDDED_DIGITS.txt"


# -- data on disk ---------------------------------------------------------------------------------
def _have_data(data_dir: str) -> bool:
    return all(os.path.exists(os.path.join(data_dir, f)) for f in TRAIN_FILES + [TEST_FILE])


def prepare_data(data_dir: str, download: bool = False, log=print) -> str:
    """Makes sure data_dir holds CIFAR-10-format batches; returns what they are ("cifar10" or
    "embedded digits")."""
    if _have_data(data_dir):
        return "embedded digits" if os.path.exists(os.path.join(data_dir, EMBEDDED_MARKER)) else "cifar10"
    os.makedirs(data_dir, exist_ok=True)
    if download:
        _download(data_dir, log)
        return "cifar10"
    log(f"No CIFAR-10 batches in {data_dir} (pass --download to fetch them): writing the embedded "
        "stand-in (scikit-learn's digits drawn as 32x32 colour images in CIFAR-10's binary format).")
    write_embedded_dataset(data_dir)
    return "embedded digits"


def _download(data_dir: str, log) -> None:
    archive = os.path.join(data_dir, "cifar-10-binary.tar.gz")
    log(f"Downloading {DATA_URL} ...")
    try:
        urllib.request.urlretrieve(DATA_URL, archive)
    except OSError as e:
        raise SystemExit(f"Cannot download CIFAR-10 ({e}). Without network access, leave out --download to "
                         "train on the embedded stand-in, or copy cifar-10-binary.tar.gz's batches into "
                         f"{data_dir}.") from None
    with tarfile.open(archive) as tar:
        for member in tar.getmembers():
            name = os.path.basename(member.name)
            if name in TRAIN_FILES + [TEST_FILE] and member.isfile():
                with tar.extractfile(member) as src, open(os.path.join(data_dir, name), "wb") as dst:
                    dst.write(src.read())


def _resize_bilinear(img: np.ndarray, size: int) -> np.ndarray:
    n = img.shape[0]
    coords = (np.arange(size) + 0.5) * n / size - 0.5
    lo = np.clip(np.floor(coords).astype(int), 0, n - 1)
    hi = np.clip(lo + 1, 0, n - 1)
    w = np.clip(coords - lo, 0.0, 1.0)
    rows = img[lo] * (1 - w)[:, None] + img[hi] * w[:, None]
    return rows[:, lo] * (1 - w)[None, :] + rows[:, hi] * w[None, :]


def _render(glyph: np.ndarray, rng: np.random.RandomState) -> np.ndarray:
    """One 8x8 digit as a 32x32x3 uint8 image: random size, position near the centre, colours."""
    size = rng.randint(13, 19)   # with the jitter below the digit stays inside the central 24x24 crop
    alpha = _resize_bilinear(glyph / 16.0, size)[:, :, None]
    # Random colours, the digit always the brighter (by the sum of R, G and B) and clearly so: with
    # either polarity the tutorial network needed about twice the steps for the same precision.
    a, b = rng.uniform(0, 255, 3), rng.uniform(0, 255, 3)
    while abs(a.sum() - b.sum()) < 180:
        b = rng.uniform(0, 255, 3)
    background, foreground = (a, b) if a.sum() < b.sum() else (b, a)
    canvas = np.broadcast_to(background, (HEIGHT, WIDTH, DEPTH)).copy()
    top = (HEIGHT - size) // 2 + rng.randint(-2, 3)
    left = (WIDTH - size) // 2 + rng.randint(-2, 3)
    patch = canvas[top:top + size, left:left + size]
    canvas[top:top + size, left:left + size] = patch * (1 - alpha) + foreground * alpha
    canvas += rng.normal(0, 6, canvas.shape)
    return np.clip(canvas, 0, 255).astype(np.uint8)


def _write_batch(path: str, images: np.ndarray, labels: np.ndarray) -> None:
    records = np.empty((len(labels), RECORD_BYTES), np.uint8)
    records[:, 0] = labels
    records[:, 1:] = images.transpose(0, 3, 1, 2).reshape(len(labels), -1)   # R, G, B planes
    tmp = f"{path}.{os.getpid()}.tmp"   # every worker may write the (identical) files at once
    records.tofile(tmp)
    os.replace(tmp, path)


def write_embedded_dataset(data_dir: str, per_train_file: int = 6000, test_records: int = 2000,
                           seed: int = 20171108) -> None:
    """scikit-learn's 1,797 digits, split by image (a test digit never appears in training),
    each record a fresh random rendering."""
    from sklearn.datasets import load_digits   # the examples extra installs scikit-learn
    digits = load_digits()
    os.makedirs(data_dir, exist_ok=True)
    rng = np.random.RandomState(seed)
    order = rng.permutation(len(digits.target))
    test_ids, train_ids = order[:360], order[360:]
    for name, ids, n in [(f, train_ids, per_train_file) for f in TRAIN_FILES] + [(TEST_FILE, test_ids, test_records)]:
        pick = rng.choice(ids, n)
        images = np.stack([_render(digits.images[i], rng) for i in pick])
        _write_batch(os.path.join(data_dir, name), images, digits.target[pick].astype(np.uint8))
    marker = os.path.join(data_dir, EMBEDDED_MARKER)
    with open(f"{marker}.{os.getpid()}.tmp", "w") as f:
        f.write("These files are not CIFAR-10: they are scikit-learn's 8x8 digits drawn as 32x32 colour "
                "images in CIFAR-10's binary format, written by examples/cifar10/cifar10_input.py.\n")
    os.replace(f"{marker}.{os.getpid()}.tmp", marker)


def num_records(filenames) -> int:
    return sum(os.path.getsize(f) // RECORD_BYTES for f in filenames)


# -- the input graph ------------------------------------------------------------------------------
def read_cifar10(filename_queue):
    """One example from the files in `filename_queue`: (uint8 image [32, 32, 3], int32 label)."""
    reader = tf.FixedLengthRecordReader(record_bytes=RECORD_BYTES)
    _, value = reader.read(filename_queue)
    record = tf.decode_raw(value, tf.uint8)
    label = tf.cast(tf.strided_slice(record, [0], [1]), tf.int32)
    label.set_shape([1])
    depth_major = tf.reshape(tf.strided_slice(record, [1], [RECORD_BYTES]), [DEPTH, HEIGHT, WIDTH])
    return tf.transpose(depth_major, [1, 2, 0]), tf.reshape(label, [])


def _batch(image, label, min_queue_examples: int, batch_size: int, shuffle: bool):
    threads = 4
    if shuffle:
        images, labels = tf.train.shuffle_batch([image, label], batch_size=batch_size, num_threads=threads,
                                                capacity=min_queue_examples + 3 * batch_size,
                                                min_after_dequeue=min_queue_examples)
    else:
        images, labels = tf.train.batch([image, label], batch_size=batch_size, num_threads=threads,
                                        capacity=min_queue_examples + 3 * batch_size)
    tf.summary.image("images", images)
    return images, labels


def distorted_inputs(data_dir: str, batch_size: int):
    """Training batches: random 24x24 crops, flips, brightness and contrast, standardised."""
    filenames = [os.path.join(data_dir, f) for f in TRAIN_FILES]
    with tf.name_scope("data_augmentation"):
        filename_queue = tf.train.string_input_producer(filenames)
        image, label = read_cifar10(filename_queue)
        image = tf.cast(image, tf.float32)
        image = tf.random_crop(image, [IMAGE_SIZE, IMAGE_SIZE, DEPTH])
        image = tf.image.random_flip_left_right(image)
        image = tf.image.random_brightness(image, max_delta=63)
        image = tf.image.random_contrast(image, lower=0.2, upper=1.8)
        image = tf.image.per_image_standardization(image)
        image.set_shape([IMAGE_SIZE, IMAGE_SIZE, DEPTH])
        min_queue = int(num_records(filenames) * 0.02)
        return _batch(image, label, min_queue, batch_size, shuffle=True)


def inputs(data_dir: str, batch_size: int, eval_data: bool = True, num_epochs=None):
    """Evaluation batches: the central 24x24 crop, standardised, in file order."""
    filenames = [os.path.join(data_dir, f) for f in ([TEST_FILE] if eval_data else TRAIN_FILES)]
    with tf.name_scope("input"):
        filename_queue = tf.train.string_input_producer(filenames, num_epochs=num_epochs, shuffle=False)
        image, label = read_cifar10(filename_queue)
        image = tf.image.resize_image_with_crop_or_pad(tf.cast(image, tf.float32), IMAGE_SIZE, IMAGE_SIZE)
        image = tf.image.per_image_standardization(image)
        image.set_shape([IMAGE_SIZE, IMAGE_SIZE, DEPTH])
        min_queue = min(int(num_records(filenames) * 0.4), 4 * batch_size)
        return _batch(image, label, min_queue, batch_size, shuffle=False)


if __name__ == "__main__":
    print(prepare_data(sys.argv[1] if len(sys.argv) > 1 else "/tmp/cifar10_data"))
