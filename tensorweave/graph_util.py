"""tf.graph_util namespace (TF1.15): import_graph_def and the GraphDef helpers of
ops/graph_util_impl.py (convert_variables_to_constants, extract_sub_graph, remove_training_nodes)."""
from tensorweave import _api

__getattr__, __dir__ = _api.lazy_attributes(__name__)
