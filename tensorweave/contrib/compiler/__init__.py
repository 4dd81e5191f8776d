"""tf.contrib.compiler: `jit`, the XLA JIT scope (here: which ops runtime/fusion.py may fuse)."""
from tensorweave import _api

__getattr__, __dir__ = _api.lazy_attributes(__name__)
