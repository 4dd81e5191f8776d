"""tensorweave: distributed TensorFlow's graph-and-cluster model on numpy and ZeroMQ.

`import tensorweave as tf` gives the TF1 API by its TF1 names. Each op module lists its
public names in `__all__`; this file only gathers them (importing tensorweave.ops first
registers every kernel).
"""
from __future__ import annotations

__version__ = "0.1.0"

import sys as _sys

from tensorweave.framework import dtypes, errors  # noqa: F401
from tensorweave.framework.dtypes import (  # noqa: F401
    DType, as_dtype, bool, complex64, complex128, double, float16,
    float32, float64, half, int8, int16, int32, int64, resource, string, uint8, uint16, uint32, uint64,
    variant)
from tensorweave.framework.shapes import Dimension, TensorShape  # noqa: F401
from tensorweave.framework.device import DeviceSpec  # noqa: F401
from tensorweave.framework.graph import Graph, Operation, Tensor, get_default_graph, reset_default_graph  # noqa: F401
from tensorweave.framework.tensor_conversion import (  # noqa: F401
    convert_to_tensor, is_tensor, register_tensor_conversion_function)
from tensorweave.framework.indexed_slices import IndexedSlices  # noqa: F401
from tensorweave.framework.sparse_tensor import *  # noqa: F401,F403
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.ragged.ragged_tensor import *  # noqa: F401,F403
from tensorweave.framework.config import (  # noqa: F401
    ConfigProto, GPUOptions, GraphOptions, OptimizerOptions, RunMetadata, RunOptions)
from tensorweave.framework.api import *  # noqa: F401,F403
from tensorweave.ops.registry import NoGradient, NotDifferentiable, RegisterGradient  # noqa: F401
from tensorweave.ops.array.core import *  # noqa: F401,F403
from tensorweave.ops.array.fill import *  # noqa: F401,F403
from tensorweave.ops.array.concat import *  # noqa: F401,F403
from tensorweave.ops.array.pad import *  # noqa: F401,F403
from tensorweave.ops.array.slicing import *  # noqa: F401,F403
from tensorweave.ops.array.gather import *  # noqa: F401,F403
from tensorweave.ops.array.sort import *  # noqa: F401,F403
from tensorweave.ops.array.mask import *  # noqa: F401,F403
from tensorweave.ops.array.partition import *  # noqa: F401,F403
from tensorweave.ops.array.diag import *  # noqa: F401,F403
from tensorweave.ops.array.space import *  # noqa: F401,F403
from tensorweave.ops.math.cast import *  # noqa: F401,F403
from tensorweave.ops.math.binary import *  # noqa: F401,F403
from tensorweave.ops.math.unary import *  # noqa: F401,F403
from tensorweave.ops.math.reduction import *  # noqa: F401,F403
from tensorweave.ops.math.segment import *  # noqa: F401,F403
from tensorweave.ops.math.linalg import *  # noqa: F401,F403
from tensorweave.ops.math.matrix_functions import *  # noqa: F401,F403
from tensorweave.ops.math.solvers import *  # noqa: F401,F403
from tensorweave.ops.math.decompositions import *  # noqa: F401,F403
from tensorweave.ops.math.special import *  # noqa: F401,F403
from tensorweave.ops.math.histogram import *  # noqa: F401,F403
from tensorweave.ops.math.complex_parts import *  # noqa: F401,F403
from tensorweave.ops.math.clip import *  # noqa: F401,F403
from tensorweave.ops.control_flow.grouping import *  # noqa: F401,F403
from tensorweave.ops.control_flow.cond import *  # noqa: F401,F403
from tensorweave.ops.control_flow.while_loop import *  # noqa: F401,F403
from tensorweave.ops.control_flow.functional import *  # noqa: F401,F403
from tensorweave.ops.control_flow.tensor_array import *  # noqa: F401,F403
from tensorweave.ops.debugging.printing import *  # noqa: F401,F403
from tensorweave.ops.debugging.asserts import *  # noqa: F401,F403
from tensorweave.ops.debugging.numerics import *  # noqa: F401,F403
from tensorweave.ops.random import *  # noqa: F401,F403
from tensorweave.ops.sparse.core import *  # noqa: F401,F403
from tensorweave.ops.sparse.combine import *  # noqa: F401,F403
from tensorweave.ops.sparse.math import *  # noqa: F401,F403
from tensorweave.ops.state.variable_ops import *  # noqa: F401,F403
from tensorweave.ops.state.scatter import *  # noqa: F401,F403
from tensorweave.ops.state.variables import *  # noqa: F401,F403
from tensorweave.ops.state.partitioned_variables import *  # noqa: F401,F403
from tensorweave.ops.state.variable_scope import *  # noqa: F401,F403
from tensorweave.ops.state.initializers import *  # noqa: F401,F403
from tensorweave.ops.gradients.gradients import *  # noqa: F401,F403
from tensorweave.ops.data_flow.queues import *  # noqa: F401,F403
from tensorweave.ops.data_flow.accumulators import *  # noqa: F401,F403
from tensorweave.ops.strings.hashing import *  # noqa: F401,F403
from tensorweave.ops.strings.join_split import *  # noqa: F401,F403
from tensorweave.ops.strings.transform import *  # noqa: F401,F403
from tensorweave.ops.strings.conversion import *  # noqa: F401,F403
from tensorweave.ops.io.decoding import *  # noqa: F401,F403
from tensorweave.ops.io.file_ops import *  # noqa: F401,F403
from tensorweave.ops.io.parsing import *  # noqa: F401,F403
from tensorweave.ops.io.readers import *  # noqa: F401,F403
from tensorweave.client.session import InteractiveSession, Session, get_default_session  # noqa: F401

from tensorweave import (  # noqa: F401,E402  (namespaces: tf.nn, tf.train, ...)
    app, bitwise, compat, contrib, data, debugging, distribute, flags, gfile, image, initializers, io, keras, layers,
    linalg, logging, losses, manip, math, metrics, nn, python_io, queue, ragged, random, regularizers, sparse, strings,
    summary, test, train)
from tensorweave.summary import Event, HistogramProto, SessionLog, Summary, SummaryMetadata  # noqa: F401,E402


# tf.compat.v1 is this very namespace (also importable as `tensorweave.compat.v1`).
compat.v1 = _sys.modules[__name__]
_sys.modules["tensorweave.compat.v1"] = compat.v1


@tf_export("disable_eager_execution")
def disable_eager_execution() -> None:
    """Accepted for TF1 programs; tensorweave is always in graph mode."""


@tf_export("disable_v2_behavior")
def disable_v2_behavior() -> None:
    """Accepted for TF1 programs; tensorweave is always TF1."""


@tf_export("executing_eagerly")
def executing_eagerly() -> bool:
    return False
