"""tf.keras.utils: Progbar's text, to_categorical and normalize against TF 2.15's Keras (recorded by
fixtures/record_keras_utils.py); custom objects and (de)serialization; Sequence; get_file on real
files (file:// origins, no sockets): the cache, hashes, archives, and the offline error."""
import hashlib
import json
import os
import tarfile
import zipfile

import numpy as np
import pytest
from fixtures.keras_preprocessing_cases import jsonable
from fixtures.keras_utils_cases import array_cases, progbar_cases

import tensorweave as tf

with open(os.path.join(os.path.dirname(__file__), "fixtures", "keras_utils.json")) as f:
    RECORDED = json.load(f)
utils = tf.keras.utils


@pytest.mark.parametrize("name", sorted(RECORDED["progbar"]))
def test_progbar_prints_what_keras_prints(name):
    assert progbar_cases(utils)[name] == RECORDED["progbar"][name]


def test_arrays_match_keras():
    for name, value in array_cases(utils).items():
        got, want = jsonable(value), RECORDED["arrays"][name]
        assert (got["dtype"], got["shape"]) == (want["dtype"], want["shape"]), name
        np.testing.assert_allclose(got["values"], want["values"], rtol=1e-6, err_msg=name)


def test_to_categorical_rejects_labels_outside_the_classes():
    with pytest.raises(ValueError, match=r"\[0, 3\); got min 0, max 3"):
        utils.to_categorical([0, 3], num_classes=3)


class Scaled:
    def __init__(self, factor=1.0):
        self.factor = factor

    def get_config(self):
        return {"factor": self.factor}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


def double(x):
    return 2 * x


def test_serialize_and_deserialize_keras_objects():
    config = utils.serialize_keras_object(Scaled(3.0))
    assert config == {"class_name": "Scaled", "config": {"factor": 3.0}}
    assert utils.serialize_keras_object(double) == "double"
    assert utils.serialize_keras_object(None) is None
    restored = utils.deserialize_keras_object(config, custom_objects={"Scaled": Scaled})
    assert isinstance(restored, Scaled) and restored.factor == 3.0
    assert utils.deserialize_keras_object("double", module_objects={"double": double}) is double
    assert isinstance(utils.deserialize_keras_object("Scaled", custom_objects={"Scaled": Scaled}), Scaled)
    with pytest.raises(ValueError, match="Unknown layer: Scaled"):
        utils.deserialize_keras_object(config, printable_module_name="layer")
    with pytest.raises(ValueError, match="Improper config format"):
        utils.deserialize_keras_object({"name": "x"})
    with pytest.raises(ValueError, match="Cannot serialize"):
        utils.serialize_keras_object(3)


def test_custom_object_scope_is_undone_on_exit():
    assert "Scaled" not in utils.get_custom_objects()
    with utils.custom_object_scope({"Scaled": Scaled}):
        assert utils.get_custom_objects()["Scaled"] is Scaled
        restored = utils.deserialize_keras_object({"class_name": "Scaled", "config": {"factor": 2.0}})
        assert restored.factor == 2.0
        utils.get_custom_objects()["double"] = double
    assert "Scaled" not in utils.get_custom_objects() and "double" not in utils.get_custom_objects()
    with utils.CustomObjectScope({"double": double}) as scope:
        assert isinstance(scope, utils.CustomObjectScope)
        assert utils.deserialize_keras_object("double") is double


def test_sequence_base_class():
    class Squares(utils.Sequence):
        epochs = 0

        def __len__(self):
            return 3

        def __getitem__(self, index):
            return index * index

        def on_epoch_end(self):
            self.epochs += 1

    seq = Squares()
    assert list(seq) == [0, 1, 4]
    seq.on_epoch_end()
    assert seq.epochs == 1
    with pytest.raises(NotImplementedError, match="__len__"):
        len(utils.Sequence())


def _origin(path):
    return "file://" + str(path)


