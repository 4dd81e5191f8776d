"""tf.keras.backend in graph mode, as TF 1.15 had it: one Keras session (created once for the
default graph, initialising the variables Keras made before it is used), per-graph layer name
counters, the learning phase (a `placeholder_with_default(False)` per graph), `function`, and the
math wrappers Keras programs call, each a thin call of the tensorweave op."""
from __future__ import annotations

import collections
import time
import weakref

import numpy as np

from tensorweave import _api
from tensorweave.client.session import Session
from tensorweave.framework import nest
from tensorweave.distribute.distribute_lib import get_strategy, has_strategy
from tensorweave.distribute.distribute_coordinator import (get_current_worker_context, in_multi_worker_mode,
                                                            run_distribute_coordinator)
from tensorweave.framework.api import graph_from_inputs, name_scope as _name_scope
from tensorweave.framework.config import ConfigProto
from tensorweave.framework.dtypes import as_dtype
from tensorweave.framework.graph import Tensor, get_default_graph, get_default_session, reset_default_graph
from tensorweave.framework.shapes import TensorShape
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array import core as _array, concat as _concat, fill as _fill, gather as _gather, pad as _pad
from tensorweave.ops.array.sort import where as _where
from tensorweave.ops.gradients.gradients import gradients as _gradients
from tensorweave.ops.grouping import group
from tensorweave.ops.math import binary as _binary, cast as _cast, clip as _clip, linalg as _linalg
from tensorweave.ops.math import reduction as _reduction, unary as _unary_ops
from tensorweave.ops.control_flow.cond import cond as _cond
from tensorweave.ops.control_flow import functional as _functional
from tensorweave.ops.math.sequences import range as _range
from tensorweave.ops.nn.conv import conv2d as _conv2d
from tensorweave.ops.nn.pool import avg_pool as _avg_pool, max_pool as _max_pool
from tensorweave.ops.nn import activations as _nn
from tensorweave.ops.nn.impl import dropout as _nn_dropout, l2_normalize as _l2_normalize
from tensorweave.ops.nn.impl import sigmoid_cross_entropy_with_logits, softmax_cross_entropy_with_logits_v2
from tensorweave.ops.nn.impl import sparse_softmax_cross_entropy_with_logits
from tensorweave.train.moving_averages import assign_moving_average
from tensorweave.ops import random as _random
from tensorweave.ops.state.variable_ops import is_variable_initialized
from tensorweave.ops.state.variables import Variable, variables_initializer

__getattr__, __dir__ = _api.lazy_attributes(__name__)


_FLOATX = "float32"
_EPSILON = 1e-7
_IMAGE_DATA_FORMAT = "channels_last"
_SESSION = None                      # the Keras session (recreated when the default graph changes)
_MANUAL_VAR_INIT = False
_GRAPH_UIDS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_GRAPH_LEARNING_PHASES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_GRAPH_VARIABLES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()    # graph -> [variables]
_INITIALIZED: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()        # session -> {id(variable)}


# -- configuration ------------------------------------------------------------------------------
@tf_export("keras.backend.floatx")
def floatx() -> str:
    """The default float type of Keras ("float32")."""
    return _FLOATX


@tf_export("keras.backend.set_floatx")
def set_floatx(value) -> None:
    global _FLOATX
    if value not in ("float16", "float32", "float64"):
        raise ValueError(f"Unknown floatx type: {value}")
    _FLOATX = str(value)


@tf_export("keras.backend.epsilon")
def epsilon() -> float:
    """The fuzz factor Keras adds to avoid division by zero (1e-7)."""
    return _EPSILON


@tf_export("keras.backend.set_epsilon")
def set_epsilon(value) -> None:
    global _EPSILON
    _EPSILON = float(value)


@tf_export("keras.backend.image_data_format")
def image_data_format() -> str:
    """'channels_last' (NHWC, the default) or 'channels_first'."""
    return _IMAGE_DATA_FORMAT


@tf_export("keras.backend.set_image_data_format")
def set_image_data_format(data_format) -> None:
    global _IMAGE_DATA_FORMAT
    if data_format not in ("channels_last", "channels_first"):
        raise ValueError(f"Unknown data_format: {data_format}")
    _IMAGE_DATA_FORMAT = str(data_format)


# -- names ----------------------------------------------------------------------------------------
@tf_export("keras.backend.get_uid")
def get_uid(prefix: str = "") -> int:
    """1, 2, 3, ... for each call with `prefix` in the default graph."""
    uids = _GRAPH_UIDS.setdefault(get_default_graph(), collections.defaultdict(int))
    uids[prefix] += 1
    return uids[prefix]


@tf_export("keras.backend.reset_uids")
def reset_uids() -> None:
    """Forgets the default graph's layer name counters (the next Dense is "dense" again)."""
    _GRAPH_UIDS.pop(get_default_graph(), None)


