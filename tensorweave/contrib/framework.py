"""tf.contrib.framework: arg_scope (default arguments for decorated layer functions) and the
variable helpers slim programs use: model variables, lookups by scope, name and suffix, the
variables to restore, and initialising variables from a checkpoint (also tf.contrib.slim's)."""
from __future__ import annotations

import contextlib
import functools
import logging
import re
from types import SimpleNamespace

from tensorweave import _api
from tensorweave.framework import dtypes
from tensorweave.framework.device import DeviceSpec
from tensorweave.framework.api import GraphKeys, add_to_collection, device as device_scope, get_collection
from tensorweave.framework.graph import get_default_graph
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.core import placeholder
from tensorweave.ops.checkpoint.reader import NewCheckpointReader
from tensorweave.ops.grouping import group
from tensorweave.ops.state.variable_scope import VariableScope, get_variable, get_variable_scope
from tensorweave.ops.state.variable_ops import assign
from tensorweave.ops.state.variables import Variable
from tensorweave.train.saver import Saver
from tensorweave.train.training_util import assert_global_step, get_global_step

__getattr__, __dir__ = _api.lazy_attributes(__name__)   # the names tf.contrib.framework gathers from elsewhere

_log = logging.getLogger("tensorweave")

# The stack of arg scopes: each entry maps a decorated function's key to its default kwargs.
_ARG_STACK: list = [{}]
# {key of a decorated function: the names of its keyword arguments}
_DECORATED_OPS: dict = {}


def _key(op) -> str:
    return getattr(op, "_key_op", str(op))


@tf_export("contrib.framework.current_arg_scope", "contrib.slim.current_arg_scope")
def current_arg_scope() -> dict:
    """The innermost arg scope: {function key: {argument: default}}."""
    return _ARG_STACK[-1]


@tf_export("contrib.framework.arg_scope", "contrib.slim.arg_scope")
@contextlib.contextmanager
def arg_scope(list_ops_or_scope, **kwargs):
    """tf.contrib.framework.arg_scope(list_ops_or_scope, **kwargs): inside the block, each function
    of the list (decorated with add_arg_scope) takes `kwargs` as defaults; explicit arguments win
    and inner scopes override outer ones. A dict (a scope yielded before) re-enters that scope."""
    if isinstance(list_ops_or_scope, dict):
        if kwargs:
            raise ValueError("When attempting to re-use a scope by suppling a dictionary, kwargs must be empty.")
        scope = list_ops_or_scope.copy()
    else:
        if not isinstance(list_ops_or_scope, (list, tuple)):
            raise TypeError("list_ops_or_scope must either be a list/tuple or reused scope (i.e. dict)")
        scope = current_arg_scope().copy()
        for op in list_ops_or_scope:
            if not has_arg_scope(op):
                raise ValueError(f"{(getattr(op, '__module__', None), getattr(op, '__name__', op))} is not "
                                 "decorated with @add_arg_scope")
            key = _key(op)
            scope[key] = {**scope.get(key, {}), **kwargs}
    _ARG_STACK.append(scope)
    try:
        yield scope
    finally:
        _ARG_STACK.pop()


@tf_export("contrib.framework.add_arg_scope", "contrib.slim.add_arg_scope")
def add_arg_scope(func):
    """tf.contrib.framework.add_arg_scope(func): func, taking its defaults from the enclosing
    arg_scope blocks that name it."""
    key = _key(func)

    @functools.wraps(func)
    def func_with_args(*args, **kwargs):
        defaults = current_arg_scope().get(key)
        return func(*args, **({**defaults, **kwargs} if defaults else kwargs))

    code = func.__code__
    n_defaults = len(func.__defaults__ or ())
    _DECORATED_OPS[key] = code.co_varnames[code.co_argcount - n_defaults:code.co_argcount]
    func_with_args._key_op = key
    return func_with_args


@tf_export("contrib.framework.has_arg_scope", "contrib.slim.has_arg_scope")
def has_arg_scope(func) -> bool:
    """Whether func was decorated with add_arg_scope."""
    return _key(func) in _DECORATED_OPS


@tf_export("contrib.framework.arg_scoped_arguments", "contrib.slim.arg_scoped_arguments")
def arg_scoped_arguments(func) -> tuple:
    """The names of the keyword arguments an arg_scope can set for func (decorated)."""
    if not has_arg_scope(func):
        raise ValueError(f"{func} is not decorated with @add_arg_scope")
    return _DECORATED_OPS[_key(func)]


