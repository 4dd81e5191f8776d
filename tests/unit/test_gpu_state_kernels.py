"""Variables, their update ops, the optimizers' fused updates and TF 1 control flow on a GPU
(issue 25), through stand-in GPUs (TENSORWEAVE_STANDIN_GPUS: device memory that is host memory
marked as the GPU's, so a value on the wrong side of a device boundary is an error): a graph built
under tf.device('/gpu:0') trains, saves, restores and loops to the same numbers as on the CPU, and
the ops of this part run on the GPU."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

import tensorweave as tf
from fixtures.recorded import decode, load_graph_def
from tensorweave.ops import registry
from tensorweave.ops.helpers import make_op
from tensorweave.runtime.devices import STANDIN_ENV, StandInArray

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "tf_graph_defs")
SOFT = dict(allow_soft_placement=True)
OPTIMIZERS = {
    "sgd": lambda: tf.train.GradientDescentOptimizer(0.1),
    "momentum": lambda: tf.train.MomentumOptimizer(0.1, 0.9),
    "nesterov": lambda: tf.train.MomentumOptimizer(0.1, 0.9, use_nesterov=True),
    "adam": lambda: tf.train.AdamOptimizer(0.05),
    "rmsprop": lambda: tf.train.RMSPropOptimizer(0.05, momentum=0.5),
    "centered_rmsprop": lambda: tf.train.RMSPropOptimizer(0.05, momentum=0.5, centered=True),
    "adagrad": lambda: tf.train.AdagradOptimizer(0.1),
    "adadelta": lambda: tf.train.AdadeltaOptimizer(1.0),
}


@pytest.fixture(autouse=True)
def standin_gpu(monkeypatch):
    monkeypatch.setenv(STANDIN_ENV, "1")


def traced(sess, fetches, feed_dict=None):
    """(sess.run's result, {node name: device} of the step)."""
    md = tf.RunMetadata()
    out = sess.run(fetches, feed_dict, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE), run_metadata=md)
    return out, {n.node_name: d.device for d in md.step_stats.dev_stats for n in d.node_stats}


def gpu_able(graph) -> set:
    """The names of the ops the placer may put on the GPU: every op of their colocation group has a
    GPU kernel (ops of other parts of issue 25 may not have theirs yet: those groups stay on the CPU)."""
    groups: dict = {}
    for op in graph.get_operations():
        for group in op.colocation_groups():
            groups.setdefault(group, []).append(op)
    return {op.name for op in graph.get_operations()
            if all(registry.has_kernel(m.type, "GPU") for g in op.colocation_groups() for m in groups[g])}


def assert_on_gpu(graph, devices: dict, op_types) -> None:
    """Each op of `op_types` that ran was on the GPU when its group may be; at least one was."""
    able = gpu_able(graph)
    ran = [graph.get_operation_by_name(n) for n in devices if n in {op.name for op in graph.get_operations()}]
    mine = [op for op in ran if op.type in op_types]
    assert mine, f"none of {sorted(op_types)} ran"
    for op in mine:
        if op.name in able:
            assert devices[op.name].endswith("/device:GPU:0"), (op.name, op.type, devices[op.name])
    assert any(devices[op.name].endswith("/device:GPU:0") for op in mine), [(op.name, op.type) for op in mine]


def mlp(device: str, make_optimizer, steps: int = 3, sparse: bool = False):
    """A two-layer net (and an embedding when `sparse`) trained `steps` steps on `device`: its
    variables, loss and global step after them, the step's placements, the graph."""
    rng = np.random.RandomState(0)
    x_value, y_value = rng.rand(6, 4).astype(np.float32), rng.rand(6, 2).astype(np.float32)
    g = tf.Graph()
    with g.as_default(), tf.device(device):
        x = tf.constant(x_value)
        if sparse:
            emb = tf.Variable(rng.rand(5, 4).astype(np.float32), name="emb")
            x = x + tf.nn.embedding_lookup(emb, tf.constant([0, 3, 3, 1, 0, 4]))
        w1 = tf.get_variable("w1", initializer=tf.constant(rng.randn(4, 8).astype(np.float32)))
        b1 = tf.Variable(tf.zeros([8]), name="b1")
        w2 = tf.get_variable("w2", initializer=tf.constant(rng.randn(8, 2).astype(np.float32)))
        loss = tf.reduce_mean(tf.square(tf.matmul(tf.nn.relu(tf.matmul(x, w1) + b1), w2) - y_value))
        step = tf.train.get_or_create_global_step()
        train = make_optimizer().minimize(loss, global_step=step)
        with tf.Session(config=tf.ConfigProto(**SOFT)) as sess:
            sess.run(tf.global_variables_initializer())
            for _ in range(steps):
                _, devices = traced(sess, train)
            return sess.run(tf.trainable_variables() + [loss, step]), devices, g


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_an_mlp_trains_on_the_gpu_to_the_cpu_numbers(name):
    want, _, _ = mlp("/cpu:0", OPTIMIZERS[name])
    got, devices, g = mlp("/gpu:0", OPTIMIZERS[name])
    assert got[-1] == 3
    for w, v in zip(want, got):
        assert type(v) is not StandInArray and v.dtype == w.dtype
        np.testing.assert_array_equal(v, w)
    fused = {op.type for op in g.get_operations() if op.type.startswith("ResourceApply")}
    assert_on_gpu(g, devices, fused | {"VarHandleOp", "ReadVariableOp", "AssignAddVariableOp"})


