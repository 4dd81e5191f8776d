"""tf.train.Scaffold: the ops a MonitoredSession needs to make a model ready (init_op,
ready_op, ready_for_local_init_op, local_init_op, init_fn), to save it (saver) and to
summarise it (summary_op); `finalize()` builds the missing ones from the graph's collections
and finalizes the graph."""
from __future__ import annotations

import logging

from tensorweave.framework.api import GraphKeys
from tensorweave.framework.graph import get_default_graph
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.grouping import group
from tensorweave.ops.lookup.tables import tables_initializer
from tensorweave.ops.state.variables import (global_variables, global_variables_initializer,
                                             local_variables_initializer, report_uninitialized_variables)
from tensorweave.summary.summary import merge_all
from tensorweave.train.saver import Saver


_log = logging.getLogger("tensorweave")


def default_saver() -> Saver:
    """The graph's one Saver (SAVERS collection), or a new sharded one added to it: each ps
    task then writes its own shard of every checkpoint."""
    g = get_default_graph()
    savers = g.get_collection(GraphKeys.SAVERS)
    if savers:
        if len(savers) > 1:
            raise RuntimeError(f"More than one item in collection {GraphKeys.SAVERS}. Please indicate which one to "
                               "use by passing it to the constructor.")
        return savers[0]
    saver = Saver(sharded=True, allow_empty=True)
    g.add_to_collection(GraphKeys.SAVERS, saver)
    return saver


@tf_export("train.Scaffold")
class Scaffold:
    """tf.train.Scaffold(init_op=None, init_feed_dict=None, init_fn=None, ready_op=None,
    ready_for_local_init_op=None, local_init_op=None, summary_op=None, saver=None,
    copy_from_scaffold=None, local_init_feed_dict=None).

    init_fn is called as init_fn(scaffold, session) after init_op. Ops not given are taken from
    the graph's collections (INIT_OP, READY_OP, ...) or built: init_op initialises the global
    variables, ready_op reports every uninitialised variable, ready_for_local_init_op the
    uninitialised global ones, local_init_op initialises the local variables, summary_op merges
    the SUMMARIES collection and saver is the graph's Saver (a sharded one by default)."""

    def __init__(self, init_op=None, init_feed_dict=None, init_fn=None, ready_op=None, ready_for_local_init_op=None,
                 local_init_op=None, summary_op=None, saver=None, copy_from_scaffold=None,
                 local_init_feed_dict=None):
        if copy_from_scaffold is not None:
            if not isinstance(copy_from_scaffold, Scaffold):
                raise TypeError("copy_from_scaffold is not a Scaffold instance.")

            def coalesce(a, b):
                return a if a is not None else b
            init_op = coalesce(init_op, copy_from_scaffold.init_op)
            init_feed_dict = coalesce(init_feed_dict, copy_from_scaffold.init_feed_dict)
            init_fn = coalesce(init_fn, copy_from_scaffold._user_init_fn)
            ready_op = coalesce(ready_op, copy_from_scaffold.ready_op)
            ready_for_local_init_op = coalesce(ready_for_local_init_op, copy_from_scaffold.ready_for_local_init_op)
            local_init_op = coalesce(local_init_op, copy_from_scaffold.local_init_op)
            local_init_feed_dict = coalesce(local_init_feed_dict, copy_from_scaffold.local_init_feed_dict)
            summary_op = coalesce(summary_op, copy_from_scaffold.summary_op)
            saver = coalesce(saver, copy_from_scaffold.saver)
        self._user_init_fn = init_fn
        self._init_fn = (lambda sess: init_fn(self, sess)) if init_fn else None
        self._init_op = init_op
        self._init_feed_dict = init_feed_dict
        self._ready_op = ready_op
        self._ready_for_local_init_op = ready_for_local_init_op
        self._local_init_op = local_init_op
        self._local_init_feed_dict = local_init_feed_dict
        self._summary_op = summary_op
        self._saver = saver

    def finalize(self) -> "Scaffold":
        """Builds the ops not given (from collections, or defaults) and finalizes the graph."""
        if self._init_op is None:
            self._init_op = Scaffold.get_or_default("init_op", GraphKeys.INIT_OP, global_variables_initializer)
        if self._ready_op is None:
            self._ready_op = Scaffold.get_or_default("ready_op", GraphKeys.READY_OP, report_uninitialized_variables)
        if self._ready_for_local_init_op is None:
            self._ready_for_local_init_op = Scaffold.get_or_default(
                "ready_for_local_init_op", GraphKeys.READY_FOR_LOCAL_INIT_OP,
                lambda: report_uninitialized_variables(global_variables()))
        if self._local_init_op is None:
            self._local_init_op = Scaffold.get_or_default("local_init_op", GraphKeys.LOCAL_INIT_OP,
                                                          Scaffold.default_local_init_op)
        if self._summary_op is None:
            self._summary_op = Scaffold.get_or_default("summary_op", GraphKeys.SUMMARY_OP, merge_all)
        if self._saver is None:
            self._saver = default_saver()
        self._saver.build()
        get_default_graph().finalize()
        _log.info("Graph was finalized.")
        return self

    init_fn = property(lambda self: self._init_fn)
    init_op = property(lambda self: self._init_op)
    ready_op = property(lambda self: self._ready_op)
    ready_for_local_init_op = property(lambda self: self._ready_for_local_init_op)
    local_init_op = property(lambda self: self._local_init_op)
    local_init_feed_dict = property(lambda self: self._local_init_feed_dict)
    summary_op = property(lambda self: self._summary_op)
    saver = property(lambda self: self._saver)
    init_feed_dict = property(lambda self: self._init_feed_dict)

    @staticmethod
    def get_or_default(arg_name: str, collection_key: str, default_constructor):
        """The one op in collection_key, or a new one from default_constructor (added to it)."""
        elements = get_default_graph().get_collection(collection_key)
        if elements:
            if len(elements) > 1:
                raise RuntimeError(f'More than one item in the collection "{collection_key}". Please indicate which '
                                   f"one to use by passing it to the tf.Scaffold constructor as:  "
                                   f"tf.Scaffold({arg_name}=item to use)")
            return elements[0]
        op = default_constructor()
        if op is not None:
            get_default_graph().add_to_collection(collection_key, op)
        return op

    @staticmethod
    def default_local_init_op():
        """The default local_init_op: initialises the local variables and the lookup tables (so a
        vocabulary feature column works under MonitoredSession, as in TF)."""
        return group(local_variables_initializer(), tables_initializer())
