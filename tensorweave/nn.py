"""tf.nn: the neural-network namespace (ops from ops/nn/ plus the math and array ops TF1 also
exports under tf.nn)."""
from __future__ import annotations

from tensorweave.ops.array.sort import top_k  # noqa: F401
from tensorweave.ops.math.unary import sigmoid, tanh  # noqa: F401
from tensorweave.ops.nn.activations import (  # noqa: F401
    bias_add, elu, leaky_relu, log_softmax, relu, relu6, selu, softmax, softplus, softsign)
from tensorweave.ops.nn.conv import (  # noqa: F401
    conv2d, conv2d_backprop_filter, conv2d_backprop_input, conv2d_transpose, depthwise_conv2d,
    depthwise_conv2d_native, separable_conv2d)
from tensorweave.ops.nn.conv3d import conv3d, conv3d_backprop_filter, conv3d_backprop_filter_v2, conv3d_transpose  # noqa: F401
from tensorweave.ops.nn.impl import (  # noqa: F401
    batch_normalization, conv1d, dropout, embedding_lookup, embedding_lookup_sparse, l2_normalize, log_poisson_loss, moments,
    normalize_moments, relu_layer, sigmoid_cross_entropy_with_logits, softmax_cross_entropy_with_logits,
    softmax_cross_entropy_with_logits_v2, sparse_softmax_cross_entropy_with_logits, sufficient_statistics, swish,
    weighted_cross_entropy_with_logits, weighted_moments, xw_plus_b, zero_fraction)
from tensorweave.ops.nn.losses import in_top_k, l2_loss  # noqa: F401
from tensorweave.ops.nn.norm import fused_batch_norm  # noqa: F401
from tensorweave.ops.nn.pool import avg_pool, local_response_normalization, lrn, max_pool  # noqa: F401
from tensorweave.ops.nn.pool3d import avg_pool3d, max_pool3d  # noqa: F401

from tensorweave.rnn import rnn_cell  # noqa: F401
from tensorweave.rnn.loops import (  # noqa: F401
    bidirectional_dynamic_rnn, dynamic_rnn, raw_rnn, static_bidirectional_rnn, static_rnn)

avg_pool2d = avg_pool
max_pool2d = max_pool
