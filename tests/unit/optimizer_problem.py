"""The small problem that test_optimizers.py runs and fixtures/record_tf_optimizer_updates.py
recorded from TensorFlow, defined once so that the recorded numbers always belong to the inputs
the test feeds. numpy (and the C library) only: the recorder imports it under real TensorFlow."""
from __future__ import annotations

import ctypes
import ctypes.util

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


def _pow_rounds_apart(g: np.ndarray, dtype) -> np.ndarray:
    """Whether Ftrl's first accumulator, 0.1 + g^2 in `dtype`, is a value whose square root the C
    library's pow (powf for float32) rounds differently from sqrt. Called here one value at a
    time: numpy's power is another on machines where numpy has a vector pow of its own (AVX-512)."""
    accum = dtype(0.1) + g.astype(dtype) * g.astype(dtype)
    c_type = ctypes.c_float if dtype == np.float32 else ctypes.c_double
    pow_ = getattr(ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6"), "powf" if dtype == np.float32 else "pow")
    pow_.restype, pow_.argtypes = c_type, [c_type, c_type]
    return np.array([pow_(a, 0.5) != r for a, r in zip(accum.tolist(), np.sqrt(accum).tolist())])


# Rows of one element (a linear model's [features, 1] weights), where TF's sparse Adagrad,
# ProximalAdagrad, Ftrl and AdagradDA kernels take their scalar branch; the later steps repeat
# rows, which TF's sparse SGD (a ScatterAdd) adds one by one. The first step's gradients,
# each on a row of its own, are such g's: half of them in float32, half in float64.
_RNG = np.random.RandomState(7)
RVAR0 = _RNG.standard_normal((512, 1))
_G = np.sqrt(_RNG.random_sample(400000) * 3)
_G = np.concatenate([_G[_pow_rounds_apart(_G, np.float32)][:200], _G[_pow_rounds_apart(_G, np.float64)][:200]])
RIDX = [_RNG.permutation(512)[:400]] + [_RNG.randint(0, 512, 400) for _ in range(2)]
RVALS = [(_G * _RNG.choice([-1.0, 1.0], 400))[:, None]] + [_RNG.standard_normal((400, 1)) for _ in range(2)]
ROW_OPTIMIZERS = ("sgd", "adagrad", "proximal_adagrad", "proximal_adagrad_l1l2", "ftrl", "ftrl_l1l2", "ftrl_shrink_pow",
                  "adagrad_da", "adagrad_da_l1l2")


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
