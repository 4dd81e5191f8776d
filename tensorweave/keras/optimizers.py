"""tf.keras.optimizers (TF 1.15's OptimizerV2 family, graph mode): SGD, RMSprop, Adagrad, Adadelta,
Adam, Adamax, Nadam, Ftrl, the TFOptimizer wrapper of a tf.train.Optimizer, and get / serialize /
deserialize.

An optimizer's variables are created under its name scope on first use, named as Keras names
them so checkpoints and HDF5 optimizer weights line up: "<name>/iter" (int64, the step count),
one float32 variable per hyperparameter ("Adam/learning_rate", "Adam/beta_1", ...) and the slots
"<name>/<variable name>/<slot>" ("Adam/dense/kernel/m"). `weights` lists iter, then the slots
(each slot name for every variable in turn), as Keras's get_weights/set_weights order them.

Where Keras's update rule is TF1's fused kernel (plain SGD, RMSprop with momentum, Adadelta,
Adam, Ftrl) the update is that ResourceApply* op; the others (Keras's momentum, which folds the
learning rate into the accumulator; RMSprop without momentum and Adagrad, whose epsilon is
outside the square root; amsgrad; Adamax; Nadam) are built from plain ops."""
from __future__ import annotations

import contextlib

from tensorweave import _api
from tensorweave.framework import dtypes
from tensorweave.framework.api import colocate_with, control_dependencies, name_scope
from tensorweave.framework.distribution_context import current_entry
from tensorweave.framework.graph import Tensor, get_default_session
from tensorweave.framework.indexed_slices import IndexedSlices
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tf_export import tf_export
from tensorweave.logging import warning
from tensorweave.ops.array.core import identity
from tensorweave.ops.array.fill import fill
from tensorweave.ops.array.gather import gather
from tensorweave.ops.gradients.gradients import gradients
from tensorweave.ops.grouping import group
from tensorweave.ops.math.binary import maximum, pow as pow_
from tensorweave.ops.math.cast import cast
from tensorweave.ops.math.clip import clip_by_norm, clip_by_value
from tensorweave.ops.math.unary import abs as abs_, sqrt, square
from tensorweave.ops.state.optimizer_updates import resource_apply, resource_sparse_apply
from tensorweave.ops.state.variables import Variable
from tensorweave.train.optimizer import Optimizer as TrainOptimizer, deduplicate_indexed_slices
from tensorweave.keras.utils.generic_utils import deserialize_keras_object, serialize_keras_object

_ALLOWED_KWARGS = {"clipnorm", "clipvalue", "lr", "decay"}


def _shared_name(var) -> str:
    # a copy of a mirrored variable shares its slots with the mirrored variable (TF's rule)
    var = getattr(var, "_distributed_container", var)
    return var.name.split(":")[0]


