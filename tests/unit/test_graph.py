"""Graph building: naming, scopes, control dependencies, collections, devices, finalize."""
from __future__ import annotations

import threading

import pytest

import tensorweave as tf
from tensorweave.framework.graph_def import graph_to_graph_def
from tensorweave.ops.tensor_proto import from_proto


def test_op_names_follow_tf_uniquifying_rules():
    a = tf.constant(1)
    b = tf.constant(2)
    c = a + b
    d = a + c
    e = tf.add(a, b)
    # unique case-insensitively, as TF
    assert [a.op.name, b.op.name, c.op.name, d.op.name, e.op.name] == ["Const", "Const_1", "add", "add_1", "Add_2"]
    assert c.name == "add:0"
    assert tf.constant(3, name="add").op.name == "add_3"


def test_name_scope_nesting_reentry_and_reset():
    g = tf.get_default_graph()
    with tf.name_scope("outer") as outer:
        assert outer == "outer/"
        x = tf.constant(1, name="x")
        with tf.name_scope("inner") as inner:
            y = tf.constant(1, name="y")
        assert inner == "outer/inner/"
        with tf.name_scope(None):
            z = tf.constant(1, name="z")
    with tf.name_scope("outer") as again:
        w = tf.constant(1, name="w")
    with tf.name_scope(outer):
        v = tf.constant(1, name="v")
    assert again == "outer_1/"
    assert [x.op.name, y.op.name, z.op.name, w.op.name, v.op.name] == [
        "outer/x", "outer/inner/y", "z", "outer_1/w", "outer/v"]
    assert g.get_name_scope() == ""
    # A scope name marks the name used: an op named like it is uniquified.
    assert tf.constant(1, name="outer").op.name == "outer_2"


def test_name_scope_default_name_and_invalid_name():
    with tf.name_scope(None, "Default") as s:
        assert s == "Default/"
    with pytest.raises(ValueError, match="not a valid scope name"):
        with tf.name_scope("bad name!"):
            pass


def test_get_by_name_and_graph_element_errors():
    g = tf.get_default_graph()
    c = tf.constant(1.0, name="c")
    assert g.get_operation_by_name("c") is c.op
    assert g.get_tensor_by_name("c:0") is c
    with pytest.raises(KeyError, match="does not exist"):
        g.get_tensor_by_name("nope:0")
    with pytest.raises(KeyError, match="exists but only has 1 outputs"):
        g.get_tensor_by_name("c:1")
    with pytest.raises(ValueError):
        g.get_operation_by_name("c:0")
    with pytest.raises(ValueError):
        g.get_tensor_by_name("c")


def test_finalize_forbids_new_ops():
    g = tf.Graph()
    with g.as_default():
        tf.constant(1)
        g.finalize()
        assert g.finalized
        with pytest.raises(RuntimeError, match="finalized"):
            tf.constant(2)


def test_default_graph_stack_is_thread_local():
    g = tf.Graph()
    seen = {}
    with g.as_default():
        assert tf.get_default_graph() is g

        def other():
            seen["graph"] = tf.get_default_graph()
        t = threading.Thread(target=other)
        t.start()
        t.join()
    assert seen["graph"] is not g
    assert tf.get_default_graph() is not g


def test_reset_default_graph_inside_nested_graph_fails():
    with tf.Graph().as_default():
        with pytest.raises(AssertionError):
            tf.reset_default_graph()


def test_tensors_from_other_graph_are_rejected():
    g1, g2 = tf.Graph(), tf.Graph()
    with g1.as_default():
        a = tf.constant(1)
    with g2.as_default():
        with pytest.raises(ValueError, match="same graph"):
            tf.identity(a)


