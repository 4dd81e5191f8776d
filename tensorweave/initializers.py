"""tf.initializers namespace (TF1.15): initializer classes by their short names, and the
variable-initializing ops."""
from __future__ import annotations

from tensorweave.ops.state.initializers import (  # noqa: F401
    Constant as constant, GlorotNormal as glorot_normal, GlorotUniform as glorot_uniform, Identity as identity,
    Ones as ones, Orthogonal as orthogonal, RandomNormal as random_normal, RandomUniform as random_uniform,
    TruncatedNormal as truncated_normal, UniformUnitScaling as uniform_unit_scaling,
    VarianceScaling as variance_scaling, Zeros as zeros, he_normal, he_uniform, lecun_normal, lecun_uniform)
from tensorweave.ops.state.variables import (  # noqa: F401
    global_variables_initializer as global_variables, local_variables_initializer as local_variables,
    variables_initializer as variables)