@tf_export("keras.optimizers.Optimizer")
class OptimizerV2:
    """tf.keras.optimizers.Optimizer(name, **kwargs): the Keras optimizer base (kwargs clipnorm,
    clipvalue: clip each gradient by norm / value; lr: the old name of learning_rate; decay: the
    learning rate is lr / (1 + decay * iterations)). Subclasses declare hyperparameters with
    _set_hyper, slots in _create_slots and the update in _resource_apply_dense."""

    def __init__(self, name, **kwargs):
        for k, v in kwargs.items():
            if k not in _ALLOWED_KWARGS:
                raise TypeError(f"Unexpected keyword argument passed to optimizer: {k}")
            if isinstance(v, (int, float)) and v < 0:
                raise ValueError(f"Expected {k} >= 0, received: {v}")
        self._name = name
        self._hyper = {}
        self._hyper_values = {}  # the Python value of each hyperparameter, as get_config reports it
        self._slots = {}
        self._slot_names = []
        self._weights = []
        self._iterations = None
        self._hypers_created = False
        self._scope = None
        self._coefficients = {}
        self._initial_decay = kwargs.pop("decay", 0.0)
        self.clipnorm = kwargs.pop("clipnorm", None)
        self.clipvalue = kwargs.pop("clipvalue", None)

    # -- hyperparameters ----------------------------------------------------------------------
    def _set_hyper(self, name, value):
        """Declares or changes a hyperparameter; once its variable exists, a new Python value is
        loaded into it in the default session."""
        current = self._hyper.get(name)
        if isinstance(current, Variable) and not isinstance(value, (Tensor, Variable)) and not callable(value):
            current.load(value)
        else:
            self._hyper[name] = value
        if not isinstance(value, (Tensor, Variable)):
            self._hyper_values[name] = value

    def _get_hyper(self, name, dtype=None):
        if not self._hypers_created:
            self._create_hypers()
        value = self._hyper[name]
        if callable(value) and not isinstance(value, Variable):
            value = value()
        return cast(value, dtype) if dtype is not None else value

    def __getattr__(self, name):
        hyper = self.__dict__.get("_hyper", {})
        name = "learning_rate" if name == "lr" else name
        if name in hyper:
            return self._get_hyper(name)
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name, value):
        name = "learning_rate" if name == "lr" else name
        if "_hyper" in self.__dict__ and name in self._hyper:
            self._set_hyper(name, value)
        else:
            super().__setattr__(name, value)

    def _serialize_hyperparameter(self, name):
        value = self._hyper_values.get(name, self._hyper[name])
        return value() if callable(value) else value

    # -- variables ------------------------------------------------------------------------------
    @contextlib.contextmanager
    def _weights_scope(self):
        """The optimizer's name scope, the same one each time (Keras's "<name>/" prefix)."""
        with name_scope(self._scope or self._name) as scope:
            self._scope = scope
            yield scope

    def add_weight(self, name, shape, dtype=dtypes.float32, initializer=0.0, trainable=False):
        """A resource variable of `shape` filled with `initializer` (a number)."""
        dtype = dtypes.as_dtype(dtype)
        return Variable(lambda: fill(shape, convert_to_tensor(initializer, dtype=dtype)), name=name, dtype=dtype,
                        trainable=trainable, use_resource=True)

    @property
    def iterations(self):
        """The int64 variable "<name>/iter", incremented by each apply_gradients."""
        if self._iterations is None:
            with self._weights_scope():
                self._iterations = self.add_weight("iter", [], dtypes.int64, 0)
            self._weights.insert(0, self._iterations)
        return self._iterations

    @iterations.setter
    def iterations(self, variable):
        if self._iterations is not None:
            raise RuntimeError("Cannot set `iterations` to a new Variable after the Optimizer weights were created")
        self._iterations = variable
        self._weights.insert(0, variable)

    def _create_hypers(self):
        if self._hypers_created:
            return
        with self._weights_scope():
            for name, value in sorted(self._hyper.items()):
                if not isinstance(value, (Tensor, Variable)) and not callable(value):
                    self._hyper[name] = self.add_weight(name, [], initializer=value)
        self._hypers_created = True

    def add_slot(self, var, slot_name, initializer=0.0):
        """The slot `slot_name` of `var`: "<optimizer>/<var>/<slot>", colocated with var."""
        if slot_name not in self._slot_names:
            self._slot_names.append(slot_name)
        slots = self._slots.setdefault(_shared_name(var), {})
        if slot_name not in slots:
            with self._weights_scope(), colocate_with(var):
                slot = self.add_weight(f"{_shared_name(var)}/{slot_name}", var.shape.as_list(), var.dtype.base_dtype,
                                       initializer)
            slots[slot_name] = slot
            self._weights.append(slot)
        return slots[slot_name]

    def get_slot(self, var, slot_name):
        slot = self._slots[_shared_name(var)][slot_name]
        index = getattr(var, "_replica_index", None)
        if index is not None and hasattr(slot, "primary"):
            return slot.values[index]   # the copy of a mirrored slot beside this copy of the variable
        return slot

    def get_slot_names(self):
        return list(self._slot_names)

    def _create_slots(self, var_list):
        pass

    def _create_all_weights(self, var_list):
        _ = self.iterations
        self._create_hypers()
        self._create_slots(var_list)

    @property
    def weights(self):
        return self._weights

    def variables(self):
        return self._weights

    def _session(self):
        session = get_default_session()
        if session is None:
            raise RuntimeError(f"optimizer {self._name}: get_weights/set_weights need a default session")
        return session

    def get_weights(self):
        """The values of `weights` (iter first, then the slots), read in the default session."""
        return self._session().run(self._weights)

    def set_weights(self, weights):
        """Loads values into `weights`, in their order, in the default session."""
        params = self.weights
        if len(params) != len(weights):
            raise ValueError(f"You called `set_weights(weights)` on optimizer {self._name} with a weight list of "
                             f"length {len(weights)}, but the optimizer was expecting {len(params)} weights.")
        for param, value in zip(params, weights):
            shape = getattr(value, "shape", ())
            if not param.shape.is_compatible_with(shape):
                raise ValueError(f"Optimizer weight shape {param.shape} not compatible with provided weight shape "
                                 f"{tuple(shape)}")
        session = self._session()
        for param, value in zip(params, weights):
            param.load(value, session)

    # -- gradients and updates ------------------------------------------------------------------
    def _clip_gradients(self, grads):
        if self.clipnorm is not None:
            grads = [None if g is None else clip_by_norm(g, self.clipnorm) for g in grads]
        if self.clipvalue is not None:
            grads = [None if g is None else clip_by_value(g, -self.clipvalue, self.clipvalue) for g in grads]
        return grads

    def get_gradients(self, loss, params):
        """The (clipped) gradients of `loss` for `params`; ValueError where one has none."""
        grads = gradients(loss, params)
        if any(g is None for g in grads):
            missing = [p.name for p, g in zip(params, grads) if g is None]
            raise ValueError(f"An operation has `None` for gradient (variables {missing}). Please make sure that all "
                             "of your ops have a gradient defined (i.e. are differentiable).")
        return self._clip_gradients(grads)

    def get_updates(self, loss, params):
        """[the op that applies one step of `loss`'s gradients to `params`]."""
        return [self.apply_gradients(zip(self.get_gradients(loss, params), params))]

    def minimize(self, loss, var_list, grad_loss=None, name=None):
        """apply_gradients of the (clipped) gradients of `loss` (a tensor or a callable) for
        `var_list` (a list or a callable)."""
        loss = loss() if callable(loss) else loss
        var_list = var_list() if callable(var_list) else var_list
        grads = self._clip_gradients(gradients(loss, var_list, grad_ys=grad_loss))
        return self.apply_gradients(zip(grads, var_list), name=name)

    def apply_gradients(self, grads_and_vars, name=None):
        """The op that applies each gradient to its variable, then adds 1 to `iterations`.
        Variables without a gradient are skipped (ValueError when none has one)."""
        grads_and_vars = list(grads_and_vars)
        kept = [(g, v) for g, v in grads_and_vars if g is not None]
        if not kept:
            raise ValueError(f"No gradients provided for any variable: {[v.name for _, v in grads_and_vars]}.")
        if len(kept) < len(grads_and_vars):
            warning("Gradients do not exist for variables %s when minimizing the loss.",
                    [v.name for g, v in grads_and_vars if g is None])
        entry = current_entry()
        if entry is not None and entry[1] is not None:   # a replica of a tf.distribute strategy
            return entry[1].merge_call(self._distributed_apply, args=(kept, name))
        self._create_all_weights([v for _, v in kept])
        with name_scope(name or self._name):
            self._coefficients = {}
            update_ops = []
            for grad, var in kept:
                with name_scope("update_" + _shared_name(var)), colocate_with(var):
                    update_ops.append(self._apply_one(grad, var))
            with control_dependencies([group(*update_ops)]):
                return self.iterations.assign_add(1, read_value=False)

    def _distributed_apply(self, strategy, grads_and_vars, name=None):
        """apply_gradients in cross-replica context (TF's OptimizerV2._distributed_apply): each
        variable's gradients summed over the replicas, the update applied to every copy of the
        variable (strategy.extended.update), then `iterations` + 1 once."""
        reduced = strategy.extended.batch_reduce_to("SUM", grads_and_vars)
        var_list = [v for _, v in grads_and_vars]
        self._create_all_weights(var_list)
        with name_scope(name or self._name):
            self._coefficients = {}
            update_ops = []
            for grad, var in zip(reduced, var_list):
                with name_scope("update_" + _shared_name(var)):
                    update_ops.extend(strategy.extended.update(var, lambda v, g: self._apply_one(g, v), args=(grad,),
                                                               group=False))
            with control_dependencies([group(*update_ops)]):
                return self.iterations.assign_add(1, read_value=False)

    def _apply_one(self, grad, var):
        """The update of `var` (one copy, under a strategy) by `grad`, then its constraint."""
        if isinstance(grad, IndexedSlices):
            update = self._resource_apply_sparse_duplicate_indices(grad.values, grad.indices, var)
        else:
            update = self._resource_apply_dense(convert_to_tensor(grad), var)
        if getattr(var, "constraint", None) is not None:
            with control_dependencies([update]):
                update = var.assign(var.constraint(var), read_value=False)
        return update

    def _decayed_lr(self, dtype):
        lr = self._get_hyper("learning_rate", dtype)
        if self._initial_decay > 0.0:
            lr = lr / (1.0 + self._get_hyper("decay", dtype) * cast(self.iterations, dtype))
        return lr

    def _coefficients_for(self, dtype) -> dict:
        """The per-dtype tensors an update uses, built once per apply_gradients."""
        if dtype not in self._coefficients:
            self._coefficients[dtype] = self._prepare_local(dtype)
        return self._coefficients[dtype]

    def _prepare_local(self, dtype) -> dict:
        return {"lr_t": self._decayed_lr(dtype)}

    def _local_step(self, dtype, offset=1):
        return cast(self.iterations + offset, dtype)

    def _resource_apply_dense(self, grad, var):
        raise NotImplementedError(f"{type(self).__name__} must implement _resource_apply_dense")

    def _resource_apply_sparse_duplicate_indices(self, grad, indices, var):
        """The update for rows `indices` (repeats allowed) of `var`: by default the rows of a
        repeated index summed, then _resource_apply_sparse."""
        return self._resource_apply_sparse(*deduplicate_indexed_slices(grad, indices), var)

    def _resource_apply_sparse(self, grad, indices, var):
        """The update for rows `indices` (unique) of `var` with gradient rows `grad`; by default
        the dense update of the scattered gradient, which is Keras's sparse rule wherever rows
        without a gradient would not move."""
        dense_shape = convert_to_tensor(var.shape.as_list(), dtype=dtypes.int32)
        return self._resource_apply_dense(convert_to_tensor(IndexedSlices(grad, indices, dense_shape)), var)

    # -- config ---------------------------------------------------------------------------------
    def get_config(self) -> dict:
        config = {"name": self._name}
        if self.clipnorm is not None:
            config["clipnorm"] = self.clipnorm
        if self.clipvalue is not None:
            config["clipvalue"] = self.clipvalue
        return config

    def _config_of(self, *hypers, **others) -> dict:
        config = OptimizerV2.get_config(self)
        config.update({"learning_rate": self._serialize_hyperparameter("learning_rate"),
                       "decay": self._initial_decay})
        config.update({h: self._serialize_hyperparameter(h) for h in hypers})
        config.update(others)
        return config

    @classmethod
    def from_config(cls, config, custom_objects=None):
        config = dict(config)
        if "lr" in config:
            config["learning_rate"] = config.pop("lr")
        return cls(**config)


