"""Shape inference degrades to unknown dimensions, never fails for lack of a static shape.

One graph (the corpus) holds at least one op of every registered op type, built through the
public API with fully known shapes and constant arguments. Each op's shape function is then run
again on the same attrs with its inputs made less known (unknown rank; known rank but unknown
dims; only the data inputs unknown while constant arguments stay; constant arguments replaced by
placeholders of the same shape). It must not raise, must give the same number of outputs with the
same dtypes, and each output shape must be compatible with the fully known one. A new op type
fails `test_corpus_covers_every_op_type` until it is added to the corpus."""
from __future__ import annotations

import os
import tempfile

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.framework.op_def_registry import OP_DEFS
from tensorweave.ops import collective_ops
from tensorweave.ops.control_flow import tensor_list
from tensorweave.ops.data_flow import staleness
from tensorweave.ops.helpers import make_op
from tensorweave.ops.registry import load_all
from tensorweave.ops.math.bucketize import bucketize
from tensorweave.ops.nn.activations import bias_add_v1
from tensorweave.ops.sendrecv import send
from tensorweave.ops.state.variable_ops import handle_dtype, handle_shape, variable_shape

# Op types the corpus cannot hold, and why.
NOT_IN_CORPUS = {
    "_Recv": "no inputs: its shape is an attr the partitioner copies from the sent tensor",
}

F = np.float32