def unique_object_name(name: str, zero_based: bool = True) -> str:
    """"dense", "dense_1", ... per default graph (zero_based), or "input_1", "input_2", ..."""
    uid = get_uid(name)
    if zero_based:
        return name if uid == 1 else f"{name}_{uid - 1}"
    return f"{name}_{uid}"


name_scope = _name_scope
tf_export("keras.backend.name_scope")(name_scope)


# -- the session ----------------------------------------------------------------------------------
def track_variable(v) -> None:
    """Keras initialises the variables it made (layers' weights, K.variable) in get_session."""
    _GRAPH_VARIABLES.setdefault(v.graph, []).append(v)


@tf_export("keras.backend.manual_variable_initialization")
def manual_variable_initialization(value: bool) -> None:
    """True: get_session no longer initialises variables (the program runs its own initializer)."""
    global _MANUAL_VAR_INIT
    _MANUAL_VAR_INIT = bool(value)


@tf_export("keras.backend.get_session")
def get_session(op_input_list=()):
    """The session Keras runs in: the default session if one is installed, else one Keras creates
    for the default graph, or the graph of `op_input_list` (and recreates when that graph
    changes). Before returning it, the variables Keras created that are not initialised yet are
    initialised (TF 1.15's behaviour)."""
    global _SESSION
    session = get_default_session()
    if session is None:
        graph = graph_from_inputs(list(op_input_list)) if op_input_list else get_default_graph()
        if _SESSION is None or _SESSION.graph is not graph:
            _SESSION = _new_session(graph)
        session = _SESSION
    if not _MANUAL_VAR_INIT:
        _initialize_variables(session)
    return session


def _new_session(graph):
    """A session for `graph`; inside a tf.distribute strategy's scope, with the session config the
    strategy asks for (its devices: MirroredStrategy(["/cpu:0", "/cpu:1"]) needs two CPUs), and
    under a multi-worker strategy (MultiWorkerMirroredStrategy on a cluster) on this task's server,
    which the distribute coordinator starts if the program did not (TF 1.15's
    configure_and_create_distributed_session)."""
    if not has_strategy():
        return Session(graph=graph)
    strategy = get_strategy()
    if in_multi_worker_mode(strategy):
        def worker_session(_):
            context = get_current_worker_context()
            return Session(context.master_target, graph=graph, config=context.session_config)
        return run_distribute_coordinator(worker_session, strategy)
    config = ConfigProto()
    strategy.configure(config)
    return Session(graph=graph, config=config)


def _initialize_variables(session) -> None:
    """Initialises the Keras variables not initialised yet; on a worker of a multi-worker strategy
    that does not initialise (experimental_should_init: a ParameterServerStrategy worker other than
    the chief), waits until the chief has initialised them (TF 1.15's
    init_restore_or_wait_for_variables)."""
    done = _INITIALIZED.setdefault(session, set())
    candidates = [v for v in _GRAPH_VARIABLES.get(session.graph, []) if id(v) not in done]
    if not candidates:
        return
    context = get_current_worker_context()
    with session.graph.as_default():
        checks = [is_variable_initialized(v) for v in candidates]
        flags = session.run(checks)
        if context is not None and not context.experimental_should_init:
            while not np.all(flags):
                time.sleep(0.05)
                flags = session.run(checks)
        fresh = [v for v, flag in zip(candidates, flags) if not flag]
        if fresh:
            session.run(variables_initializer(fresh))
    done.update(id(v) for v in candidates)


@tf_export("keras.backend.set_session")
def set_session(session) -> None:
    """Makes `session` the Keras session."""
    global _SESSION
    _SESSION = session


@tf_export("keras.backend.clear_session")
def clear_session() -> None:
    """Drops the Keras session and starts a fresh default graph (layer names start over)."""
    global _SESSION
    reset_default_graph()
    _SESSION = None


@tf_export("keras.backend.get_graph")
def get_graph():
    return get_default_graph()


# -- the learning phase ---------------------------------------------------------------------------
@tf_export("keras.backend.learning_phase")
def learning_phase():
    """The default graph's learning phase: 0/1 if set_learning_phase fixed it, else a bool
    placeholder "keras_learning_phase" defaulting to False that K.function or fit feed."""
    graph = get_default_graph()
    if graph not in _GRAPH_LEARNING_PHASES:
        with graph.name_scope(""):
            _GRAPH_LEARNING_PHASES[graph] = _array.placeholder_with_default(False, shape=(),
                                                                            name="keras_learning_phase")
    return _GRAPH_LEARNING_PHASES[graph]


@tf_export("keras.backend.set_learning_phase")
def set_learning_phase(value) -> None:
    """Fixes the learning phase of the default graph: 0 = test, 1 = train."""
    if value not in (0, 1):
        raise ValueError("Expected learning phase to be 0 or 1.")
    _GRAPH_LEARNING_PHASES[get_default_graph()] = int(value)


