"""Keras's custom objects (get_custom_objects, CustomObjectScope), the (de)serialization of Keras
objects to {"class_name", "config"} dicts that models and layers are saved as, and Progbar."""
from __future__ import annotations

import inspect
import os
import sys
import time

import numpy as np

from tensorweave.framework.tf_export import tf_export
from tensorweave.layers.base import snake_case

_GLOBAL_CUSTOM_OBJECTS = {}


@tf_export("keras.utils.CustomObjectScope")
class CustomObjectScope:
    """`with CustomObjectScope({"MyLayer": MyLayer}):` makes those names known to deserialization
    inside the block; changes to the global custom objects made in the block do not outlive it."""

    def __init__(self, *args):
        self.custom_objects = args
        self.backup = None

    def __enter__(self):
        self.backup = dict(_GLOBAL_CUSTOM_OBJECTS)
        for objects in self.custom_objects:
            _GLOBAL_CUSTOM_OBJECTS.update(objects)
        return self

    def __exit__(self, *exc_info):
        _GLOBAL_CUSTOM_OBJECTS.clear()
        _GLOBAL_CUSTOM_OBJECTS.update(self.backup)


@tf_export("keras.utils.custom_object_scope")
def custom_object_scope(*args):
    """A CustomObjectScope over the dicts `args`."""
    return CustomObjectScope(*args)


@tf_export("keras.utils.get_custom_objects")
def get_custom_objects():
    """The global dict of custom objects (name -> class or function), which may be edited in place."""
    return _GLOBAL_CUSTOM_OBJECTS


def serialize_keras_class_and_config(cls_name, cls_config):
    return {"class_name": cls_name, "config": cls_config}


@tf_export("keras.utils.serialize_keras_object")
def serialize_keras_object(instance):
    """An object with get_config() as {"class_name": its class name, "config": its config}; a
    function or class as its name; None as None."""
    if instance is None:
        return None
    if hasattr(instance, "get_config"):
        return serialize_keras_class_and_config(type(instance).__name__, instance.get_config())
    if hasattr(instance, "__name__"):
        return instance.__name__
    raise ValueError(f"Cannot serialize {instance!r}: it has neither get_config() nor a __name__")


def _lookup(name, module_objects, custom_objects, printable_module_name):
    """`name` in the custom objects given, then the global ones, then `module_objects` (any mapping
    with `in` and `[]`: the layer lookup resolves names through lazy namespaces)."""
    for table in (custom_objects or {}, _GLOBAL_CUSTOM_OBJECTS, {} if module_objects is None else module_objects):
        if name in table:
            return table[name]
    raise ValueError(f"Unknown {printable_module_name}: {name}")


def to_snake_case(name: str) -> str:
    """A class name as Keras names its layers: "Dense" -> "dense", "_Private" -> "private_private"."""
    snake = snake_case(name)
    return snake if snake[0] != "_" else "private" + snake


def class_and_config_for_serialized_keras_object(config, module_objects=None, custom_objects=None,
                                                 printable_module_name="object"):
    """(class, config) of a {"class_name", "config"} dict; the class is looked up in
    `custom_objects`, then the global custom objects, then `module_objects`."""
    if not isinstance(config, dict) or "class_name" not in config or "config" not in config:
        raise ValueError(f"Improper config format: {config}")
    return _lookup(config["class_name"], module_objects, custom_objects, printable_module_name), config["config"]


@tf_export("keras.utils.deserialize_keras_object")
def deserialize_keras_object(identifier, module_objects=None, custom_objects=None, printable_module_name="object"):
    """The object a serialize_keras_object result describes.

    A dict builds its class with `cls.from_config(config)` (passing the custom objects when
    from_config takes them, else inside a CustomObjectScope), or calls it with the config as
    keyword arguments when it has no from_config. A string is looked up by name: a class is
    instantiated with no arguments, a function returned as it is.
    """
    if identifier is None:
        return None
    if isinstance(identifier, dict):
        cls, cls_config = class_and_config_for_serialized_keras_object(
            identifier, module_objects, custom_objects, printable_module_name)
        custom_objects = custom_objects or {}
        if hasattr(cls, "from_config"):
            if "custom_objects" in inspect.signature(cls.from_config).parameters:
                return cls.from_config(cls_config, custom_objects={**_GLOBAL_CUSTOM_OBJECTS, **custom_objects})
            with CustomObjectScope(custom_objects):
                return cls.from_config(cls_config)
        with CustomObjectScope(custom_objects):
            return cls(**cls_config)
    if isinstance(identifier, str):
        obj = _lookup(identifier, module_objects, custom_objects, printable_module_name)
        return obj() if inspect.isclass(obj) else obj
    raise ValueError(f"Could not interpret serialized {printable_module_name}: {identifier!r}")