def _build_corpus(g: tf.Graph) -> None:
    with g.as_default():
        x = tf.placeholder(tf.float32, [2, 3, 4], name="x")
        m = tf.placeholder(tf.float32, [3, 4], name="m")
        m2 = tf.placeholder(tf.float32, [4, 3], name="m2")
        v = tf.placeholder(tf.float32, [4], name="v")
        img = tf.placeholder(tf.float32, [2, 6, 6, 3], name="img")
        ints = tf.placeholder(tf.int32, [5], name="ints")
        b = tf.placeholder(tf.bool, [3, 4], name="b")
        # unary and binary math
        for fn in (tf.abs, tf.acos, tf.asin, tf.atan, tf.ceil, tf.cos, tf.cosh, tf.erf, tf.exp, tf.expm1,
                   tf.floor, tf.log, tf.log1p, tf.negative, tf.reciprocal, tf.rint, tf.round, tf.rsqrt, tf.sign,
                   tf.sin, tf.sinh, tf.sqrt, tf.square, tf.tan, tf.tanh, tf.sigmoid, tf.is_nan, tf.is_inf,
                   tf.is_finite, tf.nn.relu, tf.nn.relu6, tf.nn.elu, tf.nn.selu, tf.nn.softplus, tf.nn.softsign,
                   tf.nn.leaky_relu, tf.nn.softmax, tf.nn.log_softmax, tf.zeros_like, tf.ones_like, tf.identity,
                   tf.stop_gradient):
            fn(m)
        for op_type in ("SigmoidGrad", "TanhGrad", "SqrtGrad", "RsqrtGrad", "ReciprocalGrad"):   # (y, dy)
            make_op(op_type, [m, m])
        tf.abs(tf.cast(m, tf.complex64))
        tf.conj(tf.cast(m, tf.complex64))
        for fn in (tf.add, tf.subtract, tf.multiply, tf.realdiv, tf.truediv, tf.floordiv, tf.floormod, tf.pow,
                   tf.maximum, tf.minimum, tf.squared_difference, tf.div_no_nan, tf.equal, tf.not_equal, tf.less,
                   tf.less_equal, tf.greater, tf.greater_equal, tf.truncatediv, tf.truncatemod, tf.div):
            fn(m, v)
        tf.add(tf.constant(["a"]), tf.constant(["b"]))
        tf.logical_and(b, b), tf.logical_or(b, b), tf.logical_not(b)
        tf.add_n([m, m, m])
        tf.cast(m, tf.int32)
        # reductions and scans
        for fn in (tf.reduce_sum, tf.reduce_mean, tf.reduce_prod, tf.reduce_max, tf.reduce_min):
            fn(x, axis=1)
            fn(x, axis=[0, 2], keepdims=True)
        tf.reduce_any(b, 1), tf.reduce_all(b, 0)
        tf.argmax(x, 1), tf.argmin(x, 2)
        tf.cumsum(x, 1), tf.cumprod(x, 2)
        tf.unsorted_segment_sum(m, tf.constant([0, 1, 0]), 2)
        tf.segment_sum(m, tf.constant([0, 0, 1]))
        tf.bincount(ints)
        # linalg
        tf.matmul(m, m2)
        tf.matmul(x, tf.placeholder(tf.float32, [2, 4, 5]))
        tf.einsum("ij,jk->ik", m, m2)
        # linear algebra, special functions, segments, histograms, space/depth
        sq = tf.placeholder(tf.float32, [2, 4, 4], name="sq")
        rhs = tf.placeholder(tf.float32, [2, 4, 3], name="rhs")
        tf.cholesky(sq), tf.qr(x), tf.svd(x), tf.svd(x, compute_uv=False), tf.self_adjoint_eig(sq),
        tf.self_adjoint_eigvals(sq), tf.matrix_inverse(sq), tf.matrix_determinant(sq), tf.linalg.slogdet(sq)
        tf.linalg.expm(sq), tf.linalg.sqrtm(sq), tf.linalg.logm(tf.cast(sq, tf.complex64))
        tf.matrix_solve(sq, rhs), tf.matrix_triangular_solve(sq, rhs), tf.matrix_solve_ls(x, tf.placeholder(
            tf.float32, [2, 3, 2]))
        tf.linalg.lu(sq), tf.linalg.tridiagonal_solve(tf.placeholder(tf.float32, [2, 3, 4]), rhs)
        tf.linalg.diag(v), tf.linalg.diag(tf.placeholder(tf.float32, [2, 2, 3]), k=(0, 1)), tf.linalg.diag_part(x),
        tf.linalg.diag_part(x, k=(-1, 1)), tf.linalg.set_diag(x, tf.placeholder(tf.float32, [2, 3])),
        tf.linalg.band_part(x, 1, -1), tf.diag(m), tf.diag_part(tf.placeholder(tf.float32, [3, 4, 3, 4]))
        tf.cross(tf.placeholder(tf.float32, [5, 3]), tf.placeholder(tf.float32, [5, 3])), tf.atan2(m, v)
        tf.asinh(m), tf.acosh(m), tf.atanh(m), tf.math.xlogy(m, v), tf.math.xdivy(m, v), tf.math.xlog1py(m, v),
        tf.math.multiply_no_nan(m, v), tf.setdiff1d(ints, tf.constant([1, 2]))
        tf.lgamma(m), tf.digamma(m), tf.polygamma(tf.ones([3, 4]), m), tf.igamma(m, v), tf.igammac(m, v),
        tf.betainc(m, m, m), tf.zeta(m, v), tf.erfc(m), tf.math.erfinv(m), tf.math.ndtri(m), tf.math.bessel_i0e(m),
        tf.math.bessel_i1e(m)
        tf.gradients(tf.igamma(m, v), m)
        seg = tf.constant([0, 0, 1])
        for fn in (tf.segment_sum, tf.segment_mean, tf.segment_max, tf.segment_min, tf.segment_prod):
            fn(m, seg)
        for fn in (tf.unsorted_segment_sum, tf.unsorted_segment_max, tf.unsorted_segment_min,
                   tf.unsorted_segment_prod):
            fn(m, seg, 3)
        for fn in (tf.sparse_segment_sum, tf.sparse_segment_mean, tf.sparse_segment_sqrt_n):
            fn(m, tf.constant([0, 2, 1]), seg), fn(m, tf.constant([0, 2, 1]), seg, num_segments=4)
        tf.histogram_fixed_width(m, [0.0, 1.0], 5)
        tf.space_to_depth(img[:, :6, :6], 2), tf.depth_to_space(tf.placeholder(tf.float32, [2, 3, 3, 8]), 2)
        tf.space_to_batch_nd(img, [2, 2], [[0, 0], [1, 1]]), tf.batch_to_space_nd(img, [1, 2], [[0, 0], [1, 1]])
        tf.extract_image_patches(img, [1, 2, 2, 1], [1, 2, 2, 1], [1, 1, 1, 1], "SAME")
        vol = tf.placeholder(tf.float32, [2, 4, 5, 6, 3])
        tf.extract_volume_patches(vol, [1, 2, 2, 3, 1], [1, 2, 1, 2, 1], "VALID")
        tf.broadcast_dynamic_shape(tf.shape(m), [5, 1, 4]), tf.guarantee_const(m)
        # sparse
        sp = tf.SparseTensor(tf.placeholder(tf.int64, [4, 2]), tf.placeholder(tf.float32, [4]), [3, 4])
        sp2 = tf.SparseTensor(tf.placeholder(tf.int64, [5, 2]), tf.placeholder(tf.float32, [5]), [3, 4])
        sp_vals = [tf.sparse_add(sp, sp2).values, tf.sparse_concat(1, [sp, sp2]).values,
                   tf.sparse_fill_empty_rows(sp, 0.0)[0].values, tf.sparse_reorder(sp).values,
                   tf.sparse_slice(sp, [0, 1], [2, 2]).values, tf.sparse_softmax(sp).values,
                   (sp * m).values, (sp / m).values]
        tf.gradients([tf.reduce_sum(t) for t in sp_vals] + [tf.reduce_sum(tf.sparse_tensor_to_dense(sp)),
                                                             tf.reduce_sum(tf.sparse_reduce_sum(sp, 1)),
                                                             tf.reduce_sum(tf.sparse_tensor_dense_matmul(sp, m2)),
                                                             tf.reduce_sum(tf.sparse_add(sp, m))],
                     [sp.values, sp2.values, m, m2])
        tf.sparse_reshape(sp, [6, 2]), tf.sparse_reduce_max(sp), tf.sparse_reduce_max_sparse(sp, 1),
        tf.sparse_reduce_sum_sparse(sp, 0), tf.sparse_maximum(sp, sp2), tf.sparse_minimum(sp, sp2)
        tf.sparse_to_dense(ints, [9], 1.0)
        # what feature columns build on: buckets, crosses, lookup tables
        bucketize(m, [0.0, 1.0])
        words = tf.SparseTensor(tf.placeholder(tf.int64, [4, 2]), tf.placeholder(tf.string, [4]), [3, 4])
        tf.sparse.cross_hashed([words, tf.placeholder(tf.int64, [3, 2])], 10)
        table = tf.lookup.StaticHashTable(tf.lookup.KeyValueTensorInitializer(["a"], [1], value_dtype=tf.int64), -1)
        table.lookup(tf.placeholder(tf.string, [3, 4])), table.size()
        tf.lookup.StaticHashTable(tf.lookup.TextFileInitializer("vocab.txt", tf.string, -2, tf.int64, -1), -1)
        mutable = tf.contrib.lookup.MutableHashTable(tf.string, tf.int64, -1)
        mutable.insert(tf.placeholder(tf.string, [3]), tf.placeholder(tf.int64, [3])), mutable.export()
        mutable.remove(tf.placeholder(tf.string, [3]))
        mutable.restore_from([tf.placeholder(tf.string, [3]), tf.placeholder(tf.int64, [3])])
        tf.contrib.lookup.MutableHashTable(tf.int64, tf.float32, [0.0, 1.0]).lookup(tf.placeholder(tf.int64, [3]))
        tf.contrib.lookup.MutableDenseHashTable(tf.int64, tf.int64, -1, 0, -1).lookup(tf.placeholder(tf.int64, [3]))
        seed = tf.placeholder(tf.int32, [2])
        tf.random.stateless_uniform([2, 3], seed), tf.random.stateless_normal([2, 3], seed),
        tf.random.stateless_truncated_normal([2, 3], seed), tf.random.stateless_uniform([4], seed, 0, 5, tf.int32)
        tf.random.stateless_multinomial(tf.placeholder(tf.float32, [2, 5]), 3, seed)
        tf.random.stateless_gamma([4, 3], seed, tf.placeholder(tf.float32, [3]))
        tf.random.stateless_poisson([4, 3], seed, tf.placeholder(tf.float32, [3]))
        tf.random.stateless_binomial([4, 3], seed, tf.placeholder(tf.float32, [3]), tf.placeholder(tf.float32, [3]))
        tf.random.stateless_parameterized_truncated_normal([4, 3], seed, v[:3], 1.0, -1.0, 1.0)
        # TF 2.x additions to tf.math, tf.nn and tf.sparse
        tf.math.cumulative_logsumexp(x, 1, exclusive=True), tf.math.nextafter(m, v)
        tf.math.sobol_sample(3, tf.placeholder(tf.int32, []), 2)
        tf.math.approx_max_k(x, 2), tf.math.approx_min_k(x, 1, reduction_dimension=1)
        tf.sparse.bincount(ints), tf.sparse.bincount(tf.placeholder(tf.int32, [3, 4]), axis=-1)
        tf.sparse.bincount(tf.SparseTensor(tf.placeholder(tf.int64, [None, 2]), ints, [4, 9]), axis=-1)
        gen = tf.random.experimental.Generator.from_seed(3)
        gen.normal([2, 3]), gen.uniform([2]), gen.uniform([2], 0, 5, tf.int32), gen.truncated_normal([3])
        gen.uniform_full_int([2]), tf.random.split(seed)
        vol = tf.placeholder(tf.float32, [2, 4, 5, 3, 2])
        c3 = tf.nn.conv3d(vol, tf.placeholder(tf.float32, [2, 2, 2, 2, 3]), [1, 1, 2, 1, 1], "SAME")
        p3 = [tf.nn.max_pool3d(vol, [1, 2, 2, 2, 1], [1, 1, 1, 1, 1], "VALID"),
              tf.nn.avg_pool3d(vol, [1, 2, 2, 2, 1], [1, 2, 2, 1, 1], "SAME")]
        amax = tf.nn.max_pool_with_argmax(img, [1, 2, 2, 1], [1, 2, 2, 1], "SAME")[0]
        dil = tf.nn.dilation2d(img, tf.placeholder(tf.float32, [2, 2, 3]), [1, 1, 1, 1], [1, 1, 1, 1], "SAME")
        tf.gradients([tf.reduce_sum(t) for t in [c3, amax, dil] + p3], [vol, img])
        tf.nn.conv3d_transpose(c3, tf.placeholder(tf.float32, [2, 2, 2, 2, 3]), [2, 4, 5, 3, 2], [1, 1, 2, 1, 1])
        z = tf.complex(m, v)
        tf.gradients([tf.reduce_sum(t) for t in (tf.real(z), tf.imag(z), tf.angle(z))], [m, v])
        for fn in (tf.bitwise.bitwise_and, tf.bitwise.bitwise_or, tf.bitwise.bitwise_xor, tf.bitwise.left_shift,
                   tf.bitwise.right_shift):
            fn(ints, ints)
        tf.bitwise.invert(ints), tf.roll(m, [1], [0])
        tf.tensor_scatter_update(m, tf.constant([[0], [2]]), tf.placeholder(tf.float32, [2, 4]))
        tf.tensor_scatter_add(m, tf.constant([[0], [2]]), tf.placeholder(tf.float32, [2, 4]))
        tf.tensor_scatter_sub(m, tf.constant([[0, 1]]), tf.placeholder(tf.float32, [1]))
        frac = [tf.nn.fractional_max_pool(img, [1.0, 1.5, 1.5, 1.0])[0],
                tf.nn.fractional_avg_pool(img, [1.0, 1.5, 1.5, 1.0], overlapping=True)[0]]
        tf.gradients([tf.reduce_sum(t) for t in frac], img)
        # candidate samplers
        labels = tf.placeholder(tf.int64, [3, 2])
        for fn in (tf.nn.uniform_candidate_sampler, tf.nn.log_uniform_candidate_sampler,
                   tf.nn.learned_unigram_candidate_sampler):
            fn(labels, 2, 4, True, 10)
        tf.nn.fixed_unigram_candidate_sampler(labels, 2, 4, True, 3, unigrams=[1, 2, 3])
        tf.nn.all_candidate_sampler(labels, 2, 4, True)
        tf.nn.compute_accidental_hits(labels, tf.placeholder(tf.int64, [4]), 2)
        # array core
        tf.shape(x[:, :, 0:tf.placeholder(tf.int32, [])])
        tf.shape_n([m, v])
        tf.size(tf.placeholder(tf.float32, [None, 3])), tf.rank(tf.placeholder(tf.float32))
        tf.reshape(x, [6, -1])
        tf.expand_dims(x, 1), tf.squeeze(tf.placeholder(tf.float32, [3, 1, 4]), [1])
        tf.transpose(x, [2, 0, 1]), tf.transpose(tf.cast(x, tf.complex64), [2, 0, 1], conjugate=True)
        tf.invert_permutation(tf.constant([2, 0, 1]))
        tf.placeholder_with_default(m, [3, 4])
        tf.fill([2, 3], 1.5), tf.range(0, 10, 2), tf.linspace(0.0, 1.0, 5)
        tf.concat([m, m], 0), tf.stack([m, m], 1), tf.unstack(m, axis=1), tf.split(x, 2, axis=2)
        tf.split(x, [1, 3], axis=2)
        tf.tile(m, [2, 1]), tf.pad(m, [[1, 0], [0, 2]]), tf.pad(m, [[1, 1], [1, 1]], mode="REFLECT")
        tf.pad(m, [[1, 0], [0, 2]], constant_values=2.0)
        tf.reverse(m, [1]), tf.broadcast_to(v, [3, 4])
        tf.slice(x, [0, 1, 0], [2, 2, -1]), x[:, 1:, ::2]
        tf.gather(m, ints % 3), tf.gather_nd(m, tf.constant([[0, 1], [2, 3]]))
        tf.scatter_nd(tf.constant([[0], [2]]), tf.placeholder(tf.float32, [2, 4]), [5, 4])
        tf.one_hot(ints, 6)
        tf.where(b), tf.where(b, m, m), tf.where_v2(b, m, v)
        tf.unique(ints), tf.unique_with_counts(ints), tf.nn.top_k(m, 2)
        tf.dynamic_partition(m, tf.constant([0, 1, 0]), 2)
        tf.dynamic_stitch([tf.constant([0, 2]), tf.constant([1])], [tf.placeholder(tf.float32, [2, 4]),
                                                                    tf.placeholder(tf.float32, [1, 4])])
        tf.random_normal([2, 3]), tf.truncated_normal([2, 3]), tf.random_uniform([2, 3]),
        tf.random_uniform([2, 3], maxval=5, dtype=tf.int32), tf.random_shuffle(m),
        tf.multinomial(tf.placeholder(tf.float32, [2, 5]), 3), tf.random_gamma([3], tf.constant([1.0, 2.0])),
        tf.random_poisson(tf.constant([1.0, 2.0]), [3])
        tf.orthogonal_initializer()([4, 4])
        # nn
        w = tf.placeholder(tf.float32, [3, 3, 3, 5])
        conv = tf.nn.conv2d(img, w, [1, 1, 1, 1], "SAME")
        dw = tf.nn.depthwise_conv2d(img, tf.placeholder(tf.float32, [3, 3, 3, 2]), [1, 1, 1, 1], "VALID")
        mp = tf.nn.max_pool(img, [1, 2, 2, 1], [1, 2, 2, 1], "VALID")
        ap = tf.nn.avg_pool(img, [1, 2, 2, 1], [1, 2, 2, 1], "SAME")
        lrn = tf.nn.lrn(img)
        bn, _, _ = tf.nn.fused_batch_norm(img, tf.ones([3]), tf.zeros([3]))
        bnv, _, _ = tf.nn.fused_batch_norm(img, tf.ones([3]), tf.zeros([3]), tf.zeros([3]), tf.ones([3]),
                                           is_training=False)
        ba = tf.nn.bias_add(m, v)
        ba1 = bias_add_v1(m, v)
        acts = [f(m) for f in (tf.nn.relu, tf.nn.relu6, tf.nn.elu, tf.nn.selu, tf.nn.softplus,
                               tf.nn.softsign, tf.nn.leaky_relu)]
        xent = tf.nn.softmax_cross_entropy_with_logits_v2(labels=m, logits=m)
        sxent = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=ints[:3], logits=m)
        tf.nn.in_top_k(m, ints[:3], 2), tf.nn.l2_loss(m)
        mirror = tf.pad(m, [[1, 1], [1, 1]], mode="SYMMETRIC")
        tf.gradients([tf.reduce_sum(t) for t in [conv, dw, mp, ap, lrn, bn, bnv, ba, ba1, mirror, xent, sxent]
                      + acts], [img, w, m, v])
        # gradients of array ops: strided slice, concat with unknown dims, dynamic stitch
        d = tf.placeholder(tf.float32, [None, 4])
        tf.gradients(tf.reduce_sum(d[1:, :2]) + tf.reduce_sum(tf.concat([d, d], 0))
                     + tf.reduce_sum(tf.nn.embedding_lookup([m, m], ints)) + tf.reduce_sum(d * v), [d, m, v])
        tf.gradients(tf.reduce_prod(x, 1), x)
        # debugging, grouping
        tf.Print(m, [m]), tf.print(m), tf.Assert(True, [m]), tf.check_numerics(m, "m")
        tf.identity_n([m, v]), tf.no_op()
        # variables and optimizers
        var = tf.Variable(tf.zeros([3, 4]), name="var")
        emb = tf.Variable(tf.zeros([6, 4]), name="emb")
        var.initialized_value(), tf.report_uninitialized_variables(), tf.is_variable_initialized(var)
        tf.shape(var.handle if hasattr(var, "handle") else var)
        variable_shape(var.handle)
        tf.count_up_to(tf.Variable(0, name="counter"), 3)
        for fn in (tf.scatter_add, tf.scatter_sub, tf.scatter_mul, tf.scatter_div, tf.scatter_max, tf.scatter_min,
                   tf.scatter_update):
            fn(emb, tf.constant([0, 2]), tf.placeholder(tf.float32, [2, 4]))
        for fn in (tf.scatter_nd_add, tf.scatter_nd_sub, tf.scatter_nd_update):
            fn(emb, tf.constant([[0], [2]]), tf.placeholder(tf.float32, [2, 4]))
        var.assign_add(m), var.assign_sub(m), var.assign(m)
        loss = tf.reduce_sum(var * m) + tf.reduce_sum(tf.nn.embedding_lookup(emb, ints))
        for opt in (tf.train.GradientDescentOptimizer(0.1), tf.train.MomentumOptimizer(0.1, 0.9),
                    tf.train.AdagradOptimizer(0.1), tf.train.AdamOptimizer(), tf.train.AdadeltaOptimizer(),
                    tf.train.RMSPropOptimizer(0.1), tf.train.RMSPropOptimizer(0.1, centered=True),
                    tf.train.FtrlOptimizer(0.1), tf.train.FtrlOptimizer(0.1, l2_shrinkage_regularization_strength=0.1),
                    tf.train.ProximalGradientDescentOptimizer(0.1), tf.train.ProximalAdagradOptimizer(0.1),
                    tf.train.AdagradDAOptimizer(0.1, tf.Variable(0, dtype=tf.int64, name="da_step"))):
            opt.minimize(loss)
        # control flow (built by the control-flow family; audited here all the same)
        tf.cond(tf.placeholder(tf.bool, []), lambda: m * 2, lambda: m)
        tf.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, a * 2), [tf.constant(0), m])
        tf.map_fn(lambda r: r * 2, m)
        flag = tf.placeholder(tf.bool, [], name="flag")    # TF 1's dataflow cond (imported graphs)
        branches = make_op("Switch", [m, flag]).outputs
        make_op("Merge", [branches[0] * 2, branches[1]], {"N": 2})
        for op_type in ("Enter", "Exit", "NextIteration"):            # ... and TF 1's loop frames
            make_op(op_type, [m], {"frame_name": "loop", "is_constant": True, "parallel_iterations": 10})
        make_op("LoopCond", [flag])
        handle, flow = make_op("TensorArrayV3", [tf.constant(3)], {"dtype": tf.float32, "element_shape":
                                                                  tf.TensorShape([4]), "dynamic_size": False}).outputs
        i3 = tf.constant([0, 1, 2])
        make_op("TensorArrayWriteV3", [handle, tf.constant(0), v, flow], {"T": tf.float32})
        make_op("TensorArrayScatterV3", [handle, i3, m, flow], {"T": tf.float32})
        make_op("TensorArraySplitV3", [handle, m, tf.constant([1, 1, 1], tf.int64), flow], {"T": tf.float32})
        make_op("TensorArrayReadV3", [handle, tf.constant(0), flow], {"dtype": tf.float32})
        make_op("TensorArrayGatherV3", [handle, i3, flow], {"dtype": tf.float32, "element_shape": tf.TensorShape([4])})
        make_op("TensorArrayConcatV3", [handle, flow], {"dtype": tf.float32})
        make_op("TensorArraySizeV3", [handle, flow])
        make_op("TensorArrayCloseV3", [handle])
        lst = make_op("TensorListFromTensor", [m], {"element_dtype": tf.float32}).outputs[0]
        make_op("TensorListGetItem", [lst, tf.constant(1)], {"element_dtype": tf.float32,
                                                             "element_shape": tf.TensorShape([4])})
        make_op("TensorListPushBack", [lst, v])
        _add_tf1_ref_ops(g, m)
        # FFTs, Python functions, CTC
        cx = tf.complex(x, x)
        for fn in (tf.signal.fft, tf.signal.ifft, tf.signal.fft2d, tf.signal.ifft2d, tf.signal.fft3d,
                   tf.signal.ifft3d):
            fn(cx)
        for fn, inverse in ((tf.signal.rfft, tf.signal.irfft), (tf.signal.rfft2d, tf.signal.irfft2d),
                            (tf.signal.rfft3d, tf.signal.irfft3d)):
            inverse(fn(x))
        tf.signal.irfftnd(tf.signal.rfftnd(x, [3, 6], axes=[0, 2]), [3, 6], axes=[0, 2])
        tf.signal.ifftnd(tf.signal.fftnd(cx, [4, 2], axes=[2, 1]), axes=[1])
        # fake quantization, WAV
        fq = tf.fake_quant_with_min_max_args(x)
        tf.fake_quant_with_min_max_args_gradient(fq, x)
        tf.fake_quant_with_min_max_vars_gradient(m, tf.fake_quant_with_min_max_vars(m, -1.0, 1.0), -1.0, 1.0)
        per_channel = tf.fake_quant_with_min_max_vars_per_channel(x, [-1.0] * 4, [1.0] * 4)
        tf.fake_quant_with_min_max_vars_per_channel_gradient(x, per_channel, [-1.0] * 4, [1.0] * 4)
        tf.audio.decode_wav(tf.audio.encode_wav(m, 8000), desired_channels=2)
        tf.py_func(lambda a: a, [m], tf.float32), tf.py_func(lambda a: a, [m], [tf.float32], stateful=False)
        tf.py_function(lambda a: a, [m], tf.float32)
        tf.nn.ctc_loss(tf.SparseTensor(tf.constant([[0, 0], [1, 0]], tf.int64), tf.constant([1, 2]), [2, 1]),
                       tf.transpose(x, [1, 0, 2]), [3, 3])
        tf.nn.ctc_greedy_decoder(tf.transpose(x, [1, 0, 2]), [3, 3])
        tf.nn.ctc_beam_search_decoder(tf.transpose(x, [1, 0, 2]), [3, 3], beam_width=3, top_paths=2)
        # ops the runtime and the optimizers' other paths create
        make_op("Div", [m, v], {"T": tf.float32})
        make_op("UnicodeEncode", [tf.constant([72, 105, 33]), tf.constant([0, 2, 3], tf.int64)],
                {"output_encoding": "UTF-8", "errors": "replace", "replacement_char": 65533})
        make_op("BiasAddV1", [m, v], {"T": tf.float32, "data_format": "NHWC"})
        make_op("OnesLike", [m])
        for t in ("FusedBatchNorm", "FusedBatchNormV2"):
            make_op(t, bn.op.inputs[:], dict(bn.op._attrs))
            grad = [o for o in bn.op.graph.get_operations() if o.type == "FusedBatchNormGradV3"][0]
            make_op(t.replace("Norm", "NormGrad"), grad.inputs[:5], dict(grad._attrs))
        tf.gradients(tf.reduce_sum(tf.dynamic_stitch(tf.dynamic_partition(tf.range(3), [0, 1, 0], 2),
                                                     tf.dynamic_partition(m, [0, 1, 0], 2))), m)
        emb.sparse_read(ints)
        make_op("DestroyResourceOp", [var.handle], {"ignore_lookup_error": True})
        send(m, "m;0", "/job:a/task:0/device:CPU:0", "/job:b/task:0/device:CPU:0")
        send(tf.placeholder(tf.float32, None), "u;0", "/job:a/task:0/device:CPU:0", "/job:b/task:0/device:CPU:0")
        collective_ops.all_reduce(m, 2, 1, 1, merge_op="Max", final_op="Div")
        collective_ops.all_gather(m, 2, 1, 2)
        collective_ops.broadcast_send(m, [3, 4], tf.float32, 2, 1, 3)
        collective_ops.broadcast_recv([3, 4], tf.float32, 2, 1, 4)


