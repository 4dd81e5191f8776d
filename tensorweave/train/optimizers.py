"""TF1's optimizers: GradientDescent, Momentum, Adam, Adagrad, RMSProp, Adadelta, Ftrl,
ProximalGradientDescent, ProximalAdagrad, AdagradDA.

Each update is one fused ResourceApply* op (ResourceSparseApply* for IndexedSlices gradients,
which handles repeated indices itself: summed, or for SGD added one by one as TF's ScatterAdd),
created colocated with its variable. Defaults, slot names and formulas are TF 1.15's."""
from __future__ import annotations

from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.graph import get_default_graph
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.core import identity
from tensorweave.ops.grouping import group
from tensorweave.ops.math.binary import multiply
from tensorweave.ops.state.optimizer_updates import resource_apply, resource_sparse_apply
from tensorweave.train.optimizer import Optimizer, cast_to


class _FusedOptimizer(Optimizer):
    """An optimizer whose step is ResourceApply<_kind>(var, *slots, *scalars, grad)."""

    _kind = ""

    def _slots_of(self, var) -> list:
        return []

    def _scalars(self, dtype) -> list:
        raise NotImplementedError()

    def _kind_for(self) -> str:
        return self._kind

    def _attrs(self) -> dict:
        return {}

    def _resource_apply_dense(self, grad, var):
        return resource_apply(
            self._kind_for(), var.handle, [s.handle for s in self._slots_of(var)], self._scalars(grad.dtype),
            grad, use_locking=self._use_locking, **self._attrs())

    def _resource_apply_sparse_duplicate_indices(self, grad, var, indices):
        # the sparse kernel handles repeated indices (sums their rows; SGD's adds each in turn)
        return self._resource_apply_sparse(grad, var, indices)

    def _resource_apply_sparse(self, grad, var, indices):
        return resource_sparse_apply(
            self._kind_for(), var.handle, [s.handle for s in self._slots_of(var)], self._scalars(grad.dtype),
            grad, convert_to_tensor(indices), use_locking=self._use_locking, **self._attrs())


@tf_export("train.GradientDescentOptimizer")
class GradientDescentOptimizer(_FusedOptimizer):
    """tf.train.GradientDescentOptimizer(learning_rate, use_locking=False, name='GradientDescent'):
    var -= learning_rate * grad."""

    _kind = "GradientDescent"

    def __init__(self, learning_rate, use_locking: bool = False, name: str = "GradientDescent"):
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._learning_rate_tensor = None

    def _prepare(self):
        lr = self._call_if_callable(self._learning_rate)
        self._learning_rate_tensor = convert_to_tensor(lr, name="learning_rate")

    def _scalars(self, dtype):
        return [cast_to(self._learning_rate_tensor, dtype)]


@tf_export("train.MomentumOptimizer")
class MomentumOptimizer(_FusedOptimizer):
    """tf.train.MomentumOptimizer(learning_rate, momentum, use_locking=False, name='Momentum',
    use_nesterov=False): accum = accum * momentum + grad; var -= lr * accum (Nesterov:
    var -= lr * (grad + momentum * accum))."""

    _kind = "Momentum"

    def __init__(self, learning_rate, momentum, use_locking: bool = False, name: str = "Momentum",
                 use_nesterov: bool = False):
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._momentum = momentum
        self._use_nesterov = use_nesterov

    def _create_slots(self, var_list):
        for v in var_list:
            self._zeros_slot(v, "momentum", self._name)

    def _prepare(self):
        self._learning_rate_tensor = convert_to_tensor(self._call_if_callable(self._learning_rate),
                                                       name="learning_rate")
        self._momentum_tensor = convert_to_tensor(self._call_if_callable(self._momentum), name="momentum")

    def _slots_of(self, var):
        return [self.get_slot(var, "momentum")]

    def _scalars(self, dtype):
        return [cast_to(self._learning_rate_tensor, dtype), cast_to(self._momentum_tensor, dtype)]

    def _attrs(self):
        return {"use_nesterov": bool(self._use_nesterov)}


