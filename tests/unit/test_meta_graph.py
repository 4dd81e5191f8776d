"""tf.train.export_meta_graph / import_meta_graph in TensorFlow's MetaGraphDef format: the
collections as TF's CollectionDefs (VariableDefs with slice info, QueueRunnerDefs, SaverDefs,
names and values), export_scope and clear_devices, strip_default_attrs, and the errors for
files that are not meta graphs."""
from __future__ import annotations

import logging

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.framework.tf_protos import QueueRunnerDef, variable_pb2


def _parsed(path) -> tf.MetaGraphDef:
    meta = tf.MetaGraphDef()
    meta.ParseFromString(open(path, "rb").read())
    return meta


def test_variables_travel_as_tf_variable_defs_and_come_back_as_one_variable_each(tmp_path):
    with tf.Graph().as_default():
        v = tf.get_variable("v", [2], initializer=tf.constant_initializer([1.0, 2.0]))
        tf.get_variable("local", [], collections=[tf.GraphKeys.LOCAL_VARIABLES], trainable=False)
        vdef = v.to_proto()
        assert isinstance(vdef, variable_pb2.VariableDef)
        assert (vdef.variable_name, vdef.initializer_name, vdef.is_resource, vdef.trainable) == (
            "v:0", v.initializer.name, True, True)
        assert vdef.snapshot_name == v._snapshot.name and vdef.initial_value_name == v.initial_value.name
        again = tf.Variable(variable_def=vdef)
        assert again.name == "v:0" and again.dtype == tf.float32 and again.shape.as_list() == [2]
        tf.train.export_meta_graph(str(tmp_path / "m.meta"))
    meta = _parsed(tmp_path / "m.meta")
    (raw,) = meta.collection_def[tf.GraphKeys.TRAINABLE_VARIABLES].bytes_list.value
    assert variable_pb2.VariableDef.FromString(raw) == vdef
    assert len(meta.collection_def[tf.GraphKeys.LOCAL_VARIABLES].bytes_list.value) == 1
    with tf.Graph().as_default():
        tf.train.import_meta_graph(str(tmp_path / "m.meta"))
        (v,) = tf.trainable_variables()
        assert v is tf.global_variables()[0]
        assert [x.op.name for x in tf.local_variables()] == ["local"]
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            np.testing.assert_array_equal(sess.run(v), [1.0, 2.0])


def test_partitioned_variables_keep_their_slice_info_and_restore(tmp_path):
    with tf.Graph().as_default():
        with tf.variable_scope("scope", partitioner=tf.fixed_size_partitioner(3)):
            p = tf.get_variable("p", [6, 2], initializer=tf.random_normal_initializer())
        saver = tf.train.Saver()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            full = sess.run(tf.convert_to_tensor(p))
            path = saver.save(sess, str(tmp_path / "model"))
    with tf.Graph().as_default():
        restorer = tf.train.import_meta_graph(path + ".meta")
        parts = tf.global_variables()
        infos = [p._get_save_slice_info() for p in parts]
        assert [(i.full_name, i.full_shape, i.var_offset, i.var_shape) for i in infos] == [
            ("scope/p", [6, 2], [0, 0], [2, 2]), ("scope/p", [6, 2], [2, 0], [2, 2]),
            ("scope/p", [6, 2], [4, 0], [2, 2])]
        with tf.Session() as sess:
            restorer.restore(sess, path)
            np.testing.assert_array_equal(np.concatenate(sess.run(parts)), full)
            # a Saver built over the imported parts saves them under the full variable's name
            assert tf.train.Saver(parts).save(sess, str(tmp_path / "again"))
    assert [n for n, _ in tf.train.list_variables(str(tmp_path / "again"))] == ["scope/p"]


def test_queue_runners_travel_as_queue_runner_defs(tmp_path):
    with tf.Graph().as_default():
        q = tf.FIFOQueue(10, tf.float32, name="q")
        counter = tf.Variable(0.0, name="counter")
        tf.train.add_queue_runner(tf.train.QueueRunner(q, [q.enqueue(counter.assign_add(1.0))]))
        tf.add_to_collection("dequeue", q.dequeue())
        meta = tf.train.export_meta_graph(str(tmp_path / "m.meta"))
    (raw,) = meta.collection_def[tf.GraphKeys.QUEUE_RUNNERS].bytes_list.value
    qr_def = QueueRunnerDef.FromString(raw)
    assert qr_def.queue_name == "q" and qr_def.close_op_name == "q_Close"
    assert list(qr_def.queue_closed_exception_types) == [tf.errors.OUT_OF_RANGE]
    with tf.Graph().as_default():
        tf.train.import_meta_graph(str(tmp_path / "m.meta"), import_scope="copy")
        (qr,) = tf.get_collection(tf.GraphKeys.QUEUE_RUNNERS)
        assert qr.name == "copy/q" and qr.close_op.name == "copy/q_Close"
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            coord = tf.train.Coordinator()
            threads = qr.create_threads(sess, coord=coord, start=True)      # the imported runner fills the queue
            got = [sess.run(tf.get_collection("dequeue")[0]) for _ in range(3)]
            coord.request_stop()
            coord.join(threads)
    assert got == sorted(got) and got[0] >= 1.0