def _add_tf1_ref_ops(g: tf.Graph, m) -> None:
    """TF 1's reference-variable ops (what tf.import_graph_def of a TF 1 graph creates): each
    Apply*/SparseApply*/Scatter* as the corpus's ResourceApply*/ResourceScatter* op on VariableV2
    refs of its variables' shapes."""
    load_all()   # (the TF 1 forms of the resource ops in the corpus, asked for by OP_DEFS below)
    def ref(shape, dtype=tf.float32, op_type="VariableV2"):
        return make_op(op_type, [], {"dtype": dtype, "shape": tf.TensorShape(shape), "container": "",
                                     "shared_name": ""}, name="ref_var").outputs[0]
    r = ref([3, 4])
    ref([3, 4], op_type="Variable")
    make_op("Assign", [r, m], {"T": tf.float32, "validate_shape": True, "use_locking": True})
    make_op("AssignAdd", [r, m], {"T": tf.float32, "use_locking": False})
    make_op("AssignSub", [r, m], {"T": tf.float32, "use_locking": False})
    make_op("IsVariableInitialized", [r], {"dtype": tf.float32})
    make_op("RefIdentity", [r], {"T": tf.float32})
    make_op("RefSwitch", [r, tf.placeholder(tf.bool, [], name="ref_flag")], {"T": tf.float32})
    make_op("RefEnter", [r], {"T": tf.float32, "frame_name": "loop", "is_constant": True, "parallel_iterations": 10})
    make_op("CountUpTo", [ref([], tf.int32)], {"T": tf.int32, "limit": 3})
    make_op("BroadcastGradientArgs", [tf.constant([2, 1, 3]), tf.constant([1, 3])], {"T": tf.int32})
    for op in list(g.get_operations()):
        ref_type = op.type[len("Resource"):]
        if op.type.startswith("Resource") and ("Apply" in op.type or "Scatter" in op.type) and ref_type in OP_DEFS:
            handles = [t for t in op.inputs if t.dtype == tf.resource]
            refs = [ref(handle_shape(h), handle_dtype(h)) for h in handles]
            make_op(ref_type, refs + list(op.inputs[len(handles):]), dict(op._attrs))


