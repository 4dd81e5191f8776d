"""tf.distribute in graph mode (TF 1.15's API): MirroredStrategy over logical CPU devices of one
Session, OneDeviceStrategy, CentralStorageStrategy, reductions, replica contexts, distributed
input, optimizers under a strategy, and Estimator(train_distribute=...). Training numbers are
checked against TF 2.15 recordings (fixtures/record_tf_distribute.py) and single-device
training on the concatenated batch."""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import pytest

import tensorweave as tf
from fixtures import distribute_cases
from fixtures.recorded import decode

HERE = os.path.dirname(os.path.abspath(__file__))


def _config(cpus):
    return tf.ConfigProto(device_count={"CPU": cpus})


# -- devices -------------------------------------------------------------------------------------
def test_device_count_gives_a_session_several_cpus():
    with tf.Graph().as_default():
        with tf.device("/cpu:2"):
            c = tf.constant(2.0) * 3
        with tf.Session(config=_config(3)) as sess:
            assert sess.run(c) == 6.0
            assert [d.name for d in sess.list_devices()] == [
                f"/job:localhost/replica:0/task:0/device:CPU:{i}" for i in range(3)]
        with tf.Session() as sess, pytest.raises(tf.errors.InvalidArgumentError, match="CPU:2"):
            sess.run(c)


def test_logical_device_configuration_splits_the_cpu():
    # a fresh process: the logical devices are fixed once the runtime lists them
    code = ("import tensorweave as tf\n"
            "cpu = tf.config.list_physical_devices('CPU')[0]\n"
            "tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)\n"
            "print(tf.config.get_logical_device_configuration(cpu))\n"
            "print([d.name for d in tf.config.list_logical_devices('CPU')])\n"
            "with tf.device('/cpu:1'):\n"
            "    c = tf.constant(5.0) + 1\n"
            "print(tf.Session().run(c))\n"
            "try:\n"
            "    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 3)\n"
            "except RuntimeError as e:\n"
            "    print('RuntimeError', e)\n")
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(HERE)))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True).stdout
    lines = out.splitlines()
    assert lines[0] == ("[LogicalDeviceConfiguration(memory_limit=None, experimental_priority=None), "
                        "LogicalDeviceConfiguration(memory_limit=None, experimental_priority=None)]")
    assert lines[1] == "['/device:CPU:0', '/device:CPU:1']"
    assert lines[2] == "6.0"
    assert lines[3].startswith("RuntimeError Virtual devices cannot be modified after being initialized")


# -- MirroredStrategy training vs TF 2.15 and single-device training -------------------------------
@pytest.mark.parametrize("case", sorted(distribute_cases.CASES))
def test_mirrored_training_matches_tf(case):
    with open(os.path.join(HERE, "fixtures", "tf_distribute.json")) as f:
        recorded = json.load(f)[case]
    got = distribute_cases.train_mirrored(tf, *distribute_cases.CASES[case])
    for g, want in zip(got, recorded):
        np.testing.assert_allclose(g, decode(want), rtol=1e-6, atol=1e-6)
    replicas = distribute_cases.CASES[case][0]
    # every replica saw the same all-reduced values; the copies of each variable are identical
    np.testing.assert_array_equal(got[1], np.repeat(got[1][:, :1], replicas, axis=1))
    np.testing.assert_array_equal(got[2], np.repeat(got[2][:1], replicas, axis=0))
    np.testing.assert_array_equal(got[3], np.repeat(got[3][:1], replicas, axis=0))


