"""The op library: one subpackage per op family, each op's shape function, dtypes, numpy kernel
and gradient side by side (registry.py holds the tables).

Importing `tensorweave.ops` registers every kernel, so a server needs only this package, never
the graph-building API. Modules are imported in dependency order: a module imports only the
ones above it, and gradients that need a later module live in that family's `*_grad` module.
"""
from tensorweave.ops import registry, helpers  # noqa: F401
from tensorweave.ops.array import core  # noqa: F401
from tensorweave.ops.math import cast, binary  # noqa: F401
from tensorweave.ops.array import fill  # noqa: F401
from tensorweave.ops.math import unary  # noqa: F401
from tensorweave.ops.array import concat, pad, slicing, sort  # noqa: F401
from tensorweave.ops.math import reduction, segment  # noqa: F401
from tensorweave.ops.array import gather, mask, partition, diag, space  # noqa: F401
from tensorweave.ops.math import linalg, matrix_functions, solvers, decompositions, special, histogram  # noqa: F401
from tensorweave.ops.math import complex_parts, bitwise, clip, operators  # noqa: F401
from tensorweave.ops import random, sendrecv  # noqa: F401
from tensorweave.ops.nn import activations, losses, conv, conv3d, pool, pool3d, norm, impl  # noqa: F401
from tensorweave.ops.sparse import core as sparse_core, combine, math as sparse_math, embedding  # noqa: F401
from tensorweave.ops.nn import candidate_sampling, sampled, conv_nd, morphology, fractional_pool  # noqa: F401
from tensorweave.ops.debugging import printing, numerics  # noqa: F401
from tensorweave.ops.control_flow import grouping, cond, tensor_list, while_loop, functional, tensor_array  # noqa: F401
from tensorweave.ops.debugging import asserts  # noqa: F401
from tensorweave.ops.state import variable_ops, scatter, training, initializers, variables  # noqa: F401
from tensorweave.ops.state import partitioned_variables, variable_scope  # noqa: F401
from tensorweave.ops.gradients import sum_to_shape, gradients  # noqa: F401
from tensorweave.ops.checkpoint import io_ops  # noqa: F401
from tensorweave.ops.summary import summary_ops  # noqa: F401
from tensorweave.ops.data_flow import waiting, queue_resources, queue_ops, queues, accumulators  # noqa: F401
from tensorweave.ops.array import array_grad  # noqa: F401
from tensorweave.ops.math import math_grad  # noqa: F401
from tensorweave.ops.control_flow import control_flow_grad  # noqa: F401
from tensorweave.ops.ragged import ragged_tensor, factory  # noqa: F401
from tensorweave.ops.strings import hashing, join_split, transform, conversion, unicode, ngrams  # noqa: F401
from tensorweave.ops.image import color, geometry, resize, boxes, codecs  # noqa: F401
from tensorweave.ops.io import gfile, tfrecord, example_proto, parsing, decoding, file_ops, record_files, readers  # noqa: F401
from tensorweave.ops.data import structure, pipeline, dataset_ops, iterator_ops, iterator, dataset  # noqa: F401
