"""tf.import_graph_def of GraphDefs TensorFlow 2.21 wrote (tests/unit/fixtures/tf_graph_defs/, from
record_tf_graph_defs.py): each imported and run, against the values TF computed; input_map,
return_elements, name scopes, default attributes, and TF's errors."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest
from google.protobuf import message, text_format

import tensorweave as tf
from tensorweave.framework import errors
from fixtures.recorded import decode, load_graph_def
from tensorweave.framework.op_def_registry import OP_DEFS
from tensorweave.ops.registry import load_all
from tensorweave.ops.tf_op_defs import TF_ATTR_DEFAULTS

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "tf_graph_defs")
with open(os.path.join(HERE, "values.json")) as _f:
    RECORDED = json.load(_f)


def load(name: str):
    return load_graph_def(os.path.join(HERE, name), tf.GraphDef())


def assert_like_tf(got, recorded: dict) -> None:
    want = decode(recorded)
    got = np.asarray(got)
    assert got.shape == want.shape
    if want.dtype == object:
        assert got.tolist() == want.tolist()
    elif want.dtype.kind == "f":
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=2e-6, atol=2e-5)
    else:
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("name, file", [("mlp", "mlp.pb"), ("cnn", "cnn.pb"), ("attrs", "attrs.pbtxt")])
def test_tf_written_graph_imports_and_runs_as_tf_ran_it(name, file):
    case = RECORDED[name]
    with tf.Graph().as_default() as g:
        assert tf.import_graph_def(load(file)) is None
        ops = g.get_operations()
        assert all(op.name.startswith("import/") for op in ops)
        assert sorted({op.type for op in ops}) == case["ops"]
        feeds = {"import/" + k: decode(v) for k, v in case["feeds"].items()}
        with tf.Session() as sess:
            for key, recorded in case["fetches"].items():
                assert_like_tf(sess.run("import/" + key, feeds), recorded)


def test_shapes_come_from_our_shape_functions():
    with tf.Graph().as_default():
        probs, hidden = tf.import_graph_def(load("mlp.pb"), return_elements=["probs:0", "hidden:0"], name="")
        assert probs.shape.as_list() == [None, 3] and probs.dtype == tf.float32
        assert hidden.shape.as_list() == [None, 8]
    with tf.Graph().as_default() as g:
        tf.import_graph_def(load("attrs.pbtxt"), name="")
        assert g.get_tensor_by_name("mean:0").shape.as_list() == [1, 3, 1]
        assert g.get_tensor_by_name("squeezed:0").shape.as_list() == [3, 1]
        assert g.get_tensor_by_name("big_sum:0").dtype == tf.int64
        assert g.get_tensor_by_name("words:0").dtype == tf.string
        assert [c.name for c in g.get_operation_by_name("after").control_inputs] == ["mean"]
        assert g.get_operation_by_name("joined").get_attr("N") == 2


def test_input_map_replaces_a_placeholder():
    case = RECORDED["mlp"]
    x_value = decode(case["feeds"]["x:0"])
    with tf.Graph().as_default() as g:
        x = tf.constant(x_value, name="features")
        probs, = tf.import_graph_def(load("mlp.pb"), input_map={"x": x}, return_elements=["probs:0"],
                                     name="model")
        assert probs.name == "model/probs:0"
        assert g.get_operation_by_name("model/MatMul").inputs[0] is x
        with tf.Session() as sess:
            assert_like_tf(sess.run(probs), case["fetches"]["probs:0"])


def test_input_map_of_a_control_input():
    with tf.Graph().as_default() as g:
        marker = tf.no_op(name="marker")
        tf.import_graph_def(load("attrs.pbtxt"), input_map={"^mean": marker}, name="m")
        assert g.get_operation_by_name("m/after").control_inputs == [marker]


def test_return_elements_give_operations_and_tensors_in_order():
    with tf.Graph().as_default() as g:
        op, t, x = tf.import_graph_def(load("cnn.pb"), return_elements=["logits", "pool:0", "images:0"])
        assert isinstance(op, tf.Operation) and op.name == "import/logits" and op.type == "MatMul"
        assert isinstance(t, tf.Tensor) and t is g.get_tensor_by_name("import/pool:0")
        assert x.op.type == "Placeholder"


def test_name_scopes():
    graph_def = load("mlp.pb")
    with tf.Graph().as_default() as g:
        tf.import_graph_def(graph_def)
        tf.import_graph_def(graph_def)          # the scope is made unique, as a name scope is
        with tf.name_scope("outer"):
            tf.import_graph_def(graph_def, name="inner")
        tf.import_graph_def(graph_def, name="")
        for name in ("import/probs", "import_1/probs", "outer/inner/probs", "probs"):
            assert g.get_operation_by_name(name).type == "Softmax"
        # colocation groups follow the prefix; names made later never collide with imported ones
        assert tf.constant(1.0, name="probs").op.name == "probs_1"


def test_default_attrs_tf_leaves_out_are_filled_in():
    graph_def = tf.GraphDef()
    text_format.Parse("""
      node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } } }
      node { name: "axes" op: "Const" attr { key: "dtype" value { type: DT_INT32 } }
             attr { key: "value" value { tensor { dtype: DT_INT32 tensor_shape { dim { size: 1 } } int_val: 1 } } } }
      node { name: "m" op: "Mean" input: "x" input: "axes" attr { key: "T" value { type: DT_FLOAT } } }
      node { name: "k" op: "Const" attr { key: "dtype" value { type: DT_FLOAT } }
             attr { key: "value" value { tensor { dtype: DT_FLOAT tensor_shape { dim { size: 1 } dim { size: 1 }
                                                  dim { size: 1 } dim { size: 1 } } float_val: 2 } } } }
      node { name: "img" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } }
             attr { key: "shape" value { shape { dim { size: -1 } dim { size: 2 } dim { size: 2 }
                                                 dim { size: 1 } } } } }
      node { name: "conv" op: "Conv2D" input: "img" input: "k" attr { key: "T" value { type: DT_FLOAT } }
             attr { key: "strides" value { list { i: [1, 1, 1, 1] } } } attr { key: "padding" value { s: "VALID" } } }
    """, graph_def)
    with tf.Graph().as_default():
        m, conv = tf.import_graph_def(graph_def, return_elements=["m:0", "conv:0"], name="")
        assert m.op.get_attr("keep_dims") is False and m.shape.ndims is None
        assert conv.op.get_attr("data_format") == "NHWC" and conv.shape.as_list() == [None, 2, 2, 1]
        with tf.Session() as sess:
            np.testing.assert_allclose(sess.run(m, {"x:0": [[1.0, 3.0], [5.0, 7.0]]}), [2.0, 6.0])
            np.testing.assert_allclose(sess.run(conv, {"img:0": np.ones((1, 2, 2, 1), np.float32)}),
                                       np.full((1, 2, 2, 1), 2.0))


def test_unknown_op_is_not_found_naming_op_and_node():
    graph_def = tf.GraphDef()
    graph_def.node.add(name="mystery", op="FooBarOp")
    assert RECORDED["errors"]["unknown_op"].startswith("NotFoundError: Op type not registered 'FooBarOp'")
    with tf.Graph().as_default() as g:
        with pytest.raises(errors.NotFoundError, match="Op type not registered 'FooBarOp'.*'mystery'"):
            tf.import_graph_def(graph_def)
        assert g.get_operations() == []


def test_missing_input_node_is_value_error_as_tf():
    graph_def = tf.GraphDef()
    node = graph_def.node.add(name="y", op="Identity", input=["nowhere"])
    node.attr["T"].type = tf.float32.as_datatype_enum
    message_tf = RECORDED["errors"]["missing_input"].split(": ", 1)[1]
    with tf.Graph().as_default():
        with pytest.raises(ValueError) as info:
            tf.import_graph_def(graph_def)
        assert str(info.value) == message_tf


def test_return_element_and_input_map_key_not_in_graph_are_value_errors_as_tf():
    graph_def = load("mlp.pb")
    with tf.Graph().as_default() as g:
        with pytest.raises(ValueError) as info:
            tf.import_graph_def(graph_def, return_elements=["nope:0"])
        assert "ValueError: " + str(info.value) == RECORDED["errors"]["bad_return"]
        with pytest.raises(ValueError, match="Requested return node 'nope' not found"):
            tf.import_graph_def(graph_def, return_elements=["nope"])
        with pytest.raises(ValueError) as info:
            tf.import_graph_def(graph_def, input_map={"nope:0": tf.constant(1.0)})
        assert "ValueError: " + str(info.value) == RECORDED["errors"]["unused_input_map"]
        assert [op.type for op in g.get_operations()] == ["Const"]     # nothing was imported


def test_garbage_or_truncated_pb_is_decode_error_as_tf():
    with open(os.path.join(HERE, "mlp.pb"), "rb") as f:
        data = f.read()
    assert RECORDED["errors"]["truncated"].startswith("DecodeError: ")
    with pytest.raises(message.DecodeError):
        tf.GraphDef().ParseFromString(data[:37])
    with pytest.raises(message.DecodeError):
        tf.GraphDef().ParseFromString(b"\xff\xff\xff garbage")
    with pytest.raises(TypeError, match="GraphDef"):
        tf.import_graph_def(data)


def test_function_gradients_and_newer_producer_are_refused_by_name():
    graph_def = load("mlp.pb")
    graph_def.library.gradient.add(function_name="cond_true_12", gradient_func="cond_true_12_grad")
    with tf.Graph().as_default():
        with pytest.raises(errors.UnimplementedError, match="function gradients.*cond_true_12"):
            tf.import_graph_def(graph_def)
    graph_def = load("mlp.pb")
    graph_def.versions.producer = 99999
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="producer version 99999 is newer"):
            tf.import_graph_def(graph_def)


def test_nodes_in_any_order_and_cycles():
    graph_def = load("mlp.pb")
    shuffled = tf.GraphDef()
    shuffled.node.extend(reversed(graph_def.node))
    with tf.Graph().as_default():
        probs, = tf.import_graph_def(shuffled, return_elements=["probs:0"])
        with tf.Session() as sess:
            out = sess.run(probs, {"import/x:0": decode(RECORDED["mlp"]["feeds"]["x:0"])})
        assert_like_tf(out, RECORDED["mlp"]["fetches"]["probs:0"])
    cyclic = tf.GraphDef()
    for name, source in (("a", "b"), ("b", "a")):
        cyclic.node.add(name=name, op="Identity", input=[source]).attr["T"].type = tf.float32.as_datatype_enum
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="cycle"):
            tf.import_graph_def(cyclic)


def test_attr_values_round_trip_through_our_writer():
    # our GraphDef (Graph.as_graph_def, as tf.train.write_graph writes it) imports back
    with tf.Graph().as_default() as g:
        x = tf.placeholder(tf.float32, [None, 3], name="x")
        y = tf.reduce_sum(tf.strided_slice(x, [0, 1], [0, 3], end_mask=1) * 2.0, axis=1, keepdims=True, name="y")
        del y
    with tf.Graph().as_default():
        y, = tf.import_graph_def(g.as_graph_def(), return_elements=["y:0"], name="")
        assert y.shape.as_list() == [None, 1]
        with tf.Session() as sess:
            np.testing.assert_allclose(sess.run(y, {"x:0": [[1.0, 2.0, 3.0]]}), [[10.0]])


def test_public_proto_classes_are_tfs_messages():
    # TensorBoard's compiled copies of TF's protos: same fields, same wire and text formats
    node = tf.NodeDef(name="n", op="Const", input=["a:1", "^b"], device="/cpu:0")
    node.attr["value"].CopyFrom(tf.AttrValue(func=tf.NameAttrList(name="f")))
    graph_def = tf.GraphDef(node=[node])
    graph_def.versions.producer = 27
    assert tf.GraphDef.FromString(graph_def.SerializeToString()) == graph_def
    assert [f.name for f in tf.GraphDef.DESCRIPTOR.fields] == ["node", "versions", "version", "library", "debug_info"]
    assert tf.graph_util.import_graph_def is tf.import_graph_def


def test_devices_scope_and_colocation_as_tf():
    graph_def = tf.GraphDef()
    text_format.Parse("""
      node { name: "a" op: "Const" device: "/device:CPU:0" attr { key: "dtype" value { type: DT_FLOAT } }
             attr { key: "value" value { tensor { dtype: DT_FLOAT tensor_shape { } float_val: 3 } } } }
      node { name: "b" op: "Identity" input: "a" attr { key: "T" value { type: DT_FLOAT } } }
      node { name: "c" op: "Identity" input: "b" attr { key: "T" value { type: DT_FLOAT } }
             attr { key: "_class" value { list { s: "loc:@a" } } } }
    """, graph_def)
    with tf.Graph().as_default() as g:
        with tf.device("/job:ps/task:1"):
            tf.import_graph_def(graph_def, name="m")
        a, b, c = (g.get_operation_by_name("m/" + n) for n in "abc")
        assert a.device == "/job:ps/task:1/device:CPU:0"
        assert b.device == "/job:ps/task:1"
        assert c.device == a.device and c.get_attr("_class") == ["loc:@m/a"]
    with tf.Graph().as_default():
        c, = tf.import_graph_def(graph_def, return_elements=["c:0"])
        with tf.Session() as sess:
            assert sess.run(c) == 3.0
    graph_def.node[2].attr["_class"].list.s[:] = [b"loc:@elsewhere"]
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="colocation to an op that does not exist"):
            tf.import_graph_def(graph_def)


def test_name_collisions_under_name_empty_are_renamed_as_tf():
    with tf.Graph().as_default() as g:
        tf.constant(1.0, name="probs")
        returned = tf.import_graph_def(load("mlp.pb"), return_elements=["probs:0", "x"], name="")
        assert [r.name for r in returned] == RECORDED["uniquified"]["returned"]
        assert sorted(op.name for op in g.get_operations()) == sorted(RECORDED["uniquified"]["ops"])
        assert g.get_operation_by_name("probs_1").inputs[0].op.name == "BiasAdd_1"


def test_return_output_past_the_ops_outputs_is_value_error_as_tf():
    with tf.Graph().as_default():
        with pytest.raises(ValueError) as info:
            tf.import_graph_def(load("mlp.pb"), return_elements=["probs:3"])
        assert "ValueError: " + str(info.value) == RECORDED["errors"]["bad_return_index"]


def test_input_map_values_of_another_dtype_or_not_tensors():
    want = RECORDED["errors"]["input_map_dtype"].split(" of node ")[1].split(" ", 1)[1]   # after the node name
    with tf.Graph().as_default():
        with pytest.raises(ValueError) as info:
            tf.import_graph_def(load("mlp.pb"), input_map={"x:0": tf.zeros([5, 4], tf.int32)})
        assert str(info.value) == "Input 0 of node import/MatMul " + want
    x_value = decode(RECORDED["mlp"]["feeds"]["x:0"])
    with tf.Graph().as_default() as g:
        probs, = tf.import_graph_def(load("mlp.pb"), input_map={"x:0": x_value}, return_elements=["probs:0"])
        assert g.get_operation_by_name("import/MatMul").inputs[0].op.name == "import/_inputs/Const"
        with tf.Session() as sess:
            assert_like_tf(sess.run(probs), RECORDED["mlp"]["fetches"]["probs:0"])
        with pytest.raises(ValueError, match="requires a non-empty `name`"):
            tf.import_graph_def(load("mlp.pb"), input_map={"x:0": x_value}, name="")


def test_an_import_failing_midway_adds_nothing():
    """TF's importer adds all or nothing: a mapped tensor of the wrong dtype (found at MatMul, after
    the placeholder and constants were added) or a return output past an op's outputs (found after
    every op was added) leaves the graph's ops, names and consumer links as they were."""
    with tf.Graph().as_default() as g:
        wrong = tf.zeros([5, 4], tf.int32, name="wrong")
        before = [op.name for op in g.get_operations()]
        with pytest.raises(ValueError, match="incompatible with expected"):
            tf.import_graph_def(load("mlp.pb"), input_map={"x:0": wrong}, name="a")
        with pytest.raises(ValueError, match="Invalid return output 3"):
            tf.import_graph_def(load("mlp.pb"), return_elements=["probs:3"], name="b")
        assert [op.name for op in g.get_operations()] == before
        assert wrong.consumers() == []
        probs, = tf.import_graph_def(load("mlp.pb"), return_elements=["probs:0"], name="b")
        assert probs.name == "b_1/probs:0"     # the failed import's scope stays taken, as TF's does
        assert len(g.get_operations()) == len(before) + len(load("mlp.pb").node)