@pytest.mark.parametrize("replicas", [2, 3])
def test_mirrored_sgd_equals_single_device_training_on_the_concatenated_batch(replicas):
    """With a SUM loss (the replicas' gradients are summed, as in TF), N replicas of batch b
    train exactly like one device on the concatenated batch of N*b rows."""
    x, y = distribute_cases.X, distribute_cases.Y

    def train(strategy, cpus):
        g = tf.Graph()
        with g.as_default(), strategy.scope():
            w = tf.get_variable("w", initializer=tf.constant([[0.1], [0.2], [-0.3]]))
            opt = tf.train.MomentumOptimizer(0.01, 0.9)
            it = strategy.make_dataset_iterator(tf.data.Dataset.from_tensor_slices((x, y)).repeat().batch(6))

            def step(batch):
                xb, yb = batch
                return opt.minimize(tf.reduce_sum(tf.square(tf.matmul(xb, w) - yb)))
            train_op = strategy.group(strategy.experimental_run_v2(step, args=(it.get_next(),)))
            with tf.Session(config=_config(cpus)) as sess:
                sess.run([tf.global_variables_initializer(), it.initializer])
                for _ in range(4):
                    sess.run(train_op)
                return sess.run(list(strategy.experimental_local_results(w)))

    devices = [f"/cpu:{i}" for i in range(replicas)]
    mirrored = train(tf.distribute.MirroredStrategy(devices), replicas)
    single = train(tf.distribute.OneDeviceStrategy("/cpu:0"), 1)
    assert len(mirrored) == replicas and len(single) == 1
    for copy in mirrored:
        np.testing.assert_array_equal(copy, mirrored[0])
        np.testing.assert_allclose(copy, single[0], rtol=1e-6, atol=1e-6)
    # and numpy: Momentum on the full batch of 6
    w, acc = np.array([[0.1], [0.2], [-0.3]], np.float64), 0
    for s in range(4):
        xb, yb = x[(6 * s) % 12:(6 * s) % 12 + 6], y[(6 * s) % 12:(6 * s) % 12 + 6]
        acc = 0.9 * acc + 2 * xb.T @ (xb @ w - yb)
        w = w - 0.01 * acc
    np.testing.assert_allclose(mirrored[0], w, rtol=1e-5, atol=1e-6)


def test_mirrored_variables_are_one_copy_per_device():
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    with tf.Graph().as_default(), strategy.scope():
        v = tf.Variable(tf.random_normal([3]), name="v")
        assert strategy.extended.variable_created_in_scope(v)
        copies = strategy.experimental_local_results(v)
        assert [c.op.name for c in copies] == ["v", "v/replica_1"]
        assert [c.device for c in copies] == ["/job:localhost/replica:0/task:0/device:CPU:0",
                                              "/job:localhost/replica:0/task:0/device:CPU:1"]
        assert tf.trainable_variables() == [v]
        reads = strategy.experimental_run_v2(lambda: tf.identity(v))
        assign = v.assign([1.0, 2.0, 3.0])
        with tf.Session(config=_config(2)) as sess:
            sess.run(tf.global_variables_initializer())
            a, b = sess.run(list(copies))
            np.testing.assert_array_equal(a, b)     # replica copies start from the primary's value
            r0, r1 = sess.run(list(strategy.experimental_local_results(reads)))
            np.testing.assert_array_equal(r0, a)
            np.testing.assert_array_equal(r1, a)
            sess.run(assign)                         # cross-replica assign updates every copy
            assert sess.run(list(copies))[1].tolist() == [1.0, 2.0, 3.0]


# -- reductions and replica contexts --------------------------------------------------------------
def test_reduce_sum_and_mean_with_and_without_axis():
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1", "/cpu:2"])
    data = np.arange(24, dtype=np.float32).reshape(6, 4)
    with tf.Graph().as_default():
        dist = strategy.experimental_distribute_dataset(tf.data.Dataset.from_tensor_slices(data).batch(6))
        it = dist.make_initializable_iterator()
        per_replica = it.get_next()
        parts = strategy.experimental_local_results(per_replica)
        sums = strategy.experimental_run_v2(tf.reduce_sum, args=(per_replica,))
        ids = strategy.experimental_run_v2(
            lambda: tf.constant(tf.distribute.get_replica_context().replica_id_in_sync_group))
        outs = [strategy.reduce("SUM", sums), strategy.reduce(tf.distribute.ReduceOp.MEAN, sums),
                strategy.reduce("SUM", per_replica, axis=0), strategy.reduce("MEAN", per_replica, axis=0),
                strategy.experimental_local_results(ids)]
        with tf.Session(config=_config(3)) as sess:
            sess.run(it.initializer)
            got_parts, (s, m, s0, m0, got_ids) = sess.run([list(parts), outs])
    for i, p in enumerate(got_parts):                  # the global batch of 6 split 2 rows each
        np.testing.assert_array_equal(p, data[2 * i:2 * i + 2])
    assert s == data.sum() and m == pytest.approx(data.sum() / 3)
    np.testing.assert_allclose(s0, data.sum(0))
    np.testing.assert_allclose(m0, data.mean(0))
    assert list(got_ids) == [0, 1, 2]


