"""Session: the client. Maps fetch structures and feeds, then asks a master to run the pruned
graph: the in-process LocalMaster (runtime/) for no target, the distributed runtime's client-side
master for a grpc:// target (distributed/connector.py: connect, and reset for Session.reset)."""
from __future__ import annotations

import collections
from typing import Any, Callable, Optional

import numpy as np

from tensorweave.client.device_lib import CPU_MEMORY_LIMIT
from tensorweave.distributed import connector
from tensorweave.framework import dtypes
from tensorweave.client.device_config import default_session_config, with_logical_devices
from tensorweave.framework.config import ConfigProto
from tensorweave.framework.graph import Graph, Operation, Tensor, default_session, get_default_graph
from tensorweave.framework.tf_export import tf_export
from tensorweave.runtime.local_master import LocalMaster


# -- fetch structures ------------------------------------------------------------------------


def _is_namedtuple(x) -> bool:
    return isinstance(x, tuple) and hasattr(x, "_fields")


class _FetchMapper:
    """Flattens any nesting of list/tuple/namedtuple/dict of fetchables into unique graph
    elements, and rebuilds the same structure from their values."""

    def __init__(self, graph: Graph, fetches):
        self.graph = graph
        self.elements: list = []     # unique Tensors and Operations, in first-seen order
        self._index: dict = {}
        self._build = self._map(fetches)

    def _element(self, el) -> int:
        idx = self._index.get(el)
        if idx is None:
            idx = self._index[el] = len(self.elements)
            self.elements.append(el)
        return idx

    def _map(self, f) -> Callable[[list], Any]:
        if type(f) is Tensor or type(f) is Operation:   # (the common fetch: no container checks)
            return self._leaf(f)
        if f is None:
            raise TypeError(f"Fetch argument {f!r} has invalid type {type(f)}, must be a string or Tensor. "
                            "(Can not convert a NoneType into a Tensor or Operation.)")
        if isinstance(f, (list, tuple)) and not _is_namedtuple(f):
            subs = [self._map(x) for x in f]
            kind = type(f)
            return lambda vals: kind(s(vals) for s in subs) if kind in (list, tuple) else kind(
                [s(vals) for s in subs])
        if _is_namedtuple(f):
            subs = [self._map(x) for x in f]
            return lambda vals: type(f)(*[s(vals) for s in subs])
        if isinstance(f, collections.abc.Mapping):
            subs = [(k, self._map(v)) for k, v in f.items()]
            kind = type(f)
            return lambda vals: kind((k, s(vals)) for k, s in subs)
        if hasattr(f, "_fetch_parts"):   # composite values: IndexedSlices, SparseTensor
            parts = [self._map(p) for p in f._fetch_parts()]
            return lambda vals: f._fetch_value([p(vals) for p in parts])
        return self._leaf(f)

    def _leaf(self, f) -> Callable[[list], Any]:
        try:
            el = self.graph.as_graph_element(f, allow_tensor=True, allow_operation=True)
        except TypeError as e:
            raise TypeError(f"Fetch argument {f!r} has invalid type {type(f)}, must be a string or Tensor. "
                            f"({e})") from None
        except (ValueError, KeyError) as e:
            raise ValueError(f"Fetch argument {f!r} cannot be interpreted as a Tensor. ({e})") from None
        if not self.graph.is_fetchable(el):
            raise ValueError(f"Operation {el.name!r} has been marked as not fetchable.")
        idx = self._element(el)
        return lambda vals: vals[idx]

    def build(self, values: list):
        return self._build(values)


class _Uncached(Exception):
    """A fetch structure whose mapping Session.run does not keep (see _structure_key)."""


def _structure_key(f):
    """A key that equals another only for the same fetch structure: plain lists, tuples and dicts
    of the same tensors, operations and names. Anything else raises _Uncached."""
    kind = type(f)
    if kind is Tensor or kind is Operation or kind is str:
        return f
    if kind is list or kind is tuple:
        return (kind, *[_structure_key(x) for x in f])
    if kind is dict:
        return (dict, *[(type(k), k, _structure_key(v)) for k, v in f.items()])
    raise _Uncached


_KEPT_RUNNERS = 64   # fetch structures a session keeps mapped