@tf_export("train.AdamOptimizer")
class AdamOptimizer(_FusedOptimizer):
    """tf.train.AdamOptimizer(learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-08,
    use_locking=False, name='Adam'): lr_t = lr * sqrt(1 - beta2^t) / (1 - beta1^t);
    m = beta1 m + (1 - beta1) g; v = beta2 v + (1 - beta2) g^2; var -= lr_t m / (sqrt(v) + eps).
    Sparse gradients follow TF1: every row of m and v decays, only looked-up rows get g."""

    _kind = "Adam"

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8, use_locking: bool = False,
                 name: str = "Adam"):
        super().__init__(use_locking, name)
        self._lr = learning_rate
        self._beta1 = beta1
        self._beta2 = beta2
        self._epsilon = epsilon

    def _get_beta_accumulators(self):
        graph = get_default_graph()
        return (self._get_non_slot_variable("beta1_power", graph=graph),
                self._get_non_slot_variable("beta2_power", graph=graph))

    def _create_slots(self, var_list):
        first_var = min(var_list, key=lambda x: x.name)
        self._create_non_slot_variable(self._beta1, "beta1_power", first_var)
        self._create_non_slot_variable(self._beta2, "beta2_power", first_var)
        for v in var_list:
            self._zeros_slot(v, "m", self._name)
            self._zeros_slot(v, "v", self._name)

    def _prepare(self):
        c = self._call_if_callable
        self._lr_t = convert_to_tensor(c(self._lr), name="learning_rate")
        self._beta1_t = convert_to_tensor(c(self._beta1), name="beta1")
        self._beta2_t = convert_to_tensor(c(self._beta2), name="beta2")
        self._epsilon_t = convert_to_tensor(c(self._epsilon), name="epsilon")

    def _slots_of(self, var):
        return [self.get_slot(var, "m"), self.get_slot(var, "v")]

    def _scalars(self, dtype):
        b1p, b2p = self._get_beta_accumulators()
        return [cast_to(b1p, dtype), cast_to(b2p, dtype), cast_to(self._lr_t, dtype),
                cast_to(self._beta1_t, dtype), cast_to(self._beta2_t, dtype), cast_to(self._epsilon_t, dtype)]

    def _finish(self, update_ops, name_scope):
        g = get_default_graph()
        with g.control_dependencies(update_ops):
            b1p, b2p = self._get_beta_accumulators()
            with g.colocate_with(b1p.op):
                update_beta1 = b1p.assign(multiply(convert_to_tensor(b1p), self._beta1_t),
                                          use_locking=self._use_locking)
                update_beta2 = b2p.assign(multiply(convert_to_tensor(b2p), self._beta2_t),
                                          use_locking=self._use_locking)
        return group(*update_ops + [update_beta1, update_beta2], name=name_scope)


@tf_export("train.AdagradOptimizer")
class AdagradOptimizer(_FusedOptimizer):
    """tf.train.AdagradOptimizer(learning_rate, initial_accumulator_value=0.1, use_locking=False,
    name='Adagrad'): accum += g^2; var -= lr * g / sqrt(accum)."""

    _kind = "Adagrad"

    def __init__(self, learning_rate, initial_accumulator_value=0.1, use_locking: bool = False,
                 name: str = "Adagrad"):
        if initial_accumulator_value <= 0.0:
            raise ValueError(f"initial_accumulator_value must be positive: {initial_accumulator_value}")
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._initial_accumulator_value = initial_accumulator_value

    def _create_slots(self, var_list):
        for v in var_list:
            self._get_or_make_constant_slot(v, self._initial_accumulator_value, "accumulator", self._name)

    def _prepare(self):
        self._learning_rate_tensor = convert_to_tensor(self._call_if_callable(self._learning_rate),
                                                       name="learning_rate")

    def _slots_of(self, var):
        return [self.get_slot(var, "accumulator")]

    def _scalars(self, dtype):
        return [cast_to(self._learning_rate_tensor, dtype)]


