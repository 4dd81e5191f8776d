"""What the dataset loaders share: Keras's download folder, and the readers of its files (npz
archives whose object arrays and CIFAR's batches are pickles) through an unpickler that builds
numpy arrays, lists, dicts, strings and numbers only, so a crafted file cannot run code."""
from __future__ import annotations

import io
import pickle
import zipfile

import numpy as np

ORIGIN_FOLDER = "https://storage.googleapis.com/tensorflow/tf-keras-datasets/"

# The globals a pickled numpy array refers to (under numpy 1's and numpy 2's module names), and
# the str-to-bytes codec Python 3 writes bytes with under pickle protocol 2.
_ALLOWED_GLOBALS = {
    ("_codecs", "encode"),
    ("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct"),
    ("numpy.core.multiarray", "scalar"), ("numpy._core.multiarray", "scalar"),
    ("numpy", "ndarray"), ("numpy", "dtype"),
}


class _ArrayUnpickler(pickle.Unpickler):
    def find_class(self, module, name):
        if (module, name) not in _ALLOWED_GLOBALS:
            raise pickle.UnpicklingError(f"refusing to load {module}.{name}: a dataset file holds only numpy "
                                         "arrays, lists, dicts, strings and numbers")
        return super().find_class(module, name)


def restricted_unpickle(data: bytes, encoding: str = "ASCII"):
    """pickle.loads limited to numpy arrays and Python's plain containers and scalars."""
    return _ArrayUnpickler(io.BytesIO(data), encoding=encoding).load()


def load_npz(path: str, keys) -> list:
    """The arrays `keys` of the .npz file at `path`; object arrays (IMDB's and Reuters' lists of
    word indices) through the restricted unpickler, which np.load(allow_pickle=True) would not be."""
    try:
        with zipfile.ZipFile(path) as archive:
            arrays = []
            for key in keys:
                try:
                    raw = archive.read(key + ".npy")
                except KeyError:
                    raise ValueError(f"{path}: no array {key!r} in this .npz (it holds "
                                     f"{sorted(n[:-4] for n in archive.namelist())})") from None
                arrays.append(_read_npy(raw, path, key))
            return arrays
    except zipfile.BadZipFile as e:
        raise ValueError(f"{path} is not a .npz archive ({e}); delete it and fetch the file again") from e


def _read_npy(raw: bytes, path: str, key: str) -> np.ndarray:
    stream = io.BytesIO(raw)
    try:
        version = np.lib.format.read_magic(stream)
        shape, fortran_order, dtype = (np.lib.format.read_array_header_1_0(stream) if version == (1, 0)
                                       else np.lib.format.read_array_header_2_0(stream))
        if dtype.hasobject:
            array = restricted_unpickle(stream.read(), encoding="latin1")
            if not isinstance(array, np.ndarray):
                raise ValueError(f"an object array was expected, found {type(array).__name__}")
            return array
        data = np.frombuffer(stream.read(), dtype=dtype, count=int(np.prod(shape)))
        return data.reshape(shape, order="F" if fortran_order else "C").copy()
    except (ValueError, pickle.UnpicklingError, EOFError) as e:
        raise ValueError(f"{path}: array {key!r} is corrupt or not Keras's format: {e}") from e


def load_cifar_batch(fpath: str, label_key: str = "labels"):
    """(data of shape (n, 3, 32, 32), labels) of one CIFAR batch file (a Python 2 pickle of a dict
    with bytes keys, as the CIFAR tarballs hold)."""
    try:
        with open(fpath, "rb") as f:
            batch = restricted_unpickle(f.read(), encoding="bytes")
        batch = {k.decode("utf8") if isinstance(k, bytes) else k: v for k, v in batch.items()}
        data = np.asarray(batch["data"])
        return data.reshape(data.shape[0], 3, 32, 32), batch[label_key]
    except FileNotFoundError:
        raise
    except (pickle.UnpicklingError, EOFError, AttributeError, KeyError, ValueError, TypeError) as e:
        raise ValueError(f"{fpath} is not a CIFAR batch file ({type(e).__name__}: {e}); delete the dataset's "
                         "folder and fetch it again") from e


def remove_long_seq(maxlen, seq, label):
    """The sequences shorter than `maxlen`, with their labels."""
    kept = [(x, y) for x, y in zip(seq, label) if len(x) < maxlen]
    return [x for x, _ in kept], [y for _, y in kept]


def shuffled(rng, *arrays):
    """`arrays` in one random order of their first axis (Keras's seeded shuffle)."""
    indices = np.arange(len(arrays[0]))
    rng.shuffle(indices)
    return [a[indices] for a in arrays]


def offset_words(xs, start_char, index_from) -> list:
    """IMDB's and Reuters' word indices shifted by `index_from`, after a `start_char` (if not None)."""
    if start_char is not None:
        return [[start_char] + [w + index_from for w in x] for x in xs]
    return [[w + index_from for w in x] for x in xs]


def clip_words(xs, num_words, skip_top, oov_char) -> list:
    """Indices outside [skip_top, num_words) as `oov_char`, or dropped when it is None; num_words
    None keeps all."""
    if not num_words:
        num_words = max(max(x) for x in xs)
    if oov_char is not None:
        return [[w if skip_top <= w < num_words else oov_char for w in x] for x in xs]
    return [[w for w in x if skip_top <= w < num_words] for x in xs]


def object_array(lists) -> np.ndarray:
    """A 1-D object array of lists (np.array would make a 2-D one of equal-length lists)."""
    out = np.empty(len(lists), dtype=object)
    out[:] = lists
    return out
