"""tensorweave: distributed TensorFlow's graph-and-cluster model on numpy and ZeroMQ.

`import tensorweave as tf` gives the TF1 API by its TF1 names. Each public name is declared where
it is defined (`@tf_export`, framework/tf_export.py); this package and its namespaces (tf.nn,
tf.train, ...) resolve a name on first access, loading only the module that defines it
(tensorweave/_api.py). An op module loads with the first use of its ops (tensorweave/ops/registry.py).
"""
from __future__ import annotations

import sys as _sys

from tensorweave import _api

__version__ = "0.1.0"

__getattr__, __dir__ = _api.lazy_attributes(__name__)

# tf.compat.v1 is this very namespace; `import tensorweave.compat.v1` finds it here.
_sys.modules[__name__ + ".compat.v1"] = _sys.modules[__name__]
