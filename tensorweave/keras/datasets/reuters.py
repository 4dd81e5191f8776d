"""tf.keras.datasets.reuters: Reuters newswires as word-index sequences with 46 topics, from
Keras's reuters.npz (and the word index, reuters_word_index.json)."""
from __future__ import annotations

import json

import numpy as np

from tensorweave.framework.tf_export import tf_export
from tensorweave.keras.datasets.cache_files import (ORIGIN_FOLDER, clip_words, load_npz, object_array,
                                                    offset_words, remove_long_seq, shuffled)
from tensorweave.keras.utils.data_utils import get_file

ORIGIN = ORIGIN_FOLDER + "reuters.npz"
FILE_HASH = "d6586e694ee56d7a4e65172e12b3e987c03096cb01eab99753921ef915959916"
WORD_INDEX_ORIGIN = ORIGIN_FOLDER + "reuters_word_index.json"
WORD_INDEX_HASH = "4d44cc38712099c9e383dc6e5f11a921"


@tf_export("keras.datasets.reuters.load_data")
def load_data(path="reuters.npz", num_words=None, skip_top=0, maxlen=None, test_split=0.2, seed=113, start_char=1,
              oov_char=2, index_from=3, **kwargs):
    """(x_train, y_train), (x_test, y_test): the 11228 newswires shuffled with `seed`, the last
    `test_split` of them the test set; object arrays of lists of word indices as imdb.load_data
    gives them, int64 topic labels."""
    if "nb_words" in kwargs:
        num_words = kwargs.pop("nb_words")
    if kwargs:
        raise TypeError(f"Unrecognized keyword arguments: {kwargs}")
    path = get_file(path, origin=ORIGIN, file_hash=FILE_HASH)
    xs, labels = shuffled(np.random.RandomState(seed), *load_npz(path, ["x", "y"]))
    xs = offset_words(xs, start_char, index_from)
    if maxlen:
        xs, labels = remove_long_seq(maxlen, xs, labels)
    xs = clip_words(xs, num_words, skip_top, oov_char)
    idx = int(len(xs) * (1 - test_split))
    return (object_array(xs[:idx]), np.array(labels[:idx])), (object_array(xs[idx:]), np.array(labels[idx:]))


@tf_export("keras.datasets.reuters.get_word_index")
def get_word_index(path="reuters_word_index.json"):
    """{word: rank} of the Reuters newswires (rank 1 the most frequent; load_data adds index_from)."""
    path = get_file(path, origin=WORD_INDEX_ORIGIN, file_hash=WORD_INDEX_HASH)
    with open(path) as f:
        return json.load(f)
