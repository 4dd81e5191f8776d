"""Graph-scope functions at the top level of the TF1 API (tf.name_scope, tf.device, ...)."""
from __future__ import annotations

import contextlib

from tensorweave.framework.graph import Operation, Tensor, get_default_graph
from tensorweave.framework.tf_export import tf_export


@tf_export("GraphKeys")
class GraphKeys:
    """Standard collection names (TF1 `tf.GraphKeys`)."""
    GLOBAL_VARIABLES = "variables"
    VARIABLES = GLOBAL_VARIABLES
    LOCAL_VARIABLES = "local_variables"
    METRIC_VARIABLES = "metric_variables"
    MODEL_VARIABLES = "model_variables"
    TRAINABLE_VARIABLES = "trainable_variables"
    SUMMARIES = "summaries"
    QUEUE_RUNNERS = "queue_runners"
    TABLE_INITIALIZERS = "table_initializer"
    ASSET_FILEPATHS = "asset_filepaths"
    MOVING_AVERAGE_VARIABLES = "moving_average_variables"
    REGULARIZATION_LOSSES = "regularization_losses"
    CONCATENATED_VARIABLES = "concatenated_variables"
    SAVERS = "savers"
    WEIGHTS = "weights"
    BIASES = "biases"
    ACTIVATIONS = "activations"
    UPDATE_OPS = "update_ops"
    LOSSES = "losses"
    SAVEABLE_OBJECTS = "saveable_objects"
    RESOURCES = "resources"
    LOCAL_RESOURCES = "local_resources"
    TRAINABLE_RESOURCE_VARIABLES = "trainable_resource_variables"
    INIT_OP = "init_op"
    LOCAL_INIT_OP = "local_init_op"
    READY_OP = "ready_op"
    READY_FOR_LOCAL_INIT_OP = "ready_for_local_init_op"
    SUMMARY_OP = "summary_op"
    GLOBAL_STEP = "global_step"
    EVAL_STEP = "eval_step"
    TRAIN_OP = "train_op"
    COND_CONTEXT = "cond_context"
    WHILE_CONTEXT = "while_context"


def graph_from_inputs(values):
    """TF's rule: the default graph while it builds a function body, else the values' graph."""
    default = get_default_graph()
    if default.building_function:
        return default
    for v in values or ():
        g = getattr(v, "graph", None)
        if g is not None:
            return g
    return default


@tf_export("name_scope", "op_scope")
@contextlib.contextmanager
def name_scope(name, default_name=None, values=None):
    """tf.name_scope(name, default_name=None, values=None): yields the scope string 'a/b/'."""
    if not name and default_name is not None:
        name = default_name
    g = graph_from_inputs(values)
    with g.as_default(), g.name_scope(name) as scope:
        yield scope


op_scope = name_scope


@tf_export("get_name_scope", "contrib.framework.get_name_scope")
def get_name_scope() -> str:
    return get_default_graph().get_name_scope()


@tf_export("device")
def device(device_name_or_function):
    """tf.device(device_name_or_function): pins ops created inside to a device."""
    return get_default_graph().device(device_name_or_function)


@tf_export("control_dependencies")
def control_dependencies(control_inputs):
    """tf.control_dependencies(control_inputs); None clears the enclosing dependencies."""
    return get_default_graph().control_dependencies(control_inputs)


@tf_export("colocate_with")
def colocate_with(op, ignore_existing: bool = False):
    """tf.colocate_with(op, ignore_existing=False)."""
    if op is not None and not isinstance(op, (Tensor, Operation)) and hasattr(op, "op"):
        op = op.op
    return get_default_graph().colocate_with(op, ignore_existing)


@tf_export("container")
@contextlib.contextmanager
def container(container_name: str):
    """tf.container(name): stateful ops created inside live in that resource container."""
    g = get_default_graph()
    saved, g._container = g._container, container_name
    try:
        yield container_name
    finally:
        g._container = saved


@tf_export("get_collection")
def get_collection(key, scope=None) -> list:
    return get_default_graph().get_collection(key, scope)


@tf_export("get_collection_ref")
def get_collection_ref(key) -> list:
    return get_default_graph().get_collection_ref(key)


@tf_export("add_to_collection")
def add_to_collection(name, value) -> None:
    get_default_graph().add_to_collection(name, value)


@tf_export("add_to_collections")
def add_to_collections(names, value) -> None:
    get_default_graph().add_to_collections(names, value)


@tf_export("disable_eager_execution")
def disable_eager_execution() -> None:
    """Accepted for TF1 programs; tensorweave is always in graph mode."""


@tf_export("disable_v2_behavior")
def disable_v2_behavior() -> None:
    """Accepted for TF1 programs; tensorweave is always TF1."""


@tf_export("disable_control_flow_v2")
def disable_control_flow_v2() -> None:
    """Accepted for TF1 programs: tf.cond and tf.while_loop always build TF1 control flow
    (Switch/Merge, Enter/Exit) here."""


@tf_export("control_flow_v2_enabled")
def control_flow_v2_enabled() -> bool:
    """False: TF1 control flow is the only kind."""
    return False


@tf_export("disable_tensor_equality")
def disable_tensor_equality() -> None:
    """Accepted for TF1 programs: `==` on tensors is always object identity (TF1), so tensors
    key dicts and sets."""


@tf_export("disable_v2_tensorshape")
def disable_v2_tensorshape() -> None:
    """Accepted for TF1 programs: TensorShape always holds TF1 Dimension objects
    (`shape[i].value`)."""


@tf_export("executing_eagerly")
def executing_eagerly() -> bool:
    return False
