"""tf.keras.datasets read from small files in Keras's cache formats (HOME pointed at a temporary
folder): arrays, shapes and dtypes as Keras returns them (imdb, reuters and boston_housing against
TF 2.15's Keras, recorded by fixtures/record_keras_datasets.py); hashes checked; missing or corrupt
files give errors that name the file, the URL and where to put it. No sockets: every origin is
a file:// URL of a missing folder."""
import hashlib
import json
import os
import pickle
import shutil

import numpy as np
import pytest
from fixtures.keras_datasets_cases import loader_cases, write_keras_cache
from fixtures.keras_preprocessing_cases import jsonable

import tensorweave as tf
from tensorweave.keras.datasets import (boston_housing, cifar10, cifar100, fashion_mnist, imdb, mnist, reuters)

with open(os.path.join(os.path.dirname(__file__), "fixtures", "keras_datasets.json")) as f:
    RECORDED = json.load(f)
HASHED = {mnist: "mnist.npz", imdb: "imdb.npz", reuters: "reuters.npz", boston_housing: "boston_housing.npz",
          cifar10: "cifar-10-batches-py.tar.gz"}


def _sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """~/.keras/datasets holding the small files, each module's hash that of its file, and origins
    that cannot be fetched."""
    monkeypatch.setenv("HOME", str(tmp_path))
    datasets = tmp_path / ".keras" / "datasets"
    arrays = write_keras_cache(str(datasets))
    offline = "file://" + str(tmp_path / "offline") + "/"
    for module in (mnist, imdb, reuters, boston_housing, cifar10, cifar100, fashion_mnist):
        monkeypatch.setattr(module, "ORIGIN", offline + getattr(module, "ORIGIN").rpartition("/")[2])
    for module in (imdb, reuters):
        monkeypatch.setattr(module, "WORD_INDEX_ORIGIN", offline + module.WORD_INDEX_ORIGIN.rpartition("/")[2])
    for module, fname in HASHED.items():
        monkeypatch.setattr(module, "FILE_HASH", _sha256(datasets / fname))
    monkeypatch.setattr(cifar100, "FILE_HASH", None)
    return datasets, arrays, offline


def test_mnist(cache):
    _, arrays, _ = cache
    (x_train, y_train), (x_test, y_test) = tf.keras.datasets.mnist.load_data()
    for got, key in ((x_train, "x_train"), (y_train, "y_train"), (x_test, "x_test"), (y_test, "y_test")):
        np.testing.assert_array_equal(got, arrays["mnist"][key])
        assert got.dtype == np.uint8
    assert x_train.shape == (5, 28, 28)


def test_fashion_mnist(cache):
    _, arrays, _ = cache
    (x_train, y_train), (x_test, y_test) = tf.keras.datasets.fashion_mnist.load_data()
    np.testing.assert_array_equal(x_train, arrays["fashion_mnist"]["train"][0])
    np.testing.assert_array_equal(y_train, arrays["fashion_mnist"]["train"][1])
    np.testing.assert_array_equal(x_test, arrays["fashion_mnist"]["t10k"][0])
    assert x_train.shape == (4, 28, 28) and y_test.shape == (2,) and x_test.dtype == np.uint8


def test_cifar10_from_the_tarball(cache):
    datasets, arrays, _ = cache
    shutil.rmtree(datasets / "cifar-10-batches-py")   # extracted from the archive, as Keras does
    (x_train, y_train), (x_test, y_test) = tf.keras.datasets.cifar10.load_data()
    batches = arrays["cifar10"]
    want = np.concatenate([batches[f"data_batch_{i}"][0] for i in range(1, 6)]).reshape(10, 3, 32, 32)
    np.testing.assert_array_equal(x_train, want.transpose(0, 2, 3, 1))
    assert x_train.shape == (10, 32, 32, 3) and x_train.dtype == np.uint8
    assert y_train.shape == (10, 1) and y_train.dtype == np.uint8
    assert y_train[:, 0].tolist() == sum((batches[f"data_batch_{i}"][1] for i in range(1, 6)), [])
    assert x_test.shape == (2, 32, 32, 3) and y_test[:, 0].tolist() == batches["test_batch"][1]


def test_cifar100_fine_and_coarse(cache):
    datasets, arrays, _ = cache
    os.remove(datasets / "cifar-10-batches-py.tar.gz")   # unrelated; cifar100's folder has no archive beside it
    (x_train, y_train), (x_test, y_test) = tf.keras.datasets.cifar100.load_data()
    assert x_train.shape == (3, 32, 32, 3) and y_train[:, 0].tolist() == arrays["cifar100"]["train"][b"fine_labels"]
    (_, y_coarse), _ = tf.keras.datasets.cifar100.load_data(label_mode="coarse")
    assert y_coarse[:, 0].tolist() == arrays["cifar100"]["train"][b"coarse_labels"]
    with pytest.raises(ValueError, match="label_mode"):
        tf.keras.datasets.cifar100.load_data(label_mode="medium")


