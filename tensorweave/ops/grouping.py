"""Grouping and ordering: tf.no_op, tf.group, tf.tuple, identity_n, with_dependencies (TF's
control_flow_ops' dependency helpers). A module of its own below the op families, since
control flow, debugging, state and gradients all group ops."""
from __future__ import annotations

from tensorweave.framework import nest
from tensorweave.framework.graph import Operation, Tensor, get_default_graph
from tensorweave.framework.tensor_conversion import convert_to_tensor, is_tensor
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.core import identity
from tensorweave.ops.registry import register, register_gpu


_builtin_tuple = tuple


@tf_export("no_op")
def no_op(name=None) -> Operation:
    """tf.no_op(name=None): an op that does nothing; useful as a control-dependency anchor."""
    return get_default_graph().create_op("NoOp", [], {}, name=name or "NoOp")


register("NoOp", lambda op: [], lambda node, ctx: (lambda: None), grad=None)
register_gpu("NoOp")


def _group_on_device(dev, deps, name=None) -> Operation:
    g = get_default_graph()
    with g.control_dependencies(deps):
        if dev is None:
            return no_op(name=name)
        with g.device(dev):
            return no_op(name=name)


@tf_export("group")
def group(*inputs, **kwargs) -> Operation:
    """tf.group(*inputs, name=None): an op that runs after all `inputs` (one NoOp per device,
    joined by a final NoOp, as TF does so that control edges stay on their device)."""
    name = kwargs.pop("name", None)
    if kwargs:
        raise TypeError("Unknown keyword arguments: " + ", ".join(kwargs.keys()))
    g = get_default_graph()
    with g.name_scope(name or "group_deps") as scope:
        if not inputs:
            return no_op(name=scope)
        by_device: dict = {}
        for inp in nest.flatten(list(inputs)):
            if not hasattr(inp, "device"):
                raise TypeError(f"Expected tf.group() expected Tensor arguments not '{inp}' with type "
                                f"'{type(inp)}'")
            by_device.setdefault(inp.device or None, []).append(inp)
        if len(by_device) == 1:
            (dev, deps), = by_device.items()
            return _group_on_device(dev, deps, name=scope)
        deps = [_group_on_device(dev, by_device[dev])
                for dev in sorted(by_device, key=lambda d: "" if d is None else d)]
        with g.control_dependencies(deps):
            return no_op(name=scope)


@tf_export("with_dependencies")
def with_dependencies(dependencies, output_tensor, name=None):
    """tf.control_flow_ops.with_dependencies: `output_tensor` (as an Identity) computed only
    after all `dependencies` have run."""
    g = get_default_graph()
    with g.name_scope(name or "control_dependency") as scope:
        if isinstance(output_tensor, Operation):
            with g.control_dependencies(list(dependencies) + [output_tensor]):
                return no_op(name=scope)
        output_tensor = convert_to_tensor(output_tensor)
        with g.colocate_with(output_tensor.op), g.control_dependencies(dependencies):
            return identity(output_tensor, name=scope)


@tf_export("tuple")
def tuple(tensors, name=None, control_inputs=None):
    """tf.tuple(tensors, name=None, control_inputs=None): the same tensors, each available only
    after all of them (and `control_inputs`) have been computed."""
    g = get_default_graph()
    with g.name_scope(name or "tuple"):
        tensors = [t if (isinstance(t, Operation) or is_tensor(t) or t is None) else convert_to_tensor(t)
                   for t in tensors]
        gating = [t if isinstance(t, Operation) else t.op for t in tensors if t is not None]
        for c in control_inputs or ():
            if isinstance(c, Tensor):
                c = c.op
            elif not isinstance(c, Operation):
                raise TypeError(f"Control input must be Operation or Tensor: {c}")
            gating.append(c)
        gating = sorted(set(gating), key=lambda op: op._id)
        if not gating:
            raise ValueError(f"Must have at least one Tensor: {tensors}")
        gate = group(*gating)
        out = []
        for t in tensors:
            if isinstance(t, Operation):
                with g.control_dependencies([gate]):
                    out.append(group(t))
            elif t is None:
                out.append(None)
            else:
                out.append(with_dependencies([gate], t))
        return out


@tf_export("identity_n")
def identity_n(input, name=None) -> list:
    """tf.identity_n(input, name=None): Identity of each tensor of a list, as one op."""
    ts = [convert_to_tensor(t) for t in input]
    return get_default_graph().create_op("IdentityN", ts, {"T": [t.dtype for t in ts]},
                                         name=name or "IdentityN").outputs


register("IdentityN", lambda op: [(t.dtype, t.shape) for t in op.inputs],
         lambda node, ctx: (lambda *xs: _builtin_tuple(xs)), grad=lambda op, *grads: list(grads))
register_gpu("IdentityN")
