"""The array-manipulation ops' GPU kernels (issue 25) under stand-in GPUs: a graph pinned to
/gpu:0 places each of these ops there (their shape, axis and size arguments read in host memory,
their shape-like outputs written there) and gives the numbers of the same graph pinned to the CPU.
Ops without a GPU kernel in these graphs (arithmetic, reductions) move to the CPU by soft
placement, so values cross the device boundary both ways. tests/gpu/test_array_kernels.py runs the
same kernels on CuPy arrays."""
from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.framework import dtypes, errors
from tensorweave.ops.helpers import make_op
from tensorweave.runtime.devices import STANDIN_ENV, StandInArray

GPU, CPU = "/gpu:0", "/cpu:0"


def _run(device: str, build):
    """Builds `build()` -> (feeds by placeholder name, fetches) under `device` and runs it once:
    (fetched values, {op type: set of devices its nodes ran on})."""
    graph = tf.Graph()
    with graph.as_default():
        with tf.device(device):
            feeds, fetches = build()
        config = tf.ConfigProto(allow_soft_placement=True)
        with tf.Session(graph=graph, config=config) as sess:
            meta = tf.RunMetadata()
            values = sess.run(fetches, {graph.get_tensor_by_name(k): v for k, v in feeds.items()},
                              options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE), run_metadata=meta)
    placed: dict = {}
    for dev in meta.step_stats.dev_stats:
        for stats in dev.node_stats:
            try:
                op_type = graph.get_operation_by_name(stats.node_name).type
            except (KeyError, ValueError):
                continue   # (a host/device copy the executor planned)
            placed.setdefault(op_type, set()).add(dev.device.rsplit("/", 1)[-1])
    return values, placed


def _flat(values) -> list:
    if isinstance(values, dict):
        return [v for k in sorted(values) for v in _flat(values[k])]
    if isinstance(values, (list, tuple)):
        return [v for x in values for v in _flat(x)]
    return [values]


def _check(monkeypatch, build, on_gpu):
    monkeypatch.setenv(STANDIN_ENV, "1")
    gpu_values, placed = _run(GPU, build)
    cpu_values, cpu_placed = _run(CPU, build)
    for op_type in on_gpu:
        assert placed.get(op_type) == {"device:GPU:0"}, f"{op_type} ran on {placed.get(op_type)}"
        assert cpu_placed.get(op_type) == {"device:CPU:0"}
    got, want = _flat(gpu_values), _flat(cpu_values)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert type(g) is not StandInArray   # fetches come back in host memory
        assert np.asarray(g).dtype == np.asarray(w).dtype
        np.testing.assert_array_equal(g, w)
    return gpu_values


def _ph(name, dtype=tf.float32, shape=None):
    return tf.placeholder(dtype, shape, name=name)


X = np.arange(24, dtype=np.float32).reshape(4, 6) - 7.5
Y = np.linspace(-2, 3, 12, dtype=np.float32).reshape(2, 6)


def test_concat_stack_unstack_split(monkeypatch):
    def build():
        x, y = _ph("x", shape=[None, 6]), _ph("y", shape=[None, 6])
        return {"x:0": X, "y:0": Y}, {
            "concat0": tf.concat([x, y], 0), "concat_neg": tf.concat([x, x], -1),
            "stack": tf.stack([x, x * 2.0], axis=1), "unstack": tf.unstack(y, num=2),
            "split": tf.split(x, 3, axis=1), "splitv": tf.split(x, [1, -1, 2], axis=1)}
    out = _check(monkeypatch, build, ["ConcatV2", "Pack", "Unpack", "Split", "SplitV"])
    np.testing.assert_array_equal(out["concat0"], np.concatenate([X, Y]))
    np.testing.assert_array_equal(out["splitv"][1], X[:, 1:4])


def test_slices_transpose_dims(monkeypatch):
    def build():
        x = _ph("x", shape=[4, 6])
        c = _ph("c", tf.complex64, [2, 3])
        return {"x:0": X, "c:0": (Y[:, :3] + 1j * Y[:, 3:]).astype(np.complex64)}, {
            "slice": tf.slice(x, [1, 2], [2, -1]), "strided": x[1:, ::-2], "shrink": x[:, 3],
            "newaxis": x[None, 2, ...], "transpose": tf.transpose(x), "perm3": tf.transpose(x[None], [2, 0, 1]),
            "conj": tf.transpose(c, conjugate=True), "expand": tf.expand_dims(x, -1),
            "squeeze": tf.squeeze(tf.expand_dims(x, 1)), "squeeze_axis": tf.squeeze(x[None, :, None], [0, 2]),
            "reverse": tf.reverse(x, [0, 1])}
    out = _check(monkeypatch, build, ["Slice", "StridedSlice", "Transpose", "ConjugateTranspose", "ExpandDims",
                                      "Squeeze", "ReverseV2"])
    np.testing.assert_array_equal(out["strided"], X[1:, ::-2])


