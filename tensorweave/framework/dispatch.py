"""TF's type-based dispatch (tensorflow/python/util/dispatch.py), reduced to what the
LinearOperator family needs: a function marked `add_dispatch_support` first asks the handlers
registered for it with `dispatch_for_types(fn, *types)` whether one of its arguments is of their
types (tf.linalg.matmul(operator, x) is operator.matmul(x)). The handlers are registered by the
modules defining the types, so this layer knows none of them."""
from __future__ import annotations

import functools

_HANDLERS: dict = {}   # the undecorated function -> [(types, handler)]


def add_dispatch_support(fn):
    """Decorator: `fn` calls a registered handler when an argument is of the handler's types."""
    handlers = _HANDLERS.setdefault(fn, [])

    @functools.wraps(fn)
    def dispatching(*args, **kwargs):
        for types, handler in handlers:
            if any(isinstance(a, types) for a in args) or any(isinstance(a, types) for a in kwargs.values()):
                return handler(*args, **kwargs)
        return fn(*args, **kwargs)
    dispatching._dispatch_target = fn
    return dispatching


def dispatch_for_types(api, *types):
    """Decorator: registers its function as `api`'s handler for arguments of `types`."""
    def register(handler):
        _HANDLERS[getattr(api, "_dispatch_target", api)].append((types, handler))
        return handler
    return register
