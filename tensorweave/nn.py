"""tf.nn: the neural-network namespace (ops from ops/nn/ plus the math and array ops TF1 also
exports under tf.nn)."""
from __future__ import annotations

from tensorweave.ops.array.sort import top_k  # noqa: F401
from tensorweave.ops.math.unary import sigmoid, tanh  # noqa: F401
from tensorweave.ops.array.space import depth_to_space, space_to_batch, space_to_depth  # noqa: F401
from tensorweave.ops.nn.activations import (  # noqa: F401
    bias_add, crelu, elu, leaky_relu, log_softmax, relu, relu6, selu, softmax, softplus, softsign)
from tensorweave.ops.nn.conv import (  # noqa: F401
    conv2d, conv2d_backprop_filter, conv2d_backprop_input, conv2d_transpose, depthwise_conv2d,
    depthwise_conv2d_native, depthwise_conv2d_native_backprop_filter, depthwise_conv2d_native_backprop_input,
    separable_conv2d)
from tensorweave.ops.nn.conv3d import conv3d, conv3d_backprop_filter, conv3d_backprop_filter_v2, conv3d_transpose  # noqa: F401
from tensorweave.ops.nn.conv_nd import (  # noqa: F401
    atrous_conv2d, atrous_conv2d_transpose, avg_pool1d, avg_pool_v2, conv1d_transpose, conv_transpose, convolution,
    max_pool1d, max_pool_v2, pool, with_space_to_batch)
from tensorweave.ops.nn.fractional_pool import fractional_avg_pool, fractional_max_pool  # noqa: F401
from tensorweave.ops.nn.morphology import dilation2d, erosion2d  # noqa: F401
from tensorweave.ops.nn.candidate_sampling import (  # noqa: F401
    all_candidate_sampler, compute_accidental_hits, fixed_unigram_candidate_sampler, learned_unigram_candidate_sampler,
    log_uniform_candidate_sampler, uniform_candidate_sampler)
from tensorweave.ops.nn.impl import (  # noqa: F401
    batch_normalization, conv1d, dropout, embedding_lookup, l2_normalize, log_poisson_loss, moments,
    normalize_moments, relu_layer, sigmoid_cross_entropy_with_logits, softmax_cross_entropy_with_logits,
    softmax_cross_entropy_with_logits_v2, sparse_softmax_cross_entropy_with_logits, sufficient_statistics, swish,
    weighted_cross_entropy_with_logits, weighted_moments, xw_plus_b, zero_fraction)
from tensorweave.ops.nn.losses import in_top_k, l2_loss  # noqa: F401
from tensorweave.ops.nn.norm import batch_norm_with_global_normalization, fused_batch_norm  # noqa: F401
from tensorweave.ops.nn.sampled import nce_loss, sampled_softmax_loss  # noqa: F401
from tensorweave.ops.nn.pool import (  # noqa: F401
    avg_pool, local_response_normalization, lrn, max_pool, max_pool_with_argmax)
from tensorweave.ops.nn.pool3d import avg_pool3d, max_pool3d  # noqa: F401
from tensorweave.ops.nn.sparse_embedding import embedding_lookup_sparse, safe_embedding_lookup_sparse  # noqa: F401

from tensorweave.rnn import rnn_cell  # noqa: F401
from tensorweave.rnn.loops import (  # noqa: F401
    bidirectional_dynamic_rnn, dynamic_rnn, raw_rnn, static_bidirectional_rnn, static_rnn)

avg_pool2d = avg_pool
max_pool2d = max_pool
depthwise_conv2d_backprop_filter = depthwise_conv2d_native_backprop_filter
depthwise_conv2d_backprop_input = depthwise_conv2d_native_backprop_input