@pytest.mark.parametrize("name", ["sgd", "momentum", "adagrad", "adam"])
def test_an_embedding_trains_on_the_gpu_through_sparse_updates(name):
    want, _, _ = mlp("/cpu:0", OPTIMIZERS[name], sparse=True)
    got, devices, g = mlp("/gpu:0", OPTIMIZERS[name], sparse=True)
    for w, v in zip(want, got):
        np.testing.assert_array_equal(v, w)
    sparse = {op.type for op in g.get_operations() if op.type.startswith("ResourceSparseApply")}
    assert sparse or name == "sgd"
    assert_on_gpu(g, devices, sparse | {"ResourceGather", "ResourceScatterAdd", "VarHandleOp"})


def test_the_global_step_and_variables_live_in_gpu_memory():
    """An int64 global step's AssignAdd runs on the GPU (TF has its int64 kernel there), and a GPU
    variable holds its value in the GPU's memory after its first assignment."""
    with tf.Graph().as_default() as g, tf.device("/gpu:0"):
        step = tf.train.get_or_create_global_step()
        v = tf.Variable(np.arange(6, dtype=np.float32).reshape(2, 3), name="v")
        bump = tf.assign_add(step, 1)
        with tf.Session() as sess:      # (no soft placement: every op here has a GPU kernel)
            sess.run(tf.global_variables_initializer())
            (value, _), devices = traced(sess, [v.assign_sub(tf.ones([2, 3])), bump])
            stored = sess._master.resources.lookup("", "v").value
            assert type(stored) is StandInArray
            np.testing.assert_array_equal(value, np.arange(6).reshape(2, 3) - 1)
            assert sess.run(step) == 1 and step.dtype == tf.int64
            assert sess.run(step.read_value()).dtype == np.int64
    assert_on_gpu(g, devices, {"AssignAddVariableOp", "AssignSubVariableOp", "VarHandleOp"})
    assert all(d.endswith("GPU:0") for d in devices.values()), devices


def test_variables_load_eval_and_initialized_value_on_the_gpu():
    with tf.Graph().as_default(), tf.device("/gpu:0"):
        v = tf.Variable(tf.constant([1.0, 2.0, 3.0]), name="v")
        w = tf.Variable(v.initialized_value() * 2.0, name="w")
        with tf.Session(config=tf.ConfigProto(**SOFT)) as sess:
            assert not sess.run(tf.is_variable_initialized(v))
            assert sess.run(tf.report_uninitialized_variables()).tolist() == [b"v", b"w"]
            sess.run(tf.global_variables_initializer())
            np.testing.assert_array_equal(w.eval(), [2.0, 4.0, 6.0])
            v.load(np.array([7.0, 8.0, 9.0], np.float32), sess)
            np.testing.assert_array_equal(v.eval(), [7.0, 8.0, 9.0])
            np.testing.assert_array_equal(sess.run(v.sparse_read([2, 0])), [9.0, 7.0])
            assert sess.run(tf.is_variable_initialized(v))