def test_replica_context_all_reduce_and_merge_call():
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    seen = []

    def fn():
        ctx = tf.distribute.get_replica_context()
        assert not tf.distribute.in_cross_replica_context() and ctx.num_replicas_in_sync == 2
        mine = tf.constant([1.0, 10.0]) * tf.cast(ctx.replica_id_in_sync_group + 1, tf.float32)
        total = ctx.all_reduce(tf.distribute.ReduceOp.SUM, {"a": mine, "b": mine * 2})
        mean = ctx.all_reduce("MEAN", mine)

        def merge(strategy, value):
            seen.append(strategy.experimental_local_results(value))
            assert tf.distribute.in_cross_replica_context()
            return strategy.reduce("SUM", value)
        merged = ctx.merge_call(merge, args=(mine,))
        return total["a"], total["b"], mean, merged

    with tf.Graph().as_default():
        out = strategy.experimental_run_v2(fn)
        assert len(seen) == 1 and len(seen[0]) == 2     # merge_fn ran once with both replicas' values
        with tf.Session(config=_config(2)) as sess:
            got = sess.run([list(strategy.experimental_local_results(o)) for o in out])
    for replica in range(2):
        assert got[0][replica].tolist() == [3.0, 30.0]
        assert got[1][replica].tolist() == [6.0, 60.0]
        assert got[2][replica].tolist() == [1.5, 15.0]
    # merge_fn's one tensor reaches both replicas: the same tensor, so not per-replica (as in TF)
    assert len(got[3]) == 1 and got[3][0].tolist() == [3.0, 30.0]


def test_context_functions_outside_and_inside_a_strategy():
    with tf.Graph().as_default():
        assert not tf.distribute.has_strategy()
        default = tf.distribute.get_strategy()
        assert default.num_replicas_in_sync == 1
        assert tf.distribute.get_replica_context().replica_id_in_sync_group == 0
        assert not tf.distribute.in_cross_replica_context()
        strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
        with strategy.scope():
            assert tf.distribute.has_strategy() and tf.distribute.get_strategy() is strategy
            assert tf.distribute.in_cross_replica_context()
            assert tf.distribute.get_replica_context() is None
            assert tf.distribute.get_loss_reduction() == tf.distribute.ReduceOp.SUM
            with pytest.raises(ValueError, match="Mixing different tf.distribute.Strategy"):
                with tf.distribute.OneDeviceStrategy("/cpu:0").scope():
                    pass


def test_input_context_and_make_input_fn_iterator():
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    contexts = []

    def input_fn(ctx):
        contexts.append(ctx)
        return tf.data.Dataset.range(10).batch(ctx.get_per_replica_batch_size(4))
    with tf.Graph().as_default():
        it = strategy.make_input_fn_iterator(input_fn)
        batch = strategy.experimental_local_results(it.get_next())
        with tf.Session(config=_config(2)) as sess:
            sess.run(it.initializer)
            first = sess.run(list(batch))
    assert (contexts[0].num_replicas_in_sync, contexts[0].input_pipeline_id, contexts[0].num_input_pipelines) == \
        (2, 0, 1)
    assert [b.tolist() for b in first] == [[0, 1], [2, 3]]      # each replica takes its own batch
    with pytest.raises(ValueError, match="not divisible"):
        tf.distribute.InputContext(num_replicas_in_sync=3).get_per_replica_batch_size(4)


# -- OneDeviceStrategy and CentralStorageStrategy ------------------------------------------------
def test_one_device_strategy_and_contrib_alias():
    strategy = tf.contrib.distribute.OneDeviceStrategy("device:CPU:0")
    assert isinstance(strategy, tf.distribute.OneDeviceStrategy) and strategy.num_replicas_in_sync == 1
    with tf.Graph().as_default(), strategy.scope():
        v = tf.get_variable("v", initializer=tf.constant([1.0, 2.0]))
        assert v.device == "/job:localhost/replica:0/task:0/device:CPU:0"
        opt = tf.train.GradientDescentOptimizer(0.5)
        out = strategy.experimental_run_v2(lambda: (opt.minimize(tf.reduce_sum(v * v)), v * 1.0))
        assert len(strategy.experimental_local_results(out[1])) == 1
        total = strategy.reduce("SUM", out[1])
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(out[0])
            assert sess.run(v).tolist() == [0.0, 0.0]    # v - 0.5 * 2v
            assert sess.run(total).tolist() == [0.0, 0.0]