def _build_input_and_state_corpus(g: tf.Graph, tmp: str) -> None:
    """The op families of the input pipeline, summaries, checkpoints, queues and tensor arrays."""
    with g.as_default():
        m = tf.placeholder(tf.float32, [3, 4], name="m_io")
        img = tf.placeholder(tf.float32, [2, 6, 6, 3], name="img_io")
        words = tf.placeholder(tf.string, [3], name="words")
        text = tf.placeholder(tf.string, [], name="text")
        # strings
        tf.strings.as_string(m), tf.strings.format("{} and {}", [m, m]), tf.strings.join([words, words], "-")
        tf.strings.length(words), tf.strings.lower(words), tf.strings.upper(words), tf.strings.strip(words)
        tf.strings.reduce_join(tf.reshape(words, [3, 1]), 1), tf.strings.regex_full_match(words, "a.*")
        tf.strings.regex_full_match(words, tf.constant("b.*"))
        tf.strings.regex_replace(words, "a", "b"), tf.strings.split(words), tf.string_split(words)
        tf.strings.substr(words, 0, 2), tf.strings.to_hash_bucket(words, 5), tf.strings.to_hash_bucket_fast(words, 5)
        tf.strings.to_hash_bucket_strong(words, 5, [1, 2]), tf.strings.to_number(words)
        tf.strings.unicode_encode(tf.placeholder(tf.int32, [3, 4]), "UTF-8")
        tf.strings.unicode_transcode(words, "UTF-8", "UTF-16-BE")
        tf.strings.unicode_decode(words, "UTF-8"), tf.strings.unicode_decode_with_offsets(words, "UTF-8")
        tf.strings.ngrams(words, 2), tf.ragged.range(tf.placeholder(tf.int64, [3], name="limits"))
        tf.RaggedTensor.from_row_splits(words, [0, 1, 3], validate=False).to_sparse()
        tf.strings.unsorted_segment_join(words, [0, 1, 0], 2)
        tf.io.encode_base64(words), tf.io.decode_base64(words), tf.io.decode_compressed(words)
        tf.io.decode_json_example(words)
        tf.io.decode_proto(words, "tensorflow.Example", ["features"], [tf.string])
        tf.io.encode_proto(tf.placeholder(tf.int32, [3, 1]), [tf.placeholder(tf.string, [3, 1])], ["features"],
                           "tensorflow.Example")
        tf.io.decode_webp(text)
        tf.io.decode_raw(words, tf.uint8), tf.io.decode_csv(words, [[0.0], [""]])
        tf.io.parse_tensor(tf.io.serialize_tensor(m), tf.float32)
        sp_m = tf.SparseTensor(tf.placeholder(tf.int64, [4, 2]), tf.placeholder(tf.float32, [4]), [3, 4])
        tf.io.serialize_sparse(sp_m)
        seq_features = {"p": tf.io.FixedLenSequenceFeature([2], tf.float32, allow_missing=True),
                        "w": tf.io.VarLenFeature(tf.string)}
        ctx_features = {"n": tf.io.FixedLenFeature([], tf.int64, 0), "t": tf.io.VarLenFeature(tf.int64)}
        tf.io.parse_single_sequence_example(tf.placeholder(tf.string, []), ctx_features, seq_features)
        tf.io.parse_sequence_example(tf.placeholder(tf.string, [3]), ctx_features, seq_features)
        tf.io.deserialize_many_sparse(tf.io.serialize_many_sparse(sp_m), tf.float32)
        tf.io.parse_example(words, {"a": tf.io.FixedLenFeature([2], tf.float32), "b": tf.io.VarLenFeature(tf.int64)})
        # TF's own ParseExample (keys as inputs) and ParseExampleV2, as a TF GraphDef holds them
        no_names, empty_default = tf.constant([], tf.string), tf.zeros([0])
        tf_parse_attrs = {"sparse_types": [tf.int64], "Tdense": [tf.float32], "dense_shapes": [tf.TensorShape([2])]}
        make_op("ParseExample", [words, no_names, tf.constant("b"), tf.constant("a"), empty_default],
                dict(tf_parse_attrs, Nsparse=1, Ndense=1))
        make_op("ParseExampleV2", [words, no_names, tf.constant(["b"]), tf.constant(["a"]), no_names, empty_default],
                dict(tf_parse_attrs, num_sparse=1, ragged_value_types=[], ragged_split_types=[]))
        tf.io.read_file(text), tf.io.write_file(text, text), tf.io.matching_files(text)
        tf.io.match_filenames_once(os.path.join(tmp, "*"))
        # images
        for fn in (tf.image.decode_bmp, tf.image.decode_gif, tf.image.decode_image, tf.image.decode_jpeg,
                   tf.image.decode_png):
            fn(text)
        u8 = tf.placeholder(tf.uint8, [6, 6, 3])
        tf.image.encode_jpeg(u8), tf.image.encode_png(u8)
        tf.image.adjust_contrast(img, 0.5), tf.image.adjust_hue(img, 0.1), tf.image.adjust_saturation(img, 1.5)
        tf.image.hsv_to_rgb(img), tf.image.rgb_to_hsv(img), tf.image.per_image_standardization(img[0])
        tf.image.draw_bounding_boxes(img, tf.placeholder(tf.float32, [2, 1, 4]))
        tf.image.sample_distorted_bounding_box([6, 6, 3], tf.placeholder(tf.float32, [1, 1, 4]))
        tf.image.random_crop(img[0], [3, 3, 3]), tf.image.random_flip_left_right(img[0])
        sizes = []
        for fn in (tf.image.resize_area, tf.image.resize_bicubic, tf.image.resize_bilinear,
                   tf.image.resize_nearest_neighbor):
            sizes.append(fn(img, [4, 5]))
        tf.gradients([tf.reduce_sum(t) for t in sizes], img)
        boxes, scores = tf.placeholder(tf.float32, [5, 4]), tf.placeholder(tf.float32, [5])
        tf.image.non_max_suppression(boxes, scores, 3), tf.image.non_max_suppression_with_scores(boxes, scores, 3)
        tf.image.non_max_suppression_padded(boxes, scores, 3, pad_to_max_output_size=True)
        tf.image.non_max_suppression_overlaps(tf.placeholder(tf.float32, [5, 5]), scores, 3)
        tf.image.combined_non_max_suppression(tf.placeholder(tf.float32, [2, 5, 1, 4]),
                                              tf.placeholder(tf.float32, [2, 5, 3]), 2, 4, pad_per_class=True)
        crops = tf.image.crop_and_resize(img, tf.placeholder(tf.float32, [4, 4]), [0, 1, 1, 0], [3, 2])
        tf.gradients(tf.reduce_sum(crops), [img, crops.op.inputs[1]])
        tf.image.extract_jpeg_shape(text), tf.image.decode_and_crop_jpeg(text, [0, 0, 2, 2])
        tf.image.adjust_jpeg_quality(u8, 50), tf.image.extract_glimpse(img, [3, 2], tf.zeros([2, 2]))
        # issue 28's misc ops
        sets = tf.placeholder(tf.int64, [2, 3])
        sp_sets = tf.SparseTensor(tf.placeholder(tf.int64, [4, 2]), tf.placeholder(tf.int64, [4]), [2, 3])
        tf.sets.set_union(sets, sets), tf.sets.set_union(sets, sp_sets), tf.sets.set_union(sp_sets, sp_sets)
        tf.sets.set_size(sp_sets), tf.edit_distance(sp_sets, sp_sets)
        tf.searchsorted(tf.placeholder(tf.float32, [2, 5]), tf.placeholder(tf.float32, [2, 3]), side="right")
        tf.searchsorted(tf.placeholder(tf.float32, [2, 5]), tf.placeholder(tf.float32, [2, 3]))
        tf.unravel_index(tf.placeholder(tf.int32, [5]), [3, 4]), tf.ensure_shape(m, [3, None]), tf.bitcast(m, tf.int32)
        tf.bitcast(tf.placeholder(tf.int16, [3, 2]), tf.int32), tf.fingerprint(m), tf.timestamp()
        for fn in (tf.tensor_scatter_nd_min, tf.tensor_scatter_nd_max):
            tf.gradients(tf.reduce_sum(fn(m, [[0], [2]], tf.placeholder(tf.float32, [2, 4]))), m)
        # tf.data
        ds = tf.data.Dataset.from_tensor_slices(m).map(lambda r: r * 2).filter(lambda r: r[0] > 0)
        ds = ds.shuffle(3).repeat(2).skip(1).take(5).shard(2, 0).cache().prefetch(1)
        ds = ds.concatenate(tf.data.Dataset.from_tensors(tf.zeros([4])))
        ds = tf.data.Dataset.zip((ds, tf.data.Dataset.range(10))).batch(2)
        threads = tf.data.Options()
        threads.experimental_threading.private_threadpool_size = 2
        it = ds.with_options(threads).make_initializable_iterator()
        it.get_next(), it.string_handle()
        tf.data.Iterator.from_string_handle(text, ds.output_types, ds.output_shapes)
        tf.data.Dataset.range(3).interleave(lambda i: tf.data.Dataset.from_tensors(i), cycle_length=2) \
            .padded_batch(2, []).make_one_shot_iterator()
        tf.data.Dataset.from_generator(lambda: iter([1, 2]), tf.int64).make_one_shot_iterator()
        for cls in (tf.data.TFRecordDataset, tf.data.TextLineDataset):
            cls(words).make_initializable_iterator()
        tf.data.FixedLengthRecordDataset(words, 4).make_initializable_iterator()
        E, r = tf.data.experimental, tf.data.Dataset.range(10)
        r.batch(2).unbatch(), r.window(2), r.apply(E.scan(np.int64(0), lambda s, x: (s + x, x)))
        r.apply(E.take_while(lambda x: x < 3)), r.apply(E.unique()), r.apply(E.ignore_errors())
        r.apply(E.group_by_window(lambda x: x % 2, lambda k, w: w, 2)), r.apply(E.assert_cardinality(10))
        r.apply(E.group_by_reducer(lambda x: x % 2, E.Reducer(lambda k: k, lambda s, x: s + x, lambda s: s)))
        E.choose_from_datasets([r, r], r.map(lambda x: x % 2)), E.RandomDataset(1)
        r.map(lambda x: tf.fill([x], x)).apply(E.dense_to_sparse_batch(2, [10]))
        E.CsvDataset(words, [tf.int32]), E.CsvDataset(words, [tf.int32], exclude_cols=[1])
        E.SqlDataset("sqlite", text, text, tf.int64)
        E.cardinality(r), E.get_single_element(r.take(1)), r.reduce(np.int64(0), lambda s, x: s + x)
        E.TFRecordWriter(text).write(tf.data.TFRecordDataset(words))
        optional = E.get_next_as_optional(r.make_one_shot_iterator())
        optional.has_value(), optional.get_value(), E.Optional.none_from_structure(tf.TensorSpec([], tf.int32))
        E.Optional.from_value(m).get_value()
        # queues, readers, accumulators
        queues = [tf.FIFOQueue(4, [tf.float32], shapes=[[3, 4]]),
                  tf.PaddingFIFOQueue(4, [tf.float32], shapes=[[None, 4]]),
                  tf.RandomShuffleQueue(4, 1, [tf.float32], shapes=[[3, 4]]),
                  tf.PriorityQueue(4, [tf.float32], shapes=[[3, 4]])]
        for q in queues:
            item = [m] if not isinstance(q, tf.PriorityQueue) else [tf.constant(1, tf.int64), m]
            q.enqueue(item), q.dequeue(), q.size(), q.close(), q.is_closed()
        queues[0].enqueue_many([tf.placeholder(tf.float32, [2, 3, 4])]), queues[0].dequeue_many(2)
        queues[0].dequeue_up_to(2)
        files = tf.FIFOQueue(4, [tf.string], shapes=[[]])
        for reader in (tf.TFRecordReader(), tf.TextLineReader(), tf.WholeFileReader(), tf.IdentityReader(),
                       tf.FixedLengthRecordReader(4)):
            reader.read(files), reader.read_up_to(files, 2), reader.num_records_produced()
            reader.num_work_units_completed(), reader.reset()
        acc = tf.ConditionalAccumulator(tf.float32, shape=[3, 4])
        acc.apply_grad(m), acc.take_grad(1), acc.num_accumulated(), acc.set_global_step(3)
        sacc = tf.SparseConditionalAccumulator(tf.float32, shape=[3, 4])
        sacc.apply_grad([0, 2], tf.placeholder(tf.float32, [2, 4])), sacc.take_grad(1)
        sacc.num_accumulated(), sacc.set_global_step(3)
        acc._cancel_takes()   # what a sync-replicas chief's shutdown runs
        barrier = ("barrier", 2, 1, 60.0, 0)   # a bounded-staleness worker's ops
        staleness.staleness_barrier_advance(*barrier), staleness.staleness_barrier_leave(*barrier)
        var = tf.Variable(tf.zeros([3, 4]), name="io_var")
        # summaries and checkpoints
        tf.summary.scalar("s", m[0, 0]), tf.summary.histogram("h", m), tf.summary.image("i", img)
        tf.summary.audio("a", tf.placeholder(tf.float32, [2, 100]), 8000), tf.summary.tensor_summary("t", m)
        tf.summary.merge_all()
        tf.train.Saver([var], sharded=True)
        make_op("ShardedFilename", [text, tf.constant(0), tf.constant(2)])   # (TF 1's sharded Saver graphs)
        make_op("ShardedFilespec", [text, tf.constant(2)])
        make_op("StaticRegexFullMatch", [words], {"pattern": "^s3://.*"})
        # tensor arrays
        ta = tf.TensorArray(tf.float32, size=3, element_shape=[4])
        ta = ta.write(0, m[0]).scatter([1, 2], m[1:])
        ta.read(0), ta.gather([0, 1]), ta.stack(), ta.concat(), ta.size(), ta.close()
        tf.TensorArray(tf.float32, size=0, dynamic_size=True).split(tf.zeros([6]), [2, 4]).concat()
        tf.while_loop(lambda i, t: i < 3, lambda i, t: (i + 1, t.write(i, tf.zeros([2]))),
                      [0, tf.TensorArray(tf.float32, size=3)])
        tf.reverse_sequence(m, [1, 2, 3], seq_axis=1, batch_axis=0)
        lst = tensor_list.from_tensor(m)
        tensor_list.pop_back(lst, tf.float32, [4]), tensor_list.resize(lst, 5)
        tf.data.Dataset.list_files(text)


