"""tf.saved_model (TF1's API): signatures and TensorInfos as TF builds them, the SavedModel layout
and its atomic writing, TF's errors for bad input, SavedModels TensorFlow 2.21 wrote loaded and
run with TF's outputs (fixtures/record_tf_saved_models.py), and ours as TF loaded them
(fixtures/record_tf_load_of_ours.py)."""
from __future__ import annotations

import json
import os
import shutil

import numpy as np
import pytest

import tensorweave as tf
from fixtures.recorded import assert_same, decode
from fixtures.tw_saved_models import EXPORTS, export
from tensorweave.framework import errors
from tensorweave.framework.op_def_registry import OP_DEFS
from tensorweave.ops.registry import load_all
from tensorweave.framework.tf_protos import SavedModel, meta_graph_pb2, types_pb2
from tensorweave.ops.checkpoint.reader import TENSORFLOW, checkpoint_format
from tensorweave.ops.tensor_proto import from_proto
from tensorweave.saved_model.loader import parse_saved_model

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")
TF_MODELS = os.path.join(FIXTURES, "tf_saved_models")
with open(os.path.join(TF_MODELS, "values.json")) as _f:
    TF_RECORDED = json.load(_f)["models"]


def tf_saved_model(name: str):
    return parse_saved_model(os.path.join(TF_MODELS, name))


# -- constants, TensorInfos and signatures ---------------------------------------------------------
def test_constants_are_tf_values_under_both_names():
    sm = tf.saved_model
    assert (sm.SERVING, sm.TRAINING, sm.GPU, sm.TPU) == ("serve", "train", "gpu", "tpu")
    assert sm.tag_constants.SERVING is sm.SERVING
    assert sm.DEFAULT_SERVING_SIGNATURE_DEF_KEY == "serving_default"
    assert sm.signature_constants.PREDICT_METHOD_NAME == "tensorflow/serving/predict"
    assert (sm.CLASSIFY_INPUTS, sm.CLASSIFY_OUTPUT_CLASSES, sm.CLASSIFY_OUTPUT_SCORES) == ("inputs", "classes",
                                                                                          "scores")
    assert (sm.REGRESS_INPUTS, sm.REGRESS_OUTPUTS, sm.PREDICT_OUTPUTS) == ("inputs", "outputs", "outputs")
    assert (sm.ASSETS_KEY, sm.MAIN_OP_KEY, sm.LEGACY_INIT_OP_KEY) == ("saved_model_assets", "saved_model_main_op",
                                                                    "legacy_init_op")
    assert (sm.constants.SAVED_MODEL_FILENAME_PB, sm.VARIABLES_DIRECTORY, sm.VARIABLES_FILENAME,
            sm.ASSETS_DIRECTORY, sm.SAVED_MODEL_SCHEMA_VERSION) == ("saved_model.pb", "variables", "variables",
                                                                   "assets", 1)
    assert tf.compat.v1.saved_model.load is sm.loader.load
    assert sm.Builder is sm.builder.SavedModelBuilder
    assert sm.contains_saved_model is sm.maybe_saved_model_directory


def test_predict_signature_equals_the_one_tensorflow_wrote():
    want = tf_saved_model("mlp").meta_graphs[0].signature_def["serving_default"]
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 4], name="x")
        probs = tf.nn.softmax(tf.layers.dense(x, 3), name="probs")
        label = tf.argmax(probs, axis=1, name="label")
        vocab = tf.identity(tf.constant("v"), name="vocab")
        got = tf.saved_model.predict_signature_def({"x": x}, {"probs": probs, "label": label, "vocab": vocab})
    assert got == want