# -- tensors and variables -----------------------------------------------------------------------
@tf_export("keras.backend.placeholder")
def placeholder(shape=None, ndim=None, dtype=None, sparse=False, name=None):
    """A placeholder of `shape` (or of rank `ndim`, every dimension unknown) and `dtype` (floatx)."""
    if sparse:
        raise ValueError("keras.backend.placeholder(sparse=True) is not supported; use a dense placeholder.")
    if shape is None and ndim is not None:
        shape = (None,) * ndim
    return _array.placeholder(as_dtype(dtype or floatx()), shape=shape, name=name)


@tf_export("keras.backend.is_placeholder")
def is_placeholder(x) -> bool:
    return isinstance(x, Tensor) and x.op.type == "Placeholder"


@tf_export("keras.backend.variable")
def variable(value, dtype=None, name=None, constraint=None):
    """A variable holding `value` (floatx unless given), initialised by get_session."""
    v = Variable(np.asarray(value, dtype=as_dtype(dtype or floatx()).as_numpy_dtype), name=name,
                 constraint=constraint)
    track_variable(v)
    return v


@tf_export("keras.backend.constant")
def constant(value, dtype=None, shape=None, name=None):
    return _array.constant(value, dtype=as_dtype(dtype or floatx()), shape=shape, name=name or "Const")


@tf_export("keras.backend.zeros")
def zeros(shape, dtype=None, name=None):
    """A variable of zeros (as Keras: zeros/ones/eye make variables, zeros_like makes a tensor)."""
    return variable(np.zeros(shape), dtype, name)


@tf_export("keras.backend.ones")
def ones(shape, dtype=None, name=None):
    return variable(np.ones(shape), dtype, name)


@tf_export("keras.backend.eye")
def eye(size, dtype=None, name=None):
    return variable(np.eye(size), dtype, name)


@tf_export("keras.backend.zeros_like")
def zeros_like(x, dtype=None, name=None):
    return _fill.zeros_like(x, dtype=dtype, name=name)


@tf_export("keras.backend.ones_like")
def ones_like(x, dtype=None, name=None):
    return _fill.ones_like(x, dtype=dtype, name=name)


@tf_export("keras.backend.int_shape")
def int_shape(x):
    """The static shape as a tuple of ints and Nones, or None when the rank is unknown."""
    shape = x.shape if hasattr(x, "shape") else TensorShape(np.shape(x))
    shape = TensorShape(shape)
    return tuple(shape.as_list()) if shape.ndims is not None else None


@tf_export("keras.backend.ndim")
def ndim(x):
    return TensorShape(x.shape).ndims


@tf_export("keras.backend.dtype")
def dtype(x) -> str:
    return x.dtype.base_dtype.name


@tf_export("keras.backend.is_keras_tensor")
def is_keras_tensor(x) -> bool:
    """Whether `x` came out of a Keras layer (it carries its Keras history)."""
    if not isinstance(x, Tensor) and not hasattr(x, "op"):
        raise ValueError(f"Unexpectedly found an instance of type `{type(x)}`. Expected a symbolic tensor "
                         "instance.")
    return keras_history(x) is not None


# The Keras history of tensors (layer, node index, tensor index): Tensor has __slots__, so the
# functional API keeps it beside the tensor rather than as TF's `_keras_history` attribute.
_KERAS_HISTORY: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def keras_history(x):
    try:
        return _KERAS_HISTORY.get(x)
    except TypeError:
        return None


def set_keras_history(x, history) -> None:
    _KERAS_HISTORY[x] = history


# A tensor's Keras mask (TF's `_keras_mask`), kept beside it for the same reason.
_KERAS_MASK: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def keras_mask(x):
    try:
        return _KERAS_MASK.get(x)
    except TypeError:
        return None


def set_keras_mask(x, mask) -> None:
    if mask is None:
        _KERAS_MASK.pop(x, None)
    else:
        _KERAS_MASK[x] = mask


# -- running ----------------------------------------------------------------------------------
@tf_export("keras.backend.get_value")
def get_value(x):
    """The value of a variable (or tensor) as a numpy array."""
    return get_session().run(x)


@tf_export("keras.backend.batch_get_value")
def batch_get_value(tensors) -> list:
    return list(get_session().run(list(tensors))) if tensors else []


@tf_export("keras.backend.eval")
def eval(x):
    return get_value(x)


def _assign_placeholder(x):
    """One assign op per variable, fed from a placeholder, made once (as Keras caches them)."""
    cached = getattr(x, "_keras_assign", None)
    if cached is None:
        with x.graph.as_default():
            ph = _array.placeholder(x.dtype.base_dtype, shape=x.shape)
            cached = (ph, x.assign(ph))
        x._keras_assign = cached
    return cached


