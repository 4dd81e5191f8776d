"""tf.contrib.lookup: MutableHashTable (scalar and tensor values) and MutableDenseHashTable take
inserts, removes and lookups and export their entries; TF's errors for reserved keys of a
dense table, values of the wrong shape and keys of the wrong dtype; contrib's id <-> string
tables."""
from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.ops.helpers import make_op


def test_mutable_hash_table_insert_lookup_remove_export():
    with tf.Graph().as_default():
        table = tf.contrib.lookup.MutableHashTable(tf.string, tf.int64, -1)
        keys = tf.placeholder(tf.string, [None])
        values = tf.placeholder(tf.int64, [None])
        insert, remove = table.insert(keys, values), table.remove(keys)
        found = table.lookup(tf.constant([["a", "b"], ["zz", "c"]]))
        exported = table.export()
        assert found.shape.as_list() == [2, 2] and found.dtype == tf.int64
        with tf.Session() as s:
            assert s.run(table.size()) == 0
            np.testing.assert_array_equal(s.run(found), [[-1, -1], [-1, -1]])
            s.run(insert, {keys: ["a", "b", "c"], values: [1, 2, 3]})
            s.run(insert, {keys: ["b"], values: [20]})            # insert overwrites
            np.testing.assert_array_equal(s.run(found), [[1, 20], [-1, 3]])
            s.run(remove, {keys: ["a", "nope"]})                  # an absent key is no error
            np.testing.assert_array_equal(s.run(found), [[-1, 20], [-1, 3]])
            got_keys, got_values = s.run(exported)
            assert s.run(table.size()) == 2
    assert dict(zip(got_keys.tolist(), got_values.tolist())) == {b"b": 20, b"c": 3}


def test_mutable_hash_table_of_tensors():
    with tf.Graph().as_default():
        table = tf.contrib.lookup.MutableHashTable(tf.int64, tf.float32, [0.0, -1.0])
        insert = table.insert(tf.constant([3, 7], tf.int64), tf.constant([[1.0, 2.0], [3.0, 4.0]]))
        found = table.lookup(tf.constant([7, 5, 3], tf.int64))
        bad = table.insert(tf.constant([1], tf.int64), tf.constant([1.0, 2.0]))
        assert found.shape.as_list() == [3, 2]
        with tf.Session() as s:
            s.run(insert)
            np.testing.assert_array_equal(s.run(found), [[3, 4], [0, -1], [1, 2]])
            _, values = s.run(table.export())
            assert values.shape == (2, 2)
            with pytest.raises(tf.errors.InvalidArgumentError, match=r"Expected shape \[1, 2\]"):
                s.run(bad)


def test_mutable_dense_hash_table_refuses_its_reserved_keys():
    with tf.Graph().as_default():
        table = tf.contrib.lookup.MutableDenseHashTable(tf.int64, tf.int64, default_value=-1, empty_key=0,
                                                        deleted_key=-1)
        keys = tf.placeholder(tf.int64, [None])
        insert = table.insert(keys, keys * 10)
        found = table.lookup(keys)
        with tf.Session() as s:
            s.run(insert, {keys: [5, 6, 7]})
            s.run(table.remove(tf.constant([6], tf.int64)))
            np.testing.assert_array_equal(s.run(found, {keys: [5, 6, 7, 8]}), [50, -1, 70, -1])
            assert s.run(table.size()) == 2
            with pytest.raises(tf.errors.InvalidArgumentError, match="Using the empty_key as a table key"):
                s.run(insert, {keys: [0]})
            with pytest.raises(tf.errors.InvalidArgumentError, match="Using the deleted_key as a table key"):
                s.run(found, {keys: [-1]})


def test_wrong_key_dtype_is_refused():
    with tf.Graph().as_default():
        table = tf.contrib.lookup.MutableHashTable(tf.string, tf.int64, -1)
        with pytest.raises((TypeError, ValueError), match="string"):
            table.lookup(tf.constant([1, 2], tf.int64))
        with pytest.raises(TypeError, match="Signature mismatch. Keys must be dtype"):
            table.remove(tf.constant([1], tf.int64))
        with pytest.raises(TypeError, match="Signature mismatch. Keys must be dtype"):
            tf.contrib.lookup.HashTable(tf.contrib.lookup.KeyValueTensorInitializer(["a"], [1]), -1).lookup(
                tf.constant([1]))