@tf_export("train.RMSPropOptimizer")
class RMSPropOptimizer(_FusedOptimizer):
    """tf.train.RMSPropOptimizer(learning_rate, decay=0.9, momentum=0.0, epsilon=1e-10,
    use_locking=False, centered=False, name='RMSProp'): ms = decay ms + (1 - decay) g^2;
    mom = momentum mom + lr g / sqrt(ms + eps) (centered: sqrt(ms - mg^2 + eps)); var -= mom."""

    _kind = "RMSProp"

    def __init__(self, learning_rate, decay=0.9, momentum=0.0, epsilon=1e-10, use_locking: bool = False,
                 centered: bool = False, name: str = "RMSProp"):
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._decay = decay
        self._momentum = momentum
        self._epsilon = epsilon
        self._centered = centered

    def _create_slots(self, var_list):
        for v in var_list:
            self._get_or_make_constant_slot(v, 1.0, "rms", self._name)
            if self._centered:
                self._zeros_slot(v, "mg", self._name)
            self._zeros_slot(v, "momentum", self._name)

    def _prepare(self):
        c = self._call_if_callable
        self._learning_rate_tensor = convert_to_tensor(c(self._learning_rate), name="learning_rate")
        self._decay_tensor = convert_to_tensor(c(self._decay), name="decay")
        self._momentum_tensor = convert_to_tensor(c(self._momentum), name="momentum")
        self._epsilon_tensor = convert_to_tensor(c(self._epsilon), name="epsilon")

    def _kind_for(self):
        return "CenteredRMSProp" if self._centered else "RMSProp"

    def _slots_of(self, var):
        rms, mom = self.get_slot(var, "rms"), self.get_slot(var, "momentum")
        return [self.get_slot(var, "mg"), rms, mom] if self._centered else [rms, mom]

    def _scalars(self, dtype):
        return [cast_to(self._learning_rate_tensor, dtype), cast_to(self._decay_tensor, dtype),
                cast_to(self._momentum_tensor, dtype), cast_to(self._epsilon_tensor, dtype)]


@tf_export("train.AdadeltaOptimizer")
class AdadeltaOptimizer(_FusedOptimizer):
    """tf.train.AdadeltaOptimizer(learning_rate=0.001, rho=0.95, epsilon=1e-08, use_locking=False,
    name='Adadelta')."""

    _kind = "Adadelta"

    def __init__(self, learning_rate=0.001, rho=0.95, epsilon=1e-8, use_locking: bool = False,
                 name: str = "Adadelta"):
        super().__init__(use_locking, name)
        self._lr = learning_rate
        self._rho = rho
        self._epsilon = epsilon

    def _create_slots(self, var_list):
        for v in var_list:
            self._zeros_slot(v, "accum", self._name)
            self._zeros_slot(v, "accum_update", self._name)

    def _prepare(self):
        c = self._call_if_callable
        self._lr_t = convert_to_tensor(c(self._lr), name="lr")
        self._rho_t = convert_to_tensor(c(self._rho), name="rho")
        self._epsilon_t = convert_to_tensor(c(self._epsilon), name="epsilon")

    def _slots_of(self, var):
        return [self.get_slot(var, "accum"), self.get_slot(var, "accum_update")]

    def _scalars(self, dtype):
        return [cast_to(self._lr_t, dtype), cast_to(self._rho_t, dtype), cast_to(self._epsilon_t, dtype)]