def test_control_dependencies_nesting_none_and_dominance():
    a = tf.constant(1, name="a")
    b = tf.constant(2, name="b")
    with tf.control_dependencies([a]):
        c = tf.constant(3, name="c")
        with tf.control_dependencies([b.op]):
            d = tf.constant(4, name="d")
        with tf.control_dependencies(None):
            e = tf.constant(5, name="e")
        # f consumes c, which already depends on a: no duplicate control input
        f = tf.identity(c, name="f")
    assert c.op.control_inputs == [a.op]
    assert set(d.op.control_inputs) == {a.op, b.op}
    assert e.op.control_inputs == []
    assert f.op.control_inputs == []


def test_control_dependencies_order_execution():
    with tf.Session() as sess:
        x = tf.placeholder(tf.int32, [])
        with tf.control_dependencies([tf.identity(x, name="dep")]):
            y = tf.constant(7)
        with pytest.raises(tf.errors.InvalidArgumentError, match="Placeholder"):
            sess.run(y)
        assert sess.run(y, {x: 1}) == 7


def test_collections():
    g = tf.get_default_graph()
    a = tf.constant(1, name="scope_a/c")
    b = tf.constant(1, name="other/c")
    tf.add_to_collection("mine", a)
    tf.add_to_collections(["mine", "theirs"], b)
    assert tf.get_collection("mine") == [a, b]
    assert tf.get_collection("mine", scope="scope_a") == [a]
    ref = tf.get_collection_ref("theirs")
    ref.append(a)
    assert g.get_collection("theirs") == [b, a]
    copy = tf.get_collection("theirs")
    copy.append(b)
    assert len(g.get_collection("theirs")) == 2
    assert set(g.get_all_collection_keys()) == {"mine", "theirs"}
    assert tf.get_collection("missing") == []
    assert tf.GraphKeys.GLOBAL_VARIABLES == "variables"
    assert tf.GraphKeys.TRAINABLE_VARIABLES == "trainable_variables"
    assert tf.GraphKeys.UPDATE_OPS == "update_ops"


@pytest.mark.parametrize("spec, expected", [
    ("/job:ps/task:0", "/job:ps/task:0"),
    ("/job:worker/replica:0/task:1/device:CPU:0", "/job:worker/replica:0/task:1/device:CPU:0"),
    ("/cpu:0", "/device:CPU:0"),
    ("/device:GPU:1", "/device:GPU:1"),
    ("/gpu:1", "/device:GPU:1"),
    ("", ""),
])
def test_device_strings(spec, expected):
    with tf.device(spec):
        c = tf.constant(1)
    assert c.op.device == expected
    assert tf.DeviceSpec.from_string(spec).to_string() == expected


def test_device_scopes_merge_inner_over_outer():
    with tf.device("/job:worker/task:1"):
        a = tf.constant(1)
        with tf.device("/cpu:0"):
            b = tf.constant(1)
            with tf.device("/job:ps"):
                c = tf.constant(1)
        with tf.device(None):
            d = tf.constant(1)
        with tf.device(""):
            e = tf.constant(1)
    assert a.op.device == "/job:worker/task:1"
    assert b.op.device == "/job:worker/task:1/device:CPU:0"
    assert c.op.device == "/job:ps/task:1/device:CPU:0"
    assert d.op.device == ""
    assert e.op.device == "/job:worker/task:1"


def test_device_functions():
    def fn(op):
        return "/job:ps/task:0" if op.type == "Const" else "/job:worker/task:0"
    with tf.device("/device:CPU:0"):
        with tf.device(fn):
            a = tf.constant(1)
            b = tf.identity(a)
    assert a.op.device == "/job:ps/task:0/device:CPU:0"
    assert b.op.device == "/job:worker/task:0/device:CPU:0"


def test_device_spec_api():
    d = tf.DeviceSpec.from_string("/job:ps/task:2")
    assert (d.job, d.task, d.replica, d.device_type) == ("ps", 2, None, None)
    merged = d.merge_from(tf.DeviceSpec(device_type="CPU", device_index=0))
    assert merged.to_string() == "/job:ps/task:2/device:CPU:0"
    assert d.replace(task=3).to_string() == "/job:ps/task:3"
    with pytest.raises(ValueError):
        tf.DeviceSpec.from_string("/job:ps/bogus:1")