def _assign(var, value):
    return var.assign(value, read_value=True)


@tf_export("keras.optimizers.SGD")
class SGD(OptimizerV2):
    """tf.keras.optimizers.SGD(learning_rate=0.01, momentum=0.0, nesterov=False, name='SGD'):
    var -= lr * grad; with momentum, accum = momentum * accum - lr * grad (slot "momentum") and
    var += accum (Nesterov: var += momentum * accum - lr * grad)."""

    def __init__(self, learning_rate=0.01, momentum=0.0, nesterov=False, name="SGD", **kwargs):
        super().__init__(name, **kwargs)
        self._set_hyper("learning_rate", kwargs.get("lr", learning_rate))
        self._set_hyper("decay", self._initial_decay)
        if isinstance(momentum, (int, float)) and not 0 <= momentum <= 1:
            raise ValueError(f"`momentum` must be between [0, 1], got {momentum}")
        self._momentum = isinstance(momentum, Tensor) or callable(momentum) or momentum > 0
        self._set_hyper("momentum", momentum)
        self.nesterov = nesterov

    def _create_slots(self, var_list):
        if self._momentum:
            for var in var_list:
                self.add_slot(var, "momentum")

    def _resource_apply_dense(self, grad, var):
        lr = self._coefficients_for(var.dtype.base_dtype)["lr_t"]
        if not self._momentum:
            return resource_apply("GradientDescent", var.handle, [], [lr], grad)
        momentum = self._get_hyper("momentum", var.dtype.base_dtype)
        accum = self.get_slot(var, "momentum")
        accum_t = _assign(accum, accum * momentum - lr * grad)
        step = accum_t * momentum - lr * grad if self.nesterov else accum_t
        return var.assign_add(step, read_value=False)

    def _resource_apply_sparse_duplicate_indices(self, grad, indices, var):
        if self._momentum:
            return super()._resource_apply_sparse_duplicate_indices(grad, indices, var)
        # Keras adds each row's -grad * lr, a repeated index's rows one after another
        lr = self._coefficients_for(var.dtype.base_dtype)["lr_t"]
        return var.scatter_add(IndexedSlices(-grad * lr, indices))

    def _resource_apply_sparse(self, grad, indices, var):
        # (with momentum: Keras's sparse momentum moves only the rows with a gradient)
        lr = self._coefficients_for(var.dtype.base_dtype)["lr_t"]
        momentum = self._get_hyper("momentum", var.dtype.base_dtype)
        accum = self.get_slot(var, "momentum")
        accum_rows = gather(accum, indices) * momentum - lr * grad
        with control_dependencies([accum.scatter_update(IndexedSlices(accum_rows, indices))]):
            step = accum_rows * momentum - lr * grad if self.nesterov else identity(accum_rows)
        return var.scatter_add(IndexedSlices(step, indices))

    def get_config(self):
        return self._config_of("momentum", nesterov=self.nesterov)