def _assert_same(got, want, where):
    if isinstance(want, dict) and "object" in want:
        assert got == want, where
    elif isinstance(want, dict):
        assert (got["dtype"], got["shape"]) == (want["dtype"], want["shape"]), where
        np.testing.assert_allclose(got["values"], want["values"], rtol=1e-12, err_msg=where)
    else:
        assert len(got) == len(want), where
        for i, (g, w) in enumerate(zip(got, want)):
            _assert_same(g, w, f"{where}[{i}]")


def test_imdb_reuters_boston_match_keras(cache):
    outputs = loader_cases(tf.keras.datasets.imdb, tf.keras.datasets.reuters, tf.keras.datasets.boston_housing)
    assert sorted(outputs) == sorted(RECORDED)
    for name, value in outputs.items():
        _assert_same(jsonable(value), RECORDED[name], name)


def test_word_index(cache, monkeypatch):
    datasets, _, offline = cache
    (datasets / "imdb_word_index.json").write_text('{"the": 1, "and": 2}')
    with pytest.raises(OSError, match=f"does not match the expected md5.*{offline}imdb_word_index.json"):
        tf.keras.datasets.imdb.get_word_index()
    monkeypatch.setattr(imdb, "WORD_INDEX_HASH", hashlib.md5(b'{"the": 1, "and": 2}').hexdigest())
    assert tf.keras.datasets.imdb.get_word_index() == {"the": 1, "and": 2}


def test_missing_file_says_where_to_put_it(cache):
    datasets, _, offline = cache
    os.remove(datasets / "mnist.npz")
    with pytest.raises(OSError, match=f"URL fetch failure on {offline}mnist.npz.*put it at {datasets}/mnist.npz"):
        tf.keras.datasets.mnist.load_data()
    os.remove(datasets / "fashion-mnist" / "t10k-images-idx3-ubyte.gz")
    with pytest.raises(OSError, match=f"put it at {datasets}/fashion-mnist/t10k-images-idx3-ubyte.gz"):
        tf.keras.datasets.fashion_mnist.load_data()
    shutil.rmtree(datasets / "cifar-10-batches-py")
    os.remove(datasets / "cifar-10-batches-py.tar.gz")
    with pytest.raises(OSError, match=f"put it at {datasets}/cifar-10-batches-py.tar.gz "
                                      rf"\(or extract it to {datasets}/cifar-10-batches-py\)"):
        tf.keras.datasets.cifar10.load_data()


def test_corrupt_files_are_named(cache, monkeypatch):
    datasets, _, _ = cache
    (datasets / "mnist.npz").write_bytes(b"truncated download")
    with pytest.raises(OSError, match=f"{datasets}/mnist.npz does not match the expected sha256"):
        tf.keras.datasets.mnist.load_data()
    monkeypatch.setattr(mnist, "FILE_HASH", None)
    with pytest.raises(ValueError, match="mnist.npz is not a .npz archive"):
        tf.keras.datasets.mnist.load_data()
    np.savez(datasets / "mnist.npz", x_train=np.zeros(2))
    with pytest.raises(ValueError, match="no array 'y_train'"):
        tf.keras.datasets.mnist.load_data()
    with open(datasets / "fashion-mnist" / "train-images-idx3-ubyte.gz", "wb") as f:
        f.write(b"not gzip")
    with pytest.raises(ValueError, match="train-images-idx3-ubyte.gz is not a gzipped IDX file"):
        tf.keras.datasets.fashion_mnist.load_data()


class _Payload:
    def __reduce__(self):
        return (os.system, ("echo pwned",))


def test_pickles_in_dataset_files_cannot_run_code(cache, monkeypatch):
    datasets, _, _ = cache
    with open(datasets / "cifar-10-batches-py" / "test_batch", "wb") as f:
        pickle.dump({b"data": _Payload(), b"labels": []}, f, protocol=2)
    os.remove(datasets / "cifar-10-batches-py.tar.gz")
    with pytest.raises(ValueError, match=r"test_batch is not a CIFAR batch file.*refusing to load posix.system"):
        tf.keras.datasets.cifar10.load_data()
    x = np.empty(1, dtype=object)
    x[0] = _Payload()
    np.savez(datasets / "reuters.npz", x=x, y=np.zeros(1))
    monkeypatch.setattr(reuters, "FILE_HASH", None)
    with pytest.raises(ValueError, match="array 'x' is corrupt or not Keras's format.*refusing to load"):
        tf.keras.datasets.reuters.load_data()