# -- variables ------------------------------------------------------------------------------------
@tf_export("contrib.framework.variable", "contrib.slim.variable")
@add_arg_scope
def variable(name, shape=None, dtype=None, initializer=None, regularizer=None, trainable=True, collections=None,
             caching_device=None, device=None, partitioner=None, custom_getter=None, use_resource=None,
             synchronization=None, aggregation=None):
    """tf.contrib.framework.variable: get_variable in `collections` (default GLOBAL_VARIABLES),
    on `device` when given; a custom_getter is called in its place with the full name."""
    collections = list(dict.fromkeys(collections if collections is not None else [GraphKeys.GLOBAL_VARIABLES]))
    kwargs = dict(shape=shape, dtype=dtype, initializer=initializer, regularizer=regularizer, trainable=trainable,
                  collections=collections, caching_device=caching_device, partitioner=partitioner,
                  use_resource=use_resource)
    getter = get_variable
    if custom_getter is not None:
        getter = functools.partial(custom_getter, reuse=get_variable_scope().reuse)
        kwargs["dtype"] = dtype or dtypes.float32
    with device_scope(variable_device(device, name)) if device else contextlib.nullcontext():
        return getter(name, **kwargs)


@tf_export("contrib.framework.variable_device")
def variable_device(device, name):
    """The device of the variable `name` about to be created: `device`, or what the device
    function `device` says for it (asked once, with the variable's VariableV2 node), so that all
    of the variable's ops stay together."""
    if callable(device):
        scope = get_default_graph().get_name_scope()
        full_name = f"{scope}/{name}" if scope else name
        device = device(SimpleNamespace(name=full_name, op="VariableV2", type="VariableV2", device=""))
    return device or ""


@tf_export("contrib.framework.model_variable", "contrib.slim.model_variable")
@add_arg_scope
def model_variable(name, shape=None, dtype=dtypes.float32, initializer=None, regularizer=None, trainable=True,
                   collections=None, caching_device=None, device=None, partitioner=None, custom_getter=None,
                   use_resource=None, synchronization=None, aggregation=None):
    """tf.contrib.framework.model_variable: a variable also in MODEL_VARIABLES (the variables a
    model is made of, which slim saves and restores)."""
    collections = list(collections or []) + [GraphKeys.GLOBAL_VARIABLES, GraphKeys.MODEL_VARIABLES]
    return variable(name, shape=shape, dtype=dtype, initializer=initializer, regularizer=regularizer,
                    trainable=trainable, collections=collections, caching_device=caching_device, device=device,
                    partitioner=partitioner, custom_getter=custom_getter, use_resource=use_resource)


@tf_export("contrib.framework.local_variable", "contrib.slim.local_variable")
def local_variable(initial_value, validate_shape=True, name=None, use_resource=None):
    """tf.contrib.framework.local_variable: a non-trainable variable in LOCAL_VARIABLES."""
    return Variable(initial_value, trainable=False, collections=[GraphKeys.LOCAL_VARIABLES],
                    validate_shape=validate_shape, name=name)


@tf_export("contrib.framework.add_model_variable", "contrib.slim.add_model_variable")
def add_model_variable(var) -> None:
    """Adds var to MODEL_VARIABLES (once)."""
    if var not in get_collection(GraphKeys.MODEL_VARIABLES):
        add_to_collection(GraphKeys.MODEL_VARIABLES, var)


@tf_export("contrib.framework.get_variables", "contrib.slim.get_variables")
def get_variables(scope=None, suffix=None, collection=GraphKeys.GLOBAL_VARIABLES) -> list:
    """The variables of `collection` whose names match `scope` (a prefix regex or a VariableScope)
    and end with `suffix`."""
    if isinstance(scope, VariableScope):
        scope = scope.name
    if suffix is not None:
        if ":" not in suffix:
            suffix += ":"
        scope = (scope or "") + ".*" + suffix
    return get_collection(collection, scope)


@tf_export("contrib.framework.get_model_variables", "contrib.slim.get_model_variables")
def get_model_variables(scope=None, suffix=None) -> list:
    return get_variables(scope, suffix, GraphKeys.MODEL_VARIABLES)


@tf_export("contrib.framework.get_local_variables", "contrib.slim.get_local_variables")
def get_local_variables(scope=None, suffix=None) -> list:
    return get_variables(scope, suffix, GraphKeys.LOCAL_VARIABLES)