@tf_export("keras.optimizers.RMSprop")
class RMSprop(OptimizerV2):
    """tf.keras.optimizers.RMSprop(learning_rate=0.001, rho=0.9, momentum=0.0, epsilon=1e-07,
    centered=False, name='RMSprop'): rms = rho rms + (1 - rho) g^2 (slot "rms"; centered: minus
    the square of mg = rho mg + (1 - rho) g, slot "mg"); without momentum var -= lr g /
    (sqrt(rms) + eps); with it (slot "momentum") TF's ApplyRMSProp, eps inside the root."""

    def __init__(self, learning_rate=0.001, rho=0.9, momentum=0.0, epsilon=1e-7, centered=False, name="RMSprop",
                 **kwargs):
        super().__init__(name, **kwargs)
        self._set_hyper("learning_rate", kwargs.get("lr", learning_rate))
        self._set_hyper("decay", self._initial_decay)
        self._set_hyper("rho", rho)
        self._momentum = isinstance(momentum, Tensor) or callable(momentum) or momentum > 0
        self._set_hyper("momentum", momentum)
        self.epsilon = epsilon
        self.centered = centered

    def _create_slots(self, var_list):
        for var in var_list:
            self.add_slot(var, "rms")
        if self._momentum:
            for var in var_list:
                self.add_slot(var, "momentum")
        if self.centered:
            for var in var_list:
                self.add_slot(var, "mg")

    def _resource_apply_dense(self, grad, var):
        dtype = var.dtype.base_dtype
        lr = self._coefficients_for(dtype)["lr_t"]
        rho = self._get_hyper("rho", dtype)
        rms = self.get_slot(var, "rms")
        if self._momentum:
            return self._momentum_update(grad, var, resource_apply)
        denominator = rms_t = _assign(rms, rho * rms + (1.0 - rho) * square(grad))
        if self.centered:
            mg = self.get_slot(var, "mg")
            mg_t = _assign(mg, rho * mg + (1.0 - rho) * grad)
            denominator = rms_t - square(mg_t)
        return var.assign_sub(lr * grad / (sqrt(denominator) + self.epsilon), read_value=False)

    def _momentum_update(self, grad, var, apply, *indices):
        """TF's (Centered)RMSProp kernel, dense or (apply=resource_sparse_apply) on rows `indices`."""
        dtype = var.dtype.base_dtype
        scalars = [self._coefficients_for(dtype)["lr_t"], self._get_hyper("rho", dtype),
                   self._get_hyper("momentum", dtype), cast(self.epsilon, dtype)]
        slots = [self.get_slot(var, "rms").handle, self.get_slot(var, "momentum").handle]
        if self.centered:
            return apply("CenteredRMSProp", var.handle, [self.get_slot(var, "mg").handle] + slots, scalars, grad,
                         *indices)
        return apply("RMSProp", var.handle, slots, scalars, grad, *indices)

    def _resource_apply_sparse(self, grad, indices, var):
        if self._momentum:
            return self._momentum_update(grad, var, resource_sparse_apply, indices)
        return super()._resource_apply_sparse(grad, indices, var)

    def get_config(self):
        return self._config_of("rho", "momentum", epsilon=self.epsilon, centered=self.centered)