def test_tensor_info_of_dense_and_sparse_tensors_and_back():
    with tf.Graph().as_default() as g:
        x = tf.placeholder(tf.int64, [2, None], name="x")
        sp = tf.sparse_placeholder(tf.float32, [3, 4], name="sp")
        info = tf.saved_model.utils.build_tensor_info(x)
        assert (info.name, info.dtype) == ("x:0", types_pb2.DT_INT64)
        assert [d.size for d in info.tensor_shape.dim] == [2, -1]
        sparse = tf.saved_model.build_tensor_info(sp)
        assert sparse.WhichOneof("encoding") == "coo_sparse"
        assert (sparse.coo_sparse.values_tensor_name, sparse.coo_sparse.indices_tensor_name,
                sparse.coo_sparse.dense_shape_tensor_name) == (sp.values.name, sp.indices.name, sp.dense_shape.name)
        assert sparse.dtype == types_pb2.DT_FLOAT
        assert tf.saved_model.get_tensor_from_tensor_info(info) is x
        back = tf.saved_model.utils.get_tensor_from_tensor_info(sparse, graph=g)
        assert isinstance(back, tf.SparseTensor)
        assert (back.indices, back.values, back.dense_shape) == (sp.indices, sp.values, sp.dense_shape)
        with pytest.raises(KeyError):
            tf.saved_model.get_tensor_from_tensor_info(meta_graph_pb2.TensorInfo(name="nope:0"))
        with pytest.raises(ValueError, match="Invalid TensorInfo.encoding"):
            tf.saved_model.get_tensor_from_tensor_info(meta_graph_pb2.TensorInfo())


def test_classification_regression_and_validity():
    sm = tf.saved_model
    with tf.Graph().as_default():
        examples = tf.placeholder(tf.string, [None], name="examples")
        scores = tf.placeholder(tf.float32, [None, 2], name="scores")
        classes = tf.placeholder(tf.string, [None, 2], name="classes")
        cls = sm.classification_signature_def(examples, classes, scores)
        assert cls.method_name == "tensorflow/serving/classify"
        assert sorted(cls.outputs) == ["classes", "scores"] and cls.inputs["inputs"].name == "examples:0"
        reg = sm.regression_signature_def(examples, scores)
        assert (reg.method_name, reg.outputs["outputs"].name) == ("tensorflow/serving/regress", "scores:0")
        pred = sm.predict_signature_def({"a": scores}, {"b": classes})
        assert all(sm.is_valid_signature(s) for s in (cls, reg, pred))
        assert not sm.is_valid_signature(None)
        assert not sm.is_valid_signature(sm.build_signature_def({}, {}, "tensorflow/serving/predict"))
        bad = sm.build_signature_def({"inputs": sm.build_tensor_info(scores)}, reg.outputs,
                                     "tensorflow/serving/regress")
        assert not sm.is_valid_signature(bad)   # a regress input must be strings
        with pytest.raises(ValueError, match="Regression input tensors must be of type string"):
            sm.regression_signature_def(scores, scores)
        with pytest.raises(ValueError, match="Classification scores must be a float Tensor"):
            sm.classification_signature_def(examples, None, classes)
        with pytest.raises(ValueError, match="Prediction `inputs` cannot be None or empty"):
            sm.predict_signature_def({}, {"b": classes})
        with_default = sm.build_signature_def({"a": sm.build_tensor_info(scores)}, {}, "m",
                                              defaults={"a": tf.constant([1.5, 2.0])})
        enum, value = from_proto(with_default.defaults["a"])
        assert enum == types_pb2.DT_FLOAT and value.tolist() == [1.5, 2.0]


def test_main_op_initializes_global_and_local_variables():
    with tf.Graph().as_default(), tf.Session() as sess:
        v = tf.Variable(3.0)
        local = tf.Variable(5.0, collections=[tf.GraphKeys.LOCAL_VARIABLES])
        sess.run(tf.saved_model.main_op.main_op())
        assert sess.run([v, local]) == [3.0, 5.0]
        sess.run(v.assign(7.0))
        sess.run(tf.saved_model.main_op_with_restore(v.assign_add(1.0).name.split(":")[0]))
        assert sess.run(v) == 4.0   # reinitialized to 3, then the "restore" op added 1


# -- the file and bad input ------------------------------------------------------------------------
def test_contains_saved_model(tmp_path):
    assert tf.saved_model.contains_saved_model(os.path.join(TF_MODELS, "mlp"))
    assert not tf.saved_model.contains_saved_model(str(tmp_path))
    assert not tf.saved_model.maybe_saved_model_directory(str(tmp_path / "nowhere"))
    (tmp_path / "saved_model.pbtxt").write_text("")
    assert tf.saved_model.loader.maybe_saved_model_directory(tmp_path)