def _corpus_ops() -> tuple:
    g = tf.Graph()
    _build_corpus(g)
    with tempfile.TemporaryDirectory() as tmp:
        _build_input_and_state_corpus(g, tmp)
    by_type: dict = {}
    for op in g.get_operations():
        by_type.setdefault(op.type, []).append(op)
    return g, by_type


_GRAPH, _BY_TYPE = _corpus_ops()
VARIANTS = ["unknown_rank", "unknown_dims", "data_unknown_rank", "data_unknown_dims", "unknown_values"]


def _is_const(t) -> bool:
    return t.op.type == "Const"


def _less_known(t, variant: str, i: int):
    """`t` (an input) as the variant sees it: kept, or a placeholder knowing less."""
    const = _is_const(t)
    if variant == "unknown_values":
        return tf.placeholder(t.dtype, t.shape, name=f"audit_in{i}") if const else t
    if variant.startswith("data_") and const:
        return t
    if variant.endswith("unknown_rank"):
        return tf.placeholder(t.dtype, None, name=f"audit_in{i}")
    ndims = t.shape.ndims
    return tf.placeholder(t.dtype, None if ndims is None else [None] * ndims, name=f"audit_in{i}")


def test_corpus_covers_every_op_type():
    load_all()
    missing = sorted(set(OP_DEFS) - set(_BY_TYPE) - set(NOT_IN_CORPUS))
    assert not missing, f"op types missing from the shape-audit corpus: {missing}"


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("op_type", sorted(_BY_TYPE))
def test_shape_function_degrades_gracefully(op_type, variant):
    failures = []
    for op in _BY_TYPE[op_type]:
        if not op.inputs:
            continue
        with _GRAPH.as_default():
            inputs = [_less_known(t, variant, i) for i, t in enumerate(op.inputs)]
            attrs = {k: v for k, v in op._attrs.items() if k != "_class"}
            try:
                new = _GRAPH.create_op(op.type, inputs, attrs, name=f"audit/{op.name}")
            except Exception as e:  # noqa: BLE001 - collected and reported below
                failures.append(f"{op.name}: {type(e).__name__}: {e}")
                continue
        if len(new.outputs) != len(op.outputs):
            failures.append(f"{op.name}: {len(new.outputs)} outputs instead of {len(op.outputs)}")
            continue
        for a, b in zip(new.outputs, op.outputs):
            if a.dtype != b.dtype:
                failures.append(f"{op.name}: output dtype {a.dtype.name} instead of {b.dtype.name}")
            elif not a.shape.is_compatible_with(b.shape):
                failures.append(f"{op.name}: output shape {a.shape} incompatible with {b.shape}")
    assert not failures, "\n".join(failures)