@tf_export("keras.optimizers.Adagrad")
class Adagrad(OptimizerV2):
    """tf.keras.optimizers.Adagrad(learning_rate=0.001, initial_accumulator_value=0.1,
    epsilon=1e-07, name='Adagrad'): accumulator += g^2 (slot "accumulator");
    var -= lr g / (sqrt(accumulator) + eps)."""

    def __init__(self, learning_rate=0.001, initial_accumulator_value=0.1, epsilon=1e-7, name="Adagrad", **kwargs):
        if initial_accumulator_value < 0.0:
            raise ValueError(f"initial_accumulator_value must be non-negative: {initial_accumulator_value}")
        super().__init__(name, **kwargs)
        self._set_hyper("learning_rate", kwargs.get("lr", learning_rate))
        self._set_hyper("decay", self._initial_decay)
        self._initial_accumulator_value = initial_accumulator_value
        self.epsilon = epsilon

    def _create_slots(self, var_list):
        for var in var_list:
            self.add_slot(var, "accumulator", self._initial_accumulator_value)

    def _resource_apply_dense(self, grad, var):
        lr = self._coefficients_for(var.dtype.base_dtype)["lr_t"]
        accumulator = self.get_slot(var, "accumulator")
        accumulator_t = _assign(accumulator, accumulator + square(grad))
        return var.assign_sub(lr * grad / (sqrt(accumulator_t) + self.epsilon), read_value=False)

    def get_config(self):
        return self._config_of(initial_accumulator_value=self._initial_accumulator_value, epsilon=self.epsilon)


@tf_export("keras.optimizers.Adadelta")
class Adadelta(OptimizerV2):
    """tf.keras.optimizers.Adadelta(learning_rate=0.001, rho=0.95, epsilon=1e-07,
    name='Adadelta'): TF's ApplyAdadelta with slots "accum_grad" and "accum_var"."""

    def __init__(self, learning_rate=0.001, rho=0.95, epsilon=1e-7, name="Adadelta", **kwargs):
        super().__init__(name, **kwargs)
        self._set_hyper("learning_rate", kwargs.get("lr", learning_rate))
        self._set_hyper("decay", self._initial_decay)
        self._set_hyper("rho", rho)
        self.epsilon = epsilon

    def _create_slots(self, var_list):
        for var in var_list:
            self.add_slot(var, "accum_grad")
        for var in var_list:
            self.add_slot(var, "accum_var")

    def _resource_apply_dense(self, grad, var, apply=resource_apply, *indices):
        dtype = var.dtype.base_dtype
        slots = [self.get_slot(var, "accum_grad").handle, self.get_slot(var, "accum_var").handle]
        scalars = [self._coefficients_for(dtype)["lr_t"], self._get_hyper("rho", dtype), cast(self.epsilon, dtype)]
        return apply("Adadelta", var.handle, slots, scalars, grad, *indices)

    def _resource_apply_sparse(self, grad, indices, var):
        return self._resource_apply_dense(grad, var, resource_sparse_apply, indices)

    def get_config(self):
        return self._config_of("rho", epsilon=self.epsilon)


class _AdamFamily(OptimizerV2):
    """Adam, Adamax and Nadam's hyperparameters beta_1, beta_2 and epsilon and slots m and v."""

    def __init__(self, learning_rate, beta_1, beta_2, epsilon, name, **kwargs):
        super().__init__(name, **kwargs)
        self._set_hyper("learning_rate", kwargs.get("lr", learning_rate))
        self._set_hyper("decay", self._initial_decay)
        self._set_hyper("beta_1", beta_1)
        self._set_hyper("beta_2", beta_2)
        self.epsilon = epsilon

    def _create_slots(self, var_list):
        for var in var_list:
            self.add_slot(var, "m")
        for var in var_list:
            self.add_slot(var, "v")

    def _prepare_local(self, dtype):
        local_step = self._local_step(dtype)
        beta_1, beta_2 = self._get_hyper("beta_1", dtype), self._get_hyper("beta_2", dtype)
        return {"lr_t": self._decayed_lr(dtype), "beta_1": beta_1, "beta_2": beta_2, "local_step": local_step,
                "beta_1_power": pow_(beta_1, local_step), "beta_2_power": pow_(beta_2, local_step),
                "epsilon": cast(self.epsilon, dtype)}

    def get_config(self):
        return self._config_of("beta_1", "beta_2", epsilon=self.epsilon)


