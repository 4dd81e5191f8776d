"""tf.train.Optimizer: TF1's optimizer base (compute_gradients / apply_gradients / minimize, slots)."""
from __future__ import annotations

from typing import Optional

from tensorweave.framework import api, dtypes
from tensorweave.framework.api import GraphKeys
from tensorweave.framework.distribution_context import current_entry
from tensorweave.framework.graph import Operation, Tensor, get_default_graph
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.indexed_slices import IndexedSlices
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.core import shape
from tensorweave.ops.array.sort import unique
from tensorweave.ops.grouping import group, tuple as tuple_
from tensorweave.ops.gradients.gradients import gradients
from tensorweave.ops.math.cast import cast
from tensorweave.ops.math.segment import unsorted_segment_sum
from tensorweave.ops.state.variable_ops import assign_add_variable_op
from tensorweave.ops.state.variables import Variable
import tensorweave.train.slot_creator as slot_creator


def _var_key(var):
    # a copy of a mirrored variable shares its slots' key with the mirrored variable (TF's rule)
    var = getattr(var, "_distributed_container", var)
    return (var.graph, var.primary.op.name) if hasattr(var, "primary") else (var.op.graph, var.op.name)


def _train_op(graph, apply_updates):
    """apply_updates as an op, in the graph's TRAIN_OP collection once."""
    op = apply_updates.op if isinstance(apply_updates, Tensor) else apply_updates
    train_ops = graph.get_collection_ref(GraphKeys.TRAIN_OP)
    if op not in train_ops:
        train_ops.append(op)
    return op


def _is_variable(v) -> bool:
    return not isinstance(v, Tensor) and getattr(v, "_is_resource_variable", False)


def _flatten(x) -> list:
    if isinstance(x, (list, tuple)):
        return [y for item in x for y in _flatten(item)]
    if isinstance(x, dict):
        return [y for k in sorted(x) for y in _flatten(x[k])]
    return [x]


def cast_to(t, dtype):
    """`t` as a tensor of `dtype` (a no-op when it already is)."""
    t = convert_to_tensor(t)
    if t.dtype.base_dtype == dtype.base_dtype:
        return t
    return cast(t, dtype.base_dtype)


def deduplicate_indexed_slices(values, indices):
    """(summed values, unique indices): rows of repeated indices summed (graph ops)."""
    unique_indices, positions = unique(indices)
    summed = unsorted_segment_sum(values, positions, shape(unique_indices)[0])
    return summed, unique_indices