def test_central_storage_keeps_one_variable_and_sums_gradients():
    strategy = tf.distribute.experimental.CentralStorageStrategy(["/cpu:0", "/cpu:1"])
    with tf.Graph().as_default(), strategy.scope():
        v = tf.get_variable("v", initializer=tf.constant(1.0))
        assert not isinstance(v, type(strategy.experimental_local_results(v)))
        opt = tf.train.GradientDescentOptimizer(0.25)
        train = strategy.group(strategy.experimental_run_v2(lambda: opt.minimize(2.0 * v)))
        with tf.Session(config=_config(2)) as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(train)
            assert sess.run(v) == pytest.approx(1.0 - 0.25 * 4.0)   # two replicas' gradients of 2


@pytest.mark.parametrize("cross_device_ops", [tf.distribute.HierarchicalCopyAllReduce(),
                                              tf.distribute.NcclAllReduce(), tf.distribute.ReductionToOneDevice()])
def test_cross_device_ops_reduce_equally(cross_device_ops):
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"], cross_device_ops=cross_device_ops)
    with tf.Graph().as_default(), strategy.scope():
        v = tf.get_variable("v", initializer=tf.constant([1.0, 1.0]))
        opt = tf.train.GradientDescentOptimizer(1.0)
        train = strategy.group(strategy.experimental_run_v2(
            lambda: opt.minimize(tf.reduce_sum(v) * tf.cast(
                tf.distribute.get_replica_context().replica_id_in_sync_group + 1, tf.float32))))
        with tf.Session(config=_config(2)) as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(train)
            assert [c.tolist() for c in sess.run(list(strategy.experimental_local_results(v)))] == \
                [[-2.0, -2.0], [-2.0, -2.0]]


# -- Estimator -----------------------------------------------------------------------------------
def _estimator_weights(train_distribute, batch_size):
    x = np.random.RandomState(0).randn(24, 3).astype(np.float32)
    y = x @ np.array([[1.0], [-2.0], [0.5]], np.float32) + 0.3

    def input_fn():
        return tf.data.Dataset.from_tensor_slices(({"x": x}, y)).repeat().batch(batch_size)

    def model_fn(features, labels, mode):
        w = tf.get_variable("w", [3, 1], initializer=tf.zeros_initializer())
        b = tf.get_variable("b", [1], initializer=tf.zeros_initializer())
        loss = tf.losses.mean_squared_error(labels, tf.matmul(features["x"], w) + b)
        train = tf.train.MomentumOptimizer(0.05, 0.9).minimize(loss, tf.train.get_global_step())
        return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train)

    config = tf.estimator.RunConfig(train_distribute=train_distribute, save_summary_steps=None,
                                    log_step_count_steps=None)
    est = tf.estimator.Estimator(model_fn, model_dir=tempfile.mkdtemp(), config=config)
    est.train(input_fn, steps=6)
    assert est.get_variable_value("global_step") == 6
    assert est.get_variable_names() == ["b", "b/Momentum", "global_step", "w", "w/Momentum"]   # once each
    return est.get_variable_value("w"), est.get_variable_value("b")