# -- composite functions ------------------------------------------------------------------------
# Public functions built in Python from several ops must build, and give the same numbers, when
# their inputs' static shapes are partly or wholly unknown.
R = np.random.RandomState(0)
A234 = R.uniform(-1, 1, (2, 3, 4)).astype(F)
P234 = R.uniform(0.1, 1, (2, 3, 4)).astype(F)
A34, A43, A44 = (R.uniform(-1, 1, s).astype(F) for s in ((3, 4), (4, 3), (4, 4)))
IMG = R.uniform(-1, 1, (2, 5, 5, 3)).astype(F)
KP = np.float32(1.0)
_SP_IDS = tf.SparseTensorValue(np.array([[0, 0], [0, 1], [2, 0]], np.int64), np.array([2, 0, 1], np.int64),
                               np.array([3, 2], np.int64))
_SP_IDS_F = tf.SparseTensorValue(_SP_IDS.indices, np.array([1.0, 2.0, 3.0], np.float32), np.array([4, 3], np.int64))
COMPOSITES = {
    "dropout": (lambda x, k: tf.nn.dropout(x, k), [A234, KP]),
    "dropout_rate": (lambda x: tf.nn.dropout(x, rate=0.0), [A234]),
    "softmax_xent": (lambda y, x: tf.nn.softmax_cross_entropy_with_logits(labels=y, logits=x), [P234, A234]),
    "softmax_xent_v2_axis": (lambda y, x: tf.nn.softmax_cross_entropy_with_logits_v2(y, x, axis=1), [P234, A234]),
    "sparse_xent": (lambda x: tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=tf.constant([[0, 1, 2], [3, 0, 1]]), logits=x), [A234]),
    "sigmoid_xent": (lambda y, x: tf.nn.sigmoid_cross_entropy_with_logits(labels=y, logits=x), [P234, A234]),
    "softmax_axis0": (lambda x: tf.nn.softmax(x, axis=0), [A234]),
    "log_softmax_axis1": (lambda x: tf.nn.log_softmax(x, axis=1), [A234]),
    "sort_axis0": (lambda x: tf.sort(x, axis=0), [A234]),
    "argsort": (lambda x: tf.argsort(x, axis=1, direction="DESCENDING"), [A234]),
    "matrix_transpose": (tf.matrix_transpose, [A234]),
    "gather_axis1_grad": (lambda x: tf.gradients(tf.reduce_sum(tf.gather(x, [2, 0, 2], axis=1) ** 2), x)[0], [A234]),
    "gather_axis_neg_grad": (lambda x: tf.gradients(tf.reduce_sum(tf.gather(x, [3, 0], axis=-1) ** 2), x)[0],
                             [A234]),
    "norm": (lambda x: tf.norm(x, axis=[-2, -1], ord=1), [A234]),
    "norm_inf": (lambda x: tf.norm(x, axis=[1, 2], ord=np.inf, keepdims=True), [A234]),
    "norm_fro": (lambda x: tf.norm(x, ord="fro", axis=[0, 1]), [A234]),
    "trace": (tf.trace, [A234]),
    "tensordot": (lambda a, b: tf.tensordot(a, b, 1), [A234, A43]),
    "tensordot_axes": (lambda a, b: tf.tensordot(a, b, [[1, 2], [1, 0]]), [A234, A43]),
    "einsum": (lambda a, b: tf.einsum("bij,jk->bik", a, b), [A234, A43]),
    "moments": (lambda x: tf.nn.moments(x, [0, 2]), [A234]),
    "l2_normalize": (lambda x: tf.nn.l2_normalize(x, 1), [A234]),
    "reduce_logsumexp": (lambda x: tf.reduce_logsumexp(x, 1), [A234]),
    "count_nonzero": (lambda x: tf.count_nonzero(x > 0, 2), [A234]),
    "top_k": (lambda x: tf.nn.top_k(x, 2).values, [A234]),
    "boolean_mask": (lambda x: tf.boolean_mask(x, x[:, :, 0] > 0), [A234]),
    "one_hot": (lambda x: tf.one_hot(tf.cast(x > 0, tf.int32), 2), [A234]),
    "clip_by_norm": (lambda x: tf.clip_by_norm(x, 1.0, axes=[1]), [A234]),
    "global_norm": (lambda a, b: tf.global_norm([a, b]), [A234, A34]),
    "batch_normalization": (lambda x, m: tf.nn.batch_normalization(x, m, m * m, None, None, 1e-3), [A234, A34]),
    "xw_plus_b": (lambda x, w: tf.nn.xw_plus_b(x, w, tf.zeros([3])), [A34, A43]),
    "conv1d": (lambda x, w: tf.nn.conv1d(x, w, 1, "SAME"), [A234, R.uniform(-1, 1, (2, 4, 5)).astype(F)]),
    "separable_conv2d": (lambda x: tf.nn.separable_conv2d(x, tf.ones([2, 2, 3, 2]), tf.ones([1, 1, 6, 4]),
                                                          [1, 1, 1, 1], "VALID"), [IMG]),
    "zero_fraction": (tf.nn.zero_fraction, [A234]),
    "sufficient_statistics": (lambda x: tf.nn.sufficient_statistics(x, [0, 1])[:3], [A234]),
    "weighted_moments": (lambda x, w: tf.nn.weighted_moments(x, [1], w), [A234, P234]),
    "embedding_lookup": (lambda p: tf.nn.embedding_lookup(p, [[0, 2], [1, 1]]), [A34]),
    "meshgrid": (lambda a, b: tf.meshgrid(a, b), [A34[0], A43[0]]),
    "cholesky_grad": (lambda a: tf.gradients(
        tf.reduce_sum(tf.cholesky(tf.matmul(a, a, transpose_b=True) + 4 * tf.eye(4))), a)[0], [A44]),
    "eigh_grad": (lambda a: tf.gradients(tf.reduce_sum(tf.self_adjoint_eig(a + tf.matrix_transpose(a))[0] ** 2),
                                         a)[0], [A44]),
    "svd_values": (lambda a: tf.svd(a, compute_uv=False), [A234]),
    "logdet": (lambda a: tf.linalg.logdet(tf.matmul(a, a, transpose_b=True) + tf.eye(4)), [A44]),
    "lstsq": (lambda a, b: tf.linalg.lstsq(a, b), [A43, A44[:, :2]]),
    "lu_solve": (lambda a, b: tf.linalg.lu_solve(*tf.linalg.lu(a + 4 * tf.eye(4)), b), [A44, A44[:, :2]]),
    "lu_grad": (lambda a: tf.gradients(tf.reduce_sum(tf.linalg.lu(a + 4 * tf.eye(4))[0] ** 2), a)[0], [A44]),
    "pinv": (tf.linalg.pinv, [A43]),
    "tridiagonal_solve": (lambda d, b: tf.linalg.tridiagonal_solve(d + [[0.0], [4.0], [0.0]], b), [A34[:, :3],
                                                                                                  A34[:, :3].T]),
    "tridiagonal_matmul": (lambda d, b: tf.linalg.tridiagonal_matmul(d, b), [A34[:, :3], A34[:, :3].T]),
    "lbeta": (tf.lbeta, [P234]),
    "unsorted_segment_mean": (lambda x: tf.unsorted_segment_mean(x, [0, 2], 3), [A234]),
    "unsorted_segment_sqrt_n": (lambda x: tf.unsorted_segment_sqrt_n(x, [[0, 1, 1], [2, 0, 1]], 3), [A234]),
    "segment_prod_grad": (lambda x: tf.gradients(tf.reduce_sum(tf.segment_prod(x, [0, 0, 1])), x)[0], [A34]),
    "confusion_matrix": (lambda x: tf.confusion_matrix(tf.cast(x > 0, tf.int32)[0], tf.cast(x < 0.5, tf.int32)[0]),
                         [A34]),
    "histogram_bins": (lambda x: tf.histogram_fixed_width_bins(x, [-1.0, 1.0], 4), [A234]),
    "reduce_std": (lambda x: tf.math.reduce_std(x, 1), [A234]),
    "eye_dynamic": (lambda x: tf.eye(tf.shape(x)[0], tf.shape(x)[1]), [A34]),
    "ssim": (lambda a, b: tf.image.ssim(a, b, 1.0, filter_size=3), [IMG, IMG[::-1]]),
    "ssim_multiscale": (lambda a, b: tf.image.ssim_multiscale(a, b, 1.0, (0.5, 0.5), filter_size=2), [IMG, IMG[::-1]]),
    "psnr": (lambda a, b: tf.image.psnr(a, b, 1.0), [IMG, IMG[::-1]]),
    "sobel_edges": (tf.image.sobel_edges, [IMG]),
    "image_gradients": (lambda x: tf.image.image_gradients(x)[1], [IMG]),
    "rgb_to_yiq": (tf.image.rgb_to_yiq, [IMG]),
    "resize_image_with_pad": (lambda x: tf.image.resize_image_with_pad(x, 4, 9), [IMG]),
    "repeat": (lambda x: tf.repeat(x, [2, 0, 1], axis=1), [A234]),
    "repeat_scalar": (lambda x: tf.repeat(x, 2, axis=-1), [A234]),
    "batch_gather_grad": (lambda x: tf.gradients(tf.reduce_sum(tf.batch_gather(x, [[2, 0], [1, 1]]) ** 2), x)[0],
                          [A234]),
    "searchsorted": (lambda x: tf.searchsorted(tf.sort(x), x[..., :2]), [A234]),
    "extract_patches_grad": (lambda x: tf.gradients(tf.reduce_sum(tf.extract_image_patches(
        x, [1, 2, 3, 1], [1, 2, 1, 1], [1, 1, 1, 1], "SAME") ** 2), x)[0], [IMG]),
    "space_to_batch_grad": (lambda x: tf.gradients(tf.reduce_sum(tf.space_to_batch_nd(x, [2, 2], [[0, 1], [1, 0]])
                                                                 ** 2), x)[0], [IMG]),
    "required_paddings": (lambda x: tf.required_space_to_batch_paddings(tf.shape(x)[1:3], [2, 3]), [IMG]),
    "matvec": (lambda a, b: tf.linalg.matvec(a, b), [A34, A43[:, 0]]),
    "embedding_lookup_sparse": (lambda p: tf.nn.embedding_lookup_sparse(p, _SP_IDS, None, combiner="sqrtn"), [A34]),
    "safe_embedding_lookup_sparse": (lambda p: tf.nn.safe_embedding_lookup_sparse(p, _SP_IDS), [A34]),
    "sparse_matmul_dense": (lambda b: tf.sparse_tensor_dense_matmul(_SP_IDS_F, b), [A34]),
    "nce_loss": (lambda w, x: tf.nn.nce_loss(w, tf.zeros([4]), [[0], [3], [1]], x, 2, 4,
                                             sampled_values=([1, 2], [[0.3], [0.3], [0.3]], [0.5, 0.5])),
                 [A43, A34[:, :3]]),
    "sampled_softmax_loss": (lambda w, x: tf.nn.sampled_softmax_loss(
        w, tf.zeros([4]), [[0, 1], [3, 1], [1, 2]], x, 2, 4, num_true=2,
        sampled_values=([1, 3], [[0.3, 0.2]] * 3, [0.5, 0.5])), [A43, A34[:, :3]]),
    "convolution_3d": (lambda x: tf.nn.convolution(x, tf.ones([2, 2, 1, 1, 2]), "SAME"), [A234[None, ..., None]]),
    "pool_dilated": (lambda x: tf.nn.pool(x, [2, 2], "MAX", "VALID", dilation_rate=[1, 2]), [IMG]),
    "atrous_conv2d": (lambda x: tf.nn.atrous_conv2d(x, tf.ones([2, 2, 3, 2]), 2, "SAME"), [IMG]),
    "max_pool1d": (lambda x: tf.nn.max_pool1d(x, 2, 1, "SAME"), [A234]),
    "crelu": (tf.nn.crelu, [A234]),
    "cumsum_reverse": (lambda x: tf.cumsum(x, 2, reverse=True, exclusive=True), [A234]),
    "ragged_from_tensor_padding": (lambda x: tf.RaggedTensor.from_tensor(
        tf.nn.relu(x), padding=np.zeros(4, F)).to_tensor(-1.0), [A234]),
    "ragged_from_tensor_lengths": (lambda x: tf.RaggedTensor.from_tensor(x, lengths=[2, 0]).to_tensor(), [A234]),
    "stft": (lambda x: tf.signal.stft(x, 2, 1, pad_end=True), [A234]),
    "inverse_stft": (lambda x: tf.signal.inverse_stft(tf.signal.stft(x, 4, 2), 4, 2), [A234]),
    "frame_axis1": (lambda x: tf.signal.frame(x, 2, 1, axis=1), [A234]),
    "overlap_and_add": (lambda x: tf.signal.overlap_and_add(x, 2), [A234]),
    "dct": (lambda x: tf.signal.dct(x, type=2, norm="ortho"), [A234]),
    "mfccs": (tf.signal.mfccs_from_log_mel_spectrograms, [A234]),
    "mdct": (lambda x: tf.signal.inverse_mdct(tf.signal.mdct(x, 4, pad_end=True)), [A234]),
    "ctc_unique_labels": (lambda x: tf.nn.ctc_unique_labels(tf.cast(x * 2, tf.int32)), [A234[0]]),
    "collapse_repeated": (lambda x: tf.nn.collapse_repeated(tf.cast(x * 2, tf.int32), [3, 2, 4]), [A234[0]]),
    "ctc_loss_v2": (lambda x: tf.nn.ctc_loss_v2(tf.constant([[1, 2], [3, 0], [1, 1]]), x, [2, 1, 2], [2, 2, 2]),
                    [A234]),
    "ragged_from_row_lengths_to_tensor": (lambda x: tf.RaggedTensor.from_row_lengths(
        tf.reshape(x, [-1]), [5, 0, 19]).to_tensor(), [A234]),
}