def test_shapes_sizes_ranges_fills(monkeypatch):
    def build():
        x, n = _ph("x"), _ph("n", tf.int32, [])
        return {"x:0": X, "n:0": np.int32(5)}, {
            "shape": tf.shape(x), "shape_n": tf.shape_n([x, x[0]], out_type=tf.int64), "size": tf.size(x),
            "rank": tf.rank(x), "fill": tf.fill(tf.shape(x), 2.5), "zeros_like": tf.zeros_like(x),
            "ones_like": make_op("OnesLike", [x], {"T": dtypes.float32}).outputs[0],
            "range": tf.range(n), "range_f": tf.range(1.0, tf.cast(n, tf.float32), 0.75),
            "broadcast_to": tf.broadcast_to(x[0], tf.stack([n, 6])),
            "tile": tf.tile(x, [2, 1]), "one_hot": tf.one_hot(tf.range(n) - 1, 4, on_value=3.0, off_value=-1.0,
                                                            axis=0)}
    out = _check(monkeypatch, build, ["Shape", "ShapeN", "Size", "Rank", "Fill", "ZerosLike", "OnesLike", "Range",
                                      "BroadcastTo", "Tile", "OneHot"])
    assert out["size"] == 24 and out["rank"] == 2 and out["shape_n"][1].tolist() == [6]


def test_pads(monkeypatch):
    def build():
        x = _ph("x", shape=[4, 6])
        return {"x:0": X}, {
            "pad": tf.pad(x, [[1, 0], [2, 3]]), "pad_v2": tf.pad(x, [[0, 2], [1, 1]], constant_values=-4.0),
            "reflect": tf.pad(x, [[1, 2], [3, 0]], mode="REFLECT"),
            "symmetric": tf.pad(x, [[2, 0], [0, 4]], mode="SYMMETRIC"),
            "mirror_grad": tf.gradients(tf.pad(x, [[1, 2], [3, 0]], mode="REFLECT"), x)[0]}
    out = _check(monkeypatch, build, ["Pad", "PadV2", "MirrorPad", "MirrorPadGrad"])
    np.testing.assert_array_equal(out["reflect"], np.pad(X, [[1, 2], [3, 0]], mode="reflect"))


def test_gather_segments_stitch_where_cumsum(monkeypatch):
    idx = np.array([[2, 0], [3, 3]], np.int32)

    def build():
        x, i = _ph("x", shape=[4, 6]), _ph("i", tf.int32, [2, 2])
        ids = tf.constant([1, -1, 0, 1], name="ids")
        return {"x:0": X, "i:0": idx}, {
            "gather": tf.gather(x, i), "gather_axis1": tf.gather(x, i, axis=1),
            "batch_gather": tf.gather(x[:2], i, axis=1, batch_dims=1),
            "segment_sum": tf.unsorted_segment_sum(x, ids, 3),
            "stitch": tf.dynamic_stitch([i[0], i[1, :1] - 2], [x[:2], x[3:]]),
            "parallel_stitch": make_op("ParallelDynamicStitch", [i[1], i[0] + 4, x[:2], x[2:]],
                                       {"N": 2, "T": dtypes.float32}).outputs[0],
            "where": tf.where(x > 0.0), "cumsum": tf.cumsum(x, 1), "cumsum_ex_rev": tf.cumsum(x, 0, exclusive=True,
                                                                                                reverse=True)}
    out = _check(monkeypatch, build, ["GatherV2", "UnsortedSegmentSum", "DynamicStitch", "ParallelDynamicStitch",
                                      "Where", "Cumsum"])
    np.testing.assert_array_equal(out["gather_axis1"], X[:, idx])
    np.testing.assert_array_equal(out["where"], np.argwhere(X > 0))


def test_host_memory_ops(monkeypatch):
    def build():
        s0, s1, p = _ph("s0", tf.int32, [None]), _ph("s1", tf.int32, [None]), _ph("p", tf.int32, [None])
        return {"s0:0": np.array([2, 1, 3], np.int32), "s1:0": np.array([1, 3], np.int32),
                "p:0": np.array([2, 0, 1], np.int32)}, {
            "bga": make_op("BroadcastGradientArgs", [s0, s1], {"T": dtypes.int32}).outputs,
            "offsets": make_op("ConcatOffset", [tf.constant(1), s0, s0 * 2], {"N": 2}).outputs,
            "invert": tf.invert_permutation(p)}
    out = _check(monkeypatch, build, ["BroadcastGradientArgs", "ConcatOffset", "InvertPermutation"])
    assert [a.tolist() for a in out["bga"]] == [[1], [0, 1]]
    assert [o.tolist() for o in out["offsets"]] == [[0, 0, 0], [0, 1, 0]]


