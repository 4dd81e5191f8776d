"""tf.contrib.layers.optimize_loss (also slim.optimize_loss): a train op from a loss in one call:
an optimizer by name, class, instance or function, a learning rate variable with optional
decay, gradient noise, multipliers and clipping, and the optimizer's summaries."""
from __future__ import annotations

import functools

from tensorweave.contrib.slim.learning import scale_gradients
from tensorweave.framework.api import GraphKeys, get_collection
from tensorweave.framework.graph import Tensor
from tensorweave.framework.indexed_slices import IndexedSlices
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.core import shape as array_shape
from tensorweave.ops.debugging.asserts import assert_scalar
from tensorweave.ops.grouping import with_dependencies
from tensorweave.ops.math.clip import clip_by_global_norm, global_norm
from tensorweave.ops.random import random_normal
from tensorweave.ops.state.initializers import Constant
from tensorweave.ops.state.variable_scope import get_variable, variable_scope
from tensorweave.ops.state.variables import trainable_variables
from tensorweave.summary.summary import histogram, scalar
from tensorweave.train.optimizer import Optimizer
from tensorweave.train.optimizers import AdagradOptimizer, AdamOptimizer, FtrlOptimizer, GradientDescentOptimizer, \
    MomentumOptimizer, RMSPropOptimizer
from tensorweave.train.training_util import assert_global_step, get_global_step

OPTIMIZER_CLS_NAMES = {"Adagrad": AdagradOptimizer, "Adam": AdamOptimizer, "Ftrl": FtrlOptimizer,
                       "Momentum": functools.partial(MomentumOptimizer, momentum=0.9),
                       "RMSProp": RMSPropOptimizer, "SGD": GradientDescentOptimizer}
OPTIMIZER_SUMMARIES = ["learning_rate", "loss", "gradients", "gradient_norm", "global_gradient_norm"]
tf_export("contrib.layers.OPTIMIZER_CLS_NAMES", "contrib.slim.OPTIMIZER_CLS_NAMES")(OPTIMIZER_CLS_NAMES)
tf_export("contrib.layers.OPTIMIZER_SUMMARIES", "contrib.slim.OPTIMIZER_SUMMARIES")(OPTIMIZER_SUMMARIES)


def _make_optimizer(optimizer, lr, learning_rate):
    if isinstance(optimizer, str) or (isinstance(optimizer, type) and issubclass(optimizer, Optimizer)):
        if lr is None:
            raise ValueError(f"Learning rate is None, but should be specified if optimizer is string or class "
                             f"({optimizer}).")
        if isinstance(optimizer, str):
            if optimizer not in OPTIMIZER_CLS_NAMES:
                raise ValueError(f"Optimizer name should be one of [{', '.join(OPTIMIZER_CLS_NAMES)}], you provided "
                                 f"{optimizer}.")
            optimizer = OPTIMIZER_CLS_NAMES[optimizer]
        return optimizer(learning_rate=lr)
    if isinstance(optimizer, Optimizer):
        return optimizer
    if callable(optimizer):
        opt = optimizer(lr) if learning_rate is not None else optimizer()
        if not isinstance(opt, Optimizer):
            raise ValueError(f"Unrecognized optimizer: function should return subclass of Optimizer. Got {opt}.")
        return opt
    raise ValueError(f"Unrecognized optimizer: should be string, subclass of Optimizer, instance of subclass of "
                     f"Optimizer or function with one argument. Got {optimizer}.")


