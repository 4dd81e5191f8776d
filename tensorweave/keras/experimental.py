"""tf.keras.experimental (TF 1.15): PeepholeLSTMCell (keras/layers/recurrent.py) and SequenceFeatures
(keras/layers/feature_column.py)."""
from tensorweave import _api

__getattr__, __dir__ = _api.lazy_attributes(__name__)
