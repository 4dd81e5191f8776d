"""Iterator ops: an iterator is a resource of its task (IteratorResource, by container and
name, like a variable) holding the element generator of the dataset it was made from.

A dataset reaches an iterator as a *factory function*: the chain of dataset ops copied into a
FuncGraph (attr `dataset_factory`), with every other tensor it uses captured as an input. The
pipeline is therefore built where the iterator lives (`with tf.device(...)`), and no dataset
value ever crosses tasks.
"""
from __future__ import annotations

import threading


from tensorweave.framework import dtypes, errors
from tensorweave.framework.shapes import TensorShape
from tensorweave.ops.data import pipeline
from tensorweave.ops.data.pipeline import ElementError
from tensorweave.ops.helpers import invalid, string_array
from tensorweave.ops.registry import register

_HANDLE_PREFIX = b"tensorweave-iterator\x00"


class IteratorResource:
    """One iterator of a task: the running pass over its dataset."""

    def __init__(self, container: str, name: str, types: list, shapes: list):
        self.container, self.name = container, name
        self.types, self.shapes = types, shapes
        self._elements = None
        self._lock = threading.Lock()
        self.ever_initialized = False

    def string_handle(self) -> bytes:
        return _HANDLE_PREFIX + self.container.encode() + b"\x00" + self.name.encode()

    def initialize(self, node, dataset) -> None:
        if not isinstance(dataset, pipeline.DatasetValue):
            raise invalid(node, f"expected a dataset, got {type(dataset).__name__}")
        with self._lock:
            old, self._elements = self._elements, dataset.elements()
            self.ever_initialized = True
        _close(old)

    def get_next(self, node, step) -> list:
        stop: list = []

        def check() -> bool:
            if step is not None and step.cancelled.is_set():
                stop.append(errors.CancelledError(node, node.name, "Step was cancelled while waiting for the input "
                                                                   "pipeline"))
            left = step.time_left() if step is not None else None
            if left is not None and left <= 0:
                stop.append(errors.DeadlineExceededError(node, node.name, "Timed out waiting for the input pipeline"))
            return bool(stop)

        while not self._lock.acquire(timeout=0.05):
            if check():
                raise stop[0]
        try:
            if self._elements is None:
                raise errors.FailedPreconditionError(
                    node, node.name, "GetNext() failed because the iterator has not been initialized. Ensure that you "
                                     "have run the initializer operation for this iterator before getting the next "
                                     "element.")
            pipeline.set_wait_check(check)
            try:
                element = next(self._elements, None)
            finally:
                pipeline.set_wait_check(None)
        finally:
            self._lock.release()
        if element is None:
            raise errors.OutOfRangeError(node, node.name, "End of sequence")
        if element is pipeline.NOT_READY:
            raise stop[0] if stop else errors.CancelledError(node, node.name, "The input pipeline gave up waiting")
        if isinstance(element, ElementError):
            raise element.error
        if len(element) != len(self.types):
            raise invalid(node, f"The dataset produced {len(element)} components where the iterator expects "
                                f"{len(self.types)}")
        return element

    def close_on_reset(self) -> None:
        with self._lock:
            old, self._elements = self._elements, None
        _close(old)


_CONTAINER = "_iterators"


def _resource(node, ctx) -> IteratorResource:
    name = node.attr.get("shared_name") or node.name
    container = node.attr.get("container") or _CONTAINER
    types = [dtypes.as_dtype(t) for t in node.attr["output_types"]]
    shapes = [TensorShape(s) for s in node.attr["output_shapes"]]
    return ctx.resources.lookup_or_create(container, name, lambda: IteratorResource(container, name, types, shapes))


def _handle_infer(op):
    return [(dtypes.resource, TensorShape([]))]


def _iterator_kernel(node, ctx):
    resource = _resource(node, ctx)
    return lambda: resource


def _one_shot_kernel(node, ctx):
    resource = _resource(node, ctx)
    factory = ctx.function_plan(node.attr["dataset_factory"])
    lock = threading.Lock()

    def run(*captured):
        if not resource.ever_initialized:
            with lock:
                if not resource.ever_initialized:
                    resource.initialize(node, factory.run(list(captured))[0])
        return resource
    return run


