"""tf.train.Saver and the checkpoint state file: TF's paths, max_to_keep and
keep_checkpoint_every_n_hours, the SaverDef names other programs drive it through, var_list
forms, meta graphs that run after import, and the `checkpoint` file's text format."""
from __future__ import annotations

import logging
import os
import threading
import time

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.train import saver as saver_module


def _model():
    x = tf.placeholder(tf.float32, [None, 2], name="x")
    w = tf.get_variable("w", [2, 1], initializer=tf.constant_initializer([[1.0], [-1.0]]))
    b = tf.get_variable("b", [1], initializer=tf.zeros_initializer())
    loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b - 1.0), name="loss")
    gs = tf.train.get_or_create_global_step()
    train = tf.train.MomentumOptimizer(0.1, 0.9).minimize(loss, global_step=gs)
    return x, w, b, gs, train


FEED = np.array([[1.0, 2.0], [3.0, -1.0]], np.float32)


def test_save_restore_round_trip_with_slots_and_global_step(tmp_path):
    with tf.Graph().as_default():
        x, w, b, gs, train = _model()
        saver = tf.train.Saver()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for _ in range(3):
                sess.run(train, {x: FEED})
            path = saver.save(sess, str(tmp_path / "model.ckpt"), global_step=gs)
            want = sess.run(tf.global_variables())
            assert path == str(tmp_path / "model.ckpt-3")
            for _ in range(2):
                sess.run(train, {x: FEED})
            saver.restore(sess, path)
            got = sess.run(tf.global_variables())
    for a, c in zip(want, got):
        np.testing.assert_array_equal(a, c)
    assert sorted(n for n, _ in tf.train.list_variables(str(tmp_path))) == [
        "b", "b/Momentum", "global_step", "w", "w/Momentum"]
    assert sorted(os.listdir(tmp_path)) == ["checkpoint", "model.ckpt-3.data-00000-of-00001", "model.ckpt-3.index",
                                            "model.ckpt-3.meta"]


def test_state_file_max_to_keep_and_last_checkpoints(tmp_path):
    with tf.Graph().as_default():
        v = tf.Variable(1.0, name="v")
        saver = tf.train.Saver(max_to_keep=2)
        with tf.Session() as sess:
            sess.run(v.initializer)
            paths = [saver.save(sess, str(tmp_path / "m"), global_step=i, write_meta_graph=(i == 3))
                     for i in range(1, 5)]
    assert saver.last_checkpoints == paths[2:]
    text = open(tmp_path / "checkpoint").read()
    assert text == (f'model_checkpoint_path: "{paths[3]}"\n'
                    f'all_model_checkpoint_paths: "{paths[2]}"\nall_model_checkpoint_paths: "{paths[3]}"\n')
    assert sorted(os.listdir(tmp_path)) == ["checkpoint", "m-3.data-00000-of-00001", "m-3.index", "m-3.meta",
                                            "m-4.data-00000-of-00001", "m-4.index"]
    assert tf.train.latest_checkpoint(str(tmp_path)) == paths[3]
    assert tf.train.checkpoint_exists(paths[2]) and not tf.train.checkpoint_exists(paths[0])
    # a restarted trainer takes over the kept list, and deletes them in turn
    with tf.Graph().as_default():
        v = tf.Variable(1.0, name="v")
        saver = tf.train.Saver(max_to_keep=2)
        saver.recover_last_checkpoints(tf.train.get_checkpoint_state(str(tmp_path)).all_model_checkpoint_paths)
        assert saver.last_checkpoints == paths[2:]
        with tf.Session() as sess:
            sess.run(v.initializer)
            saver.save(sess, str(tmp_path / "m"), global_step=5, write_meta_graph=False)
    assert not tf.train.checkpoint_exists(paths[2]) and not os.path.exists(paths[2] + ".meta")


def test_keep_checkpoint_every_n_hours_keeps_one_per_period(tmp_path):
    with tf.Graph().as_default():
        v = tf.Variable(1.0, name="v")
        saver = tf.train.Saver(max_to_keep=1, keep_checkpoint_every_n_hours=0.3 / 3600)
        with tf.Session() as sess:
            sess.run(v.initializer)
            saver.save(sess, str(tmp_path / "m"), global_step=1, write_meta_graph=False)
            saver.save(sess, str(tmp_path / "m"), global_step=2, write_meta_graph=False)   # 1 deleted
            time.sleep(0.35)
            saver.save(sess, str(tmp_path / "m"), global_step=3, write_meta_graph=False)
            saver.save(sess, str(tmp_path / "m"), global_step=4, write_meta_graph=False)   # 3 kept: period passed
    kept = sorted(n for n in os.listdir(tmp_path) if n.endswith(".index"))
    assert kept == ["m-3.index", "m-4.index"]


