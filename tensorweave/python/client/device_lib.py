"""`from tensorweave.python.client import device_lib`: list_local_devices, as TF1 programs import
it from tensorflow.python.client (client/device_lib.py)."""
from tensorweave import _api

__getattr__, __dir__ = _api.lazy_attributes(__name__)
