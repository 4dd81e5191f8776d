"""tf.keras.experimental (TF1.15 names): SequenceFeatures (keras/layers/feature_column.py)."""
from tensorweave import _api

__getattr__, __dir__ = _api.lazy_attributes(__name__)