def _composite_outputs(name: str, variant: str):
    fn, values = COMPOSITES[name]
    with tf.Graph().as_default():
        phs = []
        for v in values:
            v = np.asarray(v)
            shape = {"static": v.shape, "unknown_dims": [None] * v.ndim, "unknown_rank": None}[variant]
            phs.append(tf.placeholder(tf.as_dtype(v.dtype), shape))
        out = fn(*phs)
        outs = list(out) if isinstance(out, (list, tuple)) else [out]
        with tf.Session() as sess:
            return outs, sess.run(outs, dict(zip(phs, values)))


# Composites that need a known rank in TF too.
NEEDS_RANK = {"boolean_mask": "TF: the number of mask dimensions must be specified",
              "ragged_from_tensor_padding": "TF: RaggedTensor.from_tensor needs the tensor's rank",
              "ragged_from_tensor_lengths": "TF: RaggedTensor.from_tensor needs the tensor's rank",
              "image_gradients": "TF: image_gradients needs a 4-D tensor",
              "resize_image_with_pad": "TF: an image of unknown rank is taken as one 3-D image",
              "repeat_scalar": "TF: axis may not be negative if rank(data) is unknown"}


@pytest.mark.parametrize("name,variant", [(n, v) for n in sorted(COMPOSITES) for v in ("unknown_dims", "unknown_rank")
                                          if not (v == "unknown_rank" and n in NEEDS_RANK)])