@tf_export("contrib.layers.optimize_loss", "contrib.slim.optimize_loss")
def optimize_loss(loss, global_step, learning_rate, optimizer, gradient_noise_scale=None, gradient_multipliers=None,
                  clip_gradients=None, learning_rate_decay_fn=None, update_ops=None, variables=None, name=None,
                  summaries=None, colocate_gradients_with_ops=False, increment_global_step=True):
    """tf.contrib.layers.optimize_loss: a tensor of the loss whose evaluation first runs
    update_ops (default UPDATE_OPS) and one step of `optimizer` ('SGD', 'Adam', 'Adagrad',
    'Ftrl', 'Momentum', 'RMSProp', an Optimizer class, instance, or function of the learning
    rate) on `variables` (default: trainable), at learning_rate (a float becomes the variable
    "OptimizeLoss/learning_rate"; learning_rate_decay_fn(lr, global_step) decays it); gradients
    get noise (gradient_noise_scale), multipliers, and clipping (a float: by global norm, or a
    function of the (gradient, variable) list); summaries from OPTIMIZER_SUMMARIES."""
    loss = convert_to_tensor(loss)
    assert_scalar(loss)
    if global_step is None:
        global_step = get_global_step()
    else:
        assert_global_step(global_step)
    with variable_scope(name, "OptimizeLoss", [loss, global_step]):
        if update_ops is None:
            update_ops = list(dict.fromkeys(get_collection(GraphKeys.UPDATE_OPS)))
        if update_ops:
            loss = with_dependencies(list(update_ops), loss)
        lr = None
        if learning_rate is not None:
            if isinstance(learning_rate, Tensor) and learning_rate.shape.ndims == 0:
                lr = learning_rate
            elif isinstance(learning_rate, float):
                if learning_rate < 0.0:
                    raise ValueError(f"Invalid learning_rate {learning_rate}.")
                lr = get_variable("learning_rate", [], trainable=False, initializer=Constant(learning_rate))
            else:
                raise ValueError(f"Learning rate should be 0d Tensor or float. Got {learning_rate} of type "
                                 f"{type(learning_rate)}")
        if summaries is None:
            summaries = ["loss", "learning_rate", "global_gradient_norm"]
        for summ in summaries:
            if summ not in OPTIMIZER_SUMMARIES:
                raise ValueError(f"Summaries should be one of [{', '.join(OPTIMIZER_SUMMARIES)}], you provided "
                                 f"{summ}.")
        if learning_rate is not None and learning_rate_decay_fn is not None:
            if global_step is None:
                raise ValueError("global_step is required for learning_rate_decay_fn.")
            lr = learning_rate_decay_fn(lr, global_step)
        if lr is not None and "learning_rate" in summaries:
            scalar("learning_rate", lr)
        opt = _make_optimizer(optimizer, lr, learning_rate)
        if variables is None:
            variables = trainable_variables()
        gradients = opt.compute_gradients(loss, variables, colocate_gradients_with_ops=colocate_gradients_with_ops)
        if gradient_noise_scale is not None:
            gradients = [(None if g is None else g + random_normal(array_shape(g)) * gradient_noise_scale, v)
                         for g, v in gradients]
        if gradient_multipliers is not None:
            gradients = scale_gradients(gradients, gradient_multipliers, lambda v: v.name, skip_none=True)
            if not gradients:
                raise ValueError("Empty list of (gradient, var) pairs encountered. This is most likely to be caused "
                                 "by an improper value of gradient_multipliers.")
        norms = "global_gradient_norm" in summaries or "gradient_norm" in summaries
        if norms:
            scalar("global_norm/gradient_norm", global_norm([g for g, _ in gradients]))
        if isinstance(clip_gradients, float):
            clipped, _ = clip_by_global_norm([g for g, _ in gradients], clip_gradients)
            gradients = list(zip(clipped, [v for _, v in gradients]))
        elif callable(clip_gradients):
            gradients = clip_gradients(gradients)
        elif clip_gradients is not None:
            raise ValueError(f"Unknown type {type(clip_gradients)} for clip_gradients")
        if "loss" in summaries:
            scalar("loss", loss)
        for gradient, variable in gradients:
            values = gradient.values if isinstance(gradient, IndexedSlices) else gradient
            if values is not None:
                var_name = variable.name.replace(":", "_")
                if "gradients" in summaries:
                    histogram(f"gradients/{var_name}", values)
                if "gradient_norm" in summaries:
                    scalar(f"gradient_norm/{var_name}", global_norm([values]))
        if clip_gradients is not None and norms:
            scalar("global_norm/clipped_gradient_norm", global_norm([g for g, _ in gradients]))
        grad_updates = opt.apply_gradients(gradients, global_step=global_step if increment_global_step else None,
                                           name="train")
        return with_dependencies([grad_updates], loss)
