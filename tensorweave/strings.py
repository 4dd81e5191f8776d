"""tf.strings: the string ops (ops/strings/) and the string parsers TF1 also exports here."""
from tensorweave import _api

__getattr__, __dir__ = _api.lazy_attributes(__name__)