@tf_export("keras.backend.batch_set_value")
def batch_set_value(tuples) -> None:
    """Sets each variable of [(variable, numpy value)] in one session run."""
    tuples = list(tuples)
    if not tuples:
        return
    feeds, ops = {}, []
    for x, value in tuples:
        ph, op = _assign_placeholder(x)
        value = np.asarray(value, dtype=x.dtype.base_dtype.as_numpy_dtype)
        if not TensorShape(x.shape).is_compatible_with(value.shape):
            raise ValueError(f"Cannot assign a value of shape {value.shape} to the variable {x.name} of shape "
                             f"{x.shape}")
        feeds[ph] = value
        ops.append(op)
    get_session().run(ops, feed_dict=feeds)


@tf_export("keras.backend.set_value")
def set_value(x, value) -> None:
    batch_set_value([(x, value)])


@tf_export("keras.backend.print_tensor")
def print_tensor(x, message=""):
    return x


class GraphExecutionFunction:
    """K.function's result: called with a list of input values, runs `outputs` and `updates` in
    the Keras session and returns the outputs' values (in the outputs' structure). `fetches` run
    too; a fetch in `fetch_callbacks` has its callback called with its value."""

    def __init__(self, inputs, outputs, updates=None, name=None, **session_kwargs):
        self.inputs = nest.flatten(inputs)
        self._outputs_structure = outputs
        self.outputs = nest.flatten(outputs)
        self.feed_dict = session_kwargs.pop("feed_dict", None) or {}
        self.fetches = session_kwargs.pop("fetches", None) or []
        self.fetch_callbacks = {}   # fetch -> callable given its value after each call (TF's hook)
        if session_kwargs:
            raise ValueError(f"Invalid argument(s) to keras.backend.function: {sorted(session_kwargs)}")
        # as TF: (variable, new value) updates are assigned after the first output is computed
        with get_default_graph().control_dependencies(self.outputs[:1]):
            update_ops = [u[0].assign(u[1]) if isinstance(u, (list, tuple)) else u for u in updates or []]
            self.updates_op = group(*update_ops) if update_ops else None
        self.name = name

    def __call__(self, inputs):
        inputs = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
        if len(inputs) != len(self.inputs):
            raise ValueError(f"keras.backend.function expects {len(self.inputs)} input values, got {len(inputs)}")
        feeds = dict(self.feed_dict)
        for tensor, value in zip(self.inputs, inputs):
            if value is not None:
                feeds[tensor] = value
        fetches = self.outputs + ([self.updates_op] if self.updates_op is not None else []) + list(self.fetches)
        values = get_session().run(fetches, feed_dict=feeds)
        if self.fetches:
            for fetch, value in zip(self.fetches, values[-len(self.fetches):]):
                if fetch in self.fetch_callbacks:
                    self.fetch_callbacks[fetch](value)
        return nest.pack_sequence_as(self._outputs_structure, list(values[:len(self.outputs)]))


@tf_export("keras.backend.function")
def function(inputs, outputs, updates=None, name=None, **kwargs):
    """K.function(inputs, outputs, updates=None): a callable running the graph from input values."""
    return GraphExecutionFunction(inputs, outputs, updates=updates, name=name, **kwargs)


@tf_export("keras.backend.gradients")
def gradients(loss, variables):
    return _gradients(loss, variables, colocate_gradients_with_ops=True)


@tf_export("keras.backend.stop_gradient")
def stop_gradient(variables):
    if isinstance(variables, (list, tuple)):
        return [_array.stop_gradient(v) for v in variables]
    return _array.stop_gradient(variables)


# -- math -----------------------------------------------------------------------------------------
def _axis_arg(axis):
    return list(axis) if isinstance(axis, tuple) else axis


def _reducer(fn, doc):
    def reduce(x, axis=None, keepdims=False):
        return fn(x, axis=_axis_arg(axis), keepdims=keepdims)
    reduce.__doc__ = doc
    return reduce


sum = _reducer(_reduction.reduce_sum, "K.sum(x, axis=None, keepdims=False)")
prod = _reducer(_reduction.reduce_prod, "K.prod(x, axis=None, keepdims=False)")
max = _reducer(_reduction.reduce_max, "K.max(x, axis=None, keepdims=False)")
min = _reducer(_reduction.reduce_min, "K.min(x, axis=None, keepdims=False)")
tf_export("keras.backend.sum")(sum)
tf_export("keras.backend.prod")(prod)
tf_export("keras.backend.max")(max)
tf_export("keras.backend.min")(min)


@tf_export("keras.backend.mean")
def mean(x, axis=None, keepdims=False):
    """K.mean: booleans are averaged as floatx."""
    if x.dtype.base_dtype.is_bool:
        x = _cast.cast(x, floatx())
    return _reduction.reduce_mean(x, axis=_axis_arg(axis), keepdims=keepdims)


