"""The GPU kernels of variables, their updates, the fused optimizer updates and TF 1 control flow
(issue 25, part 4) on CuPy arrays against the same kernels on numpy arrays: each update leaves the
variable (and its slots) in device memory, holding what the numpy kernel stores."""
from __future__ import annotations

import numpy as np
import pytest

from kernel_check import build_kernel, on_gpu, run_both
from tensorweave.framework import dtypes
from tensorweave.ops import registry
from tensorweave.ops.state import optimizer_updates, ref_variables, scatter  # noqa: F401 (registers the kernels)
from tensorweave.ops.control_flow import switch_merge  # noqa: F401
from tensorweave.ops.state.variable_ops import VariableResource
from tensorweave.runtime.executor import KernelContext
from tensorweave.runtime.resources import ResourceManager

F32 = dtypes.float32
RNG = np.random.RandomState(0)
VAR = RNG.randn(5, 3).astype(np.float32)


def variable(value, name: str = "v") -> VariableResource:
    res = VariableResource(name, F32, value.shape)
    res.store(value)
    return res


def run_update(cp, op_type: str, attrs: dict, variables: list, inputs: list, rtol: float = 1e-6) -> None:
    """Runs the update `op_type` on numpy variables (CPU kernel) and on CuPy copies of them (GPU
    kernel, `inputs` where the op reads them); asserts every variable ends in device memory holding
    what the numpy run stored, and that an op's output (a ref op's: its variable) is the variable."""
    host = [variable(v.copy(), f"v{i}") for i, v in enumerate(variables)]
    device = [variable(cp.asarray(v), f"v{i}") for i, v in enumerate(variables)]
    n = len(variables)
    want = build_kernel(op_type, attrs, "CPU")(*host, *inputs)
    got = build_kernel(op_type, attrs, "GPU")(*device, *on_gpu(cp, op_type, [None] * n + list(inputs))[n:])
    assert (want is host[0]) == (got is device[0]), op_type
    for h, d in zip(host, device):
        assert isinstance(d.value, cp.ndarray), (op_type, d.name, type(d.value))
        assert d.value.dtype == h.value.dtype
        np.testing.assert_allclose(cp.asnumpy(d.value), h.value, rtol=rtol, atol=1e-6, err_msg=f"{op_type} {h.name}")


# -- variables and their updates -------------------------------------------------------------------
@pytest.mark.parametrize("op_type", ["AssignVariableOp", "AssignAddVariableOp", "AssignSubVariableOp"])
def test_resource_assignments(cupy, op_type):
    attrs = {"dtype": F32, "validate_shape": True}
    run_update(cupy, op_type, attrs, [VAR], [RNG.randn(5, 3).astype(np.float32)])


@pytest.mark.parametrize("op_type", ["Assign", "AssignAdd", "AssignSub"])
def test_ref_assignments(cupy, op_type):
    attrs = {"T": F32, "validate_shape": True, "use_locking": True}
    run_update(cupy, op_type, attrs, [VAR], [RNG.randn(5, 3).astype(np.float32)])


@pytest.mark.parametrize("kind", ["Update", "Add", "Sub"])
@pytest.mark.parametrize("prefix", ["Resource", ""])
def test_scatter_updates_with_repeated_indices(cupy, prefix, kind):
    attrs = {"dtype": F32, "T": F32, "Tindices": dtypes.int32, "use_locking": False}
    indices = np.array([4, 0, 4, 2], np.int32)
    run_update(cupy, f"{prefix}Scatter{kind}", attrs, [VAR], [indices, RNG.randn(4, 3).astype(np.float32)])
    run_update(cupy, f"{prefix}Scatter{kind}", attrs, [VAR], [indices, np.float32(2.5)])   # a scalar update