@tf_export("train.Optimizer")
class Optimizer:
    """Base class of TF1 optimizers. Subclasses implement `_create_slots`, `_prepare`,
    `_resource_apply_dense` and `_resource_apply_sparse` (and may override `_finish`)."""

    GATE_NONE = 0
    GATE_OP = 1
    GATE_GRAPH = 2

    def __init__(self, use_locking: bool, name: str):
        if not name:
            raise ValueError("Must specify the optimizer name")
        self._use_locking = use_locking
        self._name = name
        self._slots: dict = {}
        self._non_slot_dict: dict = {}

    def get_name(self) -> str:
        return self._name

    # -- the public API -------------------------------------------------------------------------
    def minimize(self, loss, global_step=None, var_list=None, gate_gradients=GATE_OP, aggregation_method=None,
                 colocate_gradients_with_ops: bool = False, name: Optional[str] = None, grad_loss=None):
        """Adds ops that compute the gradients of `loss` and apply them; increments global_step.
        Returns the train op."""
        grads_and_vars = self.compute_gradients(
            loss, var_list=var_list, gate_gradients=gate_gradients, aggregation_method=aggregation_method,
            colocate_gradients_with_ops=colocate_gradients_with_ops, grad_loss=grad_loss)
        vars_with_grad = [v for g, v in grads_and_vars if g is not None]
        if not vars_with_grad:
            raise ValueError(
                "No gradients provided for any variable, check your graph for ops that do not support "
                f"gradients, between variables {[str(v) for _, v in grads_and_vars]} and loss {loss}.")
        return self.apply_gradients(grads_and_vars, global_step=global_step, name=name)

    def compute_gradients(self, loss, var_list=None, gate_gradients=GATE_OP, aggregation_method=None,
                          colocate_gradients_with_ops: bool = False, grad_loss=None) -> list:
        """[(gradient or None, variable)] of `loss` for each trainable variable (or var_list)."""
        if callable(loss):
            raise RuntimeError("`loss` passed to Optimizer.compute_gradients should be a tensor in graph "
                               "mode (callables need eager execution).")
        if gate_gradients not in (Optimizer.GATE_NONE, Optimizer.GATE_OP, Optimizer.GATE_GRAPH):
            raise ValueError("gate_gradients must be one of: Optimizer.GATE_NONE, Optimizer.GATE_OP, "
                             f"Optimizer.GATE_GRAPH.  Not {gate_gradients}")
        loss = self._scale_loss(convert_to_tensor(loss))
        self._assert_valid_dtypes([loss])
        if grad_loss is not None:
            grad_loss = convert_to_tensor(grad_loss)
            self._assert_valid_dtypes([grad_loss])
        g = loss.graph
        if var_list is None:
            var_list = (g.get_collection(GraphKeys.TRAINABLE_VARIABLES)
                        + [v for v in g.get_collection(GraphKeys.TRAINABLE_RESOURCE_VARIABLES)
                           if v not in g.get_collection(GraphKeys.TRAINABLE_VARIABLES)])
        else:
            var_list = _flatten(var_list)
        for v in var_list:
            # TF1 differentiates w.r.t. plain Tensors too; only apply_gradients refuses them
            if not (_is_variable(v) or isinstance(v, Tensor)):
                raise NotImplementedError("Trying to optimize unsupported type ", v)
        if not var_list:
            raise ValueError("No variables to optimize.")
        with g.as_default():
            grads = gradients(loss, [v.handle if _is_variable(v) else v for v in var_list], grad_ys=grad_loss,
                              gate_gradients=(gate_gradients == Optimizer.GATE_OP),
                              aggregation_method=aggregation_method,
                              colocate_gradients_with_ops=colocate_gradients_with_ops)
            if gate_gradients == Optimizer.GATE_GRAPH:
                grads = tuple_(grads)
        grads_and_vars = list(zip(grads, var_list))
        self._assert_valid_dtypes([v for gr, v in grads_and_vars if gr is not None])
        return grads_and_vars

    @staticmethod
    def _scale_loss(loss):
        """In a replica of an Estimator's strategy with N > 1 replicas and a mean loss
        (tf.distribute.get_loss_reduction), the loss divided by N: the summed gradients of the
        replicas are then the mean's. Elsewhere the replicas' gradients are summed, as in TF."""
        entry = current_entry(loss.graph)
        if entry is None or entry[1] is None or entry[1].num_replicas_in_sync == 1 \
                or not getattr(entry[0], "_scale_loss_for_estimator", False):
            return loss
        if getattr(loss.graph, "_last_loss_reduction", None) in ("weighted_sum", "sum"):
            return loss
        return loss * convert_to_tensor(1.0 / entry[1].num_replicas_in_sync, dtype=loss.dtype.base_dtype)

    def apply_gradients(self, grads_and_vars, global_step=None, name: Optional[str] = None):
        """Adds the update ops for `grads_and_vars` (then global_step += 1); returns the train op.
        In a replica of a tf.distribute strategy the gradients of all replicas are summed first
        and every copy of each variable gets the same update."""
        grads_and_vars = tuple(grads_and_vars)
        if not grads_and_vars:
            raise ValueError("No variables provided.")
        entry = current_entry()
        if entry is not None and entry[1] is not None:
            return entry[1].merge_call(self._distributed_apply, args=(grads_and_vars, global_step, name))
        converted = []
        for g, v in grads_and_vars:
            if g is not None:
                if not isinstance(g, IndexedSlices):
                    try:
                        g = convert_to_tensor(g)
                    except (TypeError, ValueError):
                        raise TypeError(f"Gradient must be convertible to a Tensor or IndexedSlices, or None: "
                                        f"{g}") from None
                if not isinstance(g, (Tensor, IndexedSlices)):
                    raise TypeError(f"Gradient must be a Tensor, IndexedSlices, or None: {g}")
            if not _is_variable(v):
                raise NotImplementedError("Trying to update a Tensor ", v)
            converted.append((g, v))
        var_list = [v for g, v in converted if g is not None]
        if not var_list:
            raise ValueError(f"No gradients provided for any variable: {[str(v) for _, v in converted]}.")
        graph = var_list[0].graph
        with graph.as_default():
            with graph.control_dependencies(None):
                self._create_slots(var_list)
            update_ops = []
            with api.name_scope(name, self._name) as scope:
                self._prepare()
                for grad, var in converted:
                    if grad is None:
                        continue
                    with api.name_scope("update_" + var.op.name), api.colocate_with(var):
                        update_ops.append(self._update_op(grad, var))
                if global_step is None:
                    apply_updates = self._finish(update_ops, scope)
                else:
                    with graph.control_dependencies([self._finish(update_ops, "update")]):
                        with api.colocate_with(global_step):
                            one = convert_to_tensor(1, dtype=global_step.dtype)
                            apply_updates = assign_add_variable_op(global_step.handle, one,
                                                                            name=scope)
            return _train_op(graph, apply_updates)

    def _distributed_apply(self, strategy, grads_and_vars, global_step=None, name=None):
        """apply_gradients in cross-replica context: gradients summed over replicas (a PerReplica
        per variable), then strategy.extended.update on each copy of each variable."""
        grads_and_vars = [(g, v) for g, v in grads_and_vars if g is not None]
        if not grads_and_vars:
            raise ValueError("No gradients provided for any variable.")
        reduced = strategy.extended.batch_reduce_to("SUM", grads_and_vars)
        var_list = [v for _, v in grads_and_vars]
        graph = get_default_graph()
        with graph.control_dependencies(None):
            self._create_slots(var_list)
        update_ops = []
        with api.name_scope(name, self._name) as scope:
            self._prepare()
            for grad, var in zip(reduced, var_list):
                with api.name_scope("update_" + var.op.name):
                    update_ops.extend(strategy.extended.update(
                        var, lambda v, g: self._update_op(g, v), args=(grad,), group=False))
            finish = self._finish(update_ops, "update")
            if global_step is None:
                apply_updates = group(finish, name=scope)
            else:
                with graph.control_dependencies([finish]):
                    # a mirrored global step (a Keras TFOptimizer's iterations): the train op is the first copy's
                    apply_updates = strategy.extended.update(
                        global_step, lambda v: assign_add_variable_op(
                            v.handle, convert_to_tensor(1, dtype=v.dtype),
                            name=None if getattr(v, "_replica_index", None) else scope))
        return _train_op(graph, apply_updates)

    def _update_op(self, grad, var):
        if isinstance(grad, IndexedSlices):
            if var.constraint is not None:
                raise RuntimeError("Cannot use a constraint function on a sparse variable.")
            return self._resource_apply_sparse_duplicate_indices(grad.values, var, grad.indices)
        op = self._resource_apply_dense(grad, var)
        if var.constraint is not None:
            with get_default_graph().control_dependencies([op]):
                return var.assign(var.constraint(var))
        return op

    def get_slot(self, var, name: str):
        """The slot variable `name` ("m", "momentum", ...) created for `var`, or None."""
        named = self._slots.get(name)
        if not named:
            return None
        slot = named.get(_var_key(var))
        index = getattr(var, "_replica_index", None)
        if index is not None and hasattr(slot, "primary"):
            return slot.values[index]   # the copy of a mirrored slot beside this copy of the variable
        return slot

    def get_slot_names(self) -> list:
        return sorted(self._slots)

    def variables(self) -> list:
        """Every variable this optimizer created in the current graph (slots, beta powers), by name."""
        g = get_default_graph()
        out = [v for v in self._non_slot_dict.values() if v.op.graph is g]
        for named in self._slots.values():
            out.extend(v for v in named.values() if v.op.graph is g)
        return sorted(out, key=lambda v: v.name)

    # -- helpers for subclasses ---------------------------------------------------------------------
    @staticmethod
    def _call_if_callable(param):
        return param() if callable(param) else param

    def _assert_valid_dtypes(self, tensors) -> None:
        valid = self._valid_dtypes()
        for t in tensors:
            dtype = t.dtype.base_dtype
            if dtype not in valid:
                expected = ", ".join(repr(d) for d in sorted(valid, key=lambda d: d.name))
                raise ValueError(f"Invalid type {dtype!r} for {t.name}, expected: [{expected}].")

    def _valid_dtypes(self) -> set:
        return {dtypes.float16, dtypes.float32, dtypes.float64}

    def _create_slots(self, var_list) -> None:
        pass

    def _prepare(self) -> None:
        pass

    # TF1 subclasses written for ref variables implement _apply_dense/_apply_sparse(grad, var);
    # every tensorweave variable is a resource, so the resource hooks fall back to them.
    def _overrides(self, method: str) -> bool:
        return getattr(type(self), method) is not getattr(Optimizer, method)

    def _apply_dense(self, grad, var):
        raise NotImplementedError()

    def _apply_sparse(self, grad, var):
        raise NotImplementedError()

    def _apply_sparse_duplicate_indices(self, grad, var):
        summed, unique = deduplicate_indexed_slices(grad.values, grad.indices)
        return self._apply_sparse(IndexedSlices(summed, unique, grad.dense_shape), var)

    def _resource_apply_dense(self, grad, handle):
        if self._overrides("_apply_dense"):
            return self._apply_dense(grad, handle)
        raise NotImplementedError()

    def _resource_apply_sparse_duplicate_indices(self, grad, handle, indices):
        if not self._overrides("_resource_apply_sparse") and (
                self._overrides("_apply_sparse") or self._overrides("_apply_sparse_duplicate_indices")):
            dense_shape = shape(convert_to_tensor(handle)) if not handle.get_shape().is_fully_defined() \
                else convert_to_tensor(handle.get_shape().as_list(), dtype=dtypes.int32)
            return self._apply_sparse_duplicate_indices(IndexedSlices(grad, indices, dense_shape), handle)
        summed, unique = deduplicate_indexed_slices(grad, indices)
        return self._resource_apply_sparse(summed, handle, unique)

    def _resource_apply_sparse(self, grad, handle, indices):
        raise NotImplementedError()

    def _finish(self, update_ops: list, name_scope: str) -> Operation:
        return group(*update_ops, name=name_scope)

    def _slot_dict(self, slot_name: str) -> dict:
        return self._slots.setdefault(slot_name, {})

    def _get_or_make_slot(self, var, val, slot_name: str, op_name: str):
        named = self._slot_dict(slot_name)
        if _var_key(var) not in named:
            named[_var_key(var)] = slot_creator.create_slot(var, val, op_name)
        return named[_var_key(var)]

    def _get_or_make_slot_with_initializer(self, var, initializer, shape, dtype, slot_name: str, op_name: str):
        named = self._slot_dict(slot_name)
        if _var_key(var) not in named:
            named[_var_key(var)] = slot_creator.create_slot_with_initializer(var, initializer, shape, dtype,
                                                                             op_name)
        return named[_var_key(var)]

    def _get_or_make_constant_slot(self, var, value: float, slot_name: str, op_name: str):
        named = self._slot_dict(slot_name)
        if _var_key(var) not in named:
            named[_var_key(var)] = slot_creator.create_constant_slot(var, value, op_name)
        return named[_var_key(var)]

    def _zeros_slot(self, var, slot_name: str, op_name: str):
        named = self._slot_dict(slot_name)
        if _var_key(var) not in named:
            named[_var_key(var)] = slot_creator.create_zeros_slot(var, op_name)
        return named[_var_key(var)]

    def _create_non_slot_variable(self, initial_value, name: str, colocate_with):
        graph = colocate_with.graph
        key = (name, graph)
        v = self._non_slot_dict.get(key)
        if v is None:
            with graph.as_default(), graph.colocate_with(colocate_with.op):
                v = Variable(initial_value, name=name, trainable=False)
            self._non_slot_dict[key] = v
        return v

    def _get_non_slot_variable(self, name: str, graph=None):
        return self._non_slot_dict.get((name, graph or get_default_graph()))

    def _non_slot_variables(self):
        return self._non_slot_dict.values()


class WrappingOptimizer(Optimizer):
    """An optimizer that applies another's updates in its own way (SyncReplicasOptimizer,
    BoundedStalenessOptimizer): its gradients, slots and variables are the wrapped one's."""

    def __init__(self, opt: Optimizer, use_locking: bool, name: str):
        super().__init__(use_locking, name)
        self._opt = opt

    def compute_gradients(self, *args, **kwargs):
        """The wrapped optimizer's compute_gradients."""
        return self._opt.compute_gradients(*args, **kwargs)

    def get_slot(self, *args, **kwargs):
        return self._opt.get_slot(*args, **kwargs)

    def get_slot_names(self, *args, **kwargs) -> list:
        return self._opt.get_slot_names(*args, **kwargs)

    def variables(self) -> list:
        return self._opt.variables()