@tf_export("train.FtrlOptimizer")
class FtrlOptimizer(_FusedOptimizer):
    """tf.train.FtrlOptimizer(learning_rate, learning_rate_power=-0.5, initial_accumulator_value=0.1,
    l1_regularization_strength=0.0, l2_regularization_strength=0.0, use_locking=False, name='Ftrl',
    accum_name=None, linear_name=None, l2_shrinkage_regularization_strength=0.0)."""

    _kind = "Ftrl"

    def __init__(self, learning_rate, learning_rate_power=-0.5, initial_accumulator_value=0.1,
                 l1_regularization_strength=0.0, l2_regularization_strength=0.0, use_locking: bool = False,
                 name: str = "Ftrl", accum_name=None, linear_name=None, l2_shrinkage_regularization_strength=0.0):
        super().__init__(use_locking, name)
        if initial_accumulator_value < 0.0:
            raise ValueError(f"initial_accumulator_value {initial_accumulator_value:f} needs to be positive or zero")
        if learning_rate_power > 0.0:
            raise ValueError(f"learning_rate_power {learning_rate_power:f} needs to be negative or zero")
        if l1_regularization_strength < 0.0:
            raise ValueError(f"l1_regularization_strength {l1_regularization_strength:f} needs to be positive "
                             "or zero")
        if l2_regularization_strength < 0.0:
            raise ValueError(f"l2_regularization_strength {l2_regularization_strength:f} needs to be positive "
                             "or zero")
        if l2_shrinkage_regularization_strength < 0.0:
            raise ValueError(f"l2_shrinkage_regularization_strength {l2_shrinkage_regularization_strength:f} "
                             "needs to be positive or zero")
        self._learning_rate = learning_rate
        self._learning_rate_power = learning_rate_power
        self._initial_accumulator_value = initial_accumulator_value
        self._l1 = l1_regularization_strength
        self._l2 = l2_regularization_strength
        self._l2_shrinkage = l2_shrinkage_regularization_strength
        self._accum_name = accum_name
        self._linear_name = linear_name

    def _create_slots(self, var_list):
        for v in var_list:
            self._get_or_make_constant_slot(v, self._initial_accumulator_value, "accum",
                                            self._accum_name or self._name)
            self._zeros_slot(v, "linear", self._linear_name or self._name)

    def _prepare(self):
        self._learning_rate_tensor = convert_to_tensor(self._learning_rate, name="learning_rate")
        self._l1_tensor = convert_to_tensor(self._l1, name="l1_regularization_strength")
        self._l2_tensor = convert_to_tensor(self._l2, name="l2_regularization_strength")
        self._l2_shrinkage_tensor = convert_to_tensor(self._l2_shrinkage,
                                                      name="l2_shrinkage_regularization_strength")
        self._learning_rate_power_tensor = convert_to_tensor(self._learning_rate_power,
                                                             name="learning_rate_power")

    def _kind_for(self):
        return "Ftrl" if self._l2_shrinkage <= 0.0 else "FtrlV2"

    def _slots_of(self, var):
        return [self.get_slot(var, "accum"), self.get_slot(var, "linear")]

    def _scalars(self, dtype):
        out = [cast_to(self._learning_rate_tensor, dtype), cast_to(self._l1_tensor, dtype),
               cast_to(self._l2_tensor, dtype)]
        if self._l2_shrinkage > 0.0:
            out.append(cast_to(self._l2_shrinkage_tensor, dtype))
        return out + [cast_to(self._learning_rate_power_tensor, dtype)]


class _RegularizedOptimizer(_FusedOptimizer):
    """An optimizer whose update takes learning_rate, l1 and l2 scalars (the proximal ones, AdagradDA)."""

    def __init__(self, learning_rate, l1_regularization_strength, l2_regularization_strength,
                 use_locking: bool, name: str):
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._l1_regularization_strength = l1_regularization_strength
        self._l2_regularization_strength = l2_regularization_strength

    def _prepare(self):
        self._learning_rate_tensor = convert_to_tensor(self._call_if_callable(self._learning_rate),
                                                       name="learning_rate")
        self._l1_regularization_strength_tensor = convert_to_tensor(
            self._call_if_callable(self._l1_regularization_strength), name="l1_regularization_strength")
        self._l2_regularization_strength_tensor = convert_to_tensor(
            self._call_if_callable(self._l2_regularization_strength), name="l2_regularization_strength")

    def _scalars(self, dtype):
        return [cast_to(self._learning_rate_tensor, dtype), cast_to(self._l1_regularization_strength_tensor, dtype),
                cast_to(self._l2_regularization_strength_tensor, dtype)]