def test_builder_refuses_a_directory_that_is_not_empty(tmp_path):
    (tmp_path / "x").write_text("keep me")
    with pytest.raises(AssertionError, match="Export directory already exists, and isn't empty"):
        tf.saved_model.Builder(str(tmp_path))
    empty = tmp_path / "empty"
    empty.mkdir()
    tf.saved_model.Builder(str(empty))   # an empty directory is fine, as in TF


def test_an_empty_saved_model_is_written_whole_and_parses(tmp_path):
    export_dir = str(tmp_path / "export")
    builder = tf.saved_model.builder.SavedModelBuilder(export_dir)
    assert os.listdir(export_dir) == []
    path = builder.save()
    assert path == os.path.join(export_dir, "saved_model.pb").encode()
    assert sorted(os.listdir(tmp_path)) == ["export"]   # the temporary sibling was renamed into place
    assert parse_saved_model(export_dir) == SavedModel(saved_model_schema_version=1)


@pytest.mark.parametrize("content", [b"\x0a\xff\xff\xff\xff\x0f", b"garbage that is not a protobuf \xff"])
def test_a_corrupt_saved_model_pb_is_an_error_naming_the_file(tmp_path, content):
    shutil.copytree(os.path.join(TF_MODELS, "linear"), tmp_path / "m")
    pb = tmp_path / "m" / "saved_model.pb"
    pb.write_bytes(content)
    with tf.Graph().as_default(), tf.Session() as sess:
        with pytest.raises(IOError, match=f"Cannot parse file {pb}"):
            tf.saved_model.loader.load(sess, ["serve"], str(tmp_path / "m"))


def test_a_truncated_saved_model_pb_is_an_error_naming_the_file(tmp_path):
    shutil.copytree(os.path.join(TF_MODELS, "linear"), tmp_path / "m")
    pb = tmp_path / "m" / "saved_model.pb"
    pb.write_bytes(pb.read_bytes()[:1000])
    with pytest.raises(IOError, match=f"Cannot parse file {pb}"):
        parse_saved_model(str(tmp_path / "m"))


def test_a_missing_saved_model_is_an_error_naming_both_files(tmp_path):
    with tf.Graph().as_default(), tf.Session() as sess:
        with pytest.raises(IOError, match=r"SavedModel file does not exist at: .*"
                                          r"\{saved_model.pbtxt\|saved_model.pb\}"):
            tf.saved_model.load(sess, ["serve"], str(tmp_path))


def test_tags_not_found_is_tf_runtime_error():
    with tf.Graph().as_default(), tf.Session() as sess:
        with pytest.raises(RuntimeError) as e:
            tf.saved_model.loader.load(sess, ["serve", "gpu"], os.path.join(TF_MODELS, "mlp"))
        assert str(e.value).startswith("MetaGraphDef associated with tags 'serve', 'gpu' could not be found in "
                                       "SavedModel. To inspect available tag-sets in the SavedModel, please use "
                                       "the SavedModel CLI: `saved_model_cli`")
        assert "available_tags: [{'serve'}]" in str(e.value)
        assert sess.graph.get_operations() == []   # nothing imported


# -- SavedModels TensorFlow wrote ------------------------------------------------------------------
def run_signature(sess, meta_graph_def, key: str, feeds: dict) -> dict:
    """The signature's outputs ({output key: value}) for {input key: value} feeds."""
    sig = meta_graph_def.signature_def[key]
    keys = sorted(sig.outputs)
    values = sess.run([sig.outputs[k].name for k in keys], {sig.inputs[k].name: v for k, v in feeds.items()})
    return dict(zip(keys, values))


def ref_variable_ops_missing() -> list:
    load_all()
    return [op for op in ("VariableV2", "Assign") if op not in OP_DEFS]