@tf_export("keras.utils.Progbar")
class Progbar:
    """Displays a progress bar, as Keras prints it during fit.

    Args:
      target: total number of steps expected, None if unknown.
      width: progress bar width on screen.
      verbose: 0 (silent), 1 (the bar, redrawn in place) or 2 (one line when the target is reached).
      interval: minimum seconds between redraws of the bar.
      stateful_metrics: names of metrics shown as given, not averaged over steps.
      unit_name: the unit of the time per step ("step").
    """

    def __init__(self, target, width=30, verbose=1, interval=0.05, stateful_metrics=None, unit_name="step"):
        self.target = target
        self.width = width
        self.verbose = verbose
        self.interval = interval
        self.unit_name = unit_name
        self.stateful_metrics = set(stateful_metrics) if stateful_metrics else set()
        # Keras redraws in place wherever the posix module is loaded, which is every POSIX system.
        self._dynamic_display = ((hasattr(sys.stdout, "isatty") and sys.stdout.isatty())
                                 or "ipykernel" in sys.modules or "posix" in sys.modules
                                 or "PYCHARM_HOSTED" in os.environ)
        self._total_width = 0
        self._seen_so_far = 0
        self._values = {}
        self._values_order = []
        self._start = time.time()
        self._last_update = 0
        self._time_at_epoch_start = self._start
        self._time_at_epoch_end = None
        self._time_after_first_step = None

    def update(self, current, values=None, finalize=None):
        """Updates the bar to step `current` with `values`, a list of (name, value) pairs; values
        of names not in stateful_metrics are averaged over the steps they were given for."""
        if finalize is None:
            finalize = False if self.target is None else current >= self.target
        for k, v in values or []:
            if k not in self._values_order:
                self._values_order.append(k)
            if k not in self.stateful_metrics:
                value_base = max(current - self._seen_so_far, 1)
                if k not in self._values:
                    self._values[k] = [v * value_base, value_base]
                else:
                    self._values[k][0] += v * value_base
                    self._values[k][1] += value_base
            else:
                self._values[k] = [v, 1]
        self._seen_so_far = current
        now = time.time()
        info = f" - {now - self._start:.0f}s"
        if current == self.target:
            self._time_at_epoch_end = now
        if self.verbose == 1:
            if now - self._last_update < self.interval and not finalize:
                return
            prev_total_width = self._total_width
            message = "\b" * prev_total_width + "\r" if self._dynamic_display else "\n"
            if self.target is not None:
                numdigits = int(np.log10(self.target)) + 1
                bar = f"{current:{numdigits}d}/{self.target} ["
                prog_width = int(self.width * float(current) / self.target)
                if prog_width > 0:
                    bar += "=" * (prog_width - 1) + (">" if current < self.target else "=")
                bar += "." * (self.width - prog_width) + "]"
            else:
                bar = f"{current:7d}/Unknown"
            self._total_width = len(bar)
            message += bar
            time_per_unit = self._estimate_step_duration(current, now)
            if self.target is None or finalize:
                info += self._format_time(time_per_unit, self.unit_name)
            else:
                eta = time_per_unit * (self.target - current)
                if eta > 3600:
                    eta_format = "%d:%02d:%02d" % (eta // 3600, (eta % 3600) // 60, eta % 60)
                elif eta > 60:
                    eta_format = "%d:%02d" % (eta // 60, eta % 60)
                else:
                    eta_format = "%ds" % eta
                info = f" - ETA: {eta_format}"
            info += self._format_values(abs)
            self._total_width += len(info)
            if prev_total_width > self._total_width:
                info += " " * (prev_total_width - self._total_width)
            if finalize:
                info += "\n"
            _write(message + info)
        elif self.verbose == 2 and finalize:
            numdigits = int(np.log10(self.target)) + 1
            info = f"{current:{numdigits}d}/{self.target}" + info + self._format_values(lambda avg: avg)
            if self._time_at_epoch_end:
                time_per_epoch = self._time_at_epoch_end - self._time_at_epoch_start
                avg_time_per_step = time_per_epoch / self.target
                self._time_at_epoch_start = now
                self._time_at_epoch_end = None
                info += " -" + self._format_time(time_per_epoch, "epoch")
                info += " -" + self._format_time(avg_time_per_step, self.unit_name) + "\n"
            _write(info)
        self._last_update = now

    def add(self, n, values=None):
        self.update(self._seen_so_far + n, values)

    def _format_values(self, magnitude) -> str:
        """" - name: value" for each value; a small `magnitude(average)` in scientific notation
        (verbose 1 compares the absolute value, verbose 2 the signed one, as Keras does)."""
        out = ""
        for k in self._values_order:
            avg = np.mean(self._values[k][0] / max(1, self._values[k][1]))
            out += f" - {k}: {avg:.4f}" if magnitude(avg) > 1e-3 else f" - {k}: {avg:.4e}"
        return out

    @staticmethod
    def _format_time(time_per_unit, unit_name) -> str:
        if time_per_unit >= 1 or time_per_unit == 0:
            return f" {time_per_unit:.0f}s/{unit_name}"
        if time_per_unit >= 1e-3:
            return f" {time_per_unit * 1000.0:.0f}ms/{unit_name}"
        return f" {time_per_unit * 1000000.0:.0f}us/{unit_name}"

    def _estimate_step_duration(self, current, now):
        """Seconds per step, not counting the first step (which holds the graph's setup)."""
        if not current:
            return 0
        if self._time_after_first_step is not None and current > 1:
            time_per_unit = (now - self._time_after_first_step) / (current - 1)
        else:
            time_per_unit = (now - self._start) / current
        if current == 1:
            self._time_after_first_step = now
        return time_per_unit


def _write(message: str) -> None:
    sys.stdout.write(message)
    sys.stdout.flush()