def test_estimator_train_distribute_equals_single_device_on_the_concatenated_batch():
    mirrored = _estimator_weights(tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"]), 4)
    single = _estimator_weights(None, 8)
    for got, want in zip(mirrored, single):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


# -- bad input -----------------------------------------------------------------------------------
def test_bad_devices_and_reductions_give_tf_errors():
    with pytest.raises(ValueError, match="Must specify at least one device"):
        tf.distribute.MirroredStrategy([])
    with pytest.raises(ValueError, match="No duplicates allowed"):
        tf.distribute.MirroredStrategy(["/cpu:0", "/device:CPU:0"])
    with pytest.raises(ValueError, match="Unknown device 'bogus'"):
        tf.distribute.MirroredStrategy(["bogus"])
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:7"])
    with tf.Graph().as_default():
        with strategy.scope():
            v = tf.Variable(1.0, name="v")
        with tf.Session(config=_config(2)) as sess, \
                pytest.raises(tf.errors.InvalidArgumentError, match="Cannot assign a device for operation v/replica_1"):
            sess.run(v.initializer)
        with pytest.raises(ValueError, match="A non-DistributedValues value .* cannot be reduced with the given "
                                             "reduce op ReduceOp.SUM"):
            strategy.reduce("SUM", tf.constant(1.0))
        with pytest.raises(RuntimeError, match="requires being in cross-replica context"):
            strategy.experimental_run_v2(lambda: strategy.reduce("SUM", tf.constant(1.0)))
        with pytest.raises(ValueError, match="You must specify an aggregation method to update a MirroredVariable"):
            strategy.experimental_run_v2(lambda: v.assign(2.0))
        with pytest.raises(ValueError, match="reduce_op must be"):
            strategy.reduce("MAX", tf.constant(1.0))


def test_estimator_with_contrib_one_device_strategy_equals_plain_training():
    # Google's MNIST sample: RunConfig(train_distribute=tf.contrib.distribute.OneDeviceStrategy("device:CPU:0"))
    one = _estimator_weights(tf.contrib.distribute.OneDeviceStrategy("device:CPU:0"), 8)
    plain = _estimator_weights(None, 8)
    for got, want in zip(one, plain):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)


def test_errors_in_replica_functions_reach_the_caller():
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])

    def fails_in_replica_1():
        if tf.distribute.get_replica_context().replica_id_in_sync_group == 1:
            raise KeyError("replica 1 failed")
        return tf.distribute.get_replica_context().merge_call(lambda s: tf.constant(1.0))

    def uneven_merge_calls():
        ctx = tf.distribute.get_replica_context()
        if ctx.replica_id_in_sync_group == 0:
            ctx.merge_call(lambda s: None)
        return tf.constant(0.0)
    with tf.Graph().as_default():
        with pytest.raises(KeyError, match="replica 1 failed"):
            strategy.experimental_run_v2(fails_in_replica_1)
        with pytest.raises(RuntimeError, match="different number of replica_context\\(\\).merge_call\\(\\) calls"):
            strategy.experimental_run_v2(uneven_merge_calls)
        # the graph's scopes are intact afterwards
        assert tf.get_default_graph().get_name_scope() == ""
        assert tf.constant(1.0).device == ""


def test_extended_update_and_colocate_vars_with():
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    with tf.Graph().as_default(), strategy.scope():
        v = tf.Variable([1.0, 2.0], name="v")
        with strategy.extended.colocate_vars_with(v):
            s = tf.Variable([0.0, 0.0], name="s")
        assert [c.device for c in strategy.experimental_local_results(s)] == \
            [c.device for c in strategy.experimental_local_results(v)]
        upd = strategy.extended.update(v, lambda var, x: var.assign_add(x, read_value=False), args=(tf.constant(
            [10.0, 20.0]),))
        per_device = strategy.extended.update(s, lambda var: var.assign_sub([1.0, 1.0]), group=False)
        assert len(per_device) == 2
        with tf.Session(config=_config(2)) as sess:
            sess.run(tf.global_variables_initializer())
            sess.run([upd, per_device])
            assert [c.tolist() for c in sess.run(list(strategy.experimental_local_results(v)))] == \
                [[11.0, 22.0], [11.0, 22.0]]
            assert sess.run(list(strategy.experimental_local_results(s)))[1].tolist() == [-1.0, -1.0]


def test_checkpoints_hold_each_mirrored_variable_once_and_restore_every_copy():
    path = os.path.join(tempfile.mkdtemp(), "model.ckpt")
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    with tf.Graph().as_default():
        with strategy.scope():
            v = tf.get_variable("v", initializer=tf.constant([1.0, 2.0]))
        assert tf.global_variables() == [v] and tf.trainable_variables() == [v]
        saver = tf.train.Saver()
        with tf.Session(config=_config(2)) as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(strategy.extended.update(v, lambda c: c.assign([3.0, 4.0])))
            saver.save(sess, path)
    assert [n for n, _ in tf.train.list_variables(path)] == ["v"]
    with tf.Graph().as_default():      # a single-device graph restores it
        w = tf.get_variable("v", [2])
        with tf.Session() as sess:
            tf.train.Saver().restore(sess, path)
            assert sess.run(w).tolist() == [3.0, 4.0]
            sess.run(w.assign([5.0, 6.0]))
            tf.train.Saver().save(sess, path)
    with tf.Graph().as_default():      # and a single-device checkpoint restores every copy
        with strategy.scope():
            v = tf.get_variable("v", [2])
        with tf.Session(config=_config(2)) as sess:
            tf.train.Saver().restore(sess, path)
            assert [c.tolist() for c in sess.run(list(strategy.experimental_local_results(v)))] == \
                [[5.0, 6.0], [5.0, 6.0]]