def test_colocate_with_overrides_device_scope():
    with tf.device("/job:ps/task:0"):
        a = tf.constant(1, name="a")
    with tf.device("/job:worker/task:0"):
        with tf.colocate_with(a):
            b = tf.identity(a, name="b")
        c = tf.identity(a, name="c")
    assert b.op.device == "/job:ps/task:0"
    assert b.op.colocation_groups() == ["loc:@a"]
    assert c.op.device == "/job:worker/task:0"
    assert c.op.colocation_groups() == ["loc:@c"]


def test_tensor_properties_and_python_protocols():
    x = tf.placeholder(tf.float32, [None, 3], name="x")
    assert x.dtype == tf.float32 and x.dtype == "float32"
    assert x.shape.as_list() == [None, 3]
    assert x.get_shape().ndims == 2
    x.set_shape([2, 3])
    assert x.shape.as_list() == [2, 3]
    with pytest.raises(ValueError):
        x.set_shape([4, 3])
    with pytest.raises(TypeError, match="bool"):
        bool(x)
    with pytest.raises(TypeError):
        tf.placeholder(tf.float32)[0] if False else iter(tf.placeholder(tf.float32))
    assert x.op.type == "Placeholder"
    assert x.consumers() == []
    y = tf.identity(x)
    assert x.consumers() == [y.op]
    assert {x: 1}[x] == 1  # tensors hash by identity


def test_graph_def_is_plain_data():
    a = tf.constant([1.0, 2.0], name="a")
    b = tf.identity(a, name="b")
    gd = graph_to_graph_def(tf.get_default_graph())     # what the runtime executes
    names = [n.name for n in gd.node]
    assert names == ["a", "b"]
    assert gd.node[1].input == ("a",)
    assert gd.node[0].attr["dtype"] == "float32"
    assert gd.node[0].attr["value"].tolist() == [1.0, 2.0]
    assert b.op.node_def.op == "Identity"


def test_as_graph_def_is_tfs_graph_def_proto():
    # the same facts on TF's GraphDef, which Graph.as_graph_def returns
    a = tf.constant([1.0, 2.0], name="a")
    tf.identity(a, name="b")
    gd = tf.get_default_graph().as_graph_def()
    assert isinstance(gd, tf.GraphDef)
    assert [n.name for n in gd.node] == ["a", "b"]
    assert [n.op for n in gd.node] == ["Const", "Identity"]
    assert list(gd.node[1].input) == ["a"]
    assert gd.node[0].attr["dtype"].type == tf.float32.as_datatype_enum
    assert from_proto(gd.node[0].attr["value"].tensor)[1].tolist() == [1.0, 2.0]
    assert gd.node[1].attr["T"].type == tf.float32.as_datatype_enum     # derived from its input, as TF writes it
    assert gd.versions.producer == 27 and gd.versions.min_consumer == 0


def test_shape_errors_name_the_op():
    # Placeholder with default checks its shape against the default value at build time.
    with pytest.raises(ValueError, match="'pwd'"):
        tf.placeholder_with_default([1.0, 2.0], shape=[3], name="pwd")


def test_unregistered_op_type_names_the_type():
    with pytest.raises(tf.errors.NotFoundError, match="NoSuchOp"):
        tf.get_default_graph().create_op("NoSuchOp", [])


def test_registering_a_gradient_twice_is_a_key_error():
    with pytest.raises(KeyError, match="Registering two gradient with name 'Add'"):
        tf.RegisterGradient("Add")(lambda op, grad: [grad, grad])


def test_dtype_str_and_repr_match_tf():
    assert str(tf.float32) == "<dtype: 'float32'>"
    assert repr(tf.float32) == "tf.float32"
