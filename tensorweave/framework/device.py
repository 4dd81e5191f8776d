"""DeviceSpec: parsing, printing and merging TF device strings."""
from __future__ import annotations

import functools
from dataclasses import dataclass, replace as _dc_replace
from typing import Optional

from tensorweave.framework.tf_export import tf_export


@tf_export("DeviceSpec")
@dataclass(frozen=True)
class DeviceSpec:
    """A (partial) device name: /job:<job>/replica:<r>/task:<t>/device:<TYPE>:<index>."""

    job: Optional[str] = None
    replica: Optional[int] = None
    task: Optional[int] = None
    device_type: Optional[str] = None
    device_index: Optional[int] = None

    @classmethod
    def from_string(cls, spec: Optional[str]) -> "DeviceSpec":
        """Parses any string form TF accepts ("/job:ps/task:0", "/cpu:0", "/device:GPU:1", "")."""
        if isinstance(spec, DeviceSpec):
            return spec
        if cls is DeviceSpec and isinstance(spec, str):
            return _parsed(spec)
        return cls._parse(spec)

    @classmethod
    def _parse(cls, spec: Optional[str]) -> "DeviceSpec":
        fields: dict = {}
        if not spec:
            return cls()
        for part in spec.split("/"):
            if not part:
                continue
            bits = part.split(":")
            key = bits[0].lower()
            try:
                if key == "job" and len(bits) == 2:
                    fields["job"] = bits[1]
                elif key == "replica" and len(bits) == 2:
                    fields["replica"] = int(bits[1])
                elif key == "task" and len(bits) == 2:
                    fields["task"] = int(bits[1])
                elif key == "device" and len(bits) in (2, 3):
                    fields["device_type"] = bits[1].upper()
                    if len(bits) == 3:
                        fields["device_index"] = None if bits[2] == "*" else int(bits[2])
                elif key in ("cpu", "gpu") and len(bits) == 2:
                    fields["device_type"] = key.upper()
                    fields["device_index"] = None if bits[1] == "*" else int(bits[1])
                elif len(bits) == 2 and bits[0].isupper():  # "CPU:0" style
                    fields["device_type"] = bits[0]
                    fields["device_index"] = None if bits[1] == "*" else int(bits[1])
                else:
                    raise ValueError
            except ValueError:
                raise ValueError(f"Unknown attribute: '{part}' in '{spec}'") from None
        return cls(**fields)

    def to_string(self) -> str:
        out = ""
        if self.job is not None:
            out += f"/job:{self.job}"
        if self.replica is not None:
            out += f"/replica:{self.replica}"
        if self.task is not None:
            out += f"/task:{self.task}"
        if self.device_type is not None:
            index = "*" if self.device_index is None else str(self.device_index)
            out += f"/device:{self.device_type}:{index}"
        return out

    def merge_from(self, dev: "DeviceSpec") -> "DeviceSpec":
        """Returns this spec with every field that `dev` sets taken from `dev`."""
        dev = DeviceSpec.from_string(dev) if isinstance(dev, str) else dev
        return DeviceSpec(
            job=dev.job if dev.job is not None else self.job,
            replica=dev.replica if dev.replica is not None else self.replica,
            task=dev.task if dev.task is not None else self.task,
            device_type=dev.device_type if dev.device_type is not None else self.device_type,
            device_index=dev.device_index if dev.device_index is not None else self.device_index,
        )

    make_merged_spec = merge_from

    def replace(self, **kwargs) -> "DeviceSpec":
        return _dc_replace(self, **kwargs)

    @property
    def task_name(self) -> Optional[str]:
        """'/job:J/task:T' when both are known."""
        if self.job is None:
            return None
        return f"/job:{self.job}/task:{self.task or 0}"

    def __str__(self) -> str:
        return self.to_string()


def task_name(job: str, task: int) -> str:
    """The full name of a task: '/job:J/replica:0/task:T'."""
    return f"/job:{job}/replica:0/task:{task}"


def task_of(device: str) -> str:
    """'/job:w/replica:0/task:1/device:CPU:0' -> '/job:w/replica:0/task:1'; a device that names
    no job is returned as it is."""
    spec = DeviceSpec.from_string(device)
    return device if spec.job is None else task_name(spec.job, spec.task or 0)


def canonical_name(device) -> str:
    if device is None:
        return ""
    if callable(device) and not isinstance(device, (str, DeviceSpec)):
        raise TypeError("canonical_name expects a string or DeviceSpec")
    return DeviceSpec.from_string(device).to_string() if isinstance(device, str) else device.to_string()


def merge_device(spec: str):
    """A device function that fills the op's unset fields from `spec` (TF's merge_device)."""
    base = DeviceSpec.from_string(spec)

    def _merge(op) -> str:
        current = DeviceSpec.from_string(getattr(op, "device", "") or "")
        return base.merge_from(current).to_string()

    return _merge


@functools.lru_cache(maxsize=4096)
def _parsed(spec: str) -> DeviceSpec:
    """DeviceSpec.from_string of a string, parsed once (a DeviceSpec is immutable): the placer,
    the partitioner and a session's checks parse every op's device of every graph they see, a
    few thousand strings of a handful of distinct ones while a job starts."""
    return DeviceSpec._parse(spec)
