"""The one compiled module, tensorweave/ops/state/_fused_updates.c (optimizer updates in one pass
over memory). Optional: where it does not build (no C compiler), the install goes on and the
numpy formulas run. Everything else is declared in pyproject.toml."""
from setuptools import Extension, setup

# -ffp-contract=off: no fused multiply-adds, so each operation rounds as numpy's does;
# -fno-math-errno: sqrt as one instruction (errno is nobody's concern here)
_GCC_FLAGS = ["-O3", "-ffp-contract=off", "-fno-math-errno"]

setup(ext_modules=[Extension("tensorweave.ops.state._fused_updates", ["tensorweave/ops/state/_fused_updates.c"],
                             extra_compile_args=_GCC_FLAGS, optional=True),
                   Extension("tensorweave.ops._ordered_sum", ["tensorweave/ops/_ordered_sum.c"],
                             extra_compile_args=_GCC_FLAGS, optional=True),
                   Extension("tensorweave.distributed._arena", ["tensorweave/distributed/_arena.c"],
                             extra_compile_args=["-O2"], optional=True)])