def test_reads_gather_and_initialized_flags(cupy):
    res = variable(cupy.asarray(VAR))
    got = build_kernel("ReadVariableOp", {"dtype": F32}, "GPU")(res)
    assert isinstance(got, cupy.ndarray) and np.array_equal(cupy.asnumpy(got), VAR)
    rows = np.array([3, 0, 3], np.int64)
    want = build_kernel("ResourceGather", {"dtype": F32}, "CPU")(variable(VAR), rows)
    got = build_kernel("ResourceGather", {"dtype": F32}, "GPU")(res, rows)
    assert isinstance(got, cupy.ndarray) and np.array_equal(cupy.asnumpy(got), want)
    for op_type in ("VarIsInitializedOp", "IsVariableInitialized"):
        flag = build_kernel(op_type, {"dtype": F32}, "GPU")(res)
        assert not isinstance(flag, cupy.ndarray) and bool(flag)
    assert build_kernel("RefIdentity", {"T": F32}, "GPU")(res) is res
    build_kernel("DestroyResourceOp", {}, "GPU")(res)
    assert not build_kernel("VarIsInitializedOp", {}, "GPU")(res)


def test_variable_ops_give_the_tasks_variable(cupy):
    ctx = KernelContext(ResourceManager())
    attrs = {"dtype": F32, "shape": [5, 3], "container": "", "shared_name": "w"}
    handle = build_kernel("VarHandleOp", attrs, "GPU", ctx)()
    assert build_kernel("VariableV2", attrs, "GPU", ctx)() is handle
    build_kernel("AssignVariableOp", {"dtype": F32, "validate_shape": True}, "GPU", ctx)(handle, cupy.asarray(VAR))
    assert isinstance(handle.value, cupy.ndarray)


# -- the optimizers' fused updates -------------------------------------------------------------------
SCALARS = {"alpha": 0.1, "lr": 0.05, "momentum": 0.9, "beta1_power": 0.9 ** 3, "beta2_power": 0.999 ** 3,
           "beta1": 0.9, "beta2": 0.999, "epsilon": 1e-7, "rho": 0.9}
RULES = ["GradientDescent", "Momentum", "Adam", "RMSProp", "CenteredRMSProp", "Adagrad", "Adadelta"]
FORMS = ["ResourceApply", "Apply", "ResourceSparseApply", "SparseApply"]
UPDATES = [(form, rule, nesterov) for rule in RULES for form in FORMS for nesterov in (False, True)
           if (nesterov is False or rule in ("Momentum", "Adam"))   # (use_nesterov: theirs only)
           and f"{form}{rule}" not in ("SparseApplyGradientDescent", "SparseApplyAdam")]   # (TF has neither)


def optimizer_case(rule_name: str, sparse: bool):
    """(variables: var and its slots, the other inputs in the op's order)."""
    rule = optimizer_updates._BY_NAME[rule_name]
    names = optimizer_updates._input_names(rule, sparse)
    indices = np.array([1, 4, 1], np.int32)
    slots = [np.abs(RNG.randn(5, 3)).astype(np.float32) * 0.1 for _ in range(rule.n_slots)]
    if rule_name == "CenteredRMSProp":   # mg small beside ms: ms - mg^2 stays positive
        slots[0] = slots[0] * 0.1
    grad = RNG.randn(len(indices) if sparse else 5, 3).astype(np.float32)
    others = {"grad": grad, "indices": indices}
    others.update({n: np.float32(v) for n, v in SCALARS.items()})
    return [VAR] + slots, [others[n] for n in names[1 + rule.n_slots:]]


def test_every_listed_update_has_a_gpu_kernel():
    assert all(registry.has_kernel(form + rule, "GPU") for form, rule, _ in UPDATES)


@pytest.mark.parametrize("form,rule_name,nesterov", UPDATES)
def test_optimizer_updates(cupy, form, rule_name, nesterov):
    op_type = form + rule_name
    variables, inputs = optimizer_case(rule_name, "Sparse" in form)
    attrs = {"T": F32, "Tindices": dtypes.int32, "use_locking": False, "use_nesterov": nesterov}
    run_update(cupy, op_type, attrs, variables, inputs, rtol=1e-5)


# -- TF 1 control flow --------------------------------------------------------------------------------
def test_switch_merge_and_loop_cond(cupy):
    x = RNG.randn(4).astype(np.float32)
    for pred in (np.bool_(True), np.bool_(False)):
        run_both(cupy, "Switch", {"T": F32}, [x, pred])
        run_both(cupy, "LoopCond", {}, [pred])
    dead = registry.DEAD
    want, got = run_both(cupy, "Merge", {"T": F32, "N": 2}, [dead, x])
    assert got[1] == 1
    res = variable(cupy.asarray(VAR))
    assert build_kernel("RefSwitch", {"T": F32}, "GPU")(res, np.bool_(True)) == (dead, res)