@tf_export("keras.optimizers.Adam")
class Adam(_AdamFamily):
    """tf.keras.optimizers.Adam(learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-07,
    amsgrad=False, name='Adam'): TF's ApplyAdam (slots "m", "v"; eps outside the root of v, lr
    scaled by sqrt(1 - beta_2^t) / (1 - beta_1^t)); amsgrad divides by the root of the running
    maximum of v (slot "vhat")."""

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7, amsgrad=False, name="Adam",
                 **kwargs):
        super().__init__(learning_rate, beta_1, beta_2, epsilon, name, **kwargs)
        self.amsgrad = amsgrad

    def _create_slots(self, var_list):
        super()._create_slots(var_list)
        if self.amsgrad:
            for var in var_list:
                self.add_slot(var, "vhat")

    def _resource_apply_dense(self, grad, var):
        c = self._coefficients_for(var.dtype.base_dtype)
        m, v = self.get_slot(var, "m"), self.get_slot(var, "v")
        if not self.amsgrad:
            scalars = [c["beta_1_power"], c["beta_2_power"], c["lr_t"], c["beta_1"], c["beta_2"], c["epsilon"]]
            return resource_apply("Adam", var.handle, [m.handle, v.handle], scalars, grad)
        lr = c["lr_t"] * sqrt(1.0 - c["beta_2_power"]) / (1.0 - c["beta_1_power"])
        m_t = _assign(m, c["beta_1"] * m + (1.0 - c["beta_1"]) * grad)
        v_t = _assign(v, c["beta_2"] * v + (1.0 - c["beta_2"]) * square(grad))
        vhat = self.get_slot(var, "vhat")
        vhat_t = _assign(vhat, maximum(vhat, v_t))
        return var.assign_sub(lr * m_t / (sqrt(vhat_t) + c["epsilon"]), read_value=False)

    def _resource_apply_sparse(self, grad, indices, var):
        """Keras's sparse Adam: m and v decay whole and take the gradient's rows, var moves by
        lr_t * (sqrt(1 - beta_2^t) / (1 - beta_1^t)) * m / (sqrt(v) + epsilon) (that product's
        order is Keras's: the kernel's own bias correction is left at 1, beta powers of 0);
        amsgrad divides by the root of max(vhat, v) instead."""
        c = self._coefficients_for(var.dtype.base_dtype)
        lr = c["lr_t"] * (sqrt(1.0 - c["beta_2_power"]) / (1.0 - c["beta_1_power"]))
        m, v = self.get_slot(var, "m"), self.get_slot(var, "v")
        if not self.amsgrad:
            no_correction = cast(0.0, var.dtype.base_dtype)
            scalars = [no_correction, no_correction, lr, c["beta_1"], c["beta_2"], c["epsilon"]]
            return resource_sparse_apply("Adam", var.handle, [m.handle, v.handle], scalars, grad, indices)
        with control_dependencies([_assign(m, m * c["beta_1"])]):
            m_t = m.scatter_add(IndexedSlices(grad * (1.0 - c["beta_1"]), indices))
        with control_dependencies([_assign(v, v * c["beta_2"])]):
            # (g * g) * (1 - beta_2) as TF runs it: Grappler multiplies the scalar in first
            v_t = v.scatter_add(IndexedSlices(grad * (grad * (1.0 - c["beta_2"])), indices))
        vhat = self.get_slot(var, "vhat")
        vhat_t = _assign(vhat, maximum(vhat, v_t))
        return var.assign_sub(lr * m_t / (sqrt(vhat_t) + c["epsilon"]), read_value=False)

    def get_config(self):
        return {**super().get_config(), "amsgrad": self.amsgrad}


@tf_export("keras.optimizers.Adamax")
class Adamax(_AdamFamily):
    """tf.keras.optimizers.Adamax(learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-07,
    name='Adamax'): m = beta_1 m + (1 - beta_1) g; v = max(beta_2 v, |g|);
    var -= lr / (1 - beta_1^t) * m / (v + eps)."""

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7, name="Adamax", **kwargs):
        super().__init__(learning_rate, beta_1, beta_2, epsilon, name, **kwargs)

    def _resource_apply_dense(self, grad, var):
        c = self._coefficients_for(var.dtype.base_dtype)
        m, v = self.get_slot(var, "m"), self.get_slot(var, "v")
        m_t = _assign(m, c["beta_1"] * m + (1.0 - c["beta_1"]) * grad)
        v_t = _assign(v, maximum(c["beta_2"] * v, abs_(grad)))
        return var.assign_sub(c["lr_t"] / (1.0 - c["beta_1_power"]) * m_t / (v_t + c["epsilon"]), read_value=False)

    def _resource_apply_sparse(self, grad, indices, var):
        # Keras's sparse Adamax: m, v and var change only on the rows with a gradient
        c = self._coefficients_for(var.dtype.base_dtype)
        m, v = self.get_slot(var, "m"), self.get_slot(var, "v")
        m_rows = gather(m, indices) * c["beta_1"] + (1.0 - c["beta_1"]) * grad
        v_rows = maximum(gather(v, indices) * c["beta_2"], abs_(grad))
        with control_dependencies([m.scatter_update(IndexedSlices(m_rows, indices)),
                                   v.scatter_update(IndexedSlices(v_rows, indices))]):
            step = c["lr_t"] / (1.0 - c["beta_1_power"]) * (m_rows / (v_rows + c["epsilon"]))
            return var.scatter_sub(IndexedSlices(step, indices))