def _fetched(v):
    """TF's fetch convention: numpy arrays, with 0-d results as numpy scalars."""
    if isinstance(v, np.ndarray):
        if v.ndim == 0:
            return v[()]
        # Stored values are read-only (shared with the runtime); users own what they fetch.
        return v if v.flags.writeable else v.copy()
    if isinstance(v, np.generic):
        return v
    if isinstance(v, bytes):
        return v
    return np.asarray(v)[()] if np.ndim(v) == 0 else np.asarray(v)


def _feed_value(t: Tensor, value, graph: Graph):
    if isinstance(value, Tensor):
        raise TypeError("The value of a feed cannot be a tf.Tensor object. Acceptable feed values include "
                        "Python scalars, strings, lists, numpy ndarrays, or TensorHandles. For reference, "
                        f"the tensor object was {value!r} which was passed to the feed with key {t!r}.")
    dt = t.dtype
    if dt is dtypes.string:
        arr = np.asarray(value, dtype=object)
        if arr.ndim == 0:
            v = arr[()]
            arr = np.asarray(v.encode() if isinstance(v, str) else v, dtype=object)
        else:
            arr = np.vectorize(lambda s: s.encode() if isinstance(s, str) else s, otypes=[object])(arr)
    else:
        if isinstance(value, int) and not isinstance(value, bool) and dt.is_integer:
            info = np.iinfo(dt.as_numpy_dtype)
            if not info.min <= value <= info.max:
                raise TypeError(f"Type of feed value {value} with type {type(value)} is not compatible with "
                                f"Tensor type {dt.name}. Try explicitly setting the type of the feed tensor "
                                "to a larger type (e.g. int64).")
        try:
            arr = np.asarray(value, dtype=dt.as_numpy_dtype)
        except (TypeError, ValueError) as e:
            raise ValueError(f"Cannot feed value {value!r} for Tensor {t.name!r} of dtype {dt.name}: {e}") from None
    if not t.shape.is_compatible_with(arr.shape):
        raise ValueError(f"Cannot feed value of shape {arr.shape!r} for Tensor {t.name!r}, "
                         f"which has shape {str(t.shape)!r}")
    if not graph.is_feedable(t):
        raise ValueError(f"Tensor {t} may not be fed.")
    return arr[()] if arr.ndim == 0 and dt is not dtypes.string else arr


def _make_master(target: str, graph: Graph, config: ConfigProto):
    if not target:
        return LocalMaster(graph, config)
    return connector.connect(target, graph, config)