def test_save_and_restore_gpu_variables_also_into_a_cpu_only_session(tmp_path):
    prefix = str(tmp_path / "model")
    with tf.Graph().as_default(), tf.device("/gpu:0"):
        w = tf.get_variable("w", initializer=tf.constant(np.arange(6, dtype=np.float32).reshape(3, 2)))
        step = tf.train.get_or_create_global_step()
        train = tf.train.MomentumOptimizer(0.1, 0.9).minimize(tf.reduce_sum(w * w), global_step=step)
        saver = tf.train.Saver()
        with tf.Session(config=tf.ConfigProto(**SOFT)) as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(train)
            trained = sess.run(tf.global_variables())
            saver.save(sess, prefix)
            sess.run(train)
            saver.restore(sess, prefix)
            for want, got in zip(trained, sess.run(tf.global_variables())):
                np.testing.assert_array_equal(got, want)
        with tf.Session(config=tf.ConfigProto(device_count={"GPU": 0}, **SOFT)) as cpu_only:
            saver.restore(cpu_only, prefix)
            for want, got in zip(trained, cpu_only.run(tf.global_variables())):
                np.testing.assert_array_equal(got, want)
    reader = tf.train.load_checkpoint(prefix)
    np.testing.assert_array_equal(reader.get_tensor("w"), trained[0])
    assert reader.get_tensor("global_step") == 1


def test_monitored_training_session_on_the_gpu(tmp_path):
    with tf.Graph().as_default(), tf.device("/gpu:0"):
        w = tf.get_variable("w", initializer=tf.constant([1.0, -2.0]))
        step = tf.train.get_or_create_global_step()
        train = tf.train.AdamOptimizer(0.1).minimize(tf.reduce_sum(w * w), global_step=step)
        runs = 0
        with tf.train.MonitoredTrainingSession(checkpoint_dir=str(tmp_path), hooks=[tf.train.StopAtStepHook(5)],
                                               config=tf.ConfigProto(**SOFT)) as sess:
            while not sess.should_stop():
                sess.run(train)
                runs += 1
    assert runs == 5
    assert tf.train.load_checkpoint(str(tmp_path)).get_tensor("global_step") == 5


def test_a_cpu_variable_updated_by_gradients_computed_on_the_gpu():
    """A ps's way: the variables and their updates on the CPU, the model on the GPU."""
    def train(model_device):
        with tf.Graph().as_default():
            with tf.device("/cpu:0"):
                w = tf.get_variable("w", initializer=tf.constant([[1.0, 2.0], [3.0, 4.0]]))
                step = tf.train.get_or_create_global_step()
            with tf.device(model_device):
                loss = tf.reduce_sum(tf.square(tf.matmul(tf.constant([[1.0, 1.0]]), w)))
                grads = tf.train.GradientDescentOptimizer(0.01).compute_gradients(loss)
            with tf.device("/cpu:0"):
                apply = tf.train.GradientDescentOptimizer(0.01).apply_gradients(grads, global_step=step)
            with tf.Session(config=tf.ConfigProto(**SOFT)) as sess:
                sess.run(tf.global_variables_initializer())
                for _ in range(3):
                    sess.run(apply)
                return sess.run([w, step])
    want, got = train("/cpu:0"), train("/gpu:0")
    np.testing.assert_array_equal(got[0], want[0])
    assert got[1] == want[1] == 3


# -- TF 1 reference variables ---------------------------------------------------------------------
def ref_ops_graph():
    """VariableV2s with Assign, AssignAdd/Sub, the fused Apply* and Scatter* updates on them (the ops
    TF 1 graphs hold), as the imported graph of a TF 1 program has them."""
    f32 = tf.float32
    g = tf.Graph()
    with g.as_default():
        def var(name, value):
            v = make_op("VariableV2", [], {"dtype": f32, "shape": tf.TensorShape([4]), "container": "",
                                           "shared_name": ""}, name=name).outputs[0]
            init = make_op("Assign", [v, tf.constant(value, f32)], {"T": f32, "validate_shape": True,
                                                                      "use_locking": True}, name=name + "/Assign")
            return v, init.outputs[0]

        def scalar(x):
            return tf.constant(x, f32)
        grad = tf.constant([0.5, -1.0, 2.0, 0.25])
        v, init_v = var("v", [1.0, 2.0, 3.0, 4.0])
        accum, init_accum = var("accum", [0.1] * 4)
        m, init_m = var("m", [0.0] * 4)
        s, init_s = var("s", [0.0] * 4)
        inits = [init_v, init_accum, init_m, init_s]
        updates = [
            make_op("AssignAdd", [v, grad], {"T": f32}, name="assign_add").outputs[0],
            make_op("AssignSub", [v, grad], {"T": f32}, name="assign_sub").outputs[0],
            make_op("ApplyGradientDescent", [v, scalar(0.1), grad], {"T": f32}, name="sgd").outputs[0],
            make_op("ApplyMomentum", [v, accum, scalar(0.1), grad, scalar(0.9)], {"T": f32},
                    name="momentum").outputs[0],
            make_op("ApplyAdagrad", [v, accum, scalar(0.1), grad], {"T": f32}, name="adagrad").outputs[0],
            make_op("ApplyAdam", [v, m, s, scalar(0.9), scalar(0.999), scalar(0.01), scalar(0.9), scalar(0.999),
                                  scalar(1e-7), grad], {"T": f32}, name="adam").outputs[0],
            make_op("ApplyRMSProp", [v, m, s, scalar(0.01), scalar(0.9), scalar(0.5), scalar(1e-7), grad],
                    {"T": f32}, name="rmsprop").outputs[0],
            make_op("SparseApplyMomentum", [v, accum, scalar(0.1), tf.constant([1.0, 2.0]),
                                            tf.constant([3, 3]), scalar(0.9)], {"T": f32}, name="sparse_momentum"
                    ).outputs[0],
        ]
        for kind in ("Update", "Add", "Sub"):
            updates.append(make_op(f"Scatter{kind}", [v, tf.constant([2, 0, 2]), tf.constant([1.0, 2.0, 4.0])],
                                   {"T": f32}, name=f"scatter_{kind.lower()}").outputs[0])
        read = make_op("RefIdentity", [v], {"T": f32}, name="ref_identity").outputs[0]
        initialized = make_op("IsVariableInitialized", [v], {"dtype": f32}, name="initialized").outputs[0]
    return g, inits, updates, read, initialized


