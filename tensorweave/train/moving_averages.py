"""tf.train.ExponentialMovingAverage and assign_moving_average (TF1)."""
from __future__ import annotations

from tensorweave.framework import api, dtypes
from tensorweave.framework.api import GraphKeys
from tensorweave.framework.distribution_context import current_entry
from tensorweave.framework.graph import Tensor, get_default_graph
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.core import constant
from tensorweave.ops.array.fill import zeros
from tensorweave.ops.grouping import group
from tensorweave.ops.math.binary import add, minimum, multiply, pow, subtract, truediv
from tensorweave.ops.math.cast import cast
from tensorweave.ops.state.variables import Variable
import tensorweave.train.slot_creator as slot_creator


_FLOATS = (dtypes.float16, dtypes.float32, dtypes.float64)


def _is_variable(v) -> bool:
    return not isinstance(v, Tensor) and getattr(v, "_is_resource_variable", False)


def _debias_variables(unbiased_var):
    """The biased average and its step count that zero-debias `unbiased_var` (zeros)."""
    g = get_default_graph()
    base = unbiased_var.op.name
    with g.colocate_with(unbiased_var.op), g.name_scope(None), g.control_dependencies(None):
        shape = unbiased_var.get_shape().as_list()
        dt = unbiased_var.dtype.base_dtype
        biased = Variable(lambda: zeros(shape, dtype=dt), trainable=False, name=f"{base}/biased", dtype=dt)
        local_step = Variable(lambda: zeros([], dtype=dt), trainable=False, name=f"{base}/local_step", dtype=dt)
    return biased, local_step


def _zero_debias(unbiased_var, value, decay, biased, local_step):
    """The delta that moves `unbiased_var` to the bias-corrected average (Adam-style debiasing)."""
    g = get_default_graph()
    with g.colocate_with(unbiased_var.op):
        dt = unbiased_var.dtype.base_dtype
        read = convert_to_tensor(biased)
        update_biased = biased.assign_sub(multiply(subtract(read, value), decay))
        update_step = local_step.assign_add(constant(1, dtype=dt))
        with g.control_dependencies([update_biased, update_step]):
            one = constant(1.0, dtype=dt)
            correction = subtract(one, pow(subtract(one, decay), local_step.read_value()))
            return subtract(convert_to_tensor(unbiased_var), truediv(biased.read_value(), correction))


def _assign_moving_average(variable, value, decay, debias, scope):
    if debias is not None:
        delta = _zero_debias(variable, value, decay, *debias)
    else:
        delta = multiply(subtract(convert_to_tensor(variable), value), decay)
    return variable.assign_sub(delta, name=scope)


def _component(distributed, copies: list, copy):
    """The component of mirrored `distributed` beside `copy`, one of `copies`."""
    return distributed.values[next(i for i, c in enumerate(copies) if c is copy)]


@tf_export("train.assign_moving_average")
def assign_moving_average(variable, value, decay, zero_debias: bool = True, name=None):
    """variable -= (1 - decay) * (variable - value); returns the updated value. In a replica
    context of a tf.distribute strategy (as TF 1.15), once for all replicas: every copy of the
    variable moves toward the mean of the replicas' values."""
    g = get_default_graph()
    with api.name_scope(name, "AssignMovingAvg") as scope:
        with g.colocate_with(variable.op):
            decay = convert_to_tensor(decay)
            one = convert_to_tensor(1.0, dtype=decay.dtype)
            decay = subtract(one, decay, name="decay")
            if decay.dtype != variable.dtype.base_dtype:
                decay = cast(decay, variable.dtype.base_dtype)
        entry = current_entry()
        if entry is None or entry[1] is None:
            with g.colocate_with(variable.op):
                debias = _debias_variables(variable) if zero_debias else None
                return _assign_moving_average(variable, convert_to_tensor(value), decay, debias, scope)

        def merge_fn(strategy, v, value):
            value = strategy.extended.reduce_to("MEAN", value, v)
            debias = _debias_variables(v) if zero_debias else None
            copies = list(getattr(v, "values", (v,)))

            def update(copy, value):
                mine = debias and tuple(_component(d, copies, copy) if hasattr(d, "values") else d for d in debias)
                return _assign_moving_average(copy, convert_to_tensor(value), decay, mine, None)
            return strategy.extended.update(v, update, args=(value,))
        return entry[1].merge_call(merge_fn, args=(variable, value))