def test_index_to_string_tables(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_bytes(b"emerson\nlake\npalmer\n")
    with tf.Graph().as_default():
        ids = tf.constant([1, 5, 0], tf.int64)
        from_tensor = tf.contrib.lookup.index_to_string_table_from_tensor(["brain", "salad", "surgery"])
        from_file = tf.contrib.lookup.index_to_string_table_from_file(str(path), default_value="?")
        to_id = tf.contrib.lookup.index_table_from_tensor(["brain", "salad"], num_oov_buckets=0)
        with tf.Session() as s:
            s.run(tf.tables_initializer())
            a, b, c = s.run([from_tensor.lookup(ids), from_file.lookup(ids), to_id.lookup(tf.constant(["salad", "x"]))])
    assert a.tolist() == [b"salad", b"UNK", b"brain"]
    assert b.tolist() == [b"lake", b"?", b"emerson"]
    assert c.tolist() == [1, -1]


def test_a_lookup_op_of_another_key_dtype_is_tfs_signature_error():
    """A graph (as an imported GraphDef may hold) whose LookupTableFindV2 takes int64 keys for a
    string table: the op fails with TF's signature mismatch, naming it."""
    with tf.Graph().as_default():
        table = tf.contrib.lookup.MutableHashTable(tf.string, tf.int64, -1)
        bad = make_op("LookupTableFindV2", [table.resource_handle, tf.constant([1], tf.int64),
                                            tf.constant(-1, tf.int64)], {"Tin": tf.int64, "Tout": tf.int64},
                      name="bad_find").outputs[0]
        with tf.Session() as s:
            with pytest.raises(tf.errors.InvalidArgumentError,
                               match=r"LookupTableFindV2 \(bad_find\): Signature mismatch, have: resource, int64, "
                                     r"int64->int64 expected: resource, string, int64->int64"):
                s.run(bad)


def test_id_table_with_hash_buckets():
    """Keys of the table keep their ids; others get the table's size + TF's Fingerprint64 bucket
    (the same ids StaticVocabularyTable gives, which test_lookup_tables.py checks against TF)."""
    with tf.Graph().as_default():
        inner = tf.contrib.lookup.HashTable(
            tf.contrib.lookup.KeyValueTensorInitializer(["a", "b"], np.array([0, 1], np.int64)), -1)
        table = tf.contrib.lookup.IdTableWithHashBuckets(inner, 3)
        vocab = tf.lookup.StaticVocabularyTable(
            tf.lookup.KeyValueTensorInitializer(["a", "b"], np.array([0, 1], np.int64)), 3)
        keys = tf.constant(["b", "zebra", "a", "yak"])
        with tf.Session() as s:
            s.run(tf.tables_initializer())
            got, want, size = s.run([table.lookup(keys), vocab.lookup(keys), table.size()])
    assert got.tolist()[0] == 1 and got.tolist()[2] == 0 and all(2 <= i < 5 for i in got.tolist()[1::2])
    assert got.tolist() == want.tolist() and size == 5


def test_a_saver_saves_and_restores_a_mutable_table_under_tfs_names(tmp_path):
    """checkpoint=True (the default): the Saver keeps the entries as "<name>-keys" / "<name>-values"
    (the names TF's Saver gives them) and a restore replaces the table's contents."""
    with tf.Graph().as_default():
        table = tf.contrib.lookup.MutableHashTable(tf.string, tf.int64, default_value=-1, name="vocab")
        untracked = tf.contrib.lookup.MutableHashTable(tf.string, tf.int64, -1, name="scratch", checkpoint=False)
        fill = table.insert(tf.constant(["a", "b"]), tf.constant([1, 2], tf.int64))
        saver = tf.train.Saver()
        with tf.Session() as sess:
            sess.run([fill, untracked.insert(tf.constant(["z"]), tf.constant([9], tf.int64))])
            path = saver.save(sess, str(tmp_path / "model"))
            sess.run(table.insert(tf.constant(["c"]), tf.constant([3], tf.int64)))
            saver.restore(sess, path)
            np.testing.assert_array_equal(sess.run(table.lookup(tf.constant(["a", "b", "c"]))), [1, 2, -1])
            assert sess.run(table.size()) == 2
    assert dict(tf.train.list_variables(path)) == {"vocab-keys": [2], "vocab-values": [2]}
    reader = tf.train.load_checkpoint(path)
    keys, values = reader.get_tensor("vocab-keys"), reader.get_tensor("vocab-values")
    assert dict(zip(keys.tolist(), values.tolist())) == {b"a": 1, b"b": 2}


def test_a_restored_table_of_the_wrong_value_shape_is_refused(tmp_path):
    with tf.Graph().as_default():
        table = tf.contrib.lookup.MutableHashTable(tf.int64, tf.float32, [0.0, 0.0], name="t")
        with tf.Session() as sess:
            with pytest.raises(tf.errors.InvalidArgumentError, match="Expected shape \\[2, 2\\] for values"):
                sess.run(table.restore_from([tf.constant([1, 2], tf.int64), tf.constant([1.0, 2.0])]))