@tf_export("keras.backend.var")
def var(x, axis=None, keepdims=False):
    return _reduction.reduce_variance(x, axis=_axis_arg(axis), keepdims=keepdims)


@tf_export("keras.backend.std")
def std(x, axis=None, keepdims=False):
    return _reduction.reduce_std(x, axis=_axis_arg(axis), keepdims=keepdims)


@tf_export("keras.backend.any")
def any(x, axis=None, keepdims=False):
    return _reduction.reduce_any(_cast.cast(x, "bool"), axis=_axis_arg(axis), keepdims=keepdims)


@tf_export("keras.backend.all")
def all(x, axis=None, keepdims=False):
    return _reduction.reduce_all(_cast.cast(x, "bool"), axis=_axis_arg(axis), keepdims=keepdims)


@tf_export("keras.backend.argmax")
def argmax(x, axis=-1):
    return _reduction.argmax(x, axis)


@tf_export("keras.backend.argmin")
def argmin(x, axis=-1):
    return _reduction.argmin(x, axis)


@tf_export("keras.backend.logsumexp")
def logsumexp(x, axis=None, keepdims=False):
    return _reduction.reduce_logsumexp(x, axis=_axis_arg(axis), keepdims=keepdims)


@tf_export("keras.backend.cumsum")
def cumsum(x, axis=0):
    return _reduction.cumsum(x, axis=axis)


@tf_export("keras.backend.dot")
def dot(x, y):
    """K.dot: matmul for rank 2; for higher ranks, the last axis of x with the second-to-last of y."""
    x_rank, y_rank = ndim(x), ndim(y)
    if x_rank is not None and y_rank is not None and (x_rank > 2 or y_rank > 2):
        return _linalg.tensordot(x, y, [[x_rank - 1], [y_rank - 2 if y_rank > 1 else 0]])
    return _linalg.matmul(x, y)


@tf_export("keras.backend.batch_dot")
def batch_dot(x, y, axes=None):
    """K.batch_dot of two rank-2 or two rank-3 inputs (the common uses)."""
    x_rank, y_rank = ndim(x), ndim(y)
    if (x_rank, y_rank) not in ((2, 2), (3, 3)):
        raise ValueError(f"keras.backend.batch_dot supports two rank-2 or two rank-3 inputs here; got ranks {x_rank} "
                         f"and {y_rank}")
    if axes is None:
        axes = [x_rank - 1, y_rank - 2]
    if isinstance(axes, int):
        axes = (axes, axes)
    if x_rank == 2 and y_rank == 2:
        return _reduction.reduce_sum(_binary.multiply(x, y), axis=axes[0], keepdims=True)
    adj_x = axes[0] != x_rank - 1
    adj_y = axes[1] == y_rank - 1
    return _linalg.matmul(x, y, adjoint_a=adj_x, adjoint_b=adj_y)


@tf_export("keras.backend.transpose")
def transpose(x):
    return _array.transpose(x)


@tf_export("keras.backend.concatenate")
def concatenate(tensors, axis=-1):
    """K.concatenate: along `axis` (negative counts from the end)."""
    if axis < 0:
        rank = ndim(tensors[0])
        axis = axis % rank if rank else 0
    return _concat.concat(list(tensors), axis)


@tf_export("keras.backend.stack")
def stack(x, axis=0):
    return _concat.stack(x, axis=axis)


@tf_export("keras.backend.reshape")
def reshape(x, shape):
    return _array.reshape(x, shape)


@tf_export("keras.backend.permute_dimensions")
def permute_dimensions(x, pattern):
    return _array.transpose(x, perm=list(pattern))


@tf_export("keras.backend.expand_dims")
def expand_dims(x, axis=-1):
    return _array.expand_dims(x, axis)


@tf_export("keras.backend.squeeze")
def squeeze(x, axis):
    return _array.squeeze(x, [axis])


@tf_export("keras.backend.flatten")
def flatten(x):
    return _array.reshape(x, [-1])


@tf_export("keras.backend.batch_flatten")
def batch_flatten(x):
    return _array.reshape(x, _concat.stack([_array.shape(x)[0], -1]))


@tf_export("keras.backend.repeat")
def repeat(x, n):
    """[batch, dim] -> [batch, n, dim]."""
    return _pad.tile(_array.expand_dims(x, 1), [1, n, 1])


@tf_export("keras.backend.tile")
def tile(x, n):
    return _pad.tile(x, [n] if isinstance(n, int) else n)


@tf_export("keras.backend.gather")
def gather(reference, indices):
    return _gather.gather(reference, indices)


@tf_export("keras.backend.one_hot")
def one_hot(indices, num_classes):
    return _gather.one_hot(indices, depth=num_classes, axis=-1)


@tf_export("keras.backend.shape")
def shape(x):
    return _array.shape(x)


