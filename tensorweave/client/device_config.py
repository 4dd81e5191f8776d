"""tf.config: the devices this process sees, and the placement defaults of Sessions created
without a ConfigProto (as in TF, `tf.Session()` with config=None takes the process's context
config, so `tf.config.set_soft_device_placement(True)` reaches it).

The physical devices are this process's CPU and the GPUs CUDA shows it (or its stand-in GPUs,
runtime/devices.py); listing them sets up nothing. TF decides the visible devices once, when the
runtime first lists its logical devices; changing them after that is an error, as in TF. The GPUs
left visible and their memory growth reach Sessions created without a ConfigProto as TF's context
config does: gpu_options.visible_device_list and allow_growth.
"""
from __future__ import annotations

import collections
import copy

from tensorweave.framework.config import ConfigProto
from tensorweave.framework.tf_export import tf_export
from tensorweave.runtime.devices import physical_gpu_count


@tf_export("config.PhysicalDevice", "config.experimental.PhysicalDevice")
class PhysicalDevice(collections.namedtuple("PhysicalDevice", ["name", "device_type"])):
    """A device of this machine: name ("/physical_device:CPU:0") and device_type ("CPU")."""
    __slots__ = ()


@tf_export("config.LogicalDevice", "config.experimental.LogicalDevice")
class LogicalDevice(collections.namedtuple("LogicalDevice", ["name", "device_type"])):
    """A device ops are placed on: name ("/device:CPU:0", what tf.device takes) and device_type."""
    __slots__ = ()


_context = {"visible": None, "initialized": False, "soft_placement": False, "log_placement": False}


def _physical() -> list:
    return [PhysicalDevice("/physical_device:CPU:0", "CPU")] + [
        PhysicalDevice(f"/physical_device:GPU:{i}", "GPU") for i in range(physical_gpu_count())]


def _of_type(devices: list, device_type) -> list:
    return [d for d in devices if device_type is None or d.device_type == device_type]


@tf_export("config.list_physical_devices", "config.experimental.list_physical_devices")
def list_physical_devices(device_type=None) -> list:
    """The PhysicalDevices of this process ("/physical_device:CPU:0"), of one device_type
    ("CPU", case-sensitive as in TF) when given."""
    return _of_type(_physical(), device_type)


@tf_export("config.get_visible_devices", "config.experimental.get_visible_devices")
def get_visible_devices(device_type=None) -> list:
    """The PhysicalDevices the runtime uses (all of them unless set_visible_devices narrowed it)."""
    visible = _context["visible"]
    return _of_type(_physical() if visible is None else list(visible), device_type)


@tf_export("config.set_visible_devices", "config.experimental.set_visible_devices")
def set_visible_devices(devices, device_type=None) -> None:
    """Restricts the runtime to `devices` (a PhysicalDevice or a list) of `device_type` (all types
    when None); devices of other types stay visible. Raises RuntimeError once the runtime has
    listed its logical devices, unless nothing changes."""
    devices = [devices] if isinstance(devices, PhysicalDevice) else list(devices)
    known = _physical()
    for d in devices:
        if d not in known:
            raise ValueError(f"Unrecognized device: {d!r}")
        if device_type is not None and d.device_type != device_type:
            raise ValueError(f"Device {d.name} is of type {d.device_type}, not {device_type}")
    kept = [d for d in get_visible_devices() if device_type is not None and d.device_type != device_type]
    visible = [d for d in known if d in devices or d in kept]
    if not _of_type(visible, "CPU"):
        raise ValueError("No CPU devices would be visible: the runtime needs a CPU device "
                         f"(set_visible_devices({devices!r}, device_type={device_type!r}))")
    if visible == get_visible_devices():
        return
    if _context["initialized"]:
        raise RuntimeError("Visible devices cannot be modified after being initialized")
    _context["visible"] = visible


@tf_export("config.LogicalDeviceConfiguration", "config.experimental.VirtualDeviceConfiguration")
class LogicalDeviceConfiguration(collections.namedtuple("LogicalDeviceConfiguration",
                                                        ["memory_limit", "experimental_priority"])):
    """One logical device to make of a physical one (set_logical_device_configuration); a CPU
    split into N logical CPUs is how TF runs MirroredStrategy on one CPU machine."""
    __slots__ = ()

    def __new__(cls, memory_limit=None, experimental_priority=None):
        return super().__new__(cls, memory_limit, experimental_priority)


@tf_export("config.set_logical_device_configuration",
           "config.experimental.set_virtual_device_configuration")
def set_logical_device_configuration(device, logical_devices) -> None:
    """Splits the PhysicalDevice `device` into the given LogicalDeviceConfigurations: a CPU into
    logical CPUs /device:CPU:0..N-1 that Sessions created afterwards may place ops on. Raises
    RuntimeError once the runtime has listed its logical devices, as TF does."""
    if device not in _physical():
        raise ValueError(f"Unrecognized device: {device!r}")
    logical_devices = list(logical_devices)
    if not logical_devices or not all(isinstance(c, LogicalDeviceConfiguration) for c in logical_devices):
        raise ValueError(f"logical_devices must be a non-empty list of LogicalDeviceConfiguration, "
                         f"got {logical_devices!r}")
    configs = _context.setdefault("logical", {})
    if configs.get(device.name) == logical_devices:
        return
    if _context["initialized"]:
        raise RuntimeError("Virtual devices cannot be modified after being initialized")
    configs[device.name] = logical_devices