def test_composite_builds_and_agrees_without_static_shapes(name, variant):
    static_t, static_v = _composite_outputs(name, "static")
    less_t, less_v = _composite_outputs(name, variant)
    for ts, tl, vs, vl in zip(static_t, less_t, static_v, less_v):
        assert tl.shape.is_compatible_with(ts.shape), (tl.shape, ts.shape)
        assert np.shape(vl) == np.shape(vs)
        np.testing.assert_allclose(vl, vs, rtol=1e-5, atol=1e-6)


def test_dropout_keeps_static_shape_with_unknown_keep_prob():
    x = tf.placeholder(tf.float32, [None, 1024])
    keep_prob = tf.placeholder(tf.float32)
    y = tf.nn.dropout(x, keep_prob)
    assert y.shape.as_list() == [None, 1024]
    values = np.ones((3, 1024), np.float32)
    with tf.Session() as sess:
        out = sess.run(y, {x: values, keep_prob: 0.5})
    assert set(np.unique(out)) <= {0.0, 2.0} and 0.3 < (out > 0).mean() < 0.7


def test_softmax_xent_on_logits_of_unknown_rank_matches_numpy():
    logits, labels = tf.placeholder(tf.float32), tf.placeholder(tf.float32)
    loss = tf.nn.softmax_cross_entropy_with_logits(labels=labels, logits=logits)
    with tf.Session() as sess:
        out = sess.run(loss, {logits: A234, labels: P234})
    log_softmax = A234 - np.log(np.exp(A234).sum(-1, keepdims=True))
    np.testing.assert_allclose(out, -(P234 * log_softmax).sum(-1), rtol=1e-5)