@tf_export("keras.backend.cast")
def cast(x, dtype):
    return _cast.cast(x, dtype)


@tf_export("keras.backend.cast_to_floatx")
def cast_to_floatx(x):
    return np.asarray(x, dtype=floatx())


@tf_export("keras.backend.clip")
def clip(x, min_value, max_value):
    if max_value is not None and min_value is not None and max_value < min_value:
        max_value = min_value
    return _clip.clip_by_value(x, min_value, max_value)


@tf_export("keras.backend.switch")
def switch(condition, then_expression, else_expression):
    """Elementwise choice (a tensor condition), or the branch of a Python bool."""
    if isinstance(condition, (bool, int)):
        chosen = then_expression if condition else else_expression
        return chosen() if callable(chosen) else chosen
    then_value = then_expression() if callable(then_expression) else then_expression
    else_value = else_expression() if callable(else_expression) else else_expression
    return _where(condition, then_value, else_value)


@tf_export("keras.backend.in_train_phase")
def in_train_phase(x, alt, training=None):
    """`x` in the training phase, `alt` otherwise (training: a Python bool, 0/1 or a bool tensor;
    None: the learning phase)."""
    if training is None:
        training = learning_phase()
    if isinstance(training, (bool, int, np.integer, np.bool_)):
        chosen = x if training else alt
        return chosen() if callable(chosen) else chosen
    return _cond(training, x if callable(x) else (lambda: x), alt if callable(alt) else (lambda: alt))


@tf_export("keras.backend.in_test_phase")
def in_test_phase(x, alt, training=None):
    return in_train_phase(alt, x, training=training)


def _unary(fn, doc):
    def wrapped(x):
        return fn(x)
    wrapped.__doc__ = doc
    return wrapped


abs = _unary(_unary_ops.abs, "K.abs(x)")
square = _unary(_unary_ops.square, "K.square(x)")
exp = _unary(_unary_ops.exp, "K.exp(x)")
log = _unary(_unary_ops.log, "K.log(x)")
sign = _unary(_unary_ops.sign, "K.sign(x)")
round = _unary(_unary_ops.round, "K.round(x)")
sigmoid = _unary(_unary_ops.sigmoid, "K.sigmoid(x)")
tanh = _unary(_unary_ops.tanh, "K.tanh(x)")
softplus = _unary(_nn.softplus, "K.softplus(x)")
softsign = _unary(_nn.softsign, "K.softsign(x)")
tf_export("keras.backend.abs")(abs)
tf_export("keras.backend.square")(square)
tf_export("keras.backend.exp")(exp)
tf_export("keras.backend.log")(log)
tf_export("keras.backend.sign")(sign)
tf_export("keras.backend.round")(round)
tf_export("keras.backend.sigmoid")(sigmoid)
tf_export("keras.backend.tanh")(tanh)
tf_export("keras.backend.softplus")(softplus)
tf_export("keras.backend.softsign")(softsign)


@tf_export("keras.backend.sqrt")
def sqrt(x):
    """K.sqrt: negative inputs are clipped to 0 first, as Keras does."""
    return _unary_ops.sqrt(_clip.clip_by_value(x, 0.0, np.inf))


@tf_export("keras.backend.pow")
def pow(x, a):
    return _binary.pow(x, a)


@tf_export("keras.backend.maximum")
def maximum(x, y):
    return _binary.maximum(x, y)


@tf_export("keras.backend.minimum")
def minimum(x, y):
    return _binary.minimum(x, y)


@tf_export("keras.backend.equal")
def equal(x, y):
    return _binary.equal(x, y)


@tf_export("keras.backend.not_equal")
def not_equal(x, y):
    return _binary.not_equal(x, y)


@tf_export("keras.backend.greater")
def greater(x, y):
    return _binary.greater(x, y)


@tf_export("keras.backend.greater_equal")
def greater_equal(x, y):
    return _binary.greater_equal(x, y)


@tf_export("keras.backend.less_equal")
def less_equal(x, y):
    return _binary.less_equal(x, y)


@tf_export("keras.backend.less")
def less(x, y):
    return _binary.less(x, y)


@tf_export("keras.backend.relu")
def relu(x, alpha=0.0, max_value=None, threshold=0):
    """K.relu: x above `threshold` and 0 below it, slope `alpha` below the threshold, capped at
    `max_value` (the cap clips at 0 from below, as TF's)."""
    if alpha == 0 and max_value is None and threshold == 0:
        return _nn.relu(x)
    negative = _nn.relu(_binary.subtract(threshold, x)) if alpha != 0 else None
    y = _binary.multiply(x, _cast.cast(_binary.greater(x, threshold), x.dtype)) if threshold != 0 else _nn.relu(x)
    if max_value is not None:
        y = _clip.clip_by_value(y, 0, max_value)
    if negative is not None:
        y = _binary.subtract(y, _binary.multiply(alpha, negative))
    return y


