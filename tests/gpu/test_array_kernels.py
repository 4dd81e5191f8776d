"""The array-manipulation ops' GPU kernels on CuPy arrays against their CPU kernels on numpy
(issue 25; tests/unit/test_gpu_array_kernels.py checks their placement and copy plan on stand-in
GPUs). Skips with the reason without CuPy or a GPU."""
from __future__ import annotations

import numpy as np
import pytest

from tensorweave.framework import dtypes, errors
from tensorweave.framework.graph_def import NodeDef
from tensorweave.ops import registry

rng = np.random.default_rng(25)
F32, I32, I64 = dtypes.float32, np.int32, np.int64


def floats(*shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


def ints(*values, dtype=I32):
    return np.array(values, dtype=dtype)


A = floats(4, 6)
MASKS = dict.fromkeys(("begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask"), 0)

CASES = [   # (id, op type, attrs, inputs)
    ("concat0", "ConcatV2", {"N": 2}, [floats(3, 4), floats(2, 4), I32(0)]),
    ("concat_neg_axis", "ConcatV2", {"N": 3}, [A, A, A[:, :2], I32(-1)]),
    ("concat_bool", "ConcatV2", {"N": 2}, [A > 0, A < 0, I64(1)]),
    ("concat_offset", "ConcatOffset", {"N": 2}, [I32(1), ints(2, 3, 4), ints(2, 5, 4)]),
    ("pack", "Pack", {"N": 3, "axis": 1}, [A, A * 2, A * 3]),
    ("pack_int64", "Pack", {"N": 2, "axis": 0}, [ints(1, 2, dtype=I64), ints(3, 4, dtype=I64)]),
    ("unpack", "Unpack", {"num": 6, "axis": 1}, [A]),
    ("split", "Split", {"num_split": 3}, [I32(1), A]),
    ("splitv", "SplitV", {"num_split": 3}, [A, ints(1, -1, 2), I32(1)]),
    ("slice", "Slice", {}, [A, ints(1, 2), ints(2, -1)]),
    ("strided_slice", "StridedSlice", dict(MASKS, end_mask=2), [A, ints(1, 5), ints(4, 0), ints(1, -2)]),
    ("strided_shrink_newaxis", "StridedSlice", dict(MASKS, begin_mask=2, end_mask=2, shrink_axis_mask=4,
                                                    new_axis_mask=1),
     [A, ints(0, 0, 3), ints(0, 0, 4), ints(1, 1, 1)]),
    ("strided_slice_grad", "StridedSliceGrad", dict(MASKS, end_mask=2),
     [ints(4, 6), ints(1, 5), ints(4, 0), ints(1, -2), floats(3, 3)]),
    ("transpose", "Transpose", {}, [floats(2, 3, 4), ints(2, 0, 1)]),
    ("conjugate_transpose", "ConjugateTranspose", {},
     [(floats(2, 3) + 1j * floats(2, 3)).astype(np.complex64), ints(1, 0)]),
    ("expand_dims", "ExpandDims", {}, [A, I32(-1)]),
    ("squeeze_axis", "Squeeze", {"squeeze_dims": [1]}, [floats(3, 1, 4, 1)]),
    ("squeeze_all", "Squeeze", {"squeeze_dims": []}, [floats(3, 1, 4, 1)]),
    ("fill", "Fill", {}, [ints(2, 3), np.float32(2.5)]),
    ("fill_int", "Fill", {}, [ints(4), I64(-7)]),
    ("zeros_like", "ZerosLike", {}, [A]),
    ("ones_like", "OnesLike", {}, [ints(1, 2, 3)]),
    ("tile", "Tile", {}, [floats(2, 3), ints(2, 1)]),
    ("gather", "GatherV2", {"batch_dims": 0}, [floats(5, 4), ints([0, 4, 2], [1, 1, 3]), I32(0)]),
    ("gather_axis1", "GatherV2", {"batch_dims": 0}, [floats(3, 5, 2), ints(4, 0, 4, dtype=I64), I32(1)]),
    ("gather_batch", "GatherV2", {"batch_dims": 1}, [floats(2, 5), ints([0, 4, 2], [1, 1, 3]), I32(1)]),
    ("pad", "Pad", {}, [A, ints([1, 0], [2, 3])]),
    ("pad_v2", "PadV2", {}, [A, ints([0, 2], [1, 1]), np.float32(-4)]),
    ("mirror_pad_reflect", "MirrorPad", {"mode": "REFLECT"}, [A, ints([1, 2], [3, 0])]),
    ("mirror_pad_symmetric", "MirrorPad", {"mode": "SYMMETRIC"}, [A, ints([2, 0], [0, 4])]),
    ("mirror_pad_grad", "MirrorPadGrad", {"mode": "REFLECT"}, [floats(7, 9), ints([1, 2], [3, 0])]),
    ("one_hot", "OneHot", {"axis": -1}, [ints([0, 3, -1], [5, 1, 2]), I32(4), np.float32(3), np.float32(-1)]),
    ("one_hot_axis0", "OneHot", {"axis": 0}, [ints(2, 0, 1, dtype=I64), I32(3), np.float64(1), np.float64(0)]),
    ("broadcast_to", "BroadcastTo", {}, [floats(1, 3), ints(4, 3)]),
    ("broadcast_gradient_args", "BroadcastGradientArgs", {"T": dtypes.int32}, [ints(2, 1, 3), ints(1, 3)]),
    ("size", "Size", {"out_type": dtypes.int32}, [A]),
    ("rank", "Rank", {}, [floats(2, 3, 4)]),
    ("shape_n", "ShapeN", {"N": 2, "out_type": dtypes.int64}, [A, floats(5)]),
    ("range", "Range", {"Tidx": dtypes.int32}, [I32(1), I32(10), I32(3)]),
    ("range_float", "Range", {"Tidx": F32}, [np.float32(1), np.float32(-2), np.float32(-0.75)]),
    ("reverse", "ReverseV2", {}, [A, ints(0, 1)]),
    ("cumsum", "Cumsum", {}, [A, I32(1)]),
    ("cumsum_exclusive_reverse", "Cumsum", {"exclusive": True, "reverse": True}, [floats(4, 3, dtype=np.float64),
                                                                                 I32(0)]),
    ("where", "Where", {}, [A > 0]),
    ("unsorted_segment_sum", "UnsortedSegmentSum", {}, [floats(4, 3), ints(1, -1, 0, 1), I32(3)]),
    ("dynamic_stitch", "DynamicStitch", {"N": 2, "T": F32}, [ints(0, 2), ints([1], [3]), floats(2, 3),
                                                             floats(2, 1, 3)]),
    ("parallel_dynamic_stitch", "ParallelDynamicStitch", {"N": 2, "T": F32}, [ints(4, 1), ints(0, 3),
                                                                              floats(2, 2), floats(2, 2)]),
    ("dynamic_stitch_duplicates", "DynamicStitch", {"N": 2, "T": F32},   # the later of duplicate indices wins
     [ints(3, 1, 3, 3), ints(1, 0, 1), floats(4, 2), floats(3, 2)]),
    ("dynamic_stitch_int", "DynamicStitch", {"N": 2, "T": dtypes.int32}, [ints(0, 4), ints(2), ints(7, 8), ints(9)]),
    ("invert_permutation", "InvertPermutation", {}, [ints(2, 0, 3, 1)]),
    ("placeholder_with_default", "PlaceholderWithDefault", {}, [A]),
    ("guarantee_const", "GuaranteeConst", {}, [A]),
    ("broadcast_args", "BroadcastArgs", {}, [ints(1, 6), ints(4, 1)]),
    ("roll", "Roll", {}, [A, ints(1, -2), ints(0, 1)]),
    ("reverse_sequence", "ReverseSequence", {"seq_dim": 1, "batch_dim": 0}, [floats(4, 6, 2),
                                                                            ints(3, 0, 6, 1, dtype=I64)]),
    ("unsorted_segment_max", "UnsortedSegmentMax", {}, [floats(4, 3), ints(1, -1, 0, 1), I32(3)]),
    ("unsorted_segment_min", "UnsortedSegmentMin", {}, [ints([1, 5], [2, 2], [0, 9], [4, 4]), ints(1, 1, 3, 0),
                                                        I32(4)]),
    ("scatter_nd", "ScatterNd", {}, [ints([3, 5], [0, 0], [3, 5]), floats(3), ints(4, 6)]),
    ("scatter_nd_rows", "ScatterNd", {}, [ints([2], [0], [2], dtype=I64), floats(3, 6), ints(4, 6, dtype=I64)]),
    ("gather_nd", "GatherNd", {}, [A, ints([3, 5], [0, 0])]),
    ("gather_nd_rows", "GatherNd", {}, [A, ints([[2], [0]], [[1], [3]])]),
    ("tensor_scatter_update", "TensorScatterUpdate", {}, [A, ints([3, 5], [0, 0]), floats(2)]),
    ("tensor_scatter_add", "TensorScatterAdd", {}, [A, ints([3, 5], [0, 0], [3, 5]), floats(3)]),
    ("tensor_scatter_sub", "TensorScatterSub", {}, [A, ints([1], [1]), floats(2, 6)]),
    ("tensor_scatter_min", "TensorScatterMin", {}, [A, ints([3, 5], [0, 0], [3, 5]), floats(3)]),
    ("tensor_scatter_max", "TensorScatterMax", {}, [A, ints([3, 5], [0, 0], [3, 5]), floats(3)]),
    ("dynamic_partition", "DynamicPartition", {"num_partitions": 3}, [A, ints(1, 0, 2, 1)]),
    ("top_k_ties", "TopKV2", {"sorted": True}, [np.round(floats(5, 7)), I32(3)]),
    ("stop_gradient", "StopGradient", {}, [A]),
    ("identity_n", "IdentityN", {}, [A, ints(1, 2)]),
    ("check_numerics", "CheckNumerics", {"message": "fine"}, [A]),
]


@pytest.mark.parametrize("op_type,attrs,inputs", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_gpu_kernel_matches_cpu_kernel(run_both, op_type, attrs, inputs):
    run_both(op_type, attrs, inputs)


def test_gather_index_out_of_range_gives_zeros_on_the_gpu(cupy):
    """TF's documented GPU behaviour (an error on the CPU): the rows of bad indices are zeros."""
    node = NodeDef("gather", "GatherV2", attr={"batch_dims": 0, "Tparams": "float32", "Tindices": "int32"})
    kernel = registry.kernel_for("GatherV2", "GPU")(node, None)
    params = floats(5, 2)
    got = kernel(cupy.asarray(params), cupy.asarray(ints([0, 7], [-1, 4])), 0)
    assert isinstance(got, cupy.ndarray)
    want = np.stack([np.stack([params[0], np.zeros(2, np.float32)]), np.stack([np.zeros(2, np.float32), params[4]])])
    np.testing.assert_array_equal(got.get(), want)
    with pytest.raises(errors.InvalidArgumentError, match=r"indices\[1\] = 7 is not in \[0, 5\)"):
        registry.kernel_for("GatherV2", "CPU")(node, None)(params, ints(0, 7), 0)


def test_check_numerics_finds_nan_and_inf_on_the_gpu(run_both):
    bad = np.array([1.0, np.nan, -np.inf], np.float32)
    with pytest.raises(errors.InvalidArgumentError, match="bad : Tensor had NaN and Inf values"):
        run_both("CheckNumerics", {"message": "bad"}, [bad])


def test_segment_id_past_num_segments_is_an_error_on_the_gpu(run_both):
    with pytest.raises(errors.InvalidArgumentError, match=r"segment_ids\[2\] = 3 is out of range \[0, 3\)"):
        run_both("UnsortedSegmentSum", {}, [floats(3, 2), ints(0, 1, 3), I32(3)])
