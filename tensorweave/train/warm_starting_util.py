"""tf.train.warm_start: initialise some of a new model's variables from another model's checkpoint
(what Estimator's warm_start_from does), through init_from_checkpoint's initializers."""
from __future__ import annotations

import logging

from tensorweave.framework.api import GraphKeys
from tensorweave.framework.graph import get_default_graph
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.state.variables import Variable
from tensorweave.train.checkpoint_utils import init_from_checkpoint

_log = logging.getLogger("tensorweave")


def _variables_to_warm_start(vars_to_warm_start) -> list:
    """TF's reading of vars_to_warm_start: a regex over the trainable variables, a list of regexes
    over the global variables, a list of Variables, or None (none)."""
    graph = get_default_graph()
    if isinstance(vars_to_warm_start, str):
        return graph.get_collection(GraphKeys.TRAINABLE_VARIABLES, scope=vars_to_warm_start)
    if vars_to_warm_start is None:
        return []
    if isinstance(vars_to_warm_start, (list, tuple)):
        if all(isinstance(v, str) for v in vars_to_warm_start):
            found = []
            for pattern in vars_to_warm_start:
                found += [v for v in graph.get_collection(GraphKeys.GLOBAL_VARIABLES, scope=pattern)
                          if v not in found]
            return found
        if all(isinstance(v, Variable) for v in vars_to_warm_start):
            return list(vars_to_warm_start)
    raise ValueError("vars_to_warm_start must be a `list` of only strings or only Variables, a string, or None; "
                     f"got {vars_to_warm_start!r}.")


@tf_export("train.warm_start")
def warm_start(ckpt_to_initialize_from, vars_to_warm_start=".*", var_name_to_vocab_info=None,
               var_name_to_prev_var_name=None) -> None:
    """tf.train.warm_start(ckpt_to_initialize_from, vars_to_warm_start='.*',
    var_name_to_vocab_info=None, var_name_to_prev_var_name=None): makes the chosen variables
    initialise from the checkpoint (a file prefix or a directory's latest), each from the tensor
    of its own name or of var_name_to_prev_var_name[name]. Vocabulary remapping
    (var_name_to_vocab_info) is not supported."""
    if var_name_to_vocab_info:
        raise ValueError("warm_start: var_name_to_vocab_info (vocabulary remapping) is not supported by tensorweave; "
                         f"got it for {sorted(var_name_to_vocab_info)}.")
    prev_names = dict(var_name_to_prev_var_name or {})
    grouped: dict = {}
    for v in _variables_to_warm_start(vars_to_warm_start):
        info = v._get_save_slice_info()
        grouped.setdefault(info.full_name if info is not None else v.op.name, []).append(v)
    used = set()
    for name, parts in sorted(grouped.items()):
        prev = prev_names.get(name, name)
        used.add(name)
        _log.info("Warm-starting variable: %s; prev_var_name: %s", name, prev)
        init_from_checkpoint(ckpt_to_initialize_from, {prev: parts if len(parts) > 1 or
                                                       parts[0]._get_save_slice_info() else parts[0]})
    unused = set(prev_names) - used
    if unused:
        raise ValueError(f"You provided the following variables in var_name_to_prev_var_name that were not used: "
                         f"{sorted(unused)}.  Perhaps you misspelled them?  Here is the list of viable variable "
                         f"names: {sorted(grouped)}")