@pytest.mark.parametrize("name", sorted(TF_RECORDED))
def test_tensorflow_saved_model_loads_and_computes_what_tf_computed(name):
    if name == "refvar" and ref_variable_ops_missing():
        pytest.skip(f"ref variables: ops {ref_variable_ops_missing()} are not registered yet")
    record = TF_RECORDED[name]
    with tf.Graph().as_default() as g, tf.Session() as sess:
        meta = tf.saved_model.loader.load(sess, record["tags"], os.path.join(TF_MODELS, name))
        assert list(meta.meta_info_def.tags) == record["tags"]
        outputs = run_signature(sess, meta, record["signature"], {k: decode(v) for k, v in record["feeds"].items()})
        assert sorted(outputs) == sorted(record["outputs"])
        for key, want in record["outputs"].items():
            assert_same([outputs[key]], [want])
        assert g.get_collection(tf.GraphKeys.GLOBAL_VARIABLES)


def test_tensorflow_assets_are_fed_to_the_main_op():
    """The MLP's main op read its asset (vocab.txt) into a local variable: the loader fed the asset
    tensor the path of the copy under assets/, not the path it was exported from."""
    record = TF_RECORDED["mlp"]
    export_dir = os.path.join(TF_MODELS, "mlp")
    meta_graph_def = tf_saved_model("mlp").meta_graphs[0]
    assert not meta_graph_def.asset_file_def   # TF1's builder lists assets in a collection only
    assert [a.type_url for a in meta_graph_def.collection_def["saved_model_assets"].any_list.value] == [
        "type.googleapis.com/tensorflow.AssetFileDef"]
    with tf.Graph().as_default(), tf.Session() as sess:
        meta = tf.saved_model.load(sess, ["serve"], export_dir)
        vocab = run_signature(sess, meta, "serving_default", {"x": decode(record["feeds"]["x"])})["vocab"]
    assert vocab == decode(record["outputs"]["vocab"])[()] == b"alpha\nbeta\ngamma\n"


def test_import_scope_prefixes_the_loaded_graph():
    record = TF_RECORDED["linear"]
    with tf.Graph().as_default() as g, tf.Session() as sess:
        meta = tf.saved_model.loader.load(sess, ["serve"], os.path.join(TF_MODELS, "linear"), import_scope="m")
        sig = meta.signature_def["serving_default"]
        assert sig.inputs["features"].name == "features:0"   # the returned proto is not rewritten, as in TF
        x = tf.saved_model.get_tensor_from_tensor_info(sig.inputs["features"], import_scope="m")
        y = tf.saved_model.get_tensor_from_tensor_info(sig.outputs["y"], graph=g, import_scope="m")
        assert (x.name, y.name) == ("m/features:0", "m/y:0")
        assert_same([sess.run(y, {x: decode(record["feeds"]["features"])})], [record["outputs"]["y"]])


# -- SavedModels we export, as TensorFlow loaded them ----------------------------------------------
OURS = os.path.join(FIXTURES, "tf_load_of_ours")
with open(os.path.join(OURS, "values.json")) as _f:
    OURS_RECORDED = json.load(_f)["exports"]


def files_under(root: str) -> list:
    return sorted(os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root) for f in fs)


@pytest.mark.parametrize("name", sorted(OURS_RECORDED))
def test_our_loader_computes_what_tensorflow_computed_from_our_export(name):
    record = OURS_RECORDED[name]
    with tf.Graph().as_default(), tf.Session() as sess:
        meta = tf.saved_model.loader.load(sess, record["tags"], os.path.join(OURS, name))
        outputs = run_signature(sess, meta, record["signature"], {k: decode(v) for k, v in record["feeds"].items()})
    assert sorted(outputs) == sorted(record["outputs"])
    for key, want in record["outputs"].items():
        assert_same([outputs[key]], [want])


