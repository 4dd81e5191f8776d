"""The op library: one subpackage per op family, each op's shape function, dtypes, numpy kernel
and gradient side by side (registry.py holds the tables).

Importing `tensorweave.ops` registers every kernel, so a server needs only this package, never
the graph-building API. It imports every module under ops/; the order is Python's own, since
each module imports what it uses and nothing imports in a circle (tools/import_structure.py
checks that: a gradient that needs a later family lives in gradients/<family>_grad.py).
"""
import importlib
import pkgutil

for _module in pkgutil.walk_packages(__path__, __name__ + "."):
    importlib.import_module(_module.name)
del _module
