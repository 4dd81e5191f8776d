"""tf.dtypes namespace: DType and the dtypes (framework/dtypes.py), and the casts between them
(tf.dtypes.cast, saturate_cast, complex, as_string)."""
from tensorweave import _api

__getattr__, __dir__ = _api.lazy_attributes(__name__)