@tf_export("keras.backend.elu")
def elu(x, alpha=1.0):
    y = _nn.elu(x)
    return y if alpha == 1 else _where(_binary.greater(x, 0), y, _binary.multiply(alpha, y))


@tf_export("keras.backend.softmax")
def softmax(x, axis=-1):
    return _nn.softmax(x, axis=axis)


@tf_export("keras.backend.hard_sigmoid")
def hard_sigmoid(x):
    """clip(0.2 * x + 0.5, 0, 1)."""
    return _clip.clip_by_value(_binary.add(_binary.multiply(x, 0.2), 0.5), 0.0, 1.0)


@tf_export("keras.backend.l2_normalize")
def l2_normalize(x, axis=None):
    return _l2_normalize(x, axis=axis)


@tf_export("keras.backend.random_normal")
def random_normal(shape, mean=0.0, stddev=1.0, dtype=None, seed=None):
    return _random.random_normal(shape, mean=mean, stddev=stddev, dtype=dtype or floatx(), seed=seed)


@tf_export("keras.backend.random_uniform")
def random_uniform(shape, minval=0.0, maxval=1.0, dtype=None, seed=None):
    return _random.random_uniform(shape, minval=minval, maxval=maxval, dtype=dtype or floatx(), seed=seed)


@tf_export("keras.backend.count_params")
def count_params(x) -> int:
    return int(np.prod(int_shape(x)))


@tf_export("keras.backend.to_dense")
def to_dense(tensor):
    return tensor


@tf_export("keras.backend.identity")
def identity(x, name=None):
    return _array.identity(x, name=name)


@tf_export("keras.backend.bias_add")
def bias_add(x, bias, data_format=None):
    """x + bias along the channel axis (last for channels_last, 1 for channels_first)."""
    data_format = data_format or image_data_format()
    if data_format == "channels_last" or ndim(x) == 2:
        return _nn.bias_add(x, bias)
    if ndim(x) == 4:
        return _nn.bias_add(x, bias, data_format="NCHW")
    return _binary.add(x, _array.reshape(bias, [1, -1] + [1] * (ndim(x) - 2)))


@tf_export("keras.backend.dropout")
def dropout(x, level, noise_shape=None, seed=None):
    return _nn_dropout(x, rate=level, noise_shape=noise_shape, seed=seed)


# -- variable updates -------------------------------------------------------------------------
@tf_export("keras.backend.update")
def update(x, new_x):
    return x.assign(new_x)


@tf_export("keras.backend.update_add")
def update_add(x, increment):
    return x.assign_add(increment)


@tf_export("keras.backend.update_sub")
def update_sub(x, decrement):
    return x.assign_sub(decrement)


@tf_export("keras.backend.moving_average_update")
def moving_average_update(x, value, momentum):
    """x = momentum * x + (1 - momentum) * value, zero-debiased as in TF 1.x graph mode."""
    return assign_moving_average(x, value, momentum, zero_debias=True)


# -- losses ---------------------------------------------------------------------------------------
def _logits_of(output, op_type):
    """The logits under a Softmax/Sigmoid op Keras applied, so the loss works from them."""
    if not isinstance(output, Variable) and getattr(output, "op", None) is not None and output.op.type == op_type:
        return output.op.inputs[0]
    return None


@tf_export("keras.backend.categorical_crossentropy")
def categorical_crossentropy(target, output, from_logits=False, axis=-1):
    """-sum(target * log(output)) over `axis`; output probabilities are renormalised and clipped
    to [epsilon, 1 - epsilon], and a softmax output is undone to use its logits (as Keras)."""
    if not from_logits:
        logits = _logits_of(output, "Softmax")
        if logits is None:
            output = output / _reduction.reduce_sum(output, axis, True)
            output = _clip.clip_by_value(output, epsilon(), 1.0 - epsilon())
            return _unary_ops.negative(_reduction.reduce_sum(target * _unary_ops.log(output), axis))
        output = logits
    return softmax_cross_entropy_with_logits_v2(labels=target, logits=output, axis=axis)


@tf_export("keras.backend.sparse_categorical_crossentropy")
def sparse_categorical_crossentropy(target, output, from_logits=False, axis=-1):
    """Categorical crossentropy with integer targets (any leading shape)."""
    if not from_logits:
        logits = _logits_of(output, "Softmax")
        if logits is None:
            output = _unary_ops.log(_clip.clip_by_value(output, epsilon(), 1.0 - epsilon()))
        else:
            output = logits
    rank = ndim(output)
    axis = axis % rank
    if axis != rank - 1:
        output = _array.transpose(output, list(range(axis)) + list(range(axis + 1, rank)) + [axis])
    targets = _cast.cast(flatten(target), "int64")
    logits = _array.reshape(output, [-1, int(output.shape[-1].value)])
    res = sparse_softmax_cross_entropy_with_logits(labels=targets, logits=logits)
    if rank >= 3:
        return _array.reshape(res, _array.shape(output)[:-1])
    return res


