"""tf.keras.preprocessing.sequence: padding of integer sequences, skip-gram pairs and their
sampling table, and TimeseriesGenerator (keras_preprocessing's sequence module)."""
from __future__ import annotations

import json
import random

import numpy as np

from tensorweave.framework.tf_export import tf_export
from tensorweave.keras.utils.data_utils import Sequence


def _as_array(sequence, dtype, position):
    try:
        return np.asarray(sequence, dtype=dtype)
    except (ValueError, TypeError) as e:
        raise ValueError(f"the sequence at position {position} is not a sequence of {dtype or 'equal-shaped'} "
                         f"elements: {e}") from e


@tf_export("keras.preprocessing.sequence.pad_sequences")
def pad_sequences(sequences, maxlen=None, dtype="int32", padding="pre", truncating="pre", value=0.0):
    """Pads a list of sequences to one length: a numpy array of shape (len(sequences), maxlen) (plus
    the shape of each element).

    maxlen defaults to the longest sequence; longer sequences lose values at the start
    (truncating="pre") or end ("post"); shorter ones get `value` before ("pre") or after ("post").
    """
    if not hasattr(sequences, "__len__"):
        raise ValueError(f"`sequences` must be iterable, got {type(sequences).__name__}")
    if padding not in ("pre", "post"):
        raise ValueError(f'Padding type "{padding}" not understood')
    if truncating not in ("pre", "post"):
        raise ValueError(f'Truncating type "{truncating}" not understood')
    lengths = []
    sample_shape = None
    for position, x in enumerate(sequences):
        if not hasattr(x, "__len__") or isinstance(x, (str, bytes)):
            raise ValueError(f"`sequences` must be a list of iterables. Found non-iterable: {x!r} "
                             f"at position {position}")
        lengths.append(len(x))
        if sample_shape is None and len(x):
            sample_shape = _as_array(x, None, position).shape[1:]   # the first non-empty sequence sets it
    sample_shape = sample_shape or ()
    if maxlen is None:
        maxlen = max(lengths) if lengths else 0
    is_dtype_str = np.issubdtype(dtype, np.str_)
    if isinstance(value, str) and dtype is not object and not is_dtype_str:
        raise ValueError(f"`dtype` {dtype} is not compatible with `value`'s type: {type(value)}\n"
                         "You should set `dtype=object` for variable length strings.")
    x = np.full((len(sequences), maxlen) + sample_shape, value, dtype=dtype)
    for idx, s in enumerate(sequences):
        if not len(s) or not maxlen:
            continue
        trunc = _as_array(s[-maxlen:] if truncating == "pre" else s[:maxlen], dtype, idx)
        if trunc.shape[1:] != sample_shape:
            raise ValueError(f"Shape of sample {trunc.shape[1:]} of sequence at position {idx} is different "
                             f"from expected shape {sample_shape}")
        if padding == "post":
            x[idx, :len(trunc)] = trunc
        else:
            x[idx, -len(trunc):] = trunc
    return x


@tf_export("keras.preprocessing.sequence.make_sampling_table")
def make_sampling_table(size, sampling_factor=1e-5):
    """The word2vec sampling probability of the word of each rank 0..size-1, with frequencies of
    Zipf's law: p = min(1, sqrt(f / sampling_factor) / (f / sampling_factor))."""
    gamma = 0.577
    rank = np.arange(size)
    rank[0] = 1
    inv_fq = rank * (np.log(rank) + gamma) + 0.5 - 1.0 / (12.0 * rank)
    f = sampling_factor * inv_fq
    return np.minimum(1.0, f / np.sqrt(f))