@tf_export("config.get_logical_device_configuration",
           "config.experimental.get_virtual_device_configuration")
def get_logical_device_configuration(device):
    """The LogicalDeviceConfigurations set for the PhysicalDevice `device`, or None."""
    if device not in _physical():
        raise ValueError(f"Unrecognized device: {device!r}")
    return _context.get("logical", {}).get(device.name)


def _logical_count(physical: PhysicalDevice) -> int:
    return len(_context.get("logical", {}).get(physical.name) or [None])


@tf_export("config.list_logical_devices", "config.experimental.list_logical_devices")
def list_logical_devices(device_type=None) -> list:
    """The LogicalDevices ("/device:CPU:0") ops can be placed on (the visible GPUs renumbered from
    /device:GPU:0, as Sessions see them); the visible devices are fixed from here on."""
    _context["initialized"] = True
    out, count = [], collections.Counter()
    for d in get_visible_devices(device_type):   # numbered per type over the visible ones, as TF's
        for _ in range(_logical_count(d)):
            out.append(LogicalDevice(f"/device:{d.device_type}:{count[d.device_type]}", d.device_type))
            count[d.device_type] += 1
    return out


def with_logical_devices(config: ConfigProto) -> ConfigProto:
    """`config` with device_count["CPU"] from set_logical_device_configuration when it names none
    (a Session's CPUs: ConfigProto.device_count first, as in TF)."""
    cpus = sum(_logical_count(d) for d in get_visible_devices("CPU"))
    if cpus > 1 and "CPU" not in config.device_count:
        _context["initialized"] = True
        config = copy.deepcopy(config)
        config.device_count["CPU"] = cpus
    return config


@tf_export("config.get_soft_device_placement")
def get_soft_device_placement() -> bool:
    """Whether Sessions created without a ConfigProto allow soft placement (False, TF's default for
    graph mode)."""
    return _context["soft_placement"]


@tf_export("config.set_soft_device_placement")
def set_soft_device_placement(enabled) -> None:
    """Soft placement for Sessions created from now on without a ConfigProto: an op pinned to a
    device this process lacks (e.g. "/device:GPU:0") runs on one it has."""
    _context["soft_placement"] = bool(enabled)


@tf_export("debugging.get_log_device_placement")
def get_log_device_placement() -> bool:
    """Whether Sessions created without a ConfigProto log the device of each op (False at start)."""
    return _context["log_placement"]


@tf_export("debugging.set_log_device_placement")
def set_log_device_placement(enabled) -> None:
    """Device-placement logging for Sessions created from now on without a ConfigProto."""
    _context["log_placement"] = bool(enabled)


def default_session_config() -> ConfigProto:
    """The ConfigProto a Session created with config=None runs with: the soft placement and
    logging defaults, the visible GPUs (gpu_options.visible_device_list; device_count["GPU"] 0 when
    none is left) and their memory growth (gpu_options.allow_growth), as TF's context config."""
    config = with_logical_devices(ConfigProto(allow_soft_placement=_context["soft_placement"],
                                              log_device_placement=_context["log_placement"]))
    gpus = _of_type(_physical(), "GPU")
    visible = get_visible_devices("GPU")
    if visible != gpus:
        config.gpu_options.visible_device_list = ",".join(str(gpus.index(d)) for d in visible)
        if not visible:
            config.device_count["GPU"] = 0
    growth = {get_memory_growth(d) for d in visible}
    if len(growth) > 1:
        raise ValueError("Memory growth cannot differ between GPU devices")
    config.gpu_options.allow_growth = bool(growth and growth.pop())
    return config


@tf_export("config.experimental.get_memory_growth")
def get_memory_growth(device) -> bool:
    """Whether a GPU's memory grows on demand; only GPUs have the setting."""
    _check_gpu(device)
    return _context.setdefault("memory_growth", {}).get(device.name, False)


@tf_export("config.experimental.set_memory_growth")
def set_memory_growth(device, enable) -> None:
    """Lets a GPU's memory grow on demand rather than taking it all at start (TF's idiom: for each
    of list_physical_devices("GPU")); only GPUs have the setting."""
    _check_gpu(device)
    if _context["initialized"]:
        raise RuntimeError("Physical devices cannot be modified after being initialized")
    _context.setdefault("memory_growth", {})[device.name] = bool(enable)


def _check_gpu(device) -> None:
    if device not in _physical():
        raise ValueError(f"Unrecognized device: {device!r}")
    if device.device_type != "GPU":
        raise ValueError("Cannot set memory growth on non-GPU and non-Pluggable devices")