def test_get_file_fetches_once_into_the_cache_and_checks_hashes(tmp_path):
    source = tmp_path / "remote" / "data.bin"
    source.parent.mkdir()
    source.write_bytes(b"payload")
    sha256, md5 = hashlib.sha256(b"payload").hexdigest(), hashlib.md5(b"payload").hexdigest()
    cache = tmp_path / "cache"
    path = utils.get_file("data.bin", _origin(source), file_hash=sha256, cache_dir=str(cache))
    assert path == str(cache / "datasets" / "data.bin")
    assert open(path, "rb").read() == b"payload"
    source.unlink()   # cached now: no fetch, and md5 (32 digits) is told apart from sha256 by length
    assert utils.get_file("data.bin", _origin(source), md5_hash=md5, cache_dir=str(cache)) == path
    assert utils.get_file("data.bin", _origin(source), file_hash=md5, cache_dir=str(cache),
                          cache_subdir="datasets") == path
    with pytest.raises(OSError, match=f"does not match the expected sha256 hash {'0' * 64}.*put it at {path}"):
        utils.get_file("data.bin", _origin(source), file_hash="0" * 64, cache_dir=str(cache))
    assert open(path, "rb").read() == b"payload"   # a failed fetch leaves the file as it was
    other = tmp_path / "remote" / "other.bin"
    other.write_bytes(b"other")
    with pytest.raises(ValueError, match="Incomplete or corrupted file detected.*does not match the expected md5"):
        utils.get_file("other.bin", _origin(other), file_hash="0" * 32, cache_dir=str(cache))


def test_get_file_offline_says_where_to_put_the_file(tmp_path, capsys):
    missing = tmp_path / "nowhere" / "mnist.npz"
    want = tmp_path / "cache" / "datasets" / "mnist.npz"
    with pytest.raises(OSError, match=f"URL fetch failure on {_origin(missing)}.*put it at {want}"):
        utils.get_file("mnist.npz", _origin(missing), cache_dir=str(tmp_path / "cache"))
    assert capsys.readouterr().out == f"Downloading data from {_origin(missing)}\n"
    assert os.listdir(want.parent) == []   # no partial file left behind


