"""tf.io: files, records, parsing and decoding (ops/io/), with the string codecs TF1 files here."""
from tensorweave import _api

__getattr__, __dir__ = _api.lazy_attributes(__name__)
