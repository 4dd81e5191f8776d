"""The distribution-strategy context stack of each thread and graph (TF's
`graph._distribution_strategy_stack`): which strategy's `scope()` or replica function is active.

Plain bookkeeping below every layer, so optimizers (train/) can ask "am I in a replica of a
strategy?" without importing tf.distribute; the strategies themselves live in
`tensorweave/distribute/`.
"""
from __future__ import annotations

import threading

from tensorweave.framework.graph import get_default_graph


class _Stacks(threading.local):
    def __init__(self):
        self.by_graph: dict = {}


_stacks = _Stacks()


def context_stack(graph=None) -> list:
    """This thread's stack of (strategy, replica_context or None) entries for `graph` (a function
    body's, e.g. a tf.cond branch's, is its outer graph's, as TF's FuncGraph inherits it)."""
    graph = graph or get_default_graph()
    while getattr(graph, "outer_graph", None) is not None:
        graph = graph.outer_graph
    return _stacks.by_graph.setdefault(id(graph), [])


def current_entry(graph=None):
    """The innermost (strategy, replica_context) entry, or None outside every strategy."""
    stack = context_stack(graph)
    return stack[-1] if stack else None