@pytest.mark.parametrize("name", sorted(OURS_RECORDED))
def test_we_still_export_what_tensorflow_loaded(tmp_path, name):
    model, how = EXPORTS[name]
    spec = export(model, how, str(tmp_path / name), str(tmp_path))
    committed = os.path.join(OURS, name)
    assert files_under(str(tmp_path / name)) == files_under(committed)
    assert sorted(os.listdir(tmp_path)) == sorted([name] + (["vocab.txt"] if "vocab" in OURS_RECORDED[name]["outputs"]
                                                            else []))   # no temporary directory left behind
    ours, theirs = parse_saved_model(str(tmp_path / name)), parse_saved_model(committed)
    assert ours.saved_model_schema_version == 1 and len(ours.meta_graphs) == 1
    meta, recorded_meta = ours.meta_graphs[0], theirs.meta_graphs[0]
    assert list(meta.meta_info_def.tags) == spec["tags"]
    assert dict(meta.signature_def) == dict(recorded_meta.signature_def)
    assert [[n.name, n.op] for n in meta.graph_def.node] == OURS_RECORDED[name]["nodes"]   # TF's import of it
    assert sorted(meta.collection_def) == sorted(recorded_meta.collection_def)
    assert meta.saver_def == recorded_meta.saver_def
    prefix = str(tmp_path / name / "variables" / "variables")
    assert checkpoint_format(prefix, "test") == TENSORFLOW
    reader, recorded = tf.train.NewCheckpointReader(prefix), tf.train.NewCheckpointReader(
        os.path.join(committed, "variables", "variables"))
    assert reader.get_variable_to_shape_map() == recorded.get_variable_to_shape_map()
    for key in reader.get_variable_to_shape_map():   # (trained by products whose float32 sums' order is the
        # CPU's kernel's, not defined: another CPU than the recording's may give the last bits otherwise)
        got, want = reader.get_tensor(key), recorded.get_tensor(key)
        assert got.dtype == want.dtype and np.abs(got - want).max() <= 1e-6 * np.abs(want).max(), key


def test_our_export_lists_its_asset_as_tf1_does_and_copies_it(tmp_path):
    export("mlp", "builder", str(tmp_path / "m"), str(tmp_path))
    meta = parse_saved_model(str(tmp_path / "m")).meta_graphs[0]
    assert not meta.asset_file_def
    (packed,) = meta.collection_def["saved_model_assets"].any_list.value
    assert packed.type_url == "type.googleapis.com/tensorflow.AssetFileDef"
    asset = meta_graph_pb2.AssetFileDef.FromString(packed.value)
    assert (asset.filename, asset.tensor_info.name) == ("vocab.txt", "vocab_path:0")
    assert (tmp_path / "m" / "assets" / "vocab.txt").read_bytes() == (tmp_path / "vocab.txt").read_bytes()
    assert list(meta.collection_def["saved_model_main_op"].node_list.value) == ["main_op"]
    os.remove(tmp_path / "vocab.txt")   # the loader reads the copy
    with tf.Graph().as_default(), tf.Session() as sess:
        loaded = tf.saved_model.load(sess, ["serve"], str(tmp_path / "m"))
        outputs = run_signature(sess, loaded, "serving_default", {"x": np.zeros((1, 4), np.float32)})
    assert outputs["vocab"] == b"cat\ndog\nemu\n"


# -- the builder -----------------------------------------------------------------------------------
def linear_session(values=(1.0, 2.0, 3.0)):
    x = tf.placeholder(tf.float32, [None, 3], name="x")
    w = tf.Variable(np.array(values, np.float32).reshape(3, 1), name="w")
    y = tf.matmul(x, w, name="y")
    sess = tf.Session()
    sess.run(tf.global_variables_initializer())
    return sess, x, y, w


def load_and_run(export_dir, tags=("serve",), key="serving_default"):
    with tf.Graph().as_default(), tf.Session() as sess:
        meta = tf.saved_model.load(sess, list(tags), export_dir)
        return run_signature(sess, meta, key, {"x": np.ones((2, 3), np.float32)})


def test_variables_are_tensorflow_format_whatever_the_environment_says(tmp_path, monkeypatch):
    monkeypatch.setenv("TENSORWEAVE_CHECKPOINT_FORMAT", "safetensors")
    with tf.Graph().as_default():
        sess, x, y, w = linear_session()
        tf.saved_model.simple_save(sess, str(tmp_path / "m"), {"x": x}, {"y": y})
        own = tf.train.Saver([w])   # a saver of the user's: writes ours
        builder = tf.saved_model.Builder(str(tmp_path / "u"))
        builder.add_meta_graph_and_variables(sess, ["serve"], {"serving_default": tf.saved_model.predict_signature_def(
            {"x": x}, {"y": y})}, saver=own)
        builder.save()
        assert own.saver_def.save_tensor_name and checkpoint_format(own.save(sess, str(tmp_path / "c")), "t") == \
            "safetensors"
    for export_dir in ("m", "u"):
        assert checkpoint_format(str(tmp_path / export_dir / "variables" / "variables"), "t") == TENSORFLOW
        assert load_and_run(str(tmp_path / export_dir))["y"].tolist() == [[6.0], [6.0]]


