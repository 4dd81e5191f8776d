"""tf.saved_model.main_op: the op a loader runs after restoring the variables."""
from __future__ import annotations

from tensorweave.framework.api import GraphKeys
from tensorweave.framework.graph import get_default_graph
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.grouping import group
from tensorweave.ops.state.variables import global_variables_initializer, local_variables_initializer


@tf_export("saved_model.main_op.main_op")
def main_op():
    """tf.saved_model.main_op.main_op(): one op that initializes the global and local variables
    and the tables (the TABLE_INITIALIZERS collection, TF's tables_initializer)."""
    tables = group(*get_default_graph().get_collection(GraphKeys.TABLE_INITIALIZERS), name="init_all_tables")
    return group(global_variables_initializer(), local_variables_initializer(), tables)


@tf_export("saved_model.main_op_with_restore", "saved_model.main_op.main_op_with_restore")
def main_op_with_restore(restore_op_name):
    """tf.saved_model.main_op_with_restore(restore_op_name): main_op(), then the restore op
    `restore_op_name` (its name, or the op)."""
    graph = get_default_graph()
    restore_op = graph.as_graph_element(restore_op_name) if isinstance(restore_op_name, str) else restore_op_name
    with graph.control_dependencies([main_op()]):
        return group(restore_op)
