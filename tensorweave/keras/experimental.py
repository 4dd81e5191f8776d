"""tf.keras.experimental (TF 1.15): PeepholeLSTMCell (defined in keras/layers/recurrent.py)."""
from tensorweave import _api

__getattr__, __dir__ = _api.lazy_attributes(__name__)