def test_several_meta_graphs_share_the_variables_and_load_by_their_tags(tmp_path):
    export_dir = str(tmp_path / "m")
    builder = tf.saved_model.Builder(export_dir)
    with tf.Graph().as_default():
        sess, x, y, _ = linear_session()
        with pytest.raises(AssertionError, match="has not been saved yet"):
            builder.add_meta_graph(["train"])
        builder.add_meta_graph_and_variables(sess, ["serve"], {"serving_default": tf.saved_model.predict_signature_def(
            {"x": x}, {"y": y})})
        with pytest.raises(AssertionError, match="already been saved"):
            builder.add_meta_graph_and_variables(sess, ["serve"])
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 3], name="x")
        w = tf.Variable(np.zeros((3, 1), np.float32), name="w")
        doubled = tf.multiply(tf.matmul(x, w), 2.0, name="doubled")
        builder.add_meta_graph(["train", "gpu"], {"double": tf.saved_model.predict_signature_def({"x": x},
                                                                                               {"y": doubled})})
    builder.save(as_text=True)
    assert sorted(os.listdir(export_dir)) == ["saved_model.pbtxt", "variables"]
    assert load_and_run(export_dir)["y"].tolist() == [[6.0], [6.0]]
    assert load_and_run(export_dir, ("gpu", "train"), "double")["y"].tolist() == [[12.0], [12.0]]


def test_builder_refuses_bad_signatures_and_main_ops(tmp_path):
    builder = tf.saved_model.Builder(str(tmp_path / "m"))
    with tf.Graph().as_default():
        sess, x, y, _ = linear_session()
        with pytest.raises(AssertionError, match="must have the dtype field set"):
            builder.add_meta_graph_and_variables(sess, ["serve"], {"s": tf.saved_model.build_signature_def(
                {"x": meta_graph_pb2.TensorInfo(name="x:0")})})
        with pytest.raises(KeyError, match="__saved_model_init_op"):
            builder.add_meta_graph_and_variables(sess, ["serve"], {"__saved_model_init_op": tf.saved_model.
                                                                   predict_signature_def({"x": x}, {"y": y})})
        with pytest.raises(TypeError, match="main_op"):
            builder.add_meta_graph_and_variables(sess, ["serve"], main_op=y)
        tf.add_to_collection("saved_model_main_op", tf.no_op())
        with pytest.raises(ValueError, match="Graph already contains one or more main ops"):
            builder.add_meta_graph_and_variables(sess, ["serve"], main_op=tf.no_op())


# -- bad variables -------------------------------------------------------------------------------
def test_a_corrupt_variables_index_is_an_error_naming_the_file(tmp_path):
    shutil.copytree(os.path.join(TF_MODELS, "linear"), tmp_path / "m")
    index = tmp_path / "m" / "variables" / "variables.index"
    data = bytearray(index.read_bytes())
    data[10] ^= 0xFF                                      # inside the first block: its crc no longer matches
    index.write_bytes(bytes(data))
    with tf.Graph().as_default(), tf.Session() as sess:
        with pytest.raises(errors.DataLossError, match=f"{index}.*checksum mismatch"):
            tf.saved_model.loader.load(sess, ["serve"], str(tmp_path / "m"))


def test_a_missing_variables_shard_is_an_error_naming_the_file(tmp_path):
    shutil.copytree(os.path.join(TF_MODELS, "linear"), tmp_path / "m")
    shard = tmp_path / "m" / "variables" / "variables.data-00000-of-00001"
    os.remove(shard)
    with tf.Graph().as_default(), tf.Session() as sess:
        with pytest.raises(errors.NotFoundError, match=f"{shard}"):
            tf.saved_model.loader.load(sess, ["serve"], str(tmp_path / "m"))