def test_identities_and_check_numerics(monkeypatch):
    def build():
        x = _ph("x", shape=[4, 6])
        return {"x:0": X}, {"stop": tf.stop_gradient(x), "n": tf.identity_n([x, x[0]]),
                            "checked": tf.check_numerics(x, "x is bad")}
    _check(monkeypatch, build, ["StopGradient", "IdentityN", "CheckNumerics"])


def test_check_numerics_on_the_gpu_names_the_message(monkeypatch):
    monkeypatch.setenv(STANDIN_ENV, "1")

    def build():
        x = _ph("x", shape=[2])
        return {"x:0": np.array([1.0, np.nan], np.float32)}, tf.check_numerics(x, "x is bad")
    with pytest.raises(errors.InvalidArgumentError, match="x is bad : Tensor had NaN values"):
        _run(GPU, build)


def test_gradients_through_concat_slice_gather_transpose(monkeypatch):
    """The gradient graphs of the array ops run on the GPU too: ConcatOffset and Slice (concat of
    unknown shapes), Pad (slice), StridedSliceGrad, the dense gather gradient's UnsortedSegmentSum
    and the sparse one made dense, InvertPermutation (a fed perm)."""
    def build():
        x, y = _ph("x", shape=[None, 6]), _ph("y", shape=[None, 6])
        p, i = _ph("p", tf.int32, [2]), _ph("i", tf.int32, [3])
        joined = tf.concat([x, y], 0)
        parts = [tf.slice(joined, [1, 1], [3, 4]), joined[::2, 1:5], tf.transpose(joined, p),
                 tf.gather(joined, i), tf.gather(joined, i, axis=1)]
        weights = [tf.constant(np.arange(np.prod(s), dtype=np.float32).reshape(s) % 5 - 2)
                   for s in ([3, 4], [3, 4], [6, 6], [3, 6], [6, 3])]
        loss = tf.add_n([tf.reduce_sum(a * w) for a, w in zip(parts, weights)])
        grads = [tf.convert_to_tensor(g) for g in tf.gradients(loss, [x, y])]
        return {"x:0": X, "y:0": Y, "p:0": np.array([1, 0], np.int32), "i:0": np.array([5, 0, 5], np.int32)}, grads
    _check(monkeypatch, build, ["ConcatV2", "ConcatOffset", "ShapeN", "Slice", "StridedSlice", "StridedSliceGrad",
                                "Transpose", "InvertPermutation", "GatherV2", "UnsortedSegmentSum"])


def test_scatter_gather_nd_partition_top_k_roll(monkeypatch):
    def build():
        x, i = _ph("x", shape=[4, 6]), _ph("i", tf.int32, [3, 2])
        ids = tf.constant([1, -1, 0, 1], name="ids")
        parts = tf.constant([1, 0, 2, 1], name="parts")
        lengths = tf.constant([3, 0, 6, 1], dtype=tf.int64, name="lengths")
        return {"x:0": X, "i:0": np.array([[3, 5], [0, 0], [3, 5]], np.int32)}, {
            "default": tf.placeholder_with_default(x, [4, 6]), "const": tf.guarantee_const(x),
            "broadcast_args": tf.broadcast_dynamic_shape(tf.shape(x[:1]), tf.shape(x[:, :1])),
            "roll": tf.roll(x, [1, -2], [0, 1]), "reverse_sequence": tf.reverse_sequence(x, lengths, 1, 0),
            "segment_max": tf.unsorted_segment_max(x, ids, 3), "segment_min": tf.unsorted_segment_min(x, ids, 3),
            "scatter_nd": tf.scatter_nd(i, x[:3, 0], [4, 6]), "gather_nd": tf.gather_nd(x, i),
            "update": tf.tensor_scatter_update(x, i[:2], x[0, :2]), "add": tf.tensor_scatter_add(x, i, x[0, :3]),
            "sub": tf.tensor_scatter_sub(x, i[:1], x[1, :1]), "min": tf.tensor_scatter_nd_min(x, i, x[2, :3]),
            "max": tf.tensor_scatter_nd_max(x, i, x[2, :3]), "partition": tf.dynamic_partition(x, parts, 3),
            "top_k": list(tf.nn.top_k(x, 3))}
    out = _check(monkeypatch, build, [
        "PlaceholderWithDefault", "GuaranteeConst", "BroadcastArgs", "Roll", "ReverseSequence",
        "UnsortedSegmentMax", "UnsortedSegmentMin", "ScatterNd", "GatherNd", "TensorScatterUpdate",
        "TensorScatterAdd", "TensorScatterSub", "TensorScatterMin", "TensorScatterMax", "DynamicPartition", "TopKV2"])
    np.testing.assert_array_equal(out["scatter_nd"][3, 5], X[0, 0] + X[2, 0])   # duplicates sum
    np.testing.assert_array_equal(out["top_k"][0], -np.sort(-X, axis=1)[:, :3])