def run_ref_ops(device: str):
    g, inits, updates, read, initialized = ref_ops_graph()
    for op in g.get_operations():
        op._set_device(device)
    with tf.Session(graph=g) as sess:   # (no soft placement: each op here has a GPU kernel)
        before = sess.run(initialized)
        sess.run(inits)
        values, devices = [], {}
        for u in updates:
            value, placed = traced(sess, [u, read, initialized])
            values.append(value)
            devices.update(placed)
    return before, values, devices, g


def test_ref_variables_and_their_updates_on_the_gpu():
    want_before, want, _, _ = run_ref_ops("/device:CPU:0")
    before, got, devices, g = run_ref_ops("/device:GPU:0")
    assert not before and not want_before
    for (u, r, i), (wu, wr, wi) in zip(got, want):
        assert type(u) is np.ndarray and bool(i)
        np.testing.assert_array_equal(u, wu)
        np.testing.assert_array_equal(r, wr)
    assert all(d.endswith("/device:GPU:0") for d in devices.values()), devices
    assert {g.get_operation_by_name(n).type for n in devices} >= {
        "VariableV2", "AssignAdd", "AssignSub", "ApplyGradientDescent", "ApplyMomentum", "ApplyAdagrad", "ApplyAdam",
        "ApplyRMSProp", "SparseApplyMomentum", "ScatterUpdate", "ScatterAdd", "ScatterSub", "RefIdentity",
        "IsVariableInitialized"}


def test_an_imported_tf1_graph_trains_saves_and_restores_on_the_gpu(tmp_path):
    """TF 1.x's own graph (VariableV2, ApplyAdam, a sharded Saver) imported under /gpu:0 takes the
    steps TensorFlow took; its checkpoint of GPU variables restores into a CPU-only session."""
    with open(os.path.join(HERE, "tf1_train.json")) as f:
        recorded = json.load(f)
    feeds = {k: decode(v) for k, v in recorded["feeds"].items()}
    saver = recorded["saver"]
    g = tf.Graph()
    with g.as_default(), tf.device("/gpu:0"):
        tf.import_graph_def(load_graph_def(os.path.join(HERE, "tf1_train.pb"), tf.GraphDef()), name="")
    prefix = str(tmp_path / "model")
    names = sorted(recorded["checkpoint"])
    with tf.Session(graph=g, config=tf.ConfigProto(**SOFT)) as sess:
        sess.run(recorded["init"])
        losses = [sess.run([recorded["train_ops"]["adam"], "loss:0"], feeds)[1] for _ in range(3)]
        _, devices = traced(sess, recorded["train_ops"]["adam"], feeds)
        values = dict(zip(names, sess.run([n + ":0" for n in names])))
        assert sess.run(saver["save"], {saver["filename"]: prefix}) == prefix.encode()
    np.testing.assert_allclose(losses, decode(recorded["steps"]["adam"]["losses"]), rtol=1e-5)
    assert_on_gpu(g, devices, {"VariableV2", "ApplyAdam"})
    with tf.Session(graph=g, config=tf.ConfigProto(device_count={"GPU": 0}, **SOFT)) as cpu_only:
        cpu_only.run(saver["restore"], {saver["filename"]: prefix})
        for name in names:
            np.testing.assert_array_equal(cpu_only.run(name + ":0"), values[name])