@tf_export("keras.backend.binary_crossentropy")
def binary_crossentropy(target, output, from_logits=False):
    """Elementwise binary crossentropy; probabilities are clipped to [epsilon, 1 - epsilon], and a
    sigmoid output is undone to use its logits (as Keras)."""
    if not from_logits:
        logits = _logits_of(output, "Sigmoid")
        if logits is None:
            output = _clip.clip_by_value(output, epsilon(), 1.0 - epsilon())
            bce = target * _unary_ops.log(output + epsilon())
            bce = bce + (1 - target) * _unary_ops.log(1 - output + epsilon())
            return _unary_ops.negative(bce)
        output = logits
    return sigmoid_cross_entropy_with_logits(labels=target, logits=output)


# -- more of Keras's backend (sequences, randomness, convolution and pooling) --------------------
@tf_export("keras.backend.reverse")
def reverse(x, axes):
    return _pad.reverse(x, [axes] if isinstance(axes, int) else list(axes))


@tf_export("keras.backend.arange")
def arange(start, stop=None, step=1, dtype="int32"):
    """K.arange: like np.arange; a negative `start` with no `stop` gives an empty range."""
    if stop is None and start < 0:
        start = 0
    return _cast.cast(_range(start, limit=stop, delta=step, name="arange"), dtype)


@tf_export("keras.backend.cos")
def cos(x):
    return _unary_ops.cos(x)


@tf_export("keras.backend.sin")
def sin(x):
    return _unary_ops.sin(x)


@tf_export("keras.backend.cumprod")
def cumprod(x, axis=0):
    return _reduction.cumprod(x, axis=axis)


@tf_export("keras.backend.truncated_normal")
def truncated_normal(shape, mean=0.0, stddev=1.0, dtype=None, seed=None):
    return _random.truncated_normal(shape, mean, stddev, dtype=dtype or floatx(), seed=seed)


@tf_export("keras.backend.random_binomial")
def random_binomial(shape, p=0.0, dtype=None, seed=None):
    """1 with probability p, else 0."""
    dtype = dtype or floatx()
    return _where(_binary.less(_random.random_uniform(shape, dtype=dtype, seed=seed), p),
                  _fill.ones(shape, dtype=dtype), _fill.zeros(shape, dtype=dtype))


@tf_export("keras.backend.get_variable_shape")
def get_variable_shape(x):
    return int_shape(x)


@tf_export("keras.backend.is_sparse")
def is_sparse(tensor) -> bool:
    return type(tensor).__name__ == "SparseTensor"


@tf_export("keras.backend.map_fn")
def map_fn(fn, elems, name=None, dtype=None):
    return _functional.map_fn(fn, elems, name=name, dtype=dtype)


@tf_export("keras.backend.foldl")
def foldl(fn, elems, initializer=None, name=None):
    return _functional.foldl(fn, elems, initializer=initializer, name=name)


@tf_export("keras.backend.foldr")
def foldr(fn, elems, initializer=None, name=None):
    return _functional.foldr(fn, elems, initializer=initializer, name=name)


def _tf_data_format(data_format) -> str:
    data_format = data_format or image_data_format()
    if data_format not in ("channels_last", "channels_first"):
        raise ValueError(f"Unknown data_format: {data_format}")
    return "NHWC" if data_format == "channels_last" else "NCHW"


def _spatial(pair, fmt: str) -> list:
    """Per-axis window/stride values of the two spatial axes, as a 4-list in `fmt` order."""
    return [1, 1] + list(pair) if fmt == "NCHW" else [1] + list(pair) + [1]


@tf_export("keras.backend.conv2d")
def conv2d(x, kernel, strides=(1, 1), padding="valid", data_format=None, dilation_rate=(1, 1)):
    """2-D convolution; padding 'valid' or 'same', strides and dilation over the spatial axes."""
    fmt = _tf_data_format(data_format)
    return _conv2d(x, kernel, strides=_spatial(strides, fmt), padding=padding.upper(), data_format=fmt,
                   dilations=_spatial(dilation_rate, fmt))


@tf_export("keras.backend.pool2d")
def pool2d(x, pool_size, strides=(1, 1), padding="valid", data_format=None, pool_mode="max"):
    """2-D max or average pooling."""
    fmt = _tf_data_format(data_format)
    if pool_mode not in ("max", "avg"):
        raise ValueError(f"Invalid pooling mode: {pool_mode}")
    pool = _max_pool if pool_mode == "max" else _avg_pool
    return pool(x, _spatial(pool_size, fmt), _spatial(strides, fmt), padding.upper(), data_format=fmt)
