"""Lazy TF namespaces (PEP 562): a namespace module resolves a public name on its first access by
importing only the module that defines it, so `import tensorweave` loads almost nothing.

Every namespace module sets `__getattr__, __dir__ = _api.lazy_attributes(__name__)`; where each
name is defined comes from the generated table (tensorweave/_api_table.py, tools/generate_api.py).
"""
from __future__ import annotations

import importlib
import sys

from tensorweave._api_table import NAMESPACES


def lazy_attributes(module_name: str):
    """The module-level __getattr__ and __dir__ of the namespace module `module_name`."""
    names = NAMESPACES[module_name]

    def __getattr__(name: str):
        try:
            source, attribute = names[name]
        except KeyError:
            raise AttributeError(f"module {module_name!r} has no attribute {name!r}") from None
        value = importlib.import_module(source)
        if attribute is not None:
            value = getattr(value, attribute)
        setattr(sys.modules[module_name], name, value)   # later accesses are plain attribute reads
        return value

    def __dir__():
        return sorted(set(vars(sys.modules[module_name])) | set(names))

    return __getattr__, __dir__