class BaseSession:
    def __init__(self, target: str = "", graph: Optional[Graph] = None, config: Optional[ConfigProto] = None):
        if graph is not None and not isinstance(graph, Graph):
            raise TypeError(f"graph must be a tf.Graph, but got {type(graph)}")
        if config is not None and not isinstance(config, ConfigProto):
            raise TypeError(f"config must be a tf.ConfigProto, but got {type(config)}")
        if isinstance(target, bytes):
            target = target.decode()
        self._graph = graph or get_default_graph()
        self._target = target or ""
        self._config = with_logical_devices(config) if config else default_session_config()
        self._closed = False
        self._master = _make_master(self._target, self._graph, self._config)
        self._default_ctx: list = []
        self._runners: dict = {}   # _structure_key(fetches) -> _runner(fetches)

    graph = property(lambda self: self._graph)
    sess_str = property(lambda self: self._target)

    @property
    def graph_def(self):
        """The graph as TF's GraphDef (`Graph.as_graph_def`), with `_output_shapes` when the
        session's ConfigProto sets graph_options.infer_shapes, as in TF 1.15."""
        return self._graph.as_graph_def(add_shapes=bool(self._config.graph_options.infer_shapes))

    def list_devices(self) -> list:
        """TF1's Session.list_devices(): the devices this session may use, each with `name`
        ("/job:worker/replica:0/task:0/device:CPU:0"), `device_type`, `memory_limit_bytes`
        (TF's nominal 256 MiB for a CPU) and `incarnation` (0: tasks are told apart by name)."""
        return [DeviceAttributes(name, name.rpartition("/device:")[2].split(":")[0], CPU_MEMORY_LIMIT, 0)
                for name in self._master.list_devices()]

    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        """Runs the ops and evaluates the tensors in `fetches`, returning values in the same structure."""
        if self._closed:
            raise RuntimeError("Attempted to use a closed Session.")
        return self._kept_runner(fetches)(self._feeds(feed_dict), options, run_metadata)

    def _kept_runner(self, fetches) -> Callable:
        """_runner(fetches), kept for the structures _structure_key knows: a training loop fetches
        the same one every step (a MonitoredSession: a dict of its hooks' fetches), and looking it
        up costs less than mapping it. A kept one checks again that its elements may be fetched
        (Graph.prevent_fetching may have been called since)."""
        try:
            key = _structure_key(fetches)
        except _Uncached:
            return self._runner(fetches)
        run = self._runners.get(key)
        if run is None or not all(map(self._graph.is_fetchable, run.elements)):
            if len(self._runners) >= _KEPT_RUNNERS:
                self._runners.clear()
            run = self._runners[key] = self._runner(fetches)
        return run

    def _runner(self, fetches) -> Callable:
        """run(feeds, options, run_metadata) for `fetches`: the fetch structure is mapped once
        (make_callable's runs, a queue runner's thousands of steps, skip it)."""
        mapper = _FetchMapper(self._graph, fetches)
        fetch_names, target_names, fetch_pos = [], [], []
        for el in mapper.elements:
            if isinstance(el, Operation):
                target_names.append(el.name)
                fetch_pos.append(None)
            else:
                fetch_pos.append(len(fetch_names))
                fetch_names.append(el.name)

        def run(feeds: dict, options, run_metadata):
            if not mapper.elements:
                return mapper.build([])
            values = self._master.run(feeds, fetch_names, target_names, options, run_metadata)
            return mapper.build([None if p is None else _fetched(values[p]) for p in fetch_pos])
        run.elements = mapper.elements
        return run

    def _feeds(self, feed_dict) -> dict:
        feeds: dict = {}
        for key, value in (feed_dict or {}).items():
            if hasattr(key, "_feed_parts"):   # composite keys (SparseTensor) feed each part
                for k, v in zip(key._feed_parts(), key._split_feed(value)):
                    feeds[self._feed_tensor(k).name] = _feed_value(self._feed_tensor(k), v, self._graph)
                continue
            t = self._feed_tensor(key)
            feeds[t.name] = _feed_value(t, value, self._graph)
        return feeds

    def _feed_tensor(self, key) -> Tensor:
        try:
            el = self._graph.as_graph_element(key, allow_tensor=True, allow_operation=False)
        except (TypeError, ValueError, KeyError) as e:
            raise TypeError(f"Cannot interpret feed_dict key as Tensor: {e}") from None
        return el

    def make_callable(self, fetches, feed_list=None, accept_options: bool = False):
        """Returns a function that runs `fetches` with positional feed values for `feed_list`."""
        feed_list = list(feed_list or [])
        run = self._runner(fetches)

        def call(*args, **kwargs):
            if self._closed:
                raise RuntimeError("Attempted to use a closed Session.")
            if len(args) != len(feed_list):
                raise ValueError(f"Expected {len(feed_list)} feed values but got {len(args)}.")
            options = kwargs.get("options") if accept_options else None
            run_metadata = kwargs.get("run_metadata") if accept_options else None
            return run(self._feeds(dict(zip(feed_list, args))), options, run_metadata)
        return call

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._master.close()

    def as_default(self):
        """A context manager that makes this the default session (and its graph the default graph)."""
        return default_session(self)

    def __enter__(self):
        ctx = default_session(self, with_graph=True)
        ctx.__enter__()
        self._default_ctx.append(ctx)
        return self

    def __exit__(self, exc_type, exc, tb):
        ctx = self._default_ctx.pop()
        ctx.__exit__(exc_type, exc, tb)
        self.close()
        return False

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass

    @staticmethod
    def reset(target: str, containers=None, config=None) -> None:
        """Drops the named resource containers (all when None) on every task of target's cluster."""
        connector.reset(target, containers, config)


DeviceAttributes = collections.namedtuple("DeviceAttributes", ["name", "device_type", "memory_limit_bytes",
                                                               "incarnation"])

@tf_export("Session")
class Session(BaseSession):
    """tf.Session(target='', graph=None, config=None)."""


@tf_export("InteractiveSession")
class InteractiveSession(BaseSession):
    """A Session that installs itself as the default session on construction."""

    def __init__(self, target: str = "", graph=None, config=None):
        super().__init__(target, graph, config)
        self._interactive_ctx = default_session(self)
        self._interactive_ctx.__enter__()

    def close(self) -> None:
        super().close()
        ctx, self._interactive_ctx = getattr(self, "_interactive_ctx", None), None
        if ctx is not None:
            try:
                ctx.__exit__(None, None, None)
            except ValueError:
                pass
