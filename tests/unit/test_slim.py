"""tf.contrib.slim and tf.contrib.framework: slim's variable names, layer outputs against numpy,
arg_scope, batch_norm's statistics and update ops, a TF-written checkpoint restored into a
slim-built model (values recorded from TF 2.21 by fixtures/record_tf_slim.py), training with
slim.learning.train and evaluating with slim.evaluation."""
from __future__ import annotations

import glob
import json
import os

import numpy as np
import pytest

import tensorweave as tf
from fixtures.recorded import decode

slim = tf.contrib.slim
pytestmark = pytest.mark.usefixtures("graph")
FIXTURE = os.path.join(os.path.dirname(__file__), "fixtures", "tf_slim_model")


def names(variables) -> list:
    return [v.op.name for v in variables]


def np_conv2d(x, w, stride=1, padding="SAME"):
    """NHWC cross-correlation (TF's conv2d) in numpy."""
    kh, kw = w.shape[:2]
    if padding == "SAME":
        oh, ow = -(-x.shape[1] // stride), -(-x.shape[2] // stride)
        ph = max((oh - 1) * stride + kh - x.shape[1], 0)
        pw = max((ow - 1) * stride + kw - x.shape[2], 0)
        x = np.pad(x, [(0, 0), (ph // 2, ph - ph // 2), (pw // 2, pw - pw // 2), (0, 0)])
    oh, ow = (x.shape[1] - kh) // stride + 1, (x.shape[2] - kw) // stride + 1
    out = np.zeros((x.shape[0], oh, ow, w.shape[3]))
    for i in range(oh):
        for j in range(ow):
            patch = x[:, i * stride:i * stride + kh, j * stride:j * stride + kw, :]
            out[:, i, j, :] = np.tensordot(patch, w, axes=([1, 2, 3], [0, 1, 2]))
    return out


# -- the model of fixtures/record_tf_slim.py, built with slim ------------------------------------
def slim_model(x, is_training):
    with slim.arg_scope([slim.conv2d, slim.separable_conv2d, slim.conv2d_transpose], padding="SAME"):
        with slim.arg_scope([slim.batch_norm], decay=0.9, is_training=is_training):
            net = slim.repeat(x, 1, slim.conv2d, 4, [3, 3], scope="conv1")
            with tf.variable_scope("conv1"):
                net = slim.conv2d(net, 4, [3, 3], normalizer_fn=slim.batch_norm, scope="conv1_2")
        net = slim.max_pool2d(net, [2, 2])
        net = slim.separable_conv2d(net, 5, [3, 3], depth_multiplier=2, scope="sep")
        net = slim.conv2d_transpose(net, 3, [3, 3], stride=2, scope="deconv")
    net = slim.avg_pool2d(net, [2, 2])
    net = slim.flatten(net)
    net = slim.stack(net, slim.fully_connected, [8, 6], scope="fc")
    return slim.fully_connected(net, 3, activation_fn=None, scope="logits")


def recorded() -> dict:
    with open(os.path.join(FIXTURE, "values.json")) as f:
        return json.load(f)


def test_a_tf_checkpoint_restores_into_a_slim_model_and_computes_what_tf_computes():
    want = recorded()
    x_value = decode(want["input"])
    x = tf.placeholder(tf.float32, [None, 6, 6, 3])
    logits = slim_model(x, is_training=False)
    assert sorted(names(slim.get_model_variables())) == want["variables"]
    assert names(slim.get_model_variables()) == names(tf.global_variables())
    init_fn = slim.assign_from_checkpoint_fn(os.path.join(FIXTURE, "model.ckpt"), slim.get_model_variables())
    with tf.Session() as sess:
        init_fn(sess)
        np.testing.assert_allclose(sess.run(logits, {x: x_value}), decode(want["inference_logits"]),
                                   rtol=1e-4, atol=1e-5)


def test_batch_norm_in_training_uses_batch_statistics_and_updates_moving_averages_as_tf():
    want = recorded()
    x = tf.placeholder(tf.float32, [None, 6, 6, 3])
    logits = slim_model(x, is_training=True)
    updates = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
    assert len(updates) == 2
    mean, variance = (slim.get_unique_variable(f"conv1/conv1_2/BatchNorm/moving_{k}") for k in ("mean", "variance"))
    assert mean not in tf.trainable_variables() and mean in slim.get_model_variables()
    assign_op, feed = slim.assign_from_checkpoint(os.path.join(FIXTURE, "model.ckpt"), slim.get_variables())
    with tf.Session() as sess:
        sess.run(assign_op, feed)
        out, _ = sess.run([logits, updates], {x: decode(want["input"])})
        np.testing.assert_allclose(out, decode(want["training_logits"]), rtol=1e-4, atol=1e-5)
        m, v = sess.run([mean, variance])
    np.testing.assert_allclose(m, decode(want["moving_mean_after"]), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(v, decode(want["moving_variance_after"]), rtol=1e-5, atol=1e-6)


def test_restore_subsets_and_missing_variables():
    x = tf.placeholder(tf.float32, [None, 6, 6, 3])
    slim_model(x, is_training=False)
    tf.get_variable("extra/weights", [2])
    path = os.path.join(FIXTURE, "model.ckpt")
    restore = slim.get_variables_to_restore(exclude=["logits", "extra"])
    assert "logits/weights" not in names(restore) and "fc/fc_2/weights" in names(restore)
    assert names(slim.get_variables_to_restore(include=["fc"], exclude=["fc/fc_2"])) == \
        ["fc/fc_1/weights", "fc/fc_1/biases"]
    with pytest.raises(ValueError, match=r"Checkpoint is missing variable \[extra/weights\]"):
        slim.assign_from_checkpoint(path, slim.get_variables())
    with pytest.raises(TypeError, match="include is provided but is not a list or a tuple"):
        slim.get_variables_to_restore(include="fc")
    init_fn = slim.assign_from_checkpoint_fn(path, slim.get_variables(), ignore_missing_vars=True)
    with tf.Session() as sess:
        sess.run(tf.variables_initializer(slim.get_variables("extra")))
        init_fn(sess)
        reader = tf.train.NewCheckpointReader(path)
        np.testing.assert_array_equal(sess.run(slim.get_unique_variable("logits/biases")),
                                      reader.get_tensor("logits/biases"))
    # a dict maps checkpoint names to variables of other names
    renamed = tf.get_variable("renamed_biases", [3])
    init_fn = slim.assign_from_checkpoint_fn(path, {"logits/biases": renamed})
    with tf.Session() as sess:
        init_fn(sess)
        np.testing.assert_array_equal(sess.run(renamed), reader.get_tensor("logits/biases"))
    with pytest.raises(ValueError, match="var_list cannot be empty"):
        slim.assign_from_checkpoint_fn(path, [])


# -- arg_scope ------------------------------------------------------------------------------------
@slim.add_arg_scope
def configured(a, b=1, c=2):
    return a, b, c


def unconfigured(a, b=1):
    return a, b


def test_arg_scope_defaults_nesting_and_explicit_arguments():
    assert configured(0) == (0, 1, 2)
    with slim.arg_scope([configured], b=10, c=20) as outer:
        assert configured(0) == (0, 10, 20)
        assert configured(0, c=5) == (0, 10, 5)   # explicit arguments win
        with slim.arg_scope([configured], c=30):
            assert configured(0) == (0, 10, 30)   # the inner scope overrides, the outer's b stays
        assert configured(0) == (0, 10, 20)
    assert configured(0) == (0, 1, 2)
    with slim.arg_scope(outer):   # a scope re-entered from its dict
        assert configured(0) == (0, 10, 20)
        assert slim.current_arg_scope() == outer
    assert slim.has_arg_scope(configured) and not slim.has_arg_scope(unconfigured)
    assert tuple(slim.arg_scoped_arguments(configured)) == ("b", "c")
    assert "weights_initializer" in slim.arg_scoped_arguments(slim.conv2d)
    assert configured.__name__ == "configured"


def test_arg_scope_errors():
    with pytest.raises(ValueError, match="is not decorated with @add_arg_scope"):
        with slim.arg_scope([unconfigured], b=2):
            pass
    with pytest.raises(TypeError, match="list_ops_or_scope must either be a list/tuple or reused scope"):
        with slim.arg_scope(configured, b=2):
            pass
    with pytest.raises(ValueError, match="kwargs must be empty"):
        with slim.arg_scope({}, b=2):
            pass
    assert slim.current_arg_scope() == {}


def test_arg_scope_reaches_layers():
    x = tf.ones([1, 4, 4, 2])
    with slim.arg_scope([slim.conv2d, slim.fully_connected], activation_fn=None,
                        weights_initializer=tf.ones_initializer(), weights_regularizer=slim.l2_regularizer(0.5)):
        with slim.arg_scope([slim.conv2d], stride=2, padding="VALID"):
            y = slim.conv2d(x, 3, [2, 2])
        z = slim.fully_connected(slim.flatten(y), 2)
    assert y.shape.as_list() == [1, 2, 2, 3] and z.shape.as_list() == [1, 2]
    assert len(tf.losses.get_regularization_losses()) == 2
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        y_value, reg = sess.run([y, tf.losses.get_regularization_losses()])
    np.testing.assert_allclose(y_value, np.full([1, 2, 2, 3], 8.0))
    np.testing.assert_allclose(reg, [0.5 * 0.5 * 2 * 2 * 2 * 3, 0.5 * 0.5 * 12 * 2])


# -- names ----------------------------------------------------------------------------------------
def test_variable_names_follow_slim():
    x = tf.ones([2, 8, 8, 3])
    slim.conv2d(x, 4, [3, 3])
    slim.conv2d(x, 4, [3, 3])
    slim.conv2d(x, 4, [3, 3], normalizer_fn=slim.batch_norm, normalizer_params={"scale": True})
    slim.repeat(x, 2, slim.conv2d, 3, [3, 3])
    slim.stack(tf.ones([2, 5]), slim.fully_connected, [4, 2])
    slim.fully_connected(tf.ones([2, 5]), 1, biases_initializer=None)
    slim.separable_conv2d(x, None, [3, 3])
    slim.batch_norm(tf.ones([4, 3]))
    assert names(tf.global_variables()) == [
        "Conv/weights", "Conv/biases", "Conv_1/weights", "Conv_1/biases",
        "Conv_2/weights", "Conv_2/BatchNorm/gamma", "Conv_2/BatchNorm/beta", "Conv_2/BatchNorm/moving_mean",
        "Conv_2/BatchNorm/moving_variance",
        "Repeat/convolution2d_1/weights", "Repeat/convolution2d_1/biases",
        "Repeat/convolution2d_2/weights", "Repeat/convolution2d_2/biases",
        "Stack/fully_connected_1/weights", "Stack/fully_connected_1/biases",
        "Stack/fully_connected_2/weights", "Stack/fully_connected_2/biases",
        "fully_connected/weights",
        "SeparableConv2d/depthwise_weights", "SeparableConv2d/biases",
        "BatchNorm/beta", "BatchNorm/moving_mean", "BatchNorm/moving_variance"]
    assert names(slim.get_model_variables()) == names(tf.global_variables())
    assert names(slim.get_variables_by_name("biases"))[:2] == ["Conv/biases", "Conv_1/biases"]
    assert names(slim.get_variables(suffix="moving_mean")) == ["Conv_2/BatchNorm/moving_mean",
                                                               "BatchNorm/moving_mean"]
    assert names(slim.get_variables_by_suffix("weights", scope="Repeat")) == [
        "Repeat/convolution2d_1/weights", "Repeat/convolution2d_2/weights"]
    assert "BatchNorm/moving_mean" not in names(slim.get_trainable_variables())
    with pytest.raises(ValueError, match="Couldn't find variable nothing"):
        slim.get_unique_variable("nothing")
    with pytest.raises(ValueError, match="stack_args need to be a list or tuple"):
        slim.stack(x, slim.conv2d, 3)


def test_end_points_are_collected_with_their_scopes_as_slim_nets_return_them():
    with tf.variable_scope("vgg_16") as sc:
        collection = sc.original_name_scope + "_end_points"
        with slim.arg_scope([slim.conv2d, slim.max_pool2d, slim.fully_connected, slim.flatten],
                            outputs_collections=collection):
            net = slim.repeat(tf.ones([1, 4, 4, 3]), 2, slim.conv2d, 4, [3, 3], scope="conv1")
            net = slim.max_pool2d(net, [2, 2], scope="pool1")
            net = slim.fully_connected(slim.flatten(net), 2, scope="fc8")
    end_points = slim.utils.convert_collection_to_dict(collection)
    assert list(end_points) == ["vgg_16/conv1/conv1_1", "vgg_16/conv1/conv1_2", "vgg_16/pool1", "vgg_16/Flatten",
                                "vgg_16/fc8"]
    assert end_points["vgg_16/fc8"] is net and end_points["vgg_16/pool1"].shape.as_list() == [1, 2, 2, 4]
    assert slim.utils.get_tensor_aliases(tf.ones([1], name="plain")) == ["plain"]
    slim.utils.convert_collection_to_dict(collection, clear_collection=True)
    assert tf.get_collection(collection) == []


def test_vgg_16_has_the_variables_of_the_published_checkpoint():
    vgg = slim.nets.vgg
    with slim.arg_scope(vgg.vgg_arg_scope()):
        logits, end_points = vgg.vgg_16(tf.placeholder(tf.float32, [None, 224, 224, 3]), num_classes=1000,
                                        is_training=False)
    assert logits.shape.as_list() == [None, 1000] and vgg.vgg_16.default_image_size == 224
    want, depth = [], 3
    for block, (times, out) in enumerate(zip((2, 2, 3, 3, 3), (64, 128, 256, 512, 512)), start=1):
        for i in range(1, times + 1):
            want += [(f"vgg_16/conv{block}/conv{block}_{i}/weights", [3, 3, depth, out]),
                     (f"vgg_16/conv{block}/conv{block}_{i}/biases", [out])]
            depth = out
    want += [("vgg_16/fc6/weights", [7, 7, 512, 4096]), ("vgg_16/fc6/biases", [4096]),
             ("vgg_16/fc7/weights", [1, 1, 4096, 4096]), ("vgg_16/fc7/biases", [4096]),
             ("vgg_16/fc8/weights", [1, 1, 4096, 1000]), ("vgg_16/fc8/biases", [1000])]
    assert [(v.op.name, v.shape.as_list()) for v in slim.get_model_variables()] == want
    assert len(tf.losses.get_regularization_losses()) == 16
    assert list(end_points)[:3] == ["vgg_16/conv1/conv1_1", "vgg_16/conv1/conv1_2", "vgg_16/pool1"]
    assert list(end_points)[-3:] == ["vgg_16/fc6", "vgg_16/fc7", "vgg_16/fc8"]
    assert end_points["vgg_16/fc8"] is logits and end_points["vgg_16/pool5"].shape.as_list() == [None, 7, 7, 512]


def test_alexnet_v2_names_and_shapes():
    alexnet = slim.nets.alexnet
    with slim.arg_scope(alexnet.alexnet_v2_arg_scope()):
        logits, end_points = alexnet.alexnet_v2(tf.placeholder(tf.float32, [None, 224, 224, 3]), num_classes=10)
    shapes = {v.op.name: v.shape.as_list() for v in slim.get_model_variables()}
    assert len(shapes) == 16 and shapes["alexnet_v2/conv1/weights"] == [11, 11, 3, 64]
    assert shapes["alexnet_v2/fc6/weights"] == [5, 5, 256, 4096] and shapes["alexnet_v2/fc8/biases"] == [10]
    assert logits.shape.as_list() == [None, 10] and end_points["alexnet_v2/pool5"].shape.as_list() == [None, 5, 5, 256]


def test_resnet_v1_50_names_shapes_and_predictions():
    resnet_v1 = slim.nets.resnet_v1
    images = tf.placeholder(tf.float32, [1, 64, 64, 3])
    with slim.arg_scope(resnet_v1.resnet_arg_scope()):
        logits, end_points = resnet_v1.resnet_v1_50(images, num_classes=5, is_training=False)
    variables = {v.op.name: v.shape.as_list() for v in slim.get_model_variables()}
    assert len(variables) == 267 == len(tf.global_variables())   # as resnet_v1_50.ckpt of the model zoo
    unit = "resnet_v1_50/block1/unit_1/bottleneck_v1"
    assert variables["resnet_v1_50/conv1/weights"] == [7, 7, 3, 64]
    assert variables[f"{unit}/shortcut/weights"] == [1, 1, 64, 256]
    assert variables[f"{unit}/conv2/BatchNorm/moving_variance"] == [64]
    assert variables["resnet_v1_50/block4/unit_3/bottleneck_v1/conv3/weights"] == [1, 1, 512, 2048]
    assert variables["resnet_v1_50/logits/weights"] == [1, 1, 2048, 5]
    assert "resnet_v1_50/block2/unit_1/bottleneck_v1/conv1/biases" not in variables   # batch_norm instead
    assert logits.shape.as_list() == [1, 1, 1, 5]
    assert end_points["resnet_v1_50/block4"].shape.as_list() == [1, 2, 2, 2048]
    assert tf.get_collection(tf.GraphKeys.UPDATE_OPS) == []   # is_training=False: moving statistics only
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        probabilities = sess.run(end_points["predictions"], {images: np.random.RandomState(7).rand(1, 64, 64, 3)})
    np.testing.assert_allclose(probabilities.sum(), 1.0, rtol=1e-5)
    with tf.Graph().as_default():   # dense prediction: output_stride 16 by atrous convolution
        net, _ = resnet_v1.resnet_v1_50(tf.ones([1, 64, 64, 3]), global_pool=False, output_stride=16)
        assert net.shape.as_list() == [1, 4, 4, 2048]
        with pytest.raises(ValueError, match="The output_stride needs to be a multiple of 4"):
            resnet_v1.resnet_v1_50(tf.ones([1, 64, 64, 3]), output_stride=6, scope="other")


def test_resnet_v2_50_names_and_training_mode():
    resnet_v2 = slim.nets.resnet_v2
    with slim.arg_scope(resnet_v2.resnet_arg_scope()):
        logits, end_points = resnet_v2.resnet_v2_50(tf.ones([2, 32, 32, 3]), num_classes=3, is_training=True)
    names = [v.op.name for v in slim.get_model_variables()]
    assert len(names) == 272   # as resnet_v2_50.ckpt of the model zoo
    assert names[:3] == ["resnet_v2_50/conv1/weights", "resnet_v2_50/conv1/biases",
                         "resnet_v2_50/block1/unit_1/bottleneck_v2/preact/gamma"]
    assert names[-6:-2] == [f"resnet_v2_50/postnorm/{k}" for k in ("gamma", "beta", "moving_mean", "moving_variance")]
    assert "resnet_v2_50/block1/unit_1/bottleneck_v2/conv3/biases" in names
    assert "resnet_v2_50/block1/unit_1/bottleneck_v2/conv1/BatchNorm/beta" in names
    # training: every batch_norm (the convolutions' and preact/postnorm) adds its two update ops
    batch_norms = {n.rsplit("/", 1)[0] for n in names if n.endswith("moving_mean")}
    assert len(tf.get_collection(tf.GraphKeys.UPDATE_OPS)) == 2 * len(batch_norms)
    assert logits.shape.as_list() == [2, 1, 1, 3] and end_points["predictions"].shape.as_list() == [2, 1, 1, 3]


def test_conv2d_same_is_the_stride_1_convolution_subsampled():
    resnet_utils = slim.nets.resnet_utils
    x = tf.constant(np.random.RandomState(8).randn(1, 8, 8, 2).astype(np.float32))
    with slim.arg_scope([slim.conv2d], activation_fn=None):
        strided = resnet_utils.conv2d_same(x, 3, 3, stride=2, scope="conv")
        dense = slim.conv2d(x, 3, [3, 3], stride=1, scope="conv", reuse=True)
    subsampled = resnet_utils.subsample(dense, 2)
    assert strided.shape.as_list() == subsampled.shape.as_list() == [1, 4, 4, 3]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        a, b = sess.run([strided, subsampled])
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_reuse_and_variables_collections():
    x = tf.ones([2, 3])
    a = slim.fully_connected(x, 2, scope="shared", variables_collections={"weights": ["my_weights"]},
                             outputs_collections=["ends"])
    b = slim.fully_connected(x, 2, scope="shared", reuse=True)
    assert names(tf.global_variables()) == ["shared/weights", "shared/biases"]
    assert names(tf.get_collection("my_weights")) == ["shared/weights"]
    assert tf.get_collection("ends") == [a]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_array_equal(*sess.run([a, b]))


def test_framework_variables_and_global_step():
    with slim.arg_scope([slim.model_variable], device="/cpu:0"):
        w = slim.model_variable("w", shape=[2, 3], initializer=tf.ones_initializer())
    v = slim.variable("v", shape=[1], collections=["mine"], trainable=False)
    assert w.device.endswith("CPU:0") and w in slim.get_model_variables() and w in tf.trainable_variables()
    assert v in tf.get_collection("mine") and v not in tf.global_variables() and v not in tf.trainable_variables()
    chooser = slim.VariableDeviceChooser(num_tasks=2)
    with slim.arg_scope([slim.variable], device=chooser):
        spread = [slim.variable(f"spread_{i}", shape=[1]) for i in range(3)]
    assert [v.device for v in spread] == ["/job:ps/task:0/device:CPU:0", "/job:ps/task:1/device:CPU:0",
                                          "/job:ps/task:0/device:CPU:0"]
    assert spread[1].initializer.device == spread[1].device   # one choice per variable, for all its ops
    assert tf.contrib.framework.assert_or_get_global_step() is None
    step = tf.contrib.framework.get_or_create_global_step()
    assert tf.contrib.framework.assert_or_get_global_step() is step
    framework = tf.contrib.framework   # the names contrib.framework shares with tf and tf.train
    assert framework.is_tensor(step.read_value()) and not framework.is_tensor(step.read_value().op)
    with tf.name_scope("outer"):
        assert framework.get_name_scope() == "outer"
    with pytest.raises(ValueError):
        framework.assert_scalar(tf.ones([2]))
    assert framework.load_checkpoint is tf.train.load_checkpoint and framework.arg_scope is slim.arg_scope
    assert framework.nest.flatten({"b": [1, 2], "a": 3}) == [3, 1, 2]   # tf.nest
    assert step is tf.train.get_global_step() and step.op.name == "global_step"
    assign, feed = slim.assign_from_values({"w": np.full([2, 3], 7.0, np.float32)})
    with tf.Session() as sess:
        sess.run(tf.variables_initializer([w]))
        sess.run(assign, feed)
        np.testing.assert_array_equal(sess.run(w), np.full([2, 3], 7.0))


# -- layer values -----------------------------------------------------------------------------------
def test_conv2d_fully_connected_and_pooling_against_numpy():
    rng = np.random.RandomState(0)
    x_value = rng.randn(2, 7, 7, 3).astype(np.float32)
    x = tf.constant(x_value)
    same = slim.conv2d(x, 4, 3, scope="same")
    valid = slim.conv2d(x, 2, [3, 3], stride=2, padding="VALID", activation_fn=tf.nn.tanh,
                        biases_initializer=tf.constant_initializer(0.5), scope="valid")
    fc3d = slim.fully_connected(x, 5, activation_fn=None, scope="fc")
    maxp = slim.max_pool2d(x, [3, 3])
    avgp = slim.avg_pool2d(x, 2, stride=1, padding="SAME")
    assert maxp.op.name.startswith("MaxPool2D/") and avgp.op.name.startswith("AvgPool2D/")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got = sess.run({"same": same, "valid": valid, "fc": fc3d, "max": maxp, "avg": avgp,
                        "vars": {n: slim.get_unique_variable(n) for n in
                                 ("same/weights", "same/biases", "valid/weights", "fc/weights", "fc/biases")}})
    var = got["vars"]
    np.testing.assert_allclose(got["same"], np.maximum(np_conv2d(x_value, var["same/weights"]) + var["same/biases"],
                                                       0), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got["valid"], np.tanh(np_conv2d(x_value, var["valid/weights"], 2, "VALID") + 0.5),
                               rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got["fc"], x_value @ var["fc/weights"] + var["fc/biases"], rtol=1e-4, atol=1e-5)
    want_max = np.array([[[x_value[b, 2 * i:2 * i + 3, 2 * j:2 * j + 3, :].max(axis=(0, 1)) for j in range(3)]
                          for i in range(3)] for b in range(2)])
    np.testing.assert_allclose(got["max"], want_max)
    padded = np.pad(x_value, [(0, 0), (0, 1), (0, 1), (0, 0)], constant_values=np.nan)
    want_avg = np.array([[[np.nanmean(padded[b, i:i + 2, j:j + 2, :], axis=(0, 1)) for j in range(7)]
                          for i in range(7)] for b in range(2)])
    np.testing.assert_allclose(got["avg"], want_avg, rtol=1e-5)
    assert np.all(got["vars"]["same/biases"] == 0)   # biases start at zero; weights are xavier-uniform
    limit = np.sqrt(6.0 / (3 * 3 * 3 + 3 * 3 * 4))
    assert np.all(np.abs(var["same/weights"]) <= limit) and np.abs(var["same/weights"]).max() > limit / 2


def test_depthwise_only_separable_conv_and_transpose_conv_shapes():
    rng = np.random.RandomState(1)
    x_value = rng.randn(1, 5, 5, 2).astype(np.float32)
    depthwise = slim.separable_conv2d(tf.constant(x_value), None, [3, 3], depth_multiplier=2, activation_fn=None,
                                      scope="dw")
    up = slim.conv2d_transpose(tf.constant(x_value), 3, [3, 3], stride=2, scope="up")
    up_valid = slim.conv2d_transpose(tf.constant(x_value), 3, [3, 3], stride=2, padding="VALID", scope="upv")
    assert depthwise.shape.as_list() == [1, 5, 5, 4]
    assert up.shape.as_list() == [1, 10, 10, 3] and up_valid.shape.as_list() == [1, 11, 11, 3]
    assert slim.get_unique_variable("up/weights").shape.as_list() == [3, 3, 3, 2]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        out, w = sess.run([depthwise, slim.get_unique_variable("dw/depthwise_weights")])
    # channel c, multiplier m lands at output channel c * 2 + m
    want = np.concatenate([np_conv2d(x_value[..., c:c + 1], w[:, :, c:c + 1, :]) for c in range(2)], axis=-1)
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-5)


def test_dropout_flatten_and_one_hot():
    x = tf.ones([200, 10])
    kept = slim.dropout(x, keep_prob=0.25, seed=3)
    same = slim.dropout(x, is_training=False)
    training = tf.placeholder(tf.bool, [])
    switched = slim.dropout(x, 0.5, is_training=training)
    flat = slim.flatten(tf.zeros([3, 2, 2, 5]))
    onehot = slim.one_hot_encoding(tf.constant([2, 0]), 3)
    assert flat.shape.as_list() == [3, 20] and onehot.dtype == tf.float32
    with tf.Session() as sess:
        k, s, off, oh = sess.run([kept, same, switched, onehot], {training: False})
        on = sess.run(switched, {training: True})
    assert set(np.unique(k)) <= {0.0, 4.0} and 0.15 < (k > 0).mean() < 0.35
    np.testing.assert_array_equal(s, np.ones([200, 10]))
    np.testing.assert_array_equal(off, np.ones([200, 10]))
    assert set(np.unique(on)) == {0.0, 2.0}
    np.testing.assert_array_equal(oh, [[0, 0, 1], [1, 0, 0]])


def test_bias_add_layer_norm_and_softmax():
    rng = np.random.RandomState(4)
    x_value = rng.randn(3, 2, 4).astype(np.float32) * 2 + 1
    x = tf.constant(x_value)
    biased = slim.bias_add(x, initializer=tf.constant_initializer(0.5), activation_fn=tf.nn.relu)
    normed = slim.layer_norm(x, begin_norm_axis=1)
    last_axis = slim.layer_norm(x, begin_norm_axis=-1, center=False, scope="ln2")
    probs = slim.softmax(x)
    assert names(tf.global_variables()) == ["BiasAdd/biases", "LayerNorm/beta", "LayerNorm/gamma", "ln2/gamma"]
    assert slim.get_unique_variable("LayerNorm/gamma").shape.as_list() == [4]
    with pytest.raises(ValueError, match="must be < rank"):
        slim.layer_norm(x, begin_norm_axis=3)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got = sess.run([biased, normed, last_axis, probs])
    np.testing.assert_allclose(got[0], np.maximum(x_value + 0.5, 0))
    flat = x_value.reshape(3, -1)
    want = ((flat - flat.mean(1, keepdims=True)) / flat.std(1, keepdims=True)).reshape(x_value.shape)
    np.testing.assert_allclose(got[1], want, rtol=1e-4, atol=1e-5)
    want = (x_value - x_value.mean(-1, keepdims=True)) / x_value.std(-1, keepdims=True)
    np.testing.assert_allclose(got[2], want, rtol=1e-4, atol=1e-5)
    e = np.exp(x_value - x_value.max(-1, keepdims=True))
    np.testing.assert_allclose(got[3], e / e.sum(-1, keepdims=True), rtol=1e-5)
    unit = slim.unit_norm(tf.constant([[3.0, 4.0], [1.0, 0.0]]), 1)
    linear = slim.linear(tf.constant([[-3.0, 4.0]]), 2, weights_initializer=tf.ones_initializer())
    capped = slim.relu6(tf.constant([[-3.0, 4.0], [4.0, 4.0]]), 1, weights_initializer=tf.ones_initializer())
    with pytest.raises(ValueError, match="dim must be positive but smaller than the input rank"):
        slim.unit_norm(tf.ones([2, 2]), 2)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got = sess.run([unit, linear, capped])
    np.testing.assert_allclose(got[0], [[0.6, 0.8], [1.0, 0.0]], rtol=1e-6)
    np.testing.assert_allclose(got[1], [[1.0, 1.0]])
    np.testing.assert_allclose(got[2], [[1.0], [6.0]])


def test_conv1d_conv3d_and_model_analyzer(capsys):
    rng = np.random.RandomState(5)
    x1 = rng.randn(2, 7, 3).astype(np.float32)
    y1 = slim.conv1d(tf.constant(x1), 4, 3, activation_fn=None)
    y3 = slim.conv3d(tf.ones([1, 4, 4, 4, 2]), 3, [2, 2, 2], stride=2)
    assert y1.shape.as_list() == [2, 7, 4] and y3.shape.as_list() == [1, 2, 2, 2, 3]
    assert names(tf.global_variables()) == ["Conv/weights", "Conv/biases", "Conv_1/weights", "Conv_1/biases"]
    with pytest.raises(ValueError, match="Convolution expects input with rank 5, got 4"):
        slim.conv3d(tf.ones([1, 4, 4, 2]), 3, 2)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got, w = sess.run([y1, slim.get_unique_variable("Conv/weights")])
    want = np_conv2d(x1[:, None], w[None])[:, 0]   # a 1-D convolution is a 2-D one of height 1
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    size, nbytes = slim.model_analyzer.analyze_vars(slim.get_model_variables(), print_info=True)
    assert (size, nbytes) == (3 * 3 * 4 + 4 + 8 * 2 * 3 + 3, 4 * (3 * 3 * 4 + 4 + 8 * 2 * 3 + 3))
    printed = capsys.readouterr().out
    assert "Conv/weights:0 (float32 3x3x4) [36, bytes: 144]" in printed and "Total size of variables: 91" in printed
    assert slim.model_analyzer.analyze_ops(tf.get_default_graph()) > 0


# -- batch_norm -----------------------------------------------------------------------------------
def test_batch_norm_numbers_updates_collections_and_formats():
    rng = np.random.RandomState(2)
    x_value = rng.randn(6, 4).astype(np.float32) * 3 + 1
    x = tf.constant(x_value)
    trained = slim.batch_norm(x, decay=0.5, scale=True, scope="a")
    inferred = slim.batch_norm(x, is_training=False, scope="b",
                               param_initializers={"moving_mean": tf.constant_initializer(1.0),
                                                   "moving_variance": tf.constant_initializer(4.0)})
    in_place = slim.batch_norm(x, decay=0.5, updates_collections=None, scope="c")
    nchw = slim.batch_norm(tf.constant(x_value.reshape(2, 3, 2, 2)), data_format="NCHW", is_training=False,
                           scope="d")
    assert len(tf.get_collection(tf.GraphKeys.UPDATE_OPS)) == 2   # a's; b infers, c updates in place
    assert slim.get_unique_variable("a/gamma") in tf.trainable_variables()
    assert slim.get_variables("c/gamma") == [] and slim.get_unique_variable("d/moving_mean").shape == [3]
    with pytest.raises(ValueError, match="data_format has to be either NCHW or NHWC"):
        slim.batch_norm(x, data_format="NCW")
    mean, var = x_value.mean(0), x_value.var(0)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        out_a, out_b, out_c = sess.run([trained, inferred, in_place])
        np.testing.assert_allclose(out_a, (x_value - mean) / np.sqrt(var + 1e-3), rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(out_b, (x_value - 1.0) / np.sqrt(4.0 + 1e-3), rtol=1e-5)
        np.testing.assert_allclose(out_c, out_a, rtol=1e-5, atol=1e-6)
        # c's moving averages moved when its output was computed; a's only when the update ops run
        moved = sess.run([slim.get_unique_variable("c/moving_mean"), slim.get_unique_variable("c/moving_variance")])
        np.testing.assert_allclose(moved[0], 0.5 * mean, rtol=1e-5)
        np.testing.assert_allclose(moved[1], 0.5 + 0.5 * var * 6 / 5, rtol=1e-5)   # Bessel-corrected, as TF's
        np.testing.assert_array_equal(sess.run(slim.get_unique_variable("a/moving_mean")), np.zeros(4))
        sess.run(tf.get_collection(tf.GraphKeys.UPDATE_OPS))
        np.testing.assert_allclose(sess.run(slim.get_unique_variable("a/moving_mean")), 0.5 * mean, rtol=1e-5)
        x4 = x_value.reshape(2, 3, 2, 2)
        np.testing.assert_allclose(sess.run(nchw), x4 / np.sqrt(1 + 1e-3), rtol=1e-5)


# -- losses and metrics ---------------------------------------------------------------------------
def test_slim_losses_take_predictions_first_and_sum_into_the_total_loss():
    logits_value = np.array([[2.0, 1.0, 0.1], [0.5, 2.5, 0.3]], np.float32)
    labels_value = np.array([[1, 0, 0], [0, 0, 1]], np.float32)
    w = slim.model_variable("w", shape=[2], initializer=tf.constant_initializer(3.0),
                            regularizer=slim.l2_regularizer(0.1))
    xent = slim.losses.softmax_cross_entropy(tf.constant(logits_value), tf.constant(labels_value))
    mse = slim.losses.mean_squared_error(tf.constant([1.0, 2.0]), tf.constant([0.0, 0.0]))
    hinge = slim.losses.hinge_loss(tf.constant([0.5, -2.0]), tf.constant([1.0, 1.0]))
    assert len(slim.losses.get_losses()) == 2 and hinge.shape.as_list() == [2]
    total = slim.losses.get_total_loss()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got = sess.run([xent, mse, hinge, total])
    log_softmax = logits_value - np.log(np.exp(logits_value).sum(1, keepdims=True))
    want_xent = -(labels_value * log_softmax).sum(1).mean()
    np.testing.assert_allclose(got[0], want_xent, rtol=1e-5)
    np.testing.assert_allclose(got[1], 2.5)
    np.testing.assert_allclose(got[2], [0.5, 3.0])
    np.testing.assert_allclose(got[3], want_xent + 2.5 + 0.1 * 9.0, rtol=1e-5)   # l2: 0.1 * sum(w^2) / 2
    assert w in slim.get_model_variables()


def test_mean_pairwise_squared_error_is_the_mean_over_pairs():
    rng = np.random.RandomState(3)
    labels, predictions = rng.randn(3, 4).astype(np.float32), rng.randn(3, 4).astype(np.float32)
    d = predictions - labels
    per_example = np.array([np.mean([(d[b, i] - d[b, j]) ** 2 for i in range(4) for j in range(4) if i != j])
                            for b in range(3)])
    plain = slim.losses.mean_pairwise_squared_error(tf.constant(predictions), tf.constant(labels))
    weighted = tf.losses.mean_pairwise_squared_error(labels, predictions, weights=[[1.0], [0.0], [2.0]])
    nothing = tf.losses.mean_pairwise_squared_error(labels, predictions, weights=0.0)
    assert tf.losses.get_losses()[:2] == [plain, weighted]
    with tf.Session() as sess:
        got = sess.run([plain, weighted, nothing])
    np.testing.assert_allclose(got[0], per_example.sum(), rtol=1e-5)
    np.testing.assert_allclose(got[1], per_example[0] + 2 * per_example[2], rtol=1e-5)
    assert got[2] == 0.0


def test_streaming_metrics_and_aggregate_metric_map():
    predictions = tf.placeholder(tf.int64, [None])
    labels = tf.placeholder(tf.int64, [None])
    values, updates = slim.metrics.aggregate_metric_map({
        "accuracy": slim.metrics.streaming_accuracy(predictions, labels),
        "mse": slim.metrics.streaming_mean_squared_error(tf.cast(predictions, tf.float32),
                                                         tf.cast(labels, tf.float32))})
    batch_accuracy = tf.contrib.metrics.accuracy(predictions, labels, weights=tf.constant([1.0, 0.0, 1.0]))
    assert set(values) == set(updates) == {"accuracy", "mse"}
    with tf.Session() as sess:
        sess.run(tf.local_variables_initializer())
        sess.run(list(updates.values()), {predictions: [1, 2, 3], labels: [1, 2, 0]})
        sess.run(list(updates.values()), {predictions: [0], labels: [0]})
        got = sess.run(values)
        np.testing.assert_allclose(sess.run(batch_accuracy, {predictions: [1, 2, 3], labels: [1, 0, 0]}), 0.5)
    np.testing.assert_allclose(got["accuracy"], 0.75)
    np.testing.assert_allclose(got["mse"], 9.0 / 4)
    assert slim.metrics.aggregate_metrics((1, 2), (3, 4)) == ([1, 3], [2, 4])


def test_queue_runners_feed_within_the_context():
    queue = tf.FIFOQueue(4, tf.int32)
    counter = tf.Variable(0)
    tf.train.add_queue_runner(tf.train.QueueRunner(queue, [queue.enqueue(tf.assign_add(counter, 1))]))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        with slim.queues.QueueRunners(sess):
            got = [sess.run(queue.dequeue()) for _ in range(5)]
            with pytest.raises(slim.queues.NestedQueueRunnerError, match="cannot be nested"):
                with slim.queues.QueueRunners(sess):
                    pass
    assert got == sorted(got) and len(set(got)) == 5


def write_examples(path, images, labels, raw=False):
    """A TFRecord file of tf.train.Examples as slim's dataset converters write them."""
    with tf.Graph().as_default(), tf.Session() as sess:
        encoded = [sess.run(tf.image.encode_png(image)) for image in images]
    with tf.python_io.TFRecordWriter(path) as writer:
        for image, png, label in zip(images, encoded, labels):
            feature = {
                "image/encoded": tf.train.Feature(bytes_list=tf.train.BytesList(value=[image.tobytes() if raw
                                                                                       else png])),
                "image/format": tf.train.Feature(bytes_list=tf.train.BytesList(value=[b"raw" if raw else b"png"])),
                "image/class/label": tf.train.Feature(int64_list=tf.train.Int64List(value=[label])),
                "image/size": tf.train.Feature(int64_list=tf.train.Int64List(value=list(image.shape[:2])))}
            writer.write(tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString())


def test_dataset_data_provider_decodes_tfexamples_through_parallel_readers(tmp_path):
    rng = np.random.RandomState(6)
    images = [rng.randint(0, 256, size=(4, 3, 3), dtype=np.uint8) for _ in range(5)]
    write_examples(str(tmp_path / "train-0.tfrecord"), images[:3], [0, 1, 2])
    write_examples(str(tmp_path / "train-1.tfrecord"), images[3:], [3, 4], raw=True)
    keys_to_features = {
        "image/encoded": tf.FixedLenFeature((), tf.string, default_value=""),
        "image/format": tf.FixedLenFeature((), tf.string, default_value="png"),
        "image/class/label": tf.FixedLenFeature([], tf.int64),
        "image/size": tf.VarLenFeature(tf.int64)}
    decoder = slim.tfexample_decoder.TFExampleDecoder(keys_to_features, {
        "image": slim.tfexample_decoder.Image(shape=[4, 3, 3]),
        "label": slim.tfexample_decoder.Tensor("image/class/label"),
        "size": slim.tfexample_decoder.Tensor("image/size", shape=[2]),
        "label_plus_one": slim.tfexample_decoder.ItemHandlerCallback(["image/class/label"],
                                                                     lambda t: t["image/class/label"] + 1)})
    dataset = slim.dataset.Dataset(str(tmp_path / "train-*.tfrecord"), tf.TFRecordReader, decoder, num_samples=5,
                                   items_to_descriptions={"image": "a 4x3 image", "label": "its class"})
    provider = slim.dataset_data_provider.DatasetDataProvider(dataset, num_readers=2, shuffle=False, num_epochs=1)
    assert provider.num_samples() == 5 and "record_key" in provider.list_items()
    image, label, size, plus_one = provider.get(["image", "label", "size", "label_plus_one"])
    with pytest.raises(ValueError, match=r"Item \[nothing\] is invalid"):
        provider.get(["nothing"])
    with tf.Session() as sess:
        sess.run(tf.local_variables_initializer())
        seen = {}
        with slim.queues.QueueRunners(sess):
            for _ in range(5):
                i, lab, sz, p1 = sess.run([image, label, size, plus_one])
                seen[int(lab)] = i
                assert list(sz) == [4, 3] and p1 == lab + 1
            with pytest.raises(tf.errors.OutOfRangeError):   # one epoch: the queue closes after 5 records
                sess.run(label)
    assert sorted(seen) == [0, 1, 2, 3, 4]
    for lab, want in enumerate(images):
        np.testing.assert_array_equal(seen[lab], want)
    with pytest.raises(ValueError, match="No data files found in"):
        slim.parallel_reader.get_data_files(str(tmp_path / "nothing-*"))


# -- learning and evaluation ----------------------------------------------------------------------
def classification_problem():
    rng = np.random.RandomState(0)
    x = rng.randn(64, 4).astype(np.float32)
    y = (x @ rng.randn(4, 3)).argmax(1)
    return x, y


def classifier(x, is_training):
    net = slim.fully_connected(x, 16, normalizer_fn=slim.batch_norm, normalizer_params={"is_training": is_training},
                               scope="fc1")
    return slim.fully_connected(net, 3, activation_fn=None, scope="logits")


def test_learning_train_lowers_the_loss_and_checkpoints_into_logdir(tmp_path):
    logdir = str(tmp_path / "train")
    x_value, y_value = classification_problem()
    calls = []

    def train(steps):   # each run builds its graph afresh, as a restarted training program does
        with tf.Graph().as_default():
            logits = classifier(tf.constant(x_value), True)
            slim.losses.sparse_softmax_cross_entropy(logits, tf.constant(y_value))
            total = slim.losses.get_total_loss()
            train_op = slim.learning.create_train_op(total, tf.train.GradientDescentOptimizer(0.5),
                                                     clip_gradient_norm=5.0)
            assert tf.get_collection(tf.GraphKeys.TRAIN_OP)[-1] is train_op
            return slim.learning.train(train_op, logdir, number_of_steps=steps, init_fn=calls.append,
                                       save_summaries_secs=1000)

    first = train(1)
    assert len(calls) == 1   # init_fn runs when no checkpoint is there
    last = train(40)
    assert len(calls) == 1   # the second run restored the first one's checkpoint
    assert last < first / 2
    assert tf.train.latest_checkpoint(logdir).endswith("model.ckpt-40")
    reader = tf.train.NewCheckpointReader(tf.train.latest_checkpoint(logdir))
    assert reader.get_tensor("global_step") == 40
    assert np.any(reader.get_tensor("fc1/BatchNorm/moving_mean") != 0)   # the update ops ran with each step
    assert glob.glob(os.path.join(logdir, "events.out.tfevents.*"))


def test_learning_train_with_a_sync_replicas_optimizer(tmp_path):
    x_value, y_value = classification_problem()
    logits = classifier(tf.constant(x_value), True)
    slim.losses.sparse_softmax_cross_entropy(logits, tf.constant(y_value))
    optimizer = tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(0.5), replicas_to_aggregate=1,
                                               total_num_replicas=1)
    train_op = slim.learning.create_train_op(slim.losses.get_total_loss(), optimizer)
    loss = slim.learning.train(train_op, str(tmp_path), number_of_steps=20, sync_optimizer=optimizer)
    reader = tf.train.NewCheckpointReader(tf.train.latest_checkpoint(str(tmp_path)))
    assert reader.get_tensor("global_step") == 20 and loss < 1.0


def test_optimize_loss_and_gradient_multipliers():
    x = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    w = tf.get_variable("w", [2, 1], initializer=tf.ones_initializer())
    b = tf.get_variable("b", [1], initializer=tf.zeros_initializer())
    loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b - tf.constant([[1.0], [2.0]])))
    step = tf.train.get_or_create_global_step()
    train = slim.optimize_loss(loss, step, 0.1, "SGD", clip_gradients=1.0, gradient_multipliers={b: 0.0},
                               summaries=["loss", "gradient_norm"])
    assert slim.get_variables("OptimizeLoss/learning_rate")[0] not in tf.trainable_variables()
    tags = {t.op.name for t in tf.get_collection(tf.GraphKeys.SUMMARIES)}
    assert {"OptimizeLoss/loss", "OptimizeLoss/global_norm/gradient_norm", "OptimizeLoss/gradient_norm/w_0"} <= tags
    with pytest.raises(ValueError, match="Optimizer name should be one of"):
        slim.optimize_loss(loss, step, 0.1, "Nesterov")
    with pytest.raises(ValueError, match="Summaries should be one of"):
        slim.optimize_loss(loss, step, 0.1, "SGD", summaries=["weights"])
    with pytest.raises(ValueError, match="Requested multiple of `None` gradient"):
        slim.learning.multiply_gradients([(None, b)], {b: 2.0})
    scaled = slim.learning.multiply_gradients([(tf.constant([1.0, 2.0]), w)], {"w": tf.constant(3.0)})[0][0]
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(scaled), [3.0, 6.0])   # keyed by the variable's op name
        sess.run(tf.global_variables_initializer())
        before = sess.run(loss)
        sess.run(train)
        got_w, got_b, got_step = sess.run([w, b, step])
    residual = np.array([[1.0, 2.0], [3.0, 4.0]]) @ np.ones([2, 1]) - [[1.0], [2.0]]
    grad_w = 2 * np.array([[1.0, 2.0], [3.0, 4.0]]).T @ residual / 2   # d mean(r^2) / dw
    scale = min(1.0, 1.0 / np.linalg.norm(grad_w))   # b's gradient multiplied by 0: only w's counts
    np.testing.assert_allclose(got_w, 1.0 - 0.1 * grad_w * scale, rtol=1e-5)
    np.testing.assert_array_equal(got_b, [0.0])
    assert got_step == 1 and before == pytest.approx(np.mean(residual ** 2))


def test_evaluate_once_and_evaluation_loop(tmp_path):
    logdir = str(tmp_path / "train")
    x_value, y_value = classification_problem()
    with tf.Graph().as_default():
        logits = classifier(tf.constant(x_value), True)
        slim.losses.sparse_softmax_cross_entropy(logits, tf.constant(y_value))
        train_op = slim.learning.create_train_op(slim.losses.get_total_loss(), tf.train.AdamOptimizer(0.05))
        slim.learning.train(train_op, logdir, number_of_steps=60)
    checkpoint = tf.train.latest_checkpoint(logdir)
    with tf.Graph().as_default():
        logits = classifier(tf.constant(x_value), False)
        predictions = tf.argmax(logits, 1)
        values, updates = slim.metrics.aggregate_metric_map({
            "accuracy": slim.metrics.streaming_accuracy(predictions, tf.constant(y_value))})
        tf.summary.scalar("eval_accuracy", values["accuracy"])
        tf.train.get_or_create_global_step()
        got = slim.evaluation.evaluate_once("", checkpoint, str(tmp_path / "eval"), num_evals=3,
                                            eval_op=list(updates.values()), final_op=values)
        # the same accuracy computed from the checkpoint's variables in numpy
        reader = tf.train.NewCheckpointReader(checkpoint)
        t = {n: reader.get_tensor(n) for n in ("fc1/weights", "logits/weights", "logits/biases", "fc1/BatchNorm/beta",
                                               "fc1/BatchNorm/moving_mean", "fc1/BatchNorm/moving_variance")}
        h = x_value @ t["fc1/weights"]
        h = np.maximum((h - t["fc1/BatchNorm/moving_mean"]) / np.sqrt(t["fc1/BatchNorm/moving_variance"] + 1e-3)
                       + t["fc1/BatchNorm/beta"], 0)
        want = ((h @ t["logits/weights"] + t["logits/biases"]).argmax(1) == y_value).mean()
        np.testing.assert_allclose(got["accuracy"], want, rtol=1e-6)
        assert want > 0.8
        events = glob.glob(str(tmp_path / "eval" / "events.out.tfevents.*"))
        tags = [(e.step, v.tag) for f in events for e in tf.train.summary_iterator(f) for v in e.summary.value]
        assert (60, "eval_accuracy") in tags
    with tf.Graph().as_default():
        logits = classifier(tf.constant(x_value), False)
        values, updates = slim.metrics.aggregate_metric_map({
            "accuracy": slim.metrics.streaming_accuracy(tf.argmax(logits, 1), tf.constant(y_value))})
        tf.train.get_or_create_global_step()
        again = slim.evaluation.evaluation_loop("", logdir, str(tmp_path / "eval"), num_evals=2,
                                                eval_op=list(updates.values()), final_op=values, summary_op=None,
                                                eval_interval_secs=0, max_number_of_evaluations=1)
        np.testing.assert_allclose(again["accuracy"], want, rtol=1e-6)