@tf_export("keras.optimizers.Nadam")
class Nadam(_AdamFamily):
    """tf.keras.optimizers.Nadam(learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-07,
    name='Nadam'): Adam with Nesterov momentum under the momentum schedule
    mu_t = beta_1 (1 - 0.5 * 0.96^(decay t)), decay defaulting to 0.004 (schedule_decay), whose
    running product is the weight "momentum_cache"; the learning rate itself is not decayed."""

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7, name="Nadam", **kwargs):
        kwargs["decay"] = kwargs.pop("schedule_decay", kwargs.get("decay", 0.004))
        super().__init__(learning_rate, beta_1, beta_2, epsilon, name, **kwargs)
        self._m_cache = None
        self._m_cache_read = None

    def _create_slots(self, var_list):
        if self._m_cache is None:
            with self._weights_scope():
                self._m_cache = self.add_weight("momentum_cache", [], initializer=1.0)
            self._weights.insert(1, self._m_cache)
        super()._create_slots(var_list)

    def apply_gradients(self, grads_and_vars, name=None):
        self._m_cache_read = None
        return super().apply_gradients(grads_and_vars, name)

    def _prepare_local(self, dtype):
        c = super()._prepare_local(dtype)
        c["lr_t"] = self._get_hyper("learning_rate", dtype)
        decay_base = cast(0.96, dtype)
        m_t = c["beta_1"] * (1.0 - 0.5 * pow_(decay_base, self._initial_decay * c["local_step"]))
        m_t_1 = c["beta_1"] * (1.0 - 0.5 * pow_(decay_base, self._initial_decay * self._local_step(dtype, 2)))
        if self._m_cache_read is None:
            self._m_cache_read = convert_to_tensor(self._m_cache)
        m_schedule_new = cast(self._m_cache_read, dtype) * m_t
        if dtype == self._m_cache.dtype.base_dtype:
            m_schedule_new = _assign(self._m_cache, m_schedule_new)
        c.update(m_t=m_t, m_t_1=m_t_1, m_schedule_new=m_schedule_new, m_schedule_next=m_schedule_new * m_t_1)
        return c

    def _resource_apply_dense(self, grad, var):
        c = self._coefficients_for(var.dtype.base_dtype)
        m, v = self.get_slot(var, "m"), self.get_slot(var, "v")
        g_prime = grad / (1.0 - c["m_schedule_new"])
        m_t = _assign(m, c["beta_1"] * m + (1.0 - c["beta_1"]) * grad)
        m_t_prime = m_t / (1.0 - c["m_schedule_next"])
        v_t = _assign(v, c["beta_2"] * v + (1.0 - c["beta_2"]) * square(grad))
        v_t_prime = v_t / (1.0 - c["beta_2_power"])
        m_t_bar = (1.0 - c["m_t"]) * g_prime + c["m_t_1"] * m_t_prime
        return var.assign_sub(c["lr_t"] * m_t_bar / (sqrt(v_t_prime) + c["epsilon"]), read_value=False)

    def _resource_apply_sparse(self, grad, indices, var):
        # Keras's sparse Nadam: m and v decay everywhere; var changes only on the rows with a gradient
        c = self._coefficients_for(var.dtype.base_dtype)
        m, v = self.get_slot(var, "m"), self.get_slot(var, "v")
        g_prime = grad / (1.0 - c["m_schedule_new"])
        with control_dependencies([_assign(m, m * c["beta_1"])]):
            m_t = m.scatter_add(IndexedSlices((1.0 - c["beta_1"]) * grad, indices))
        with control_dependencies([m_t]):
            m_rows = gather(m, indices)
        with control_dependencies([_assign(v, v * c["beta_2"])]):
            v_t = v.scatter_add(IndexedSlices((1.0 - c["beta_2"]) * square(grad), indices))
        with control_dependencies([v_t]):
            v_rows = gather(v, indices)
        m_t_bar = (1.0 - c["m_t"]) * g_prime + c["m_t_1"] * m_rows / (1.0 - c["m_schedule_next"])
        step = c["lr_t"] * m_t_bar / (sqrt(v_rows / (1.0 - c["beta_2_power"])) + c["epsilon"])
        return var.scatter_sub(IndexedSlices(step, indices))