@tf_export("contrib.framework.get_trainable_variables", "contrib.slim.get_trainable_variables")
def get_trainable_variables(scope=None, suffix=None) -> list:
    return get_variables(scope, suffix, GraphKeys.TRAINABLE_VARIABLES)


@tf_export("contrib.framework.get_variables_to_restore", "contrib.slim.get_variables_to_restore")
def get_variables_to_restore(include=None, exclude=None) -> list:
    """The global variables under the scopes of `include` (all when None) and under none of the
    scopes of `exclude` (lists or tuples of scope names)."""
    if include is None:
        chosen = get_variables()
    else:
        if not isinstance(include, (list, tuple)):
            raise TypeError("include is provided but is not a list or a tuple.")
        chosen = [v for scope in include for v in get_variables(scope)]
    excluded = set()
    if exclude is not None:
        if not isinstance(exclude, (list, tuple)):
            raise TypeError("exclude is provided but is not a list or a tuple.")
        excluded = {id(v) for scope in exclude for v in get_variables(scope)}
    return [v for v in chosen if id(v) not in excluded]


@tf_export("contrib.framework.get_variables_by_suffix", "contrib.slim.get_variables_by_suffix")
def get_variables_by_suffix(suffix, scope=None) -> list:
    return get_variables(scope=scope, suffix=suffix)


@tf_export("contrib.framework.get_variables_by_name", "contrib.slim.get_variables_by_name")
def get_variables_by_name(given_name, scope=None) -> list:
    """The variables whose last name component is given_name."""
    return get_variables(scope=scope, suffix=f"/{given_name}:|^{given_name}:")


@tf_export("contrib.framework.get_unique_variable", "contrib.slim.get_unique_variable")
def get_unique_variable(var_op_name):
    """The one variable named var_op_name (ValueError when none or several match)."""
    candidates = get_variables(scope=var_op_name)
    if not candidates:
        raise ValueError(f"Couldn't find variable {var_op_name}")
    for candidate in candidates:
        if candidate.op.name == var_op_name:
            return candidate
    raise ValueError(f"Variable {var_op_name} does not uniquely identify a variable")


@tf_export("contrib.framework.get_variable_full_name", "contrib.slim.get_variable_full_name")
def get_variable_full_name(var) -> str:
    """The name var is saved under: its partitioned variable's name for a part, else its op's."""
    info = getattr(var, "_save_slice_info", None)
    return info.full_name if info else var.op.name


@tf_export("contrib.framework.filter_variables", "contrib.slim.filter_variables")
def filter_variables(var_list, include_patterns=None, exclude_patterns=None, reg_search=True) -> list:
    """The variables of var_list whose names match an include pattern (all when None) and no
    exclude pattern (regular expressions searched, or matched from the start)."""
    find = re.search if reg_search else re.match

    def hits(name, patterns):
        return any(find(p, name) for p in patterns)
    return [v for v in var_list if (include_patterns is None or hits(v.name, include_patterns))
            and not (exclude_patterns and hits(v.name, exclude_patterns))]


def _grouped_by_checkpoint_name(var_list) -> dict:
    if isinstance(var_list, (list, tuple)):
        grouped: dict = {}
        for var in var_list:
            grouped.setdefault(get_variable_full_name(var), []).append(var)
        return grouped
    return {name: list(v) if isinstance(v, (list, tuple)) else [v] for name, v in var_list.items()}


@tf_export("contrib.framework.assign_from_checkpoint", "contrib.slim.assign_from_checkpoint")
def assign_from_checkpoint(model_path, var_list, ignore_missing_vars=False):
    """tf.contrib.framework.assign_from_checkpoint(model_path, var_list, ignore_missing_vars=False):
    (assign_op, feed_dict): running assign_op with feed_dict sets each variable (a list, or a dict
    {name in the checkpoint: variable or list}) to its value in the checkpoint at model_path."""
    reader = NewCheckpointReader(model_path)
    feed_dict, assign_ops = {}, []
    for ckpt_name, variables in _grouped_by_checkpoint_name(var_list).items():
        if not reader.has_tensor(ckpt_name):
            message = f"Checkpoint is missing variable [{ckpt_name}]"
            if ignore_missing_vars:
                _log.warning(message)
                continue
            raise ValueError(message)
        value = reader.get_tensor(ckpt_name)
        for var in variables:
            if getattr(var, "_save_slice_info", None):
                raise ValueError(f"assign_from_checkpoint: {var.op.name} is a part of a partitioned variable; "
                                 "restore partitioned variables with assign_from_checkpoint_fn")
            if var.shape.as_list() != list(value.shape):
                raise ValueError(f"Total size of new array must be unchanged for {ckpt_name} lh_shape: "
                                 f"[{value.shape}], rh_shape: [{var.shape}]")
            fed = placeholder(var.dtype.base_dtype, var.shape, name="placeholder/" + var.op.name)
            assign_ops.append(assign(var, fed))
            feed_dict[fed] = value
    return group(*assign_ops), feed_dict