@tf_export("keras.preprocessing.sequence.skipgrams")
def skipgrams(sequence, vocabulary_size, window_size=4, negative_samples=1.0, shuffle=True, categorical=False,
              sampling_table=None, seed=None):
    """Skip-gram pairs of a sequence of word indices: (couples, labels), where [word, word within
    `window_size`] has label 1 and [word, random word in 1..vocabulary_size-1] label 0
    (`negative_samples` of those per positive one). Index 0 is a non-word and skipped. Draws from
    Python's `random`, as Keras does, so a `seed` gives Keras's pairs."""
    couples = []
    labels = []
    for i, wi in enumerate(sequence):
        if not wi:
            continue
        if sampling_table is not None and sampling_table[wi] < random.random():
            continue
        for j in range(max(0, i - window_size), min(len(sequence), i + window_size + 1)):
            if j != i and sequence[j]:
                couples.append([wi, sequence[j]])
                labels.append([0, 1] if categorical else 1)
    if negative_samples > 0:
        num_negative_samples = int(len(labels) * negative_samples)
        words = [c[0] for c in couples]
        random.shuffle(words)
        couples += [[words[i % len(words)], random.randint(1, vocabulary_size - 1)]
                    for i in range(num_negative_samples)]
        labels += [[1, 0] if categorical else 0] * num_negative_samples
    if shuffle:
        if seed is None:
            seed = random.randint(0, 10e6)
        random.seed(seed)
        random.shuffle(couples)
        random.seed(seed)
        random.shuffle(labels)
    return couples, labels


@tf_export("keras.preprocessing.sequence.TimeseriesGenerator")
class TimeseriesGenerator(Sequence):
    """Batches of windows over a timeseries: sample i is data[row - length:row:sampling_rate] with
    target targets[row], rows from start_index + length to end_index in steps of `stride` (or
    drawn at random with `shuffle`); `reverse` gives each window newest first."""

    def __init__(self, data, targets, length, sampling_rate=1, stride=1, start_index=0, end_index=None,
                 shuffle=False, reverse=False, batch_size=128):
        if len(data) != len(targets):
            raise ValueError(f"Data and targets have to be of same length. Data length is {len(data)} "
                             f"while target length is {len(targets)}")
        self.data = data
        self.targets = targets
        self.length = length
        self.sampling_rate = sampling_rate
        self.stride = stride
        self.start_index = start_index + length
        self.end_index = len(data) - 1 if end_index is None else end_index
        self.shuffle = shuffle
        self.reverse = reverse
        self.batch_size = batch_size
        if self.start_index > self.end_index:
            raise ValueError(f"`start_index+length={self.start_index} > end_index={self.end_index}` is disallowed, "
                             "as no part of the sequence would be left to be used as current step.")

    def __len__(self):
        return (self.end_index - self.start_index + self.batch_size * self.stride) // (self.batch_size * self.stride)

    def __getitem__(self, index):
        if self.shuffle:
            rows = np.random.randint(self.start_index, self.end_index + 1, size=self.batch_size)
        else:
            i = self.start_index + self.batch_size * self.stride * index
            rows = np.arange(i, min(i + self.batch_size * self.stride, self.end_index + 1), self.stride)
        samples = np.array([self.data[row - self.length:row:self.sampling_rate] for row in rows])
        targets = np.array([self.targets[row] for row in rows])
        if self.reverse:
            return samples[:, ::-1, ...], targets
        return samples, targets

    def get_config(self):
        def as_json(value, what):
            try:
                return json.dumps(value.tolist() if isinstance(value, np.ndarray) else value)
            except TypeError as e:
                raise TypeError(f"{what} not JSON serializable: {value!r}") from e
        return {"data": as_json(self.data, "Data"), "targets": as_json(self.targets, "Targets"),
                "length": self.length, "sampling_rate": self.sampling_rate, "stride": self.stride,
                "start_index": self.start_index, "end_index": self.end_index, "shuffle": self.shuffle,
                "reverse": self.reverse, "batch_size": self.batch_size}

    def to_json(self, **kwargs):
        return json.dumps({"class_name": type(self).__name__, "config": self.get_config()}, **kwargs)
