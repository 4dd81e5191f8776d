"""`tf_export`: declares, where an object is defined, the TF names it is public under.

    @tf_export("math.add", "add")            # tf.math.add and tf.add
    def add(x, y, name=None): ...

    tf_export("float32", "dtypes.float32")(float32)   # a constant, or an alias, by its module-level name

A name is a namespace path below `tf` ("nn.rnn_cell.LSTMCell"); each public name is declared once.
At run time the call returns the object unchanged: tools/generate_api.py reads the declarations
from the source (with `ast`, importing nothing) and writes the namespace table
(tensorweave/_api_table.py) that `import tensorweave as tf` resolves names through, lazily.
"""
from __future__ import annotations


def tf_export(*names: str):
    """Returns a decorator that leaves its object as it is; the names are read from the source."""
    def declare(obj):
        return obj
    return declare
