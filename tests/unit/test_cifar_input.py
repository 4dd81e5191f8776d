"""Seed 003's input pipeline on a CIFAR-10-format binary file (1 label byte + 3072 pixel bytes,
depth-major, per record) written here: the queue path (string_input_producer +
FixedLengthRecordReader + shuffle_batch) and the tf.data path read the same examples."""
from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tf

pytestmark = pytest.mark.usefixtures("graph")
RECORD = 1 + 32 * 32 * 3


@pytest.fixture
def cifar_files(tmp_path):
    rs = np.random.RandomState(0)
    labels = rs.randint(0, 10, 25).astype(np.uint8)
    images = rs.randint(0, 256, (25, 3, 32, 32)).astype(np.uint8)
    paths = []
    for k, (lo, hi) in enumerate([(0, 10), (10, 25)]):
        p = str(tmp_path / f"data_batch_{k + 1}.bin")
        with open(p, "wb") as f:
            for i in range(lo, hi):
                f.write(labels[i:i + 1].tobytes() + images[i].tobytes())
        paths.append(p)
    return paths, labels, images.transpose(0, 2, 3, 1)


def parse(record):
    """cifar10_input.read_cifar10's decoding of one record."""
    raw = tf.decode_raw(record, tf.uint8)
    label = tf.cast(tf.strided_slice(raw, [0], [1]), tf.int32)
    depth_major = tf.reshape(tf.strided_slice(raw, [1], [RECORD]), [3, 32, 32])
    return tf.transpose(depth_major, [1, 2, 0]), label


def distort(image):
    """cifar10_input.distorted_inputs' augmentation."""
    image = tf.cast(image, tf.float32)
    image = tf.random_crop(image, [24, 24, 3])
    image = tf.image.random_flip_left_right(image)
    image = tf.image.random_brightness(image, max_delta=63)
    image = tf.image.random_contrast(image, lower=0.2, upper=1.8)
    image = tf.image.per_image_standardization(image)
    image.set_shape([24, 24, 3])
    return image


def test_queue_and_dataset_paths_read_the_same_examples(cifar_files):
    paths, labels, images = cifar_files
    queue = tf.train.string_input_producer(paths, shuffle=False, num_epochs=1)
    key, value = tf.FixedLengthRecordReader(record_bytes=RECORD).read(queue)
    q_image, q_label = parse(value)
    d_image, d_label = tf.data.FixedLengthRecordDataset(paths, RECORD).map(parse).make_one_shot_iterator().get_next()
    with tf.Session() as sess:
        sess.run(tf.local_variables_initializer())
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(sess, coord)
        for i in range(25):
            qi, ql, k = sess.run([q_image, q_label, key])
            di, dl = sess.run([d_image, d_label])
            np.testing.assert_array_equal(qi, images[i])
            np.testing.assert_array_equal(di, qi)
            assert ql.tolist() == dl.tolist() == [labels[i]]
            assert k == f"{paths[i // 10 if i < 10 else 1]}:{i if i < 10 else i - 10}".encode()
        with pytest.raises(tf.errors.OutOfRangeError):
            sess.run(q_label)
        with pytest.raises(tf.errors.OutOfRangeError):
            sess.run(d_label)
        coord.request_stop()
        coord.join(threads)


def test_seed_003_distorted_batches_both_ways(cifar_files):
    paths, labels, _ = cifar_files
    queue = tf.train.string_input_producer(paths)
    _, value = tf.FixedLengthRecordReader(record_bytes=RECORD).read(queue)
    image, label = parse(value)
    label.set_shape([1])
    q_images, q_labels = tf.train.shuffle_batch([distort(image), label], batch_size=8, num_threads=2,
                                                capacity=50, min_after_dequeue=20)
    ds = tf.data.FixedLengthRecordDataset(paths, RECORD).repeat().map(
        lambda r: (lambda im, lb: (distort(im), lb))(*parse(r)), num_parallel_calls=2).shuffle(20).batch(8).prefetch(1)
    d_images, d_labels = ds.make_one_shot_iterator().get_next()
    with tf.Session() as sess:
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(sess, coord)
        for imgs, lbls in (sess.run([q_images, q_labels]), sess.run([d_images, d_labels])):
            assert imgs.shape == (8, 24, 24, 3) and imgs.dtype == np.float32 and lbls.shape == (8, 1)
            np.testing.assert_allclose(imgs.mean(axis=(1, 2, 3)), 0, atol=1e-4)
            np.testing.assert_allclose(imgs.std(axis=(1, 2, 3)), 1, atol=1e-3)
            assert set(lbls.reshape(-1)) <= set(labels.tolist())
        coord.request_stop()
        coord.join(threads)