@tf_export("keras.optimizers.Ftrl")
class Ftrl(OptimizerV2):
    """tf.keras.optimizers.Ftrl(learning_rate=0.001, learning_rate_power=-0.5,
    initial_accumulator_value=0.1, l1_regularization_strength=0.0, l2_regularization_strength=0.0,
    name='Ftrl', l2_shrinkage_regularization_strength=0.0): TF's ApplyFtrl (ApplyFtrlV2 with
    shrinkage) with slots "accumulator" and "linear"."""

    def __init__(self, learning_rate=0.001, learning_rate_power=-0.5, initial_accumulator_value=0.1,
                 l1_regularization_strength=0.0, l2_regularization_strength=0.0, name="Ftrl",
                 l2_shrinkage_regularization_strength=0.0, **kwargs):
        super().__init__(name, **kwargs)
        for arg, value in (("initial_accumulator_value", initial_accumulator_value),
                           ("l1_regularization_strength", l1_regularization_strength),
                           ("l2_regularization_strength", l2_regularization_strength),
                           ("l2_shrinkage_regularization_strength", l2_shrinkage_regularization_strength)):
            if value < 0.0:
                raise ValueError(f"{arg} {value} must be greater than or equal to zero.")
        if learning_rate_power > 0.0:
            raise ValueError(f"learning_rate_power {learning_rate_power} must be less than or equal to zero.")
        self._set_hyper("learning_rate", kwargs.get("lr", learning_rate))
        self._set_hyper("decay", self._initial_decay)
        self._set_hyper("learning_rate_power", learning_rate_power)
        self._set_hyper("l1_regularization_strength", l1_regularization_strength)
        self._set_hyper("l2_regularization_strength", l2_regularization_strength)
        self._initial_accumulator_value = initial_accumulator_value
        self._l2_shrinkage_regularization_strength = l2_shrinkage_regularization_strength

    def _create_slots(self, var_list):
        for var in var_list:
            self.add_slot(var, "accumulator", self._initial_accumulator_value)
            self.add_slot(var, "linear")

    def _resource_apply_sparse(self, grad, indices, var):
        return self._resource_apply_dense(grad, var, resource_sparse_apply, indices)

    def _resource_apply_dense(self, grad, var, apply=resource_apply, *indices):
        dtype = var.dtype.base_dtype
        slots = [self.get_slot(var, "accumulator").handle, self.get_slot(var, "linear").handle]
        scalars = [self._coefficients_for(dtype)["lr_t"], self._get_hyper("l1_regularization_strength", dtype),
                   self._get_hyper("l2_regularization_strength", dtype)]
        if self._l2_shrinkage_regularization_strength > 0.0:
            scalars.append(cast(self._l2_shrinkage_regularization_strength, dtype))
        scalars.append(self._get_hyper("learning_rate_power", dtype))
        kind = "FtrlV2" if self._l2_shrinkage_regularization_strength > 0.0 else "Ftrl"
        return apply(kind, var.handle, slots, scalars, grad, *indices)

    def get_config(self):
        return self._config_of("learning_rate_power", "l1_regularization_strength", "l2_regularization_strength",
                               initial_accumulator_value=self._initial_accumulator_value,
                               l2_shrinkage_regularization_strength=self._l2_shrinkage_regularization_strength)


@tf_export("keras.optimizers.TFOptimizer")
class TFOptimizer:
    """tf.keras.optimizers.TFOptimizer(optimizer, iterations=None): a tf.train.Optimizer used as a
    Keras optimizer; each step goes through its apply_gradients with `iterations` (the int64
    variable "TFOptimizer/iterations" unless given) as the global step."""

    def __init__(self, optimizer, iterations=None):
        self.optimizer = optimizer
        if iterations is None:
            with name_scope(type(self).__name__):
                iterations = Variable(lambda: convert_to_tensor(0, dtype=dtypes.int64), name="iterations",
                                      trainable=False, use_resource=True)
        self.iterations = iterations

    def minimize(self, loss, var_list, grad_loss=None, name=None):
        return self.optimizer.minimize(loss() if callable(loss) else loss, global_step=self.iterations,
                                       var_list=var_list() if callable(var_list) else var_list, grad_loss=grad_loss,
                                       name=name)

    def apply_gradients(self, grads_and_vars):
        return self.optimizer.apply_gradients(grads_and_vars, global_step=self.iterations)

    def get_grads(self, loss, params):
        return self.optimizer.compute_gradients(loss, params)

    def get_updates(self, loss, params):
        return [self.apply_gradients(self.optimizer.compute_gradients(loss, params))]

    @property
    def weights(self):
        return self.optimizer.variables()

    def variables(self):
        return self.optimizer.variables()


_CLASSES = {"adadelta": Adadelta, "adagrad": Adagrad, "adam": Adam, "adamax": Adamax, "nadam": Nadam,
            "rmsprop": RMSprop, "sgd": SGD, "ftrl": Ftrl}


@tf_export("keras.optimizers.serialize")
def serialize(optimizer):
    """{"class_name": the optimizer's class, "config": its get_config()}."""
    return serialize_keras_object(optimizer)


@tf_export("keras.optimizers.deserialize")
def deserialize(config, custom_objects=None):
    """The optimizer a {"class_name", "config"} dict describes; Keras's classes are found
    whatever the case of their name ("adam", "Adam"); ValueError "Unknown optimizer: ..."."""
    if not isinstance(config, dict):
        raise ValueError(f"Could not interpret serialized optimizer: {config!r}")
    if str(config.get("class_name", "")).lower() in _CLASSES:
        config = {**config, "class_name": str(config["class_name"]).lower()}
    return deserialize_keras_object(config, _CLASSES, custom_objects, "optimizer")


@tf_export("keras.optimizers.get")
def get(identifier):
    """tf.keras.optimizers.get: a Keras optimizer as it is, a tf.train.Optimizer wrapped as a
    TFOptimizer, a config dict deserialized, a name ("adam") built with its defaults."""
    if isinstance(identifier, (OptimizerV2, TFOptimizer)):
        return identifier
    if isinstance(identifier, TrainOptimizer):
        return TFOptimizer(identifier)
    if isinstance(identifier, dict):
        return deserialize(identifier)
    if isinstance(identifier, str):
        return deserialize({"class_name": identifier, "config": {}})
    raise ValueError(f"Could not interpret optimizer identifier: {identifier!r}")


Optimizer = OptimizerV2

__getattr__, __dir__ = _api.lazy_attributes(__name__)