def _make_iterator_kernel(node, ctx):
    factory = ctx.function_plan(node.attr["dataset_factory"])

    def run(handle, *captured):
        handle.initialize(node, factory.run(list(captured))[0])
    return run


def _get_next_infer(op):
    return [(dtypes.as_dtype(t), TensorShape(s)) for t, s in zip(op.get_attr("output_types"),
                                                                  op.get_attr("output_shapes"))]


def _get_next_kernel(node, ctx):
    one = len(node.attr["output_types"]) == 1

    def run(step, handle):
        element = handle.get_next(node, step)
        return element[0] if one else tuple(element)
    return run


def _to_handle_kernel(node, ctx):
    return lambda handle: handle.string_handle()


def _from_handle_kernel(node, ctx):
    types = [dtypes.as_dtype(t) for t in node.attr["output_types"]]

    def run(handle):
        raw = bytes(string_array(handle)[()])
        if not raw.startswith(_HANDLE_PREFIX) or raw.count(b"\x00") != 2:
            raise invalid(node, f"Not an iterator string handle: {raw[:60]!r}")
        container, name = raw[len(_HANDLE_PREFIX):].split(b"\x00")
        resource = ctx.resources.lookup(container.decode(), name.decode())
        if [t.name for t in resource.types] != [t.name for t in types]:
            raise invalid(node, f"The iterator of this handle has output types {[t.name for t in resource.types]}, "
                                f"not {[t.name for t in types]}")
        return resource
    return run


register("IteratorV2", _handle_infer, _iterator_kernel, grad=None, stateful=True)
register("OneShotIterator", _handle_infer, _one_shot_kernel, grad=None, stateful=True)
register("MakeIterator", lambda op: [], _make_iterator_kernel, grad=None, stateful=True)
register("IteratorGetNext", _get_next_infer, _get_next_kernel, grad=None, stateful=True, needs_step=True,
         blocking=True)
register("IteratorToStringHandle", lambda op: [(dtypes.string, TensorShape([]))], _to_handle_kernel, grad=None,
         stateful=True)
register("IteratorFromStringHandleV2", _handle_infer, _from_handle_kernel, grad=None, stateful=True,
         dtypes=(dtypes.string,), dtype_param="string_handle")




def _close(elements) -> None:
    """Stops a pass: closing a generator stops the threads of its stages."""
    close = getattr(elements, "close", None)
    if close is not None:
        close()


# -- optionals ---------------------------------------------------------------------------------------
class OptionalValue:
    """An Optional at run time: the components of its value, or None."""

    __slots__ = ("components",)

    def __init__(self, components):
        self.components = components


def _optional_of(node, x) -> OptionalValue:
    if not isinstance(x, OptionalValue):
        raise invalid(node, f"expected an Optional, got {type(x).__name__}")
    return x


def _next_as_optional_kernel(node, ctx):
    def run(step, handle):
        try:
            return OptionalValue(list(handle.get_next(node, step)))
        except errors.OutOfRangeError:
            return OptionalValue(None)
    return run


def _optional_get_value_kernel(node, ctx):
    def run(optional):
        value = _optional_of(node, optional).components
        if value is None:
            raise invalid(node, "The optional does not have a value.")
        return value[0] if len(value) == 1 else tuple(value)
    return run


_VARIANT = lambda op: [(dtypes.variant, TensorShape([]))]   # noqa: E731 - one shape rule for three ops
register("IteratorGetNextAsOptional", _VARIANT, _next_as_optional_kernel, grad=None, stateful=True, needs_step=True,
         blocking=True)
register("OptionalFromValue", _VARIANT, lambda node, ctx: lambda *c: OptionalValue(list(c)), grad=None)
register("OptionalNone", _VARIANT, lambda node, ctx: lambda: OptionalValue(None), grad=None)
register("OptionalHasValue", lambda op: [(dtypes.bool, TensorShape([]))],
         lambda node, ctx: lambda o: _optional_of(node, o).components is not None, grad=None)
register("OptionalGetValue", _get_next_infer, _optional_get_value_kernel, grad=None)
