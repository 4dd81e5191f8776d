"""TF 1 while loops (frames of Enter, Merge, Switch, LoopCond, NextIteration, Exit, as
tf.while_loop wrote them before TF 2's While op) folded into one loop node, so the executor, the
placer and the partitioner see a graph without cycles.

Each outermost frame of a GraphDef becomes one functional `While` node named after the frame
(run by ops/control_flow/while_loop.py's kernel, as tf.while_loop's) with two functions added to
the library, over the frame's nodes without its Enter, loop Merge, NextIteration and Exit nodes:
  cond  inputs: the loop Merges' values and the constant Enters' values; output: LoopCond's;
  body  the same inputs and LoopCond's (fed true, so each Switch forwards to the body and its
        other output is dead); outputs: the NextIteration inputs, the next iteration's values.
Each Exit becomes an Identity of its loop output on the loop's task, keeping its name for its
consumers; a RefEnter of a variable becomes that variable's node again inside the functions. A
frame nested in a body is folded when that body is (its nodes are the body's). The loop runs on
the task of its first Enter.
"""
from __future__ import annotations

import hashlib

import numpy as np

from tensorweave.framework import errors
from tensorweave.framework.graph_def import FunctionDef, GraphDef, NodeDef, parse_input, tensor_key


_ENTERS = ("Enter", "RefEnter")
_VARIABLES = ("VariableV2", "Variable")


def fold_tf1_loops(gd: GraphDef) -> GraphDef:
    """`gd` with its TF 1 while loops folded (itself when it holds none)."""
    if not any(n.op in _ENTERS for n in gd.node):
        return gd
    library = dict(gd.library)
    return GraphDef(_fold(list(gd.node), library), library, gd.versions)


def _fold(nodes: list, library: dict) -> list:
    frames = _frames(nodes)
    for frame, (members, enters) in frames.items():
        if not any(g != frame and members < other for g, (other, _) in frames.items()):   # outermost
            nodes = _fold_frame(nodes, frame, members, enters, library)
    return nodes


def _frames(nodes: list) -> dict:
    """{frame name: (its member node names, its Enter nodes)}: the nodes reachable from the frame's
    Enters through data and control edges, up to and including its own Exits (the Exits of a
    frame nested in it are members, and so is what follows them)."""
    by_name = {n.name: n for n in nodes}
    readers: dict = {}
    for n in nodes:
        for inp in n.input:
            readers.setdefault(parse_input(inp)[0], []).append(n)
    enters: dict = {}
    for n in nodes:
        if n.op in _ENTERS:
            enters.setdefault(n.attr.get("frame_name"), []).append(n)
    frames = {}
    for frame, frame_enters in enters.items():
        members = {e.name for e in frame_enters}
        stack = list(frame_enters)
        while stack:
            node = stack.pop()
            if node.op == "Exit" and _exit_frame(node, by_name) == frame:
                continue
            for reader in readers.get(node.name, ()):
                if reader.name not in members:
                    members.add(reader.name)
                    stack.append(reader)
        frames[frame] = (members, frame_enters)
    return frames


def _exit_frame(exit_node: NodeDef, by_name: dict):
    """The frame an Exit leaves: that of the Enter feeding the Merge its Switch reads."""
    switch = by_name.get(parse_input(exit_node.input[0])[0]) if exit_node.input else None
    merge = by_name.get(parse_input(switch.input[0])[0]) if switch is not None and switch.input else None
    for inp in merge.input if merge is not None else ():
        enter = by_name.get(parse_input(inp)[0])
        if enter is not None and enter.op in _ENTERS:
            return enter.attr.get("frame_name")
    return None