def test_colocation_follows_a_renamed_op():
    graph_def = tf.GraphDef()
    text_format.Parse("""
      node { name: "a" op: "Const" attr { key: "dtype" value { type: DT_FLOAT } }
             attr { key: "value" value { tensor { dtype: DT_FLOAT tensor_shape { } float_val: 3 } } } }
      node { name: "c" op: "Identity" input: "a" attr { key: "T" value { type: DT_FLOAT } }
             attr { key: "_class" value { list { s: "loc:@a" } } } }
    """, graph_def)
    with tf.Graph().as_default() as g:
        tf.constant(1.0, name="a")
        tf.import_graph_def(graph_def, name="")
        assert g.get_operation_by_name("c").get_attr("_class") == ["loc:@a_1"]
        assert g.get_operation_by_name("c").inputs[0].op.name == "a_1"


def test_attributes_tensorweave_cannot_hold_are_refused_by_name():
    graph_def = tf.GraphDef()
    node = graph_def.node.add(name="c", op="Const")
    node.attr["dtype"].type = 14                                    # DT_BFLOAT16
    node.attr["value"].tensor.dtype = 14
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="'c'.*holds a (dtype|tensor of dtype) bfloat16"):
            tf.import_graph_def(graph_def)
    node.attr["dtype"].type = tf.float32.as_datatype_enum
    node.attr["value"].tensor.dtype = tf.float32.as_datatype_enum
    node.attr["value"].tensor.tensor_shape.dim.add(size=4)
    node.attr["value"].tensor.tensor_content = b"\0" * 3
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="'value' holds a tensor TensorFlow refuses: Input size was 3"):
            tf.import_graph_def(graph_def)


def test_tf_op_defs_name_registered_ops():
    load_all()
    assert set(TF_ATTR_DEFAULTS) <= set(OP_DEFS)
    assert TF_ATTR_DEFAULTS["Conv2D"]["data_format"] == "NHWC"
    assert TF_ATTR_DEFAULTS["Placeholder"]["shape"].ndims is None
