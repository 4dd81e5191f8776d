"""tf.contrib.compiler.jit: experimental_jit_scope, TF1's per-op say in XLA clustering. Here it
says which elementwise ops the plan's fusion (runtime/fusion.py) may put in one kernel."""
from __future__ import annotations

import contextlib

from tensorweave.framework.api import add_to_collection, executing_eagerly, get_collection
from tensorweave.framework.graph import get_default_graph
from tensorweave.framework.tf_export import tf_export

_XLA_SCOPE_KEY = ("__xla_scope",)   # TF's collection key: the graph's one scope counter


class _XlaScope:
    """How many jit scopes the graph has opened (each top-level one is its own cluster scope) and
    how deep the current one is nested."""

    def __init__(self, count: int, depth: int):
        self.count = count
        self.depth = depth


@tf_export("contrib.compiler.jit.experimental_jit_scope")
@contextlib.contextmanager
def experimental_jit_scope(compile_ops=True, separate_compiled_gradients=False):
    """tf.contrib.compiler.jit.experimental_jit_scope(compile_ops=True,
    separate_compiled_gradients=False): ops created inside get `_XlaCompile` = compile_ops (True:
    clustered even when ConfigProto's global_jit_level is OFF; False: never clustered) and, for
    the outermost scope, `_XlaScope` = "jit_scope_<n>": ops of different scopes never share a
    cluster. Here a cluster is a fused tree of elementwise ops (runtime/fusion.py). compile_ops
    may be a callable of an op's NodeDef returning a bool, as in TF: it is asked for each op
    created in the scope when the scope closes."""
    if executing_eagerly():
        raise RuntimeError("xla.experimental.jit_scope is not supported when eager execution is enabled. "
                           "Try use it inside tf.function.")
    decide = compile_ops if callable(compile_ops) else None
    attrs = {"_XlaSeparateCompiledGradients": bool(separate_compiled_gradients)}
    if decide is None:
        attrs["_XlaCompile"] = bool(compile_ops)
    counters = get_collection(_XLA_SCOPE_KEY)
    if counters:
        counter = counters[0]
    else:
        counter = _XlaScope(0, 0)
        add_to_collection(_XLA_SCOPE_KEY, counter)
    if counter.depth == 0:   # a nested scope clusters with its parent's
        attrs["_XlaScope"] = f"jit_scope_{counter.count}"
        counter.count += 1
    graph = get_default_graph()
    saved, first = graph._attr_scope, len(graph.get_operations())
    graph._attr_scope = {**saved, **attrs}
    counter.depth += 1
    try:
        yield
    finally:
        counter.depth -= 1
        graph._attr_scope = saved
    if decide is not None:
        for op in graph.get_operations()[first:]:
            op._set_attr("_XlaCompile", bool(decide(op.node_def)))
