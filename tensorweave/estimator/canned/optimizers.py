"""The optimizer argument of TF 1.15's premade Estimators (estimator/canned/optimizers.py): a
name ('Adagrad', 'Adam', 'Ftrl', 'RMSProp', 'SGD', made with the Estimator's default learning
rate), an Optimizer, or a callable returning one (called in each model_fn call)."""
from __future__ import annotations

from tensorweave.train.optimizer import Optimizer
from tensorweave.train.optimizers import (AdagradOptimizer, AdamOptimizer, FtrlOptimizer, GradientDescentOptimizer,
                                          RMSPropOptimizer)

OPTIMIZER_CLS_NAMES = {"Adagrad": AdagradOptimizer, "Adam": AdamOptimizer, "Ftrl": FtrlOptimizer,
                       "RMSProp": RMSPropOptimizer, "SGD": GradientDescentOptimizer}


def get_optimizer_instance(opt, learning_rate=None) -> Optimizer:
    """An Optimizer from `opt`: a name (made with learning_rate), an instance, or a callable."""
    if isinstance(opt, str):
        if opt not in OPTIMIZER_CLS_NAMES:
            raise ValueError(f"Unsupported optimizer name: {opt}. Supported names are: "
                             f"{tuple(sorted(OPTIMIZER_CLS_NAMES))}")
        if not learning_rate:
            raise ValueError("learning_rate must be specified when opt is string.")
        return OPTIMIZER_CLS_NAMES[opt](learning_rate=learning_rate)
    if callable(opt) and not isinstance(opt, Optimizer):
        opt = opt()
    if not isinstance(opt, Optimizer):
        raise ValueError(f"The given object is not an Optimizer instance. Given: {opt}")
    return opt
