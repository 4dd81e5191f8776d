"""tf.graph_util namespace (TF1.15): graph manipulation helpers (import_graph_def)."""
from tensorweave import _api

__getattr__, __dir__ = _api.lazy_attributes(__name__)
