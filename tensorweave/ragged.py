"""tf.ragged namespace (TF 1.15 names): RaggedTensorValue and the ops of tensorweave/ops/ragged/."""
from tensorweave import _api

__getattr__, __dir__ = _api.lazy_attributes(__name__)