@tf_export("train.ExponentialMovingAverage")
class ExponentialMovingAverage:
    """tf.train.ExponentialMovingAverage(decay, num_updates=None, zero_debias=False,
    name='ExponentialMovingAverage'): shadow = decay * shadow + (1 - decay) * value, with
    decay = min(decay, (1 + num_updates) / (10 + num_updates)) when num_updates is given."""

    def __init__(self, decay, num_updates=None, zero_debias: bool = False, name: str = "ExponentialMovingAverage"):
        self._decay = decay
        self._num_updates = num_updates
        self._zero_debias = zero_debias
        self._name = name
        self._averages: dict = {}

    @property
    def name(self) -> str:
        return self._name

    def apply(self, var_list=None):
        """Creates shadow variables ("<v>/<name>") for each of var_list (trainable variables by
        default) and returns the op that updates them all."""
        g = get_default_graph()
        if var_list is None:
            var_list = g.get_collection(GraphKeys.TRAINABLE_VARIABLES)
        var_list = list(var_list)
        debiased = set()
        for var in var_list:
            if var.dtype.base_dtype not in _FLOATS:
                raise TypeError(f"The variables must be half, float, or double: {var.name}")
            if var in self._averages:
                continue
            with g.control_dependencies(None):
                if _is_variable(var):
                    avg = slot_creator.create_slot(var, var.initialized_value(), self._name)
                    g.add_to_collection(GraphKeys.MOVING_AVERAGE_VARIABLES, var)
                else:
                    avg = slot_creator.create_zeros_slot(var, self._name, colocate_with_primary=(
                        var.op.type in ("VarHandleOp", "Variable", "VariableV2")))
                    if self._zero_debias:
                        debiased.add(avg)
            self._averages[var] = avg
        with api.name_scope(self._name) as scope:
            decay = convert_to_tensor(self._decay, name="decay")
            if self._num_updates is not None:
                n = cast(convert_to_tensor(self._num_updates), dtypes.float32, name="num_updates")
                one, ten = convert_to_tensor(1.0), convert_to_tensor(10.0)
                decay = minimum(decay, truediv(add(one, n), add(ten, n)))
            updates = [assign_moving_average(self._averages[v], v, decay, zero_debias=self._averages[v] in debiased)
                       for v in var_list]
            return group(*updates, name=scope)

    def average(self, var):
        """The shadow variable of `var`, or None."""
        return self._averages.get(var)

    def average_name(self, var) -> str:
        """The name of var's shadow variable (the name it will have, before apply)."""
        if var in self._averages:
            return self._averages[var].op.name
        return get_default_graph().unique_name(var.op.name + "/" + self._name, mark_as_used=False)

    def variables_to_restore(self, moving_avg_variables=None) -> dict:
        """{checkpoint name: variable}: each averaged variable restored from its shadow's name,
        every other global variable from its own name."""
        g = get_default_graph()
        if moving_avg_variables is None:
            moving_avg_variables = (g.get_collection(GraphKeys.TRAINABLE_VARIABLES)
                                    + g.get_collection(GraphKeys.MOVING_AVERAGE_VARIABLES))
        unique = list(dict.fromkeys(moving_avg_variables))
        name_map = {self.average_name(v): v for v in unique}
        names = {v.name for v in unique}
        for v in g.get_collection(GraphKeys.GLOBAL_VARIABLES):
            if v.name not in names and v.op.name not in name_map:
                name_map[v.op.name] = v
        return name_map