@tf_export("train.ProximalGradientDescentOptimizer")
class ProximalGradientDescentOptimizer(_RegularizedOptimizer):
    """tf.train.ProximalGradientDescentOptimizer(learning_rate, l1_regularization_strength=0.0,
    l2_regularization_strength=0.0, use_locking=False, name='ProximalGradientDescent'):
    prox = var - lr * grad; var = sign(prox) * max(|prox| - lr * l1, 0) / (1 + lr * l2)."""

    _kind = "ProximalGradientDescent"

    def __init__(self, learning_rate, l1_regularization_strength=0.0, l2_regularization_strength=0.0,
                 use_locking: bool = False, name: str = "ProximalGradientDescent"):
        super().__init__(learning_rate, l1_regularization_strength, l2_regularization_strength, use_locking, name)


@tf_export("train.ProximalAdagradOptimizer")
class ProximalAdagradOptimizer(_RegularizedOptimizer):
    """tf.train.ProximalAdagradOptimizer(learning_rate, initial_accumulator_value=0.1,
    l1_regularization_strength=0.0, l2_regularization_strength=0.0, use_locking=False,
    name='ProximalAdagrad'): accum += g^2, then the proximal step with rate lr / sqrt(accum)."""

    _kind = "ProximalAdagrad"

    def __init__(self, learning_rate, initial_accumulator_value=0.1, l1_regularization_strength=0.0,
                 l2_regularization_strength=0.0, use_locking: bool = False, name: str = "ProximalAdagrad"):
        if initial_accumulator_value <= 0.0:
            raise ValueError(f"initial_accumulator_value must be positive: {initial_accumulator_value}")
        super().__init__(learning_rate, l1_regularization_strength, l2_regularization_strength, use_locking, name)
        self._initial_accumulator_value = initial_accumulator_value

    def _create_slots(self, var_list):
        for v in var_list:
            self._get_or_make_constant_slot(v, self._initial_accumulator_value, "accumulator", self._name)

    def _slots_of(self, var):
        return [self.get_slot(var, "accumulator")]


@tf_export("train.AdagradDAOptimizer")
class AdagradDAOptimizer(_RegularizedOptimizer):
    """tf.train.AdagradDAOptimizer(learning_rate, global_step,
    initial_gradient_squared_accumulator_value=0.1, l1_regularization_strength=0.0,
    l2_regularization_strength=0.0, use_locking=False, name='AdagradDA'): Adagrad dual averaging;
    `global_step` (a variable or tensor) + 1 is the t of the update, read once per step."""

    _kind = "AdagradDA"

    def __init__(self, learning_rate, global_step, initial_gradient_squared_accumulator_value=0.1,
                 l1_regularization_strength=0.0, l2_regularization_strength=0.0, use_locking: bool = False,
                 name: str = "AdagradDA"):
        if initial_gradient_squared_accumulator_value <= 0.0:
            raise ValueError("initial_gradient_squared_accumulator_value must be positive: "
                             f"{initial_gradient_squared_accumulator_value}")
        super().__init__(learning_rate, l1_regularization_strength, l2_regularization_strength, use_locking, name)
        self._initial_gradient_squared_accumulator_value = initial_gradient_squared_accumulator_value
        self._global_step = global_step
        self._global_step_on_worker = None

    def _create_slots(self, var_list):
        for v in var_list:
            self._zeros_slot(v, "gradient_accumulator", self._name)
            self._get_or_make_constant_slot(v, self._initial_gradient_squared_accumulator_value,
                                            "gradient_squared_accumulator", self._name)

    def _prepare(self):
        super()._prepare()
        # one read of the global step per step, on the worker (not one per variable from the ps)
        self._global_step_on_worker = identity(self._global_step) + 1

    def _slots_of(self, var):
        return [self.get_slot(var, "gradient_accumulator"), self.get_slot(var, "gradient_squared_accumulator")]

    def _scalars(self, dtype):
        return super()._scalars(dtype) + [self._global_step_on_worker]