@tf_export("contrib.framework.assign_from_checkpoint_fn", "contrib.slim.assign_from_checkpoint_fn")
def assign_from_checkpoint_fn(model_path, var_list, ignore_missing_vars=False, reshape_variables=False):
    """tf.contrib.framework.assign_from_checkpoint_fn(model_path, var_list, ignore_missing_vars=False,
    reshape_variables=False): a function of a session that restores var_list (a list, or a dict
    {name in the checkpoint: variable}) from model_path; with ignore_missing_vars, variables the
    checkpoint lacks are skipped (None when none is left)."""
    if not var_list:
        raise ValueError("var_list cannot be empty")
    if ignore_missing_vars:
        reader = NewCheckpointReader(model_path)
        by_name = var_list if isinstance(var_list, dict) else {v.op.name: v for v in var_list}
        var_list = {}
        for name, var in by_name.items():
            if reader.has_tensor(name):
                var_list[name] = var
            else:
                _log.warning("Variable %s missing in checkpoint %s", name, model_path)
    if not var_list:
        _log.warning("No Variables to restore")
        return None
    saver = Saver(var_list, reshape=reshape_variables)

    def callback(session):
        saver.restore(session, model_path)
    return callback


@tf_export("contrib.framework.assign_from_values", "contrib.slim.assign_from_values")
def assign_from_values(var_names_to_values):
    """(assign_op, feed_dict) setting each model variable named in var_names_to_values
    {variable op name: numpy value} to its value."""
    feed_dict, assign_ops = {}, []
    for name, value in var_names_to_values.items():
        found = get_variables(name)
        if not found:
            raise ValueError(f"Variable {name} wasn't found")
        if len(found) > 1:
            raise ValueError(f"Variable {name} doesn't uniquely identify a variable")
        var = found[0]
        fed = placeholder(var.dtype.base_dtype, var.shape, name="placeholder/" + var.op.name)
        assign_ops.append(assign(var, fed))
        feed_dict[fed] = value
    return group(*assign_ops), feed_dict


@tf_export("contrib.framework.assign_from_values_fn", "contrib.slim.assign_from_values_fn")
def assign_from_values_fn(var_names_to_values):
    """A function of a session that runs assign_from_values(var_names_to_values)."""
    assign_op, feed_dict = assign_from_values(var_names_to_values)

    def callback(session):
        return session.run(assign_op, feed_dict)
    return callback


@tf_export("contrib.framework.assert_or_get_global_step", "contrib.slim.assert_or_get_global_step")
def assert_or_get_global_step(graph=None, global_step_tensor=None):
    """global_step_tensor checked to be a valid global step, or the graph's global step (None
    when it has none)."""
    if global_step_tensor is None:
        return get_global_step(graph)
    assert_global_step(global_step_tensor)
    return global_step_tensor


@tf_export("contrib.framework.VariableDeviceChooser", "contrib.slim.VariableDeviceChooser")
class VariableDeviceChooser:
    """tf.contrib.framework.VariableDeviceChooser(num_tasks=0, job_name='ps', device_type='CPU',
    device_index=0, replica=None): a device function placing each new variable on the next of
    num_tasks tasks of job_name, round robin (with num_tasks 0, on the device alone); pass it as
    slim.variable's `device`."""

    def __init__(self, num_tasks=0, job_name="ps", device_type="CPU", device_index=0, replica=None):
        self._job_name, self._device_type, self._device_index = job_name, device_type, device_index
        self._replica, self._num_tasks = replica, num_tasks
        self._next_task_id = 0

    def __call__(self, op) -> str:
        job = task = None
        if self._num_tasks > 0:
            job, task = self._job_name, self._next_task_id
            self._next_task_id = (self._next_task_id + 1) % self._num_tasks
        return DeviceSpec(job=job, replica=self._replica, task=task, device_type=self._device_type,
                          device_index=self._device_index).to_string()
