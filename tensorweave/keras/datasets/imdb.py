"""tf.keras.datasets.imdb: IMDB's movie reviews as word-index sequences, from Keras's imdb.npz
(and the word index, imdb_word_index.json)."""
from __future__ import annotations

import json

import numpy as np

from tensorweave.framework.tf_export import tf_export
from tensorweave.keras.datasets.cache_files import (ORIGIN_FOLDER, clip_words, load_npz, object_array,
                                                    offset_words, remove_long_seq, shuffled)
from tensorweave.keras.utils.data_utils import get_file

ORIGIN = ORIGIN_FOLDER + "imdb.npz"
FILE_HASH = "69664113be75683a8fe16e3ed0ab59fda8886cb3cd7ada244f7d9544e4676b9f"
WORD_INDEX_ORIGIN = ORIGIN_FOLDER + "imdb_word_index.json"
WORD_INDEX_HASH = "bfafd718b763782e994055a2d397834f"


@tf_export("keras.datasets.imdb.load_data")
def load_data(path="imdb.npz", num_words=None, skip_top=0, maxlen=None, seed=113, start_char=1, oov_char=2,
              index_from=3, **kwargs):
    """(x_train, y_train), (x_test, y_test): 25000 reviews each, object arrays of lists of word
    indices (rank + index_from, after start_char; indices outside [skip_top, num_words) become
    oov_char, or are dropped when it is None; reviews of maxlen words or more dropped), labels 0/1;
    each set shuffled with `seed`."""
    if "nb_words" in kwargs:
        num_words = kwargs.pop("nb_words")
    if kwargs:
        raise TypeError(f"Unrecognized keyword arguments: {kwargs}")
    path = get_file(path, origin=ORIGIN, file_hash=FILE_HASH)
    x_train, labels_train, x_test, labels_test = load_npz(path, ["x_train", "y_train", "x_test", "y_test"])
    rng = np.random.RandomState(seed)
    x_train, labels_train = shuffled(rng, x_train, labels_train)
    x_test, labels_test = shuffled(rng, x_test, labels_test)
    x_train = offset_words(x_train, start_char, index_from)
    x_test = offset_words(x_test, start_char, index_from)
    if maxlen:
        x_train, labels_train = remove_long_seq(maxlen, x_train, labels_train)
        x_test, labels_test = remove_long_seq(maxlen, x_test, labels_test)
        if not x_train or not x_test:
            raise ValueError(f"After filtering for sequences shorter than maxlen={maxlen}, no sequence was kept. "
                             "Increase maxlen.")
    xs = clip_words(x_train + x_test, num_words, skip_top, oov_char)
    labels = np.concatenate([labels_train, labels_test])
    idx = len(x_train)
    return (object_array(xs[:idx]), labels[:idx]), (object_array(xs[idx:]), labels[idx:])


@tf_export("keras.datasets.imdb.get_word_index")
def get_word_index(path="imdb_word_index.json"):
    """{word: rank} of the IMDB reviews (rank 1 the most frequent; load_data adds index_from)."""
    path = get_file(path, origin=WORD_INDEX_ORIGIN, file_hash=WORD_INDEX_HASH)
    with open(path) as f:
        return json.load(f)