# -- TF 1 control flow ------------------------------------------------------------------------------
def test_tf1_switch_and_merge_on_the_gpu():
    def run(device):
        g = tf.Graph()
        with g.as_default(), tf.device(device):
            x = tf.constant([1.0, 2.0])
            pred = tf.placeholder(tf.bool, [])
            false, true = make_op("Switch", [x, pred], {"T": tf.float32}, name="switch").outputs
            doubled = tf.identity(true, name="taken")
            merged, index = make_op("Merge", [false, doubled], {"T": tf.float32, "N": 2}, name="merge").outputs
            with tf.Session() as sess:
                return [traced(sess, [merged, index], {pred: p}) for p in (True, False)], g
    want, _ = run("/cpu:0")
    got, g = run("/gpu:0")
    for ((m, i), devices), ((wm, wi), _) in zip(got, want):
        np.testing.assert_array_equal(m, wm)
        assert i == wi and i.dtype == np.int32
        assert devices["switch"].endswith("GPU:0") and devices["merge"].endswith("GPU:0")
    assert [int(i) for (_, i), _ in got] == [1, 0]


def test_a_while_loop_and_its_gradient_run_on_the_gpu():
    """tf.while_loop's While on the GPU: its loop values stay in GPU memory between iterations (its
    body's ops with a GPU kernel run there), and a model trains through it to the CPU's numbers."""
    def train(device):
        g = tf.Graph()
        with g.as_default(), tf.device(device):
            w = tf.get_variable("w", initializer=tf.constant([0.5, -1.0]))
            _, y = tf.while_loop(lambda i, x: i < 4, lambda i, x: (i + 1, tf.identity(x * w + 1.0)),
                                 [tf.constant(0), tf.constant([1.0, 2.0])])
            step = tf.train.get_or_create_global_step()
            train_op = tf.train.MomentumOptimizer(0.01, 0.9).minimize(tf.reduce_sum(y * y), global_step=step)
            with tf.Session(config=tf.ConfigProto(**SOFT)) as sess:
                sess.run(tf.global_variables_initializer())
                for _ in range(2):
                    (value, _), devices = traced(sess, [y, train_op])
                return value, sess.run([w, step]), devices
    want_y, want_vars, _ = train("/cpu:0")
    got_y, got_vars, devices = train("/gpu:0")
    np.testing.assert_array_equal(got_y, want_y)
    for w, v in zip(want_vars, got_vars):
        np.testing.assert_array_equal(v, w)
    on_gpu = {n for n, d in devices.items() if d.endswith("/device:GPU:0")}
    assert {"while", "gradients/while_grad/while", "while/Identity"} <= on_gpu, sorted(devices.items())


def test_an_imported_tf1_while_loop_runs_on_the_gpu():
    """TF 1.x's Enter/Merge/Switch/LoopCond/NextIteration/Exit frames (folded into a While) under /gpu:0,
    a ref variable updated in the body included, give what TensorFlow computed."""
    with open(os.path.join(HERE, "tf1_while.json")) as f:
        loops = json.load(f)
    g = tf.Graph()
    with g.as_default(), tf.device("/gpu:0"):
        tf.import_graph_def(load_graph_def(os.path.join(HERE, "tf1_while.pb"), tf.GraphDef()), name="")
    x = decode(loops["feeds"]["x:0"])
    devices = {}
    with tf.Session(graph=g, config=tf.ConfigProto(**SOFT)) as sess:
        sess.run("init")
        for case in loops["cases"]:
            names = list(case["values"])
            values, placed = traced(sess, names, {"x:0": x, "n:0": case["n"]})
            devices.update(placed)
            for name, value in zip(names, values):
                want = decode(case["values"][name])
                np.testing.assert_allclose(value, want, rtol=1e-5, atol=1e-6, err_msg=name)
        assert sess.run("total:0") == sum(case["n"] for case in loops["cases"])
    on_gpu = {n for n, d in devices.items() if d.endswith("/device:GPU:0")}
    # the loops, their bodies' Switch and LoopCond, a cond's Merge in a body, a ref variable's AssignAdd
    assert {"while/while_context", "while/LoopCond", "while/Switch", "while_2/cond/Merge",
            "while_5/AssignAdd"} <= on_gpu, sorted(devices.items())
