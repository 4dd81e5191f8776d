"""tf.lookup tables and tf.tables_initializer: contents from tensors and from text files, lookups
of dense and sparse keys, out-of-vocabulary buckets (FarmHash Fingerprint64, as TF's; the same
ids are compared with TF's recordings through vocabulary feature columns in
test_feature_column.py), and TF's errors for an uninitialized table, conflicting keys and a
short vocabulary file."""
from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.ops.strings.hashing import fingerprint64


def _vocab(tmp_path, text: str) -> str:
    path = tmp_path / "vocab.txt"
    path.write_bytes(text.encode())
    return str(path)


def test_static_hash_table_from_tensors():
    with tf.Graph().as_default():
        table = tf.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer(["cat", "dog", "emu"], np.array([3, 1, 4], np.int64)), -1)
        dense = table.lookup(tf.constant([["dog", "yak"], ["emu", "cat"]]))
        sparse = table.lookup(tf.SparseTensor([[0, 1], [2, 0]], ["cat", "owl"], [3, 2]))
        assert dense.shape.as_list() == [2, 2] and dense.dtype == tf.int64
        with tf.Session() as s:
            s.run(tf.tables_initializer())
            got, sp, size = s.run([dense, sparse, table.size()])
    np.testing.assert_array_equal(got, [[1, -1], [4, 3]])
    np.testing.assert_array_equal(sp.values, [3, -1])
    np.testing.assert_array_equal(sp.indices, [[0, 1], [2, 0]])
    assert size == 3


def test_text_file_initializer_columns_and_line_numbers(tmp_path):
    path = _vocab(tmp_path, "apple,7\r\nbanana,9\ncherry,11\n")
    with tf.Graph().as_default():
        by_column = tf.lookup.StaticHashTable(
            tf.lookup.TextFileInitializer(path, tf.string, 0, tf.int64, 1, delimiter=","), -5)
        by_line = tf.lookup.StaticHashTable(
            tf.lookup.TextFileInitializer(path, tf.int64, tf.lookup.TextFileIndex.LINE_NUMBER, tf.string,
                                          tf.lookup.TextFileIndex.WHOLE_LINE, vocab_size=2), "?")
        keys = tf.constant(["cherry", "apple", "durian"])
        with tf.Session() as s:
            s.run(tf.initialize_all_tables())
            values, lines = s.run([by_column.lookup(keys), by_line.lookup(tf.constant([1, 0, 2], tf.int64))])
    np.testing.assert_array_equal(values, [11, 7, -5])
    assert list(lines) == [b"banana,9", b"apple,7", b"?"]


def test_static_vocabulary_table_hashes_out_of_vocabulary_keys():
    with tf.Graph().as_default():
        init = tf.lookup.KeyValueTensorInitializer(["a", "b"], np.array([0, 1], np.int64))
        table = tf.lookup.StaticVocabularyTable(init, num_oov_buckets=5)
        ids = table.lookup(tf.constant(["b", "zebra", "a", "quokka"]))
        with tf.Session() as s:
            s.run(tf.tables_initializer())
            got, size = s.run([ids, table.size()])
    np.testing.assert_array_equal(got, [1, 2 + fingerprint64(b"zebra") % 5, 0, 2 + fingerprint64(b"quokka") % 5])
    assert size == 7


def test_lookup_before_initialization_is_failed_precondition():
    with tf.Graph().as_default():
        table = tf.lookup.StaticHashTable(tf.lookup.KeyValueTensorInitializer([1, 2], [10, 20], tf.int64, tf.int64),
                                          0)
        out = table.lookup(tf.constant([2], tf.int64))
        with tf.Session() as s:
            with pytest.raises(tf.errors.FailedPreconditionError, match="Table not initialized"):
                s.run(out)
            s.run(table.initializer)
            assert s.run(out).tolist() == [20]


def test_conflicting_keys_and_short_vocabulary_files_fail_as_tf(tmp_path):
    with tf.Graph().as_default():
        dup = tf.lookup.StaticHashTable(tf.lookup.KeyValueTensorInitializer(["a", "a"], np.array([1, 2], np.int64)),
                                        -1)
        short = tf.lookup.StaticHashTable(tf.lookup.TextFileInitializer(
            _vocab(tmp_path, "x\ny\n"), tf.string, -2, tf.int64, -1, vocab_size=3), -1)
        with tf.Session() as s:
            with pytest.raises(tf.errors.FailedPreconditionError, match="HashTable has different value for same key"):
                s.run(dup.initializer)
            with pytest.raises(tf.errors.InvalidArgumentError, match="Invalid vocab_size .*expected 3 got 2"):
                s.run(short.initializer)
            with pytest.raises(tf.errors.NotFoundError, match="missing.txt"):
                s.run(tf.lookup.StaticHashTable(tf.lookup.TextFileInitializer(
                    str(tmp_path / "missing.txt"), tf.string, -2, tf.int64, -1), -1).initializer)


def test_lookup_of_wrong_key_dtype_is_type_error():
    with tf.Graph().as_default():
        table = tf.lookup.StaticHashTable(tf.lookup.KeyValueTensorInitializer(["a"], np.array([1], np.int64)), -1)
        with pytest.raises(TypeError, match="Keys must be dtype"):
            table.lookup(tf.constant([1, 2], tf.int64))


def test_cast_between_strings_and_numbers_is_unimplemented_as_tf():
    with tf.Graph().as_default():
        out = tf.cast(tf.constant(["1.5"]), tf.float32, name="to_float")
        with tf.Session() as s, pytest.raises(tf.errors.UnimplementedError,
                                              match="Cast string to float is not supported"):
            s.run(out)


def test_vocabulary_table_without_initializer_hashes_every_key():
    with tf.Graph().as_default():
        table = tf.lookup.StaticVocabularyTable(None, num_oov_buckets=4)
        ids = table.lookup(tf.constant(["a", "bb"]))
        with tf.Session() as s:
            got, size = s.run([ids, table.size()])
    np.testing.assert_array_equal(got, [fingerprint64(b"a") % 4, fingerprint64(b"bb") % 4])
    assert size == 4