def test_get_file_home_cache_and_name_from_origin(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    source = tmp_path / "files" / "weights.h5"
    source.parent.mkdir()
    source.write_bytes(b"w")
    path = utils.get_file(None, _origin(source), cache_subdir="models")
    assert path == str(tmp_path / ".keras" / "models" / "weights.h5")


def test_get_file_extracts_tar_and_zip_archives(tmp_path):
    content = tmp_path / "content"
    content.mkdir()
    (content / "a.txt").write_text("alpha")
    tar_path = tmp_path / "src" / "bundle.tar.gz"
    tar_path.parent.mkdir()
    with tarfile.open(tar_path, "w:gz") as archive:
        archive.add(content, arcname="bundle")
    cache = tmp_path / "cache"
    path = utils.get_file("bundle", _origin(tar_path), untar=True, cache_dir=str(cache))
    assert path == str(cache / "datasets" / "bundle")
    assert open(os.path.join(path, "a.txt")).read() == "alpha"
    zip_path = tmp_path / "src" / "z.zip"
    with zipfile.ZipFile(zip_path, "w") as archive:
        archive.writestr("zdir/b.txt", "beta")
    path = utils.get_file("z.zip", _origin(zip_path), extract=True, cache_dir=str(cache))
    assert open(cache / "datasets" / "zdir" / "b.txt").read() == "beta"
    evil = tmp_path / "src" / "evil.zip"
    with zipfile.ZipFile(evil, "w") as archive:
        archive.writestr("../escaped.txt", "x")
    with pytest.raises(ValueError, match="outside"):
        utils.get_file("evil.zip", _origin(evil), extract=True, cache_dir=str(cache))
    assert not (cache / "escaped.txt").exists()


def test_get_file_accepts_an_archive_extracted_by_hand(tmp_path):
    folder = tmp_path / "cache" / "datasets" / "cifar-10-batches-py"
    folder.mkdir(parents=True)
    path = utils.get_file("cifar-10-batches-py", _origin(tmp_path / "missing.tar.gz"), untar=True,
                          cache_dir=str(tmp_path / "cache"))
    assert path == str(folder)


class _Batches(utils.Sequence):
    def __init__(self, n):
        self.n = n
        self.epochs_ended = 0
        self.offset = 0

    def __len__(self):
        return self.n

    def __getitem__(self, index):
        if index < 0:
            raise IndexError(index)
        return self.offset + index

    def on_epoch_end(self):
        self.epochs_ended += 1
        self.offset += 100


def _take(iterator, n):
    return [next(iterator) for _ in range(n)]


def test_ordered_enqueuer_yields_epochs_in_order():
    seq = _Batches(5)
    enqueuer = utils.OrderedEnqueuer(seq)
    enqueuer.start(workers=3, max_queue_size=2)
    try:
        batches = _take(enqueuer.get(), 12)
    finally:
        enqueuer.stop()
    assert batches == [0, 1, 2, 3, 4, 100, 101, 102, 103, 104, 200, 201]
    assert seq.epochs_ended >= 2 and not enqueuer.is_running()


def test_ordered_enqueuer_shuffles_each_epoch_and_raises_errors():
    enqueuer = utils.OrderedEnqueuer(_Batches(6), shuffle=True)
    enqueuer.start(workers=2)
    try:
        first, second = sorted(_take(enqueuer.get(), 6)), sorted(_take(enqueuer.get(), 6))
    finally:
        enqueuer.stop()
    assert first == list(range(6)) and second == list(range(100, 106))

    class Broken(_Batches):
        def __getitem__(self, index):
            if index == 2:
                raise KeyError("batch 2 is missing")
            return index

    enqueuer = utils.OrderedEnqueuer(Broken(4))
    enqueuer.start()
    with pytest.raises(KeyError, match="batch 2 is missing"):
        list(enqueuer.get())
    assert not enqueuer.is_running()


def test_generator_enqueuer_yields_every_item_then_ends():
    enqueuer = utils.GeneratorEnqueuer(iter(range(7)))
    enqueuer.start(workers=1, max_queue_size=3)
    assert list(enqueuer.get()) == list(range(7))
    assert not enqueuer.is_running()
    enqueuer = utils.GeneratorEnqueuer((x * x for x in range(20)))
    enqueuer.start(workers=4, max_queue_size=2)
    assert sorted(enqueuer.get()) == [x * x for x in range(20)]

    def failing():
        yield 1
        raise RuntimeError("reader broke")

    enqueuer = utils.GeneratorEnqueuer(failing())
    enqueuer.start()
    with pytest.raises(RuntimeError, match="reader broke"):
        list(enqueuer.get())


def test_hdf5_matrix_reads_rows_of_a_dataset(tmp_path):
    h5py = pytest.importorskip("h5py")
    data = np.arange(60, dtype="float32").reshape(10, 3, 2)
    path = str(tmp_path / "data.h5")
    with h5py.File(path, "w") as f:
        f["x"] = data
    matrix = utils.HDF5Matrix(path, "x", start=2, end=8, normalizer=lambda a: a / 2)
    assert len(matrix) == 6 and matrix.shape == (6, 3, 2) and matrix.dtype == np.float32
    assert matrix.ndim == 3 and matrix.size == 36
    np.testing.assert_array_equal(matrix[0], data[2] / 2)
    np.testing.assert_array_equal(matrix[1:4], data[3:6] / 2)
    np.testing.assert_array_equal(matrix[:], data[2:8] / 2)
    np.testing.assert_array_equal(matrix[np.array([0, 3, 5])], data[[2, 5, 7]] / 2)
    np.testing.assert_array_equal(matrix[[1, 2]], data[[3, 4]] / 2)
    with pytest.raises(IndexError, match="row 6 of an HDF5Matrix of 6 rows"):
        matrix[6]
    with pytest.raises(IndexError):
        matrix[4:7]
    with pytest.raises(KeyError, match="no dataset 'y'"):
        utils.HDF5Matrix(path, "y")
