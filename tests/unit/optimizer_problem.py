"""The small problem that test_optimizers.py runs and fixtures/record_tf_optimizer_updates.py
recorded from TensorFlow, defined once so that the recorded numbers always belong to the inputs
the test feeds. numpy only: the recorder imports it under real TensorFlow."""
from __future__ import annotations

import numpy as np

VAR0 = np.array([[1.0, -2.0], [0.5, 3.0], [-1.5, 0.25]])
GRADS = [np.array([[0.1, -0.2], [0.3, 0.05], [-0.4, 0.6]]),
         np.array([[-0.3, 0.1], [0.2, -0.5], [0.15, 0.25]]),
         np.array([[0.05, 0.4], [-0.1, 0.2], [0.3, -0.35]])]
SVAR0 = np.array([[1.0, -2.0], [0.5, 3.0], [-1.5, 0.25], [2.0, -0.75]])
SIDX = [np.array([0, 2, 0]), np.array([3, 1]), np.array([2, 2, 1])]
SVALS = [np.array([[0.1, -0.2], [0.3, 0.05], [-0.4, 0.6]]),
         np.array([[-0.3, 0.1], [0.2, -0.5]]),
         np.array([[0.05, 0.4], [-0.1, 0.2], [0.3, -0.35]])]


def optimizers(train) -> dict:
    """Case name -> a function making that optimizer from `train` (tensorweave's tf.train, or
    TensorFlow's tf.compat.v1.train), in the graph where the problem's global step
    (train.get_or_create_global_step, which apply_gradients advances) lives."""
    return {
        "sgd": lambda: train.GradientDescentOptimizer(0.1),
        "momentum": lambda: train.MomentumOptimizer(0.1, 0.9),
        "nesterov": lambda: train.MomentumOptimizer(0.1, 0.9, use_nesterov=True),
        "adam": lambda: train.AdamOptimizer(0.1),
        "adagrad": lambda: train.AdagradOptimizer(0.1),
        "rmsprop": lambda: train.RMSPropOptimizer(0.1),
        "rmsprop_mom_centered": lambda: train.RMSPropOptimizer(0.1, decay=0.8, momentum=0.5, epsilon=1e-6,
                                                               centered=True),
        "adadelta": lambda: train.AdadeltaOptimizer(1.0),
        "ftrl": lambda: train.FtrlOptimizer(0.1),
        "ftrl_l1l2": lambda: train.FtrlOptimizer(0.1, l1_regularization_strength=0.05,
                                                 l2_regularization_strength=0.1),
        "ftrl_shrink_pow": lambda: train.FtrlOptimizer(0.1, learning_rate_power=-0.7,
                                                       l1_regularization_strength=0.01,
                                                       l2_regularization_strength=0.02,
                                                       l2_shrinkage_regularization_strength=0.03),
        "proximal_sgd_l1l2": lambda: train.ProximalGradientDescentOptimizer(0.1, l1_regularization_strength=0.05,
                                                                            l2_regularization_strength=0.1),
        "proximal_sgd_l2": lambda: train.ProximalGradientDescentOptimizer(0.1, l2_regularization_strength=0.1),
        "proximal_adagrad": lambda: train.ProximalAdagradOptimizer(0.1),
        "proximal_adagrad_l1l2": lambda: train.ProximalAdagradOptimizer(0.1, initial_accumulator_value=0.2,
                                                                        l1_regularization_strength=0.05,
                                                                        l2_regularization_strength=0.1),
        "adagrad_da": lambda: train.AdagradDAOptimizer(0.1, train.get_or_create_global_step()),
        "adagrad_da_l1l2": lambda: train.AdagradDAOptimizer(0.1, train.get_or_create_global_step(),
                                                            initial_gradient_squared_accumulator_value=0.2,
                                                            l1_regularization_strength=0.01,
                                                            l2_regularization_strength=0.02),
    }
