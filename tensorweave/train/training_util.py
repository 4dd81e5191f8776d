"""The global step: an int64 scalar variable "global_step" in the GLOBAL_STEP collection."""
from __future__ import annotations

import logging

from tensorweave.framework import dtypes
from tensorweave.framework.api import GraphKeys
from tensorweave.framework.graph import Tensor, get_default_graph
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.state.initializers import zeros_initializer
from tensorweave.ops.state.variable_scope import get_variable


@tf_export("train.global_step")
def global_step(sess, global_step_tensor) -> int:
    """tf.train.global_step(sess, global_step_tensor): its current value as a Python int."""
    return int(sess.run(global_step_tensor))


def _by_name(graph):
    """The variable (or tensor) called 'global_step' when it is not in the collection."""
    for v in graph.get_collection(GraphKeys.GLOBAL_VARIABLES):
        if getattr(v, "op", None) is not None and v.op.name == "global_step":
            return v
    try:
        t = graph.get_tensor_by_name("global_step:0")
    except (KeyError, ValueError):
        return None
    return t


@tf_export("train.get_global_step", "contrib.framework.get_global_step", "contrib.slim.get_global_step")
def get_global_step(graph=None):
    """tf.train.get_global_step(graph=None): the global step variable, or None if there is none."""
    graph = graph or get_default_graph()
    found = graph.get_collection(GraphKeys.GLOBAL_STEP)
    if len(found) == 1:
        step = found[0]
    elif not found:
        step = _by_name(graph)
        if step is None:
            return None
    else:
        logging.getLogger("tensorweave").error("Multiple tensors in global_step collection.")
        return None
    assert_global_step(step)
    return step


@tf_export("train.create_global_step", "contrib.framework.create_global_step", "contrib.slim.create_global_step")
def create_global_step(graph=None):
    """tf.train.create_global_step(graph=None): makes the int64 scalar 'global_step' (value 0,
    not trainable, in GLOBAL_VARIABLES and GLOBAL_STEP); ValueError if one exists."""
    graph = graph or get_default_graph()
    if get_global_step(graph) is not None:
        raise ValueError('"global_step" already exists.')
    collections = [GraphKeys.GLOBAL_VARIABLES, GraphKeys.GLOBAL_STEP]
    with graph.as_default(), graph.name_scope(None):
        return get_variable(GraphKeys.GLOBAL_STEP, shape=[], dtype=dtypes.int64, initializer=zeros_initializer(),
                            trainable=False, collections=collections)


@tf_export("train.get_or_create_global_step", "contrib.framework.get_or_create_global_step",
           "contrib.slim.get_or_create_global_step")
def get_or_create_global_step(graph=None):
    """tf.train.get_or_create_global_step(graph=None)."""
    graph = graph or get_default_graph()
    step = get_global_step(graph)
    if step is None:
        step = create_global_step(graph)
    return step


@tf_export("train.assert_global_step", "contrib.framework.assert_global_step", "contrib.slim.assert_global_step")
def assert_global_step(global_step_tensor) -> None:
    """TypeError unless `global_step_tensor` is an integer scalar Variable or Tensor."""
    is_var = getattr(global_step_tensor, "_is_resource_variable", False)
    if not (is_var or isinstance(global_step_tensor, Tensor)):
        raise TypeError(f'Existing "global_step" must be a Variable or Tensor: {global_step_tensor}.')
    if not global_step_tensor.dtype.base_dtype.is_integer:
        raise TypeError(f'Existing "global_step" does not have integer type: {global_step_tensor.dtype}')
    shape = global_step_tensor.get_shape()
    if shape.ndims != 0 and shape.is_fully_defined():
        raise TypeError(f'Existing "global_step" is not scalar: {shape}')