def test_saver_def_names_drive_save_and_restore_through_a_session(tmp_path):
    with tf.Graph().as_default() as g:
        v = tf.Variable([1.0, 2.0], name="v")
        saver = tf.train.Saver()
        sd = saver.as_saver_def()
        assert (sd.filename_tensor_name, sd.save_tensor_name, sd.restore_op_name) == (
            "save/Const:0", "save/control_dependency:0", "save/restore_all")
        assert tf.train.Saver(sharded=True).as_saver_def().save_tensor_name == "save_1/Identity:0"
        with tf.Session() as sess:
            sess.run(v.initializer)
            prefix = str(tmp_path / "driven")
            out = sess.run(sd.save_tensor_name, {sd.filename_tensor_name: prefix})
            assert out == prefix.encode()
            sess.run(v.assign([0.0, 0.0]))
            sess.run(g.get_operation_by_name(sd.restore_op_name), {sd.filename_tensor_name: prefix})
            np.testing.assert_array_equal(sess.run(v), [1.0, 2.0])


def test_var_list_as_dict_and_partitions(tmp_path):
    with tf.Graph().as_default():
        a = tf.Variable(np.arange(6.0).reshape(3, 2), name="a")
        emb = tf.get_variable("emb", initializer=tf.constant(np.arange(20.0).reshape(10, 2)),
                              partitioner=tf.fixed_size_partitioner(3))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            path = tf.train.Saver({"renamed": a, "table": emb}).save(sess, str(tmp_path / "d"))
            path2 = tf.train.Saver({"parts": list(emb)}, sharded=True).save(sess, str(tmp_path / "p"))
    reader = tf.train.NewCheckpointReader(path)
    assert sorted(reader.get_variable_to_shape_map()) == ["renamed", "table"]
    np.testing.assert_array_equal(reader.get_tensor("table"), np.arange(20.0).reshape(10, 2))
    np.testing.assert_array_equal(tf.train.load_variable(path2, "parts"), np.arange(20.0).reshape(10, 2))
    with tf.Graph().as_default():
        whole = tf.Variable(np.zeros((10, 2)), name="whole")
        with tf.Session() as sess:
            tf.train.Saver({"table": whole}).restore(sess, path)
            np.testing.assert_array_equal(sess.run(whole), np.arange(20.0).reshape(10, 2))


def test_saver_argument_errors(tmp_path):
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="No variables to save"):
            tf.train.Saver()
        assert tf.train.Saver(allow_empty=True).save(tf.Session(), str(tmp_path / "e")) is None
        v = tf.Variable(1.0, name="v")
        with pytest.raises(ValueError, match="build cannot be deferred"):
            tf.train.Saver([v], defer_build=True)
        deferred = tf.train.Saver(defer_build=True)
        with pytest.raises(RuntimeError, match="should be called before save"):
            deferred.save(tf.Session(), str(tmp_path / "x"))
        with pytest.raises(ValueError, match="At least two variables have the same name: v"):
            tf.train.Saver([v, v.value()])
        with pytest.raises(ValueError, match="Parent directory of .* doesn't exist"):
            with tf.Session() as sess:
                sess.run(v.initializer)
                tf.train.Saver([v]).save(sess, str(tmp_path / "no" / "such" / "m"))


def test_pad_step_number_latest_filename_and_relative_paths(tmp_path):
    with tf.Graph().as_default():
        v = tf.Variable(1.0, name="v")
        with tf.Session() as sess:
            sess.run(v.initializer)
            p = tf.train.Saver(pad_step_number=True, save_relative_paths=True).save(
                sess, str(tmp_path / "m"), global_step=7, latest_filename="latest", write_meta_graph=False)
    assert p == str(tmp_path / "m-00000007")
    assert open(tmp_path / "latest").read().startswith('model_checkpoint_path: "m-00000007"')
    assert tf.train.latest_checkpoint(str(tmp_path), "latest") == p


