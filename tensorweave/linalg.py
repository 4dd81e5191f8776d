"""tf.linalg namespace (TF1 names): products, decompositions, solvers, functions of matrices and
the diagonal/band helpers."""
from __future__ import annotations

from tensorweave.ops.array.core import matrix_transpose  # noqa: F401
from tensorweave.ops.array.diag import (  # noqa: F401
    diag as tensor_diag, diag_part as tensor_diag_part, matrix_band_part as band_part, matrix_diag as diag,
    matrix_diag_part as diag_part, matrix_set_diag as set_diag)
from tensorweave.ops.math.clip import global_norm  # noqa: F401
from tensorweave.ops.math.decompositions import (  # noqa: F401
    cholesky, logdet, matrix_rank, qr, self_adjoint_eig as eigh, self_adjoint_eigvals as eigvalsh, svd)
from tensorweave.ops.math.linalg import cross, einsum, eye, matmul, norm, normalize, tensordot, trace  # noqa: F401
from tensorweave.ops.math.matrix_functions import (  # noqa: F401
    adjoint, matrix_determinant as det, matrix_exponential as expm, matrix_inverse as inv, matrix_logarithm as logm,
    matrix_square_root as sqrtm, slogdet)
from tensorweave.ops.math.solvers import (  # noqa: F401
    cholesky_solve, matrix_solve as solve, matrix_solve_ls as lstsq, matrix_triangular_solve as triangular_solve,
    matvec)
from tensorweave.ops.nn.impl import l2_normalize  # noqa: F401

transpose = matrix_transpose

__all__ = [n for n in dir() if not n.startswith("_") and n != "annotations"]