def test_metrics_in_replicas_accumulate_per_replica_and_aggregate_their_value():
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    with tf.Graph().as_default(), strategy.scope():
        def fn():
            rid = tf.cast(tf.distribute.get_replica_context().replica_id_in_sync_group, tf.float32)
            return tf.metrics.mean(tf.constant([1.0, 2.0]) + rid)
        value, update = strategy.experimental_run_v2(fn)
        total = [v for v in tf.local_variables() if v.op.name.endswith("total")]
        assert len(total) == 1                        # one (sync-on-read) variable, copies per device
        summed = total[0].value()                     # read in cross-replica context: the copies' SUM
        with tf.Session(config=_config(2)) as sess:
            sess.run([tf.global_variables_initializer(), tf.local_variables_initializer()])
            # as TF 2.15: each replica's update_op is its own mean, the value is all replicas' mean
            assert [float(x) for x in sess.run(list(strategy.experimental_local_results(update)))] == [1.5, 2.5]
            assert [float(x) for x in sess.run(list(strategy.experimental_local_results(value)))] == [2.0]
            assert sess.run(summed) == 8.0


def test_merge_call_runs_in_the_replicas_name_scope():
    # TF 2.15 names these "outer/GradientDescent" and "outer/c:0"
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    with tf.Graph().as_default(), strategy.scope():
        w = tf.get_variable("w", initializer=tf.constant(1.0))
        opt = tf.train.GradientDescentOptimizer(0.1)

        def fn():
            with tf.name_scope("outer"):
                train = opt.minimize(w * 2.0)
                merged = tf.distribute.get_replica_context().merge_call(lambda s: tf.constant(1.0, name="c"))
            return train, merged
        train, merged = strategy.experimental_run_v2(fn)
        assert strategy.experimental_local_results(train)[0].name == "outer/GradientDescent"
        assert merged.name == "outer/c:0"


def test_moving_averages_in_replicas_move_every_copy_toward_the_replicas_mean():
    """TF 1.15's assign_moving_average in a replica context: one update for all replicas (a
    merge_call), toward the mean of their values, on every copy; the zero-debiased one too."""
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    with tf.Graph().as_default(), strategy.scope():
        plain = tf.Variable([1.0, -2.0], name="plain", trainable=False)
        debiased = tf.Variable([0.0, 0.0], name="debiased", trainable=False)

        def fn():
            ctx = tf.distribute.get_replica_context()
            mine = tf.constant([2.0, 4.0]) * tf.cast(ctx.replica_id_in_sync_group + 1, tf.float32)
            return tf.group(tf.train.assign_moving_average(plain, mine, 0.75, zero_debias=False),
                            tf.train.assign_moving_average(debiased, mine, 0.75))
        step = strategy.group(strategy.experimental_run_v2(fn))
        with tf.Session(config=_config(2)) as sess:
            sess.run(tf.global_variables_initializer())
            for _ in range(2):
                sess.run(step)
            got_plain, got_debiased = sess.run([list(strategy.experimental_local_results(v))
                                                for v in (plain, debiased)])
    mean = np.array([3.0, 6.0])     # of [2, 4] and [4, 8]
    want_plain = np.array([1.0, -2.0])
    biased = np.zeros(2)
    for _ in range(2):
        want_plain = want_plain - 0.25 * (want_plain - mean)
        biased = biased - 0.25 * (biased - mean)
    for copy in range(2):
        np.testing.assert_allclose(got_plain[copy], want_plain, rtol=1e-6)
        np.testing.assert_allclose(got_debiased[copy], biased / (1 - 0.75 ** 2), rtol=1e-6)