def test_export_scope_strips_names_and_refuses_inputs_from_outside(tmp_path):
    with tf.Graph().as_default():
        outside = tf.constant(1.0, name="outside")
        with tf.name_scope("net"):
            a = tf.constant(2.0, name="a")
            with tf.device("/cpu:0"):
                b = tf.multiply(a, 3.0, name="b")
        tf.add_to_collection("out", b)
        tf.add_to_collection("out", outside)
        meta = tf.train.export_meta_graph(export_scope="net", clear_devices=True)
        assert sorted(n.name for n in meta.graph_def.node) == ["a", "b", "b/y"]
        assert [n.device for n in meta.graph_def.node] == ["", "", ""]
        assert list(meta.collection_def["out"].node_list.value) == ["b:0"]
        with tf.name_scope("net/"):
            tf.add(a, outside, name="mixed")
        with pytest.raises(ValueError, match="net/mixed.*outside export_scope 'net'"):
            tf.train.export_meta_graph(export_scope="net")
    with tf.Graph().as_default():
        tf.train.import_meta_graph(meta, import_scope="copy")
        with tf.Session() as sess:
            assert sess.run(tf.get_collection("out")[0]) == 6.0


def test_strip_default_attrs_and_meta_info(tmp_path):
    with tf.Graph().as_default():
        tf.nn.conv2d(tf.zeros([1, 4, 4, 1]), tf.zeros([2, 2, 1, 1]), [1, 1, 1, 1], "SAME", name="conv")
        full = tf.train.export_meta_graph()
        stripped = tf.train.export_meta_graph(strip_default_attrs=True)
    conv = {n.name: n for n in full.graph_def.node}["conv"]
    stripped_conv = {n.name: n for n in stripped.graph_def.node}["conv"]
    assert conv.attr["data_format"].s == b"NHWC" and "data_format" not in stripped_conv.attr
    assert "padding" in stripped_conv.attr            # no default: kept
    assert stripped.meta_info_def.stripped_default_attrs and not full.meta_info_def.stripped_default_attrs
    assert full.meta_info_def.tensorflow_version
    with tf.Graph().as_default():
        tf.train.import_meta_graph(stripped)
        with tf.Session() as sess:
            assert sess.run("conv:0").shape == (1, 4, 4, 1)


def test_a_collection_tf_cannot_hold_is_left_out_with_tf_warning(caplog):
    with tf.Graph().as_default():
        tf.add_to_collection("objects", object())
        tf.add_to_collection("fine", 1.5)
        with caplog.at_level(logging.WARNING, logger="tensorweave"):
            meta = tf.train.export_meta_graph()
    assert "objects" not in meta.collection_def
    assert list(meta.collection_def["fine"].float_list.value) == [1.5]
    assert any("Issue encountered when serializing objects" in r.getMessage() for r in caplog.records)


def test_saver_speaks_saver_def_protos(tmp_path):
    with tf.Graph().as_default():
        tf.Variable(1.0, name="v")
        saver = tf.train.Saver(max_to_keep=2)
        saver_def = saver.as_saver_def()
        assert isinstance(saver_def, tf.train.SaverDef)
        assert (saver_def.version, saver_def.max_to_keep) == (tf.train.SaverDef.V2, 2)
        assert tf.train.SaverDef.FromString(saver_def.SerializeToString()) == saver_def
        again = tf.train.Saver(saver_def=saver_def)
        assert again.saver_def.restore_op_name == "save/restore_all"
        with pytest.raises(ValueError, match="saver_pb2.SaverDef"):
            tf.train.Saver(saver_def={"restore_op_name": "x"})
        with tf.name_scope("outer"):
            scoped = tf.train.Saver(name="inner")
        meta = saver.export_meta_graph(clear_extraneous_savers=True)
        assert scoped.to_proto(export_scope="outer").restore_op_name == "inner/restore_all"
        assert scoped.to_proto(export_scope="elsewhere") is None
    assert meta.saver_def == saver_def
    assert not [n for n in meta.graph_def.node if n.name.startswith("outer/")]


@pytest.mark.parametrize("content", [None, b"\x0a\xff\xff\xff", b"garbage that is not a proto {"])
def test_a_file_that_is_not_a_meta_graph_is_an_io_error_naming_it(tmp_path, content):
    path = tmp_path / "bad.meta"
    with tf.Graph().as_default():
        tf.Variable(1.0, name="v")
        good = tf.train.export_meta_graph().SerializeToString()
    path.write_bytes(good[:len(good) // 2] if content is None else content)      # None: a truncated file
    with tf.Graph().as_default():
        with pytest.raises(IOError, match="bad.meta"):
            tf.train.import_meta_graph(str(path))
    with pytest.raises(IOError, match="missing.meta does not exist"):
        tf.train.import_meta_graph(str(tmp_path / "missing.meta"))