def test_meta_graph_import_runs_restores_and_keeps_collections(tmp_path):
    with tf.Graph().as_default():
        x, w, b, gs, train = _model()
        pred = tf.matmul(x, w, name="pred")
        tf.add_to_collection("pred", pred)
        tf.add_to_collection("numbers", 3)
        tf.add_to_collection("numbers", 4)
        tf.add_to_collection("words", "hello")
        tf.summary.scalar("loss_summary", tf.get_default_graph().get_tensor_by_name("loss:0"))
        saver = tf.train.Saver()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(train, {x: FEED})
            path = saver.save(sess, str(tmp_path / "model.ckpt"), global_step=gs)
            sess.run(train, {x: FEED})
            want_pred = sess.run(pred, {x: FEED})
            want_w = sess.run(w)
    meta = tf.MetaGraphDef()
    meta.ParseFromString(open(path + ".meta", "rb").read())        # TF's MetaGraphDef proto
    assert meta.saver_def.restore_op_name == "save/restore_all"
    assert list(meta.collection_def["numbers"].int64_list.value) == [3, 4]
    assert list(meta.collection_def["words"].bytes_list.value) == [b"hello"]
    assert list(meta.collection_def["pred"].node_list.value) == ["pred:0"]
    with tf.Graph().as_default() as g:
        restorer = tf.train.import_meta_graph(path + ".meta", clear_devices=True)
        assert [v.op.name for v in tf.trainable_variables()] == ["w", "b"]
        assert tf.trainable_variables()[0] is tf.global_variables()[0]     # one Variable per VariableDef
        assert len(tf.get_collection(tf.GraphKeys.SUMMARIES)) == 1
        assert tf.get_collection("numbers") == [3, 4] and tf.get_collection("words") == [b"hello"]
        with tf.Session() as sess:
            restorer.restore(sess, path)
            sess.run(tf.get_collection(tf.GraphKeys.TRAIN_OP)[0], {"x:0": FEED})   # the restored train op runs
            np.testing.assert_allclose(sess.run(tf.trainable_variables()[0]), want_w, rtol=1e-6)
            np.testing.assert_allclose(sess.run(tf.get_collection("pred")[0], {"x:0": FEED}), want_pred, rtol=1e-6)
            assert sess.run(tf.train.get_global_step()) == 2
            new = tf.identity(g.get_tensor_by_name("loss:0") * 2.0, name="loss")   # new ops never collide
            assert new.op.name == "loss_1"
    with tf.Graph().as_default():
        meta = tf.train.export_meta_graph(str(tmp_path / "text.meta"), as_text=True,
                                          graph=_import_graph(path + ".meta"))
        assert open(tmp_path / "text.meta").read().startswith("meta_info_def {")      # protobuf text format
        tf.train.import_meta_graph(str(tmp_path / "text.meta"), import_scope="copy")
        assert tf.get_default_graph().get_tensor_by_name("copy/loss:0") is not None
        assert tf.get_collection("pred")[0].name == "copy/pred:0"
        assert not meta.HasField("saver_def")


def test_a_finalized_graphs_meta_graph_is_the_same_with_every_checkpoint_until_a_collection_changes(tmp_path):
    # Saver.save of a finalized graph (a MonitoredSession's) writes bytes it made once, while the
    # ops, collections and SaverDef are those they were made of
    x, w, _, gs, train = _model()
    saver = tf.train.Saver()
    prefix = str(tmp_path / "model.ckpt")

    def meta(step):
        with open(f"{prefix}-{step}.meta", "rb") as f:
            return f.read()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        tf.get_default_graph().finalize()
        saver.save(sess, prefix, global_step=1)
        sess.run(train, {x: [[1.0, 2.0]]})
        saver.save(sess, prefix, global_step=2)
        fresh = tf.train.export_meta_graph(saver_def=saver.saver_def).SerializeToString(deterministic=True)
        assert meta(1) == meta(2) == fresh
        tf.add_to_collection("notes", "after finalize")
        saver.save(sess, prefix, global_step=3)
        saved = tf.MetaGraphDef()
        saved.ParseFromString(meta(3))
        assert list(saved.collection_def["notes"].bytes_list.value) == [b"after finalize"]
        assert meta(3) == tf.train.export_meta_graph(saver_def=saver.saver_def).SerializeToString(deterministic=True)
    with tf.Graph().as_default():
        restorer = tf.train.import_meta_graph(f"{prefix}-3.meta")
        with tf.Session() as sess:
            restorer.restore(sess, f"{prefix}-3")
            assert sess.run(tf.train.get_global_step()) == 1
            assert [v.op.name for v in tf.global_variables()][:2] == ["w", "b"]