def _fold_frame(nodes: list, frame: str, members: set, enters: list, library: dict) -> list:
    by_name = {n.name: n for n in nodes}
    loop_enters = [e for e in enters if not e.attr.get("is_constant")]
    const_enters = [e for e in enters if e.attr.get("is_constant") and e.op == "Enter"]
    # a variable the body updates (RefEnter of a VariableV2): inside, the same variable again
    variables = [_same_variable(e, by_name.get(parse_input(e.input[0])[0]), frame)
                 for e in enters if e.op == "RefEnter"]
    loop_enter_names = {e.name for e in loop_enters}
    merges, next_iterations = [], []
    for e in loop_enters:
        merge = next((n for n in nodes if n.op == "Merge" and n.name in members
                      and any(parse_input(i)[0] == e.name for i in n.input)), None)
        if merge is None:
            raise errors.InvalidArgumentError(None, e.name, f"TF 1 while loop {frame}: Enter {e.name} feeds no Merge")
        back = [by_name[parse_input(i)[0]] for i in merge.input if parse_input(i)[0] not in loop_enter_names]
        if len(back) != 1 or back[0].op != "NextIteration":
            raise errors.InvalidArgumentError(None, merge.name, f"TF 1 while loop {frame}: Merge {merge.name} has no "
                                                                "NextIteration input")
        merges.append(merge)
        next_iterations.append(back[0])
    exits = [n for n in nodes if n.op == "Exit" and n.name in members and _exit_frame(n, by_name) == frame]
    # the frame's LoopCond: what its loop variables' Switches take as their predicate
    loop_conds = {by_name[parse_input(n.input[1])[0]].name for n in nodes
                  if n.op == "Switch" and n.name in members and merges and parse_input(n.input[0])[0] == merges[0].name}
    if len(loop_conds) != 1 or by_name[next(iter(loop_conds))].op != "LoopCond":
        raise errors.InvalidArgumentError(None, frame, f"TF 1 while loop {frame}: its first loop variable's Switch "
                                                       "reads no LoopCond")
    loop_cond = by_name[loop_conds.pop()]
    removed = {n.name for n in enters + merges + next_iterations + exits}
    # (a control input from a removed node, a cond's Const reading its Merge, goes with it)
    def kept(inp: str) -> bool:
        return not inp.startswith("^") or inp[1:] not in removed

    inner = [n if all(map(kept, n.input)) else NodeDef(n.name, n.op, tuple(filter(kept, n.input)), n.device, n.attr)
             for n in nodes if n.name in members and n.name not in removed] + variables
    inner = _fold(inner, library)             # frames nested in this one
    inputs = tuple(f"{m.name}:0" for m in merges) + tuple(f"{e.name}:0" for e in const_enters)
    digest = hashlib.sha1(repr([(n.name, n.op, n.input) for n in inner]).encode()).hexdigest()[:12]
    cond_name, body_name = f"{frame}/cond_{digest}", f"{frame}/body_{digest}"
    library[cond_name] = FunctionDef(cond_name, inputs, (f"{loop_cond.name}:0",), tuple(inner))
    library[body_name] = FunctionDef(body_name, inputs + (f"{loop_cond.name}:0",),
                                     tuple(tensor_key(n.input[0]) for n in next_iterations), tuple(inner))
    var_of_switch = {}
    for i, merge in enumerate(merges):
        for n in inner:
            if n.op == "Switch" and parse_input(n.input[0])[0] == merge.name:
                var_of_switch[n.name] = i
    # an ordinary While (ops/control_flow/while_loop.py): the constant Enters are the captures of
    # both functions, and the body's last capture is LoopCond's value, true
    device = enters[0].device
    true = NodeDef(f"{frame}/loop_cond_true", "Const", (), device,
                   {"value": np.array(True), "dtype": "bool", "_num_outputs": 1})
    captures = tuple(e.input[0] for e in const_enters)
    waits = tuple(dict.fromkeys(i for e in enters for i in e.input[1:] if i.startswith("^")))   # Enters' control inputs
    loop = NodeDef(frame, "While", tuple(e.input[0] for e in loop_enters) + captures + captures + (true.name,) + waits,
                   device, {"cond": cond_name, "body": body_name, "T": [e.attr.get("T") for e in loop_enters],
                            "num_cond_captures": len(captures), "num_body_captures": len(captures) + 1,
                            "has_maximum_iterations": False, "_num_outputs": len(merges)})
    folded = [true, loop]
    for n in nodes:
        if n in exits:
            switch = parse_input(n.input[0])[0]
            if switch not in var_of_switch:
                raise errors.InvalidArgumentError(None, n.name, f"TF 1 while loop {frame}: Exit {n.name} does not "
                                                                "read a loop variable's Switch")
            folded.append(NodeDef(n.name, "Identity", (f"{frame}:{var_of_switch[switch]}",), device,
                                  {"T": n.attr.get("T"), "_num_outputs": 1}))
        elif n.name not in members:
            folded.append(n)
    return folded


def _same_variable(enter: NodeDef, source, frame: str) -> NodeDef:
    """The node a RefEnter becomes inside its loop's functions: its variable's VariableV2 again,
    under the RefEnter's name, finding the same (container, shared_name)."""
    if enter.attr.get("is_constant") and source is not None and source.op in _VARIABLES:
        attr = dict(source.attr, shared_name=source.attr.get("shared_name") or source.name)
        return NodeDef(enter.name, source.op, (), source.device, attr)
    raise errors.UnimplementedError(None, enter.name, f"TF 1 while loop {frame}: {enter.name} passes a reference "
                                    "that is not a variable, or as a loop variable, which tensorweave does not run")