def test_meta_graph_with_a_cond_imports_and_runs(tmp_path):
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 2], name="x")
        pred = tf.cond(tf.reduce_sum(x) > 0, lambda: x * 2.0, lambda: -x)
        tf.add_to_collection("pred", pred)
        tf.train.export_meta_graph(str(tmp_path / "cond.meta"))
    with tf.Graph().as_default():
        tf.train.import_meta_graph(str(tmp_path / "cond.meta"))
        with tf.Session() as sess:
            np.testing.assert_allclose(sess.run(tf.get_collection("pred")[0], {"x:0": FEED}), FEED * 2.0)
            np.testing.assert_allclose(sess.run(tf.get_collection("pred")[0], {"x:0": -FEED}), FEED)


def _import_graph(meta_path):
    g = tf.Graph()
    with g.as_default():
        tf.train.import_meta_graph(meta_path)
    return g


def test_checkpoint_state_text_format_and_relative_paths(tmp_path):
    state = tf.train.generate_checkpoint_state_proto("ckpts", "ckpts/model-2", ["ckpts/model-1"])
    assert state.model_checkpoint_path == "model-2"
    assert state.all_model_checkpoint_paths == ["model-1", "model-2"]
    d = str(tmp_path)
    odd = os.path.join(d, 'we"ird\\name')
    tf.train.update_checkpoint_state(d, odd, [os.path.join(d, "a"), odd])
    assert open(os.path.join(d, "checkpoint")).read().splitlines()[0] == \
        'model_checkpoint_path: "' + d + '/we\\"ird\\\\name"'
    got = tf.train.get_checkpoint_state(d)
    assert got.model_checkpoint_path == odd and got.all_model_checkpoint_paths == [os.path.join(d, "a"), odd]
    with open(os.path.join(d, "checkpoint"), "w") as f:
        f.write("model_checkpoint_path: unquoted\n")
    assert tf.train.get_checkpoint_state(d) is None      # unparsable: ignored, as TF does
    assert tf.train.latest_checkpoint(str(tmp_path / "empty")) is None


def test_savers_collection_travels_in_the_meta_graph(tmp_path):
    """MonitoredTrainingSession's Scaffold puts its Saver in SAVERS: every save writes the meta graph,
    and the Saver must come back from it (it used to be skipped with a warning at each save)."""
    records: list = []
    handler = logging.Handler()
    handler.emit = records.append
    logging.getLogger("tensorweave").addHandler(handler)
    try:
        with tf.Graph().as_default():
            tf.Variable(3.0, name="v")
            saver = tf.train.Saver(sharded=True)
            tf.add_to_collection(tf.GraphKeys.SAVERS, saver)
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                path = saver.save(sess, str(tmp_path / "m"), global_step=1)
    finally:
        logging.getLogger("tensorweave").removeHandler(handler)
    assert not [r for r in records if "serializing" in r.getMessage()]
    with tf.Graph().as_default():
        tf.train.import_meta_graph(path + ".meta")
        (restored,) = tf.get_collection(tf.GraphKeys.SAVERS)
        assert isinstance(restored, tf.train.Saver)
        with tf.Session() as sess:
            restored.restore(sess, path)
            assert sess.run(tf.global_variables()[0]) == 3.0


def test_a_save_beside_another_leaves_the_later_step_latest(tmp_path, monkeypatch):
    """A Supervisor's checkpoint thread saves at its start; on a loaded machine that save (step 1)
    could write the state file after the program's final save (step 40) had, so that
    latest_checkpoint named step 1 (slim.learning.train, CI). Saves of one Saver take turns."""
    with tf.Graph().as_default():
        step = tf.train.get_or_create_global_step()
        tf.Variable(1.0, name="v")
        saver = tf.train.Saver()
        prefix = str(tmp_path / "model.ckpt")
        writing = threading.Event()
        update = saver_module.update_checkpoint_state_internal

        def slow_update(**kwargs):   # (the thread's save, paused between its files and the state file)
            if kwargs["model_checkpoint_path"].endswith("-1"):
                writing.set()
                time.sleep(0.5)
            return update(**kwargs)
        monkeypatch.setattr(saver_module, "update_checkpoint_state_internal", slow_update)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(step.assign(1))
            thread = threading.Thread(target=saver.save, args=(sess, prefix), kwargs={"global_step": step})
            thread.start()
            assert writing.wait(30)
            sess.run(step.assign(40))
            saver.save(sess, prefix, global_step=step)
            thread.join()
    assert tf.train.latest_checkpoint(str(tmp_path)) == prefix + "-40"
